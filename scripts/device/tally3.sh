#!/usr/bin/env bash
# Probabilistic streamlining, round 4 (issue 8: the tally on the device) on the H100 box, from
# the repo root with the release binary carried (builds nothing). Each step has its own time
# limit; the later steps get what is left of ~6 minutes. Prints:
#   1. `bench probtrack` (dataset 2 stand-in, 402,194 seeds x 50 x 2 halves, step 0.1 voxel,
#      threshold 0.9: 003 Table II dataset 2 row 1, ~3.0e8 steps) on CUDA and NVIDIA OpenCL,
#      device compaction, serial and --overlap: columns trace kernel ms, compaction ms, transfer
#      ms, tally kernel ms, tally ms (wall: kernel + keep bits + counters), wall ms, steps/s.
#      Round 3 had a host tally of 220 ms in a 347 ms wall; now expect a tally of a few ms and
#      a wall near kernels + transfer (~70 ms); overlap vs serial says whether two queues help
#      once there is no host work left to hide;
#   2. `reproduce probtrack-t2 probtrack-t4 --scale paper` on CUDA, the native CPU (16 cores),
#      PoCL and NVIDIA OpenCL (the last only if time is left): Tables II and IV beside ours,
#      each target's notes (fastest schedule per device and compaction path, B/C verdict).
#      CPU-like devices trace 1 seed in 16 (Table II) / 64 (Table IV), times scaled, labelled.
# Output under $OUT: tally3-*.txt and repro-<backend>/probtrack-t{2,4}.{md,csv,png}.
. "$(dirname "$0")/common.sh"
nproc
$B devices 2>&1 | tee "$OUT/tally3-devices.txt"
POCL=$(grep -E "^opencl" "$OUT/tally3-devices.txt" | grep -vi nvidia | grep -oE "opencl:[0-9]+:[0-9]+" | head -1)
NVCL=$(grep -E "^opencl" "$OUT/tally3-devices.txt" | grep -i nvidia | grep -oE "opencl:[0-9]+:[0-9]+" | head -1)
echo "PoCL: ${POCL:-none}  NVIDIA OpenCL: ${NVCL:-none}"

stamp "check: probtrack rows on CUDA and NVIDIA OpenCL (the device tally against the CPU)"
step 40 $B check --backend cuda --seed 21 2>&1 | grep -iE "probtrack|passed|fail|error"
[ -n "$NVCL" ] && step 40 $B check --backend "$NVCL" --seed 21 2>&1 | grep -iE "probtrack|passed|fail|error"
stamp "bench probtrack: CUDA, device compaction, serial and --overlap"
step 60 $B bench probtrack --backend cuda --overlap --repeats 3 2>&1 | tee "$OUT/tally3-bench-cuda.txt"
if [ -n "$NVCL" ]; then
  stamp "bench probtrack: NVIDIA OpenCL, serial and --overlap"
  step 45 $B bench probtrack --backend "$NVCL" --overlap --repeats 3 2>&1 | tee "$OUT/tally3-bench-nvcl.txt"
fi

BUDGET=${BUDGET:-400}
repro() { # backend, most seconds
  local left=$((BUDGET - (SECONDS - t0)))
  local lim=$(( left < $2 ? left : $2 ))
  if [ "$lim" -lt 20 ]; then echo "reproduce on $1: skipped, ${left} s left of the ${BUDGET} s budget"; return; fi
  stamp "reproduce probtrack-t2 probtrack-t4 --scale paper --backend $1 (limit $lim s)"
  local d="$OUT/repro-${1//:/-}"
  step "$lim" $B reproduce probtrack-t2 probtrack-t4 --backend "$1" --scale paper --repeats 1 --out "$d" 2>&1 | grep -vE "^  " | tail -40
  for t in t2 t4; do [ -f "$d/probtrack-$t.md" ] || echo "probtrack-$t on $1: no report (timed out after $lim s?)"; done
  grep -hE "fastest schedule" "$d"/probtrack-t4.md 2>/dev/null | head -8
}
repro cuda 120
repro cpu 75
[ -n "$POCL" ] && repro "$POCL" 120
[ -n "$NVCL" ] && repro "$NVCL" 120
stamp "tally3.sh done"
