#!/usr/bin/env bash
# The GPU host layer (issue 7) on the GPU machine, from the repo root with a release binary at
# ./dist/neuroport: conformance of every kernel incl. the layer's own rows on CUDA and both
# OpenCL platforms, kernel figures of the ported methods against the last round's
# (docs/results/h100-2026-11-22), and the user's wall time of dti / bedpost / track on the
# 358,600-voxel volume (stage split printed by each command). Reports go to $OUT.
. "$(dirname "$0")/common.sh"
mkdir -p "$OUT/repro"
stamp "check --backend all"
$B check --backend all --seed 7 | tee "$OUT/layer-check.txt"
stamp "bench layer: launches/s (queued; and each waited for, as every launch was before the layer) and copy rates"
$B bench layer --backend all | tee "$OUT/layer-bench.txt"
stamp "bench geodesic (1M fibres x 1000 RK2 steps; last round CUDA texture 1.0e10 steps/s)"
for b in cuda opencl:1:0; do $B bench geodesic --backend $b --fibres 1000000 --steps 1000 --repeats 3; done | tee "$OUT/layer-geodesic-bench.txt"
stamp "bench bedpost (205,082 voxels x 600 loops; last round 157 ms CUDA)"
for b in cuda opencl:1:0; do $B bench bedpost --backend $b --voxels 205082 --loops 600 --repeats 3; done | tee "$OUT/layer-bedpost-bench.txt"
stamp "reproduce bedpost-t3 (end to end: kernels + transfers; target <= 0.2 s ds1)"
$B reproduce bedpost-t3 --backend cuda --scale paper --repeats 3 --out "$OUT/repro" | tail -20
stamp "reproduce geodesic-t3"
$B reproduce geodesic-t3 --backend cuda --scale paper --repeats 3 --out "$OUT/repro" | tail -12
stamp "user pipeline volume (358,600 mask voxels, 134 volumes)"
W=$(mktemp -d)
/usr/bin/time -f "synth wall %e s, peak %M KB" $B synth --model sticks --dims 96,112,72 --voxel 1.8,1.8,1.8 --b0 6 --dirs 64 --shells 1000,2000 --out $W/vol 2>&1 | tail -3
ls -la $W/vol
for b in cuda opencl:1:0; do
  stamp "dti on $b"
  /usr/bin/time -f "dti $b wall %e s, peak %M KB" $B dti --backend $b --dwi $W/vol/dwi.nii.gz --bvals $W/vol/bvals --bvecs $W/vol/bvecs --mask $W/vol/mask.nii.gz --out $W/dti_$b 2>&1 | tail -8
  stamp "bedpost on $b"
  /usr/bin/time -f "bedpost $b wall %e s, peak %M KB" $B bedpost --backend $b --dwi $W/vol/dwi.nii.gz --bvals $W/vol/bvals --bvecs $W/vol/bvecs --mask $W/vol/mask.nii.gz --out $W/bp_$b 2>&1 | tail -8
  stamp "track geodesic --dirs 8 on $b"
  /usr/bin/time -f "track $b wall %e s, peak %M KB" $B track geodesic --backend $b --tensor $W/dti_${b}_tensor.nii.gz --mask $W/vol/wm.nii.gz --seeds $W/vol/wm.nii.gz --dirs 8 --out $W/t_$b.tck 2>&1 | tail -8
done
rm -rf $W
stamp "layer.sh done"
