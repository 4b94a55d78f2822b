#!/usr/bin/env bash
# Round 27: where a CUDA command's start goes on a 4-GPU host: `dti` on a small volume with
# `--backend cuda:0`, its `devices` stage, with every GPU visible and with CUDA_VISIBLE_DEVICES=0
# (the driver then initialises one GPU), alternating, three times each.
. "$(dirname "$0")/common.sh"
W=$(mktemp -d)
$B synth --model tensor --dims 32,32,16 --out "$W/d" > /dev/null
for i in 1 2 3; do
  for vis in all 0; do
    if [ $vis = all ]; then env=(); else env=(CUDA_VISIBLE_DEVICES=0); fi
    s=$(date +%s.%N)
    env "${env[@]}" NEUROPORT_STAGES=1 $B --backend cuda:0 --force dti --dwi "$W/d/dwi.nii.gz" --bvals "$W/d/bvals" --bvecs "$W/d/bvecs" --out "$W/o-$vis/" 2>&1 >/dev/null | grep '^stages' | sed "s/^/visible $vis, wall $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N)-$s}") s: /"
  done
done
python3 - <<'PY'
import time, ctypes
t=time.time(); cu=ctypes.CDLL("libcuda.so.1"); r=cu.cuInit(0); print("cuInit", r, round(time.time()-t,3), "s")
PY
CUDA_VISIBLE_DEVICES=0 python3 - <<'PY'
import time, ctypes
t=time.time(); cu=ctypes.CDLL("libcuda.so.1"); r=cu.cuInit(0); print("cuInit one visible", r, round(time.time()-t,3), "s")
PY
nvidia-smi --query-gpu=index,persistence_mode --format=csv
rm -rf "$W"
