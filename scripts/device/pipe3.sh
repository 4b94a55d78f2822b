#!/usr/bin/env bash
# Issue 7 item 3's second half and the three missed wall-time targets, on the H100 box (16 cores),
# from the repo root with a release binary at ./dist/neuroport (or $NEUROPORT): the issue-7 volume
# (358,600 mask voxels, 134 volumes); dti, bedpost (600 loops) and track geodesic --dirs 8 from
# the white matter to .tck, on CUDA and NVIDIA OpenCL, each twice (the second run counts: kernels
# compiled and cached), with chunk pipelining on (NEUROPORT_PIPELINE=1) and off (the default). Each
# line: wall time and the command's summary (kernel / transfer ms), then its stages line
# (NEUROPORT_STAGES=1: exec->main, device discovery, read, mask, device init, fit, host maps,
# each output's write, commit). ~3-4 minutes; every command under its own time limit.
# PIPE3_BACKENDS and PIPE3_DIMS change the devices and the grid (a dry run elsewhere).
. "$(dirname "$0")/common.sh"
issue7_volume "${PIPE3_DIMS:-}"
export NEUROPORT_STAGES=1
wall "devices (probes every API)" 60 $B devices
echo "--- page-cache write speed, the .tck floor (4 GB in 8 MiB writes)"
step 60 dd if=/dev/zero of="$W/dd" bs=8M count=480 2>&1 | tail -1; rm -f "$W/dd"
in=(--dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz")
for b in ${PIPE3_BACKENDS:-cuda opencl:1:0}; do
  stamp "$b"
  o="$W/$b"
  # dti has one chunk on a GPU of this size: nothing to pipeline; twice for the warm figure.
  for run in first again; do
    wall "dti $b ($run)" 60 $B dti --backend $b "${in[@]}" --out "$o/dti" --force
  done
  for pipe in 1 0; do
    label=$([ $pipe = 1 ] && echo pipelined || echo serial)
    for run in first again; do
      NEUROPORT_PIPELINE=$pipe wall "bedpost $b 600 loops $label ($run)" 90 $B bedpost --backend $b "${in[@]}" --out "$o/bp" --force
    done
    for run in first again; do
      NEUROPORT_PIPELINE=$pipe wall "track geodesic $b --dirs 8 $label ($run)" 90 $B track geodesic --backend $b --tensor "$o/dti_tensor.nii.gz" --seeds "$D/wm.nii.gz" --dirs 8 --out "$o/fibres-$pipe.tck" --force
    done
  done
  # Same fibres either way: the two tractograms are compared byte for byte.
  if [ -f "$o/fibres-1.tck" ] && [ -f "$o/fibres-0.tck" ]; then
    ls -l "$o/fibres-1.tck"
    cmp -s "$o/fibres-1.tck" "$o/fibres-0.tck" && echo "pipelined and serial .tck identical" || echo "pipelined and serial .tck DIFFER"
  fi
  rm -rf "$o"
done
stamp "done"
