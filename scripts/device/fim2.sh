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
#   3. example 3 with node FIM on one CPU thread (`--threads 1`, the per-core figure).
# Reports go to $OUT (fim2-check.txt, repro-{cuda,opencl,cpu}/fim-t1.*, fim2-1thread.txt).
set -u
B=${NEUROPORT:-./dist/neuroport}
[ -x "$B" ] || B=./neuroport
OUT=${OUT:-device-out}
mkdir -p "$OUT"
t0=$SECONDS
stamp() { echo "--- $1 ($((SECONDS - t0)) s so far)"; }
"$B" devices
# The NVIDIA OpenCL device: the first OpenCL line naming NVIDIA in `devices`.
OCL=$("$B" devices 2>/dev/null | grep -i opencl | grep -i nvidia | grep -oE 'opencl:[0-9]+:[0-9]+' | head -1)
stamp "check --backend cuda, fim rows"
timeout 60 "$B" check --backend cuda --seed 9 > "$OUT/fim2-check.txt" 2>&1
grep -E "fim|passed|error" "$OUT/fim2-check.txt"
for be in cuda ${OCL:-} cpu; do
  stamp "reproduce fim-t1 --scale paper --backend $be"
  d="$OUT/repro-${be%%:*}"
  timeout 120 "$B" reproduce fim-t1 --backend "$be" --scale paper --repeats 3 --out "$d" 2>&1 | grep -vE "^  "
  [ -f "$d/fim-t1.md" ] && grep -E "example 3" "$d/fim-t1.md" | head -20
done
[ -n "${OCL:-}" ] || echo "no NVIDIA OpenCL device listed by 'devices'"
stamp "example 3, node FIM on one CPU thread"
timeout 90 "$B" --threads 1 reproduce fim-t1 --backend cpu --scale paper --only-example 3 --repeats 1 --out "$OUT/repro-1thread" 2>&1 | grep -vE "^  " | tee "$OUT/fim2-1thread.txt"
stamp "fim2.sh done"
