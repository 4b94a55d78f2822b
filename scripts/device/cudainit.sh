#!/usr/bin/env bash
# Round 27: where a CUDA command's start goes on a 4-GPU host. First measured (binary before the
# change): cuInit 0.90 s with 4 GPUs visible, 0.20 s with CUDA_VISIBLE_DEVICES=0; `dti --backend
# cuda:0` on a small volume waited 0.98-1.25 s for its devices, 0.30-0.37 s with one visible.
# Now commands whose spec can use only the first CUDA device set CUDA_VISIBLE_DEVICES=0 themselves:
# this checks `dti` with auto, cuda:0 and cuda:1 (not restricted), that their outputs agree, and
# that `devices` still lists every GPU.
. "$(dirname "$0")/common.sh"
W=$(mktemp -d)
$B synth --model tensor --dims 32,32,16 --out "$W/d" > /dev/null
for i in 1 2 3; do
  for be in auto cuda:0 cuda:1; do
    NEUROPORT_STAGES=1 $B --backend $be --force dti --dwi "$W/d/dwi.nii.gz" --bvals "$W/d/bvals" --bvecs "$W/d/bvecs" --out "$W/o-$be/" 2>&1 >/dev/null | grep -oE "devices [0-9]+ ms|main [0-9]+ ms" | tr '\n' ' ' | sed "s/^/$be: /"; echo
  done
done
for f in "$W"/o-auto/*; do cmp -s "$f" "$W/o-cuda:0/$(basename "$f")" && cmp -s "$f" "$W/o-cuda:1/$(basename "$f")" || echo "DIFFER $(basename "$f")"; done
echo "$(ls "$W/o-auto" | wc -l) files compared"
echo "devices lists $($B devices | grep -c '^cuda ') CUDA devices"
python3 - <<'PY'
import time, ctypes
t=time.time(); cu=ctypes.CDLL("libcuda.so.1"); r=cu.cuInit(0); print("cuInit", r, round(time.time()-t,3), "s")
PY
rm -rf "$W"
