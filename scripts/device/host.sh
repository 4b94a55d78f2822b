#!/usr/bin/env bash
# Issue 7's wall-time targets, as a user runs the commands, on the GPU machine (16 cores), from
# the repo root with a release binary at ./dist/neuroport (or $NEUROPORT):
#   read of the 171 MB volume: our multi-member file (parallel inflate) vs the same data as one
#   gzip member (as other tools write it) vs gzip -dc; dti cold (empty PTX cache) and warm;
#   bedpost (600 loops) and track geodesic --dirs 8 from the white matter to .tck, on CUDA and
#   NVIDIA OpenCL, each command's wall time and its own summary line. ~5 minutes.
. "$(dirname "$0")/common.sh"
issue7_volume
gzip -dc "$D/dwi.nii.gz" | gzip -6 > "$W/one-member.nii.gz"
ls -l "$D/dwi.nii.gz" "$W/one-member.nii.gz"
stamp "read"
start=$(date +%s.%N); gzip -dc "$D/dwi.nii.gz" > /dev/null
echo "gzip -dc: $(awk "BEGIN { printf \"%.3f\", $(date +%s.%N) - $start }") s"
$B bench nifti --input "$D/dwi.nii.gz" --read-only --repeats 3 2>&1 | grep -E "^read"
$B bench nifti --input "$W/one-member.nii.gz" --read-only --repeats 3 2>&1 | grep -E "^read" | sed 's/^/one gzip member: /'
if [ -x /usr/bin/time ]; then /usr/bin/time -v $B bench nifti --input "$D/dwi.nii.gz" --read-only --repeats 1 2>&1 | grep -E "Maximum resident"; fi
wall "devices (probes every API)" 60 $B devices
echo "--- page-cache write speed, for the .tck floor (4 GB in 8 MiB writes)"
dd if=/dev/zero of="$W/dd" bs=8M count=480 2>&1 | tail -1; rm -f "$W/dd"
for b in cuda opencl:1:0; do
  stamp "$b"
  rm -rf "$NEUROPORT_PTX_CACHE"
  dti=(dti --backend $b --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz")
  # Each command twice: the first compiles its kernels (NVRTC, or the OpenCL driver's own
  # cache), the second is what a user sees from then on.
  for run in first again; do
    wall "dti $b ($run)" 60 $B "${dti[@]}" --out "$W/$b/dti" --force
    wall "bedpost $b 600 loops ($run)" 90 $B bedpost --backend $b --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/$b/bp" --force
    wall "track geodesic $b --dirs 8 ($run)" 90 $B track geodesic --backend $b --tensor "$W/$b/dti_tensor.nii.gz" --seeds "$D/wm.nii.gz" --dirs 8 --out "$W/$b/fibres.tck" --force
  done
  ls -l "$W/$b/fibres.tck" 2>/dev/null
  rm -rf "$W/$b" "$W/$b-cold"
done
stamp "pipeline at paper scale (CUDA)"
timeout 120 $B reproduce pipeline --backend cuda --scale paper --repeats 1 --out "$OUT/repro-pipeline" 2>&1 | grep -E "^\| |total"
stamp "done"
