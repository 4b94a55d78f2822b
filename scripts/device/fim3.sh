#!/usr/bin/env bash
# Fast Iterative Method, round 3 (issue 9, paper 004) on the H100 box, from the repo root with
# the release binary carried (builds nothing). Every step has its own timeout; the whole script
# stays under ~5 minutes (45 + 3 x 40 + 60 + 60 + 120 s at most). Prints:
#   1. `check --backend cuda`: the fim rows (block FIM device list / host list / Tsai against
#      CPU node FIM) - all must say pass;
#   2. `bench fim --example 3` (the 256x256x100 brain-like volume alone) on cuda, NVIDIA OpenCL
#      and cpu (16 cores): one line per device "label  X ms wall, Y ms kernels: iterations,
#      updates per voxel, active blocks per iteration mean/max, host syncs per iteration" -
#      the issue's targets: cuda <= 10 ms, OpenCL <= 1.2x cuda;
#   3. `reproduce fim-t1 --scale paper` on cuda, on NVIDIA OpenCL and on cpu: a stderr line per
#      row as it starts ("fim-t1 example N ... on DEVICE [variant]") and as it ends ("X s:
#      iterations, updates per voxel ..."), then the report (004 Table 1 beside ours; the cpu
#      run's notes hold "CPU node FIM (all cores) is at least N x faster than fast sweeping
#      Godunov", target >= 10).
# Reports go to $OUT (fim3-check.txt, repro-{cuda,opencl,cpu}/fim-t1.*).
. "$(dirname "$0")/common.sh"
"$B" devices
OCL=$("$B" devices 2>/dev/null | grep -i opencl | grep -i nvidia | grep -oE 'opencl:[0-9]+:[0-9]+' | head -1)
stamp "check --backend cuda, fim rows"
timeout 45 "$B" check --backend cuda --seed 9 > "$OUT/fim3-check.txt" 2>&1
grep -E "fim|passed|error" "$OUT/fim3-check.txt"
for be in cuda ${OCL:-} ; do
  stamp "bench fim --example 3 --backend $be"
  step 40 "$B" --backend "$be" bench fim --example 3 --repeats 5
done
[ -n "${OCL:-}" ] || echo "no NVIDIA OpenCL device listed by 'devices'"
stamp "bench fim --example 3 --backend cpu"
step 40 "$B" --backend cpu bench fim --example 3 --repeats 0
repro() { # timeout, backend, repeats
  stamp "reproduce fim-t1 --scale paper --backend $2"
  d="$OUT/repro-${2%%:*}"
  step "$1" "$B" --backend "$2" reproduce fim-t1 --scale paper --repeats "$3" --out "$d"
  [ -f "$d/fim-t1.md" ] || echo "fim-t1 on $2: no report (timed out after $1 s?)"
}
repro 60 cuda 3
if [ -n "${OCL:-}" ]; then repro 60 "$OCL" 3; fi
repro 120 cpu 1
stamp "fim3.sh done"
