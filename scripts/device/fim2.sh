#!/usr/bin/env bash
# Fast Iterative Method, round 2 (issue 9, paper 004) on the H100 box, from the repo root with
# the release binary carried at ./dist/neuroport (builds nothing). Each step has its own
# timeout; the whole script stays under ~6 minutes. Prints:
#   1. `check --backend cuda`: the fim rows (fim_block[device list], [host list], [tsai]
#      against CPU node FIM, tolerance L * (1e-6 + 8 eps_f32)) - all must say pass;
#   2. `reproduce fim-t1 --scale paper` on cuda, on NVIDIA OpenCL and on the CPU (16 cores):
#      004 Table 1 beside ours; read off example 3 "block FIM, device list" (cuda <= 0.010 s,
#      OpenCL within 1.2x), the kernel ms column, the notes "iterations, updates per voxel,
#      active blocks per iteration", "Tsai ... x the index test" and "CPU node FIM (all cores)
#      is N x faster than fast sweeping Godunov" (N >= 10);
#      The cpu run holds the one-thread rows (node FIM and the first 16 Godunov sweeps of
#      example 3, a lower bound) and "N host syncs per iteration" is in the GPU notes.
# Reports go to $OUT (fim2-check.txt, repro-{cuda,opencl,cpu}/fim-t1.*).
. "$(dirname "$0")/common.sh"
"$B" devices
# The NVIDIA OpenCL device: the first OpenCL line naming NVIDIA in `devices`.
OCL=$("$B" devices 2>/dev/null | grep -i opencl | grep -i nvidia | grep -oE 'opencl:[0-9]+:[0-9]+' | head -1)
stamp "check --backend cuda, fim rows"
timeout 45 "$B" check --backend cuda --seed 9 > "$OUT/fim2-check.txt" 2>&1
grep -E "fim|passed|error" "$OUT/fim2-check.txt"
step() { # timeout, backend, repeats
  stamp "reproduce fim-t1 --scale paper --backend $2"
  d="$OUT/repro-${2%%:*}"
  timeout "$1" "$B" reproduce fim-t1 --backend "$2" --scale paper --repeats "$3" --out "$d" 2>&1 | grep -vE "^  "
  [ -f "$d/fim-t1.md" ] || echo "fim-t1 on $2: no report (timed out after $1 s?)"
}
step 75 cuda 3
if [ -n "${OCL:-}" ]; then step 75 "$OCL" 3; else echo "no NVIDIA OpenCL device listed by 'devices'"; fi
step 180 cpu 1
stamp "fim2.sh done"
