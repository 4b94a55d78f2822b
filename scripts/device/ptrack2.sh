#!/usr/bin/env bash
# Probabilistic streamlining speed (issue 8, round 3) on the H100 box, from the repo root with
# the release binary at ./dist/neuroport (or $NEUROPORT); under 7 minutes, each step with its
# own time limit. Prints:
#   1. `check --backend cuda`: the probtrack rows (exact against the CPU: must say pass);
#   2. `bench probtrack` (dataset 2 stand-in, 402,194 seeds x 50 x 2 halves, step 0.1 voxel,
#      threshold 0.9: 003 Table II dataset 2 row 1, target <= 60 ms / >= 5e9 steps/s) on CUDA
#      (device and host compaction, each serial and with --overlap), NVIDIA OpenCL, PoCL and
#      the native CPU on 16 threads and on 1 thread (CPU-like devices: 1 seed in 16); columns:
#      trace kernel ms, compaction ms, transfer ms, host tally ms, wall ms, steps/s of the
#      kernels and of the wall, and the floor (36 B/step + 104 B/path at 3350 GB/s);
#   3. `reproduce probtrack-t2` and `probtrack-t4` at paper scale on CUDA (then NVIDIA OpenCL
#      if time is left): Table II / IV beside ours, the notes say whether B/C still win;
#   4. ncu of the segment kernel (its first 3 launches at paper scale, no warm-up: SpeedOfLight +
#      MemoryWorkloadAnalysis), to see whether the segment kernel is latency-, L2- or DRAM-bound.
# Output under $OUT: ptrack2-*.txt and repro/.
. "$(dirname "$0")/common.sh"
mkdir -p "$OUT/repro"
nproc; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
$B devices 2>&1 | tee "$OUT/ptrack2-devices.txt"
POCL=$(grep -E "^opencl" "$OUT/ptrack2-devices.txt" | grep -vi nvidia | grep -oE "opencl:[0-9]+:[0-9]+" | head -1)
NVCL=$(grep -E "^opencl" "$OUT/ptrack2-devices.txt" | grep -i nvidia | grep -oE "opencl:[0-9]+:[0-9]+" | head -1)
echo "PoCL: ${POCL:-none}  NVIDIA OpenCL: ${NVCL:-none}"

stamp "check --backend cuda (probtrack rows)"
step 120 $B check --backend cuda --seed 11 > "$OUT/ptrack2-check.txt" 2>&1; grep -E "probtrack|FAIL" "$OUT/ptrack2-check.txt"

stamp "bench probtrack: CUDA, device + host compaction, serial + overlap"
step 90 $B bench probtrack --backend cuda --compaction device,host --overlap --repeats 3 2>&1 | tee "$OUT/ptrack2-bench-cuda.txt"
[ -n "$NVCL" ] && { stamp "bench probtrack: NVIDIA OpenCL"; step 60 $B bench probtrack --backend "$NVCL" --overlap --repeats 3 2>&1 | tee "$OUT/ptrack2-bench-nvcl.txt"; }
[ -n "$POCL" ] && { stamp "bench probtrack: PoCL (1 seed in 16)"; step 60 $B bench probtrack --backend "$POCL" --repeats 1 2>&1 | tee "$OUT/ptrack2-bench-pocl.txt"; }
stamp "bench probtrack: native CPU, all threads then 1 thread (1 seed in 16)"
step 45 $B bench probtrack --backend cpu --repeats 1 2>&1 | tee "$OUT/ptrack2-bench-cpu.txt"
step 60 $B --threads 1 bench probtrack --backend cpu --repeats 1 2>&1 | tee "$OUT/ptrack2-bench-cpu1.txt"

stamp "reproduce probtrack-t2 --scale paper (CUDA)"
step 75 $B reproduce probtrack-t2 --backend cuda --scale paper --repeats 3 --out "$OUT/repro/t2-cuda" 2>&1 | grep -vE "^  " | tail -30
grep -E "steps per second|total time" "$OUT/repro/t2-cuda/probtrack-t2.md" 2>/dev/null | head -24
stamp "reproduce probtrack-t4 --scale paper (CUDA)"
step 60 $B reproduce probtrack-t4 --backend cuda --scale paper --repeats 1 --out "$OUT/repro/t4-cuda" 2>&1 | grep -vE "^  " | tail -30
if [ -n "$NVCL" ] && [ $((SECONDS - t0)) -lt 300 ]; then
  stamp "reproduce probtrack-t2 --scale paper (NVIDIA OpenCL)"
  step 60 $B reproduce probtrack-t2 --backend "$NVCL" --scale paper --repeats 1 --out "$OUT/repro/t2-nvcl" 2>&1 | grep -vE "^  " | tail -20
fi
if command -v ncu >/dev/null && [ $((SECONDS - t0)) -lt 360 ]; then
  stamp "ncu: probtrack_segment, first 3 launches of the paper-scale run (1, 2 and 5 steps)"
  step 60 ncu --kernel-name regex:probtrack_segment --launch-count 3 --section SpeedOfLight --section MemoryWorkloadAnalysis \
    $B bench probtrack --backend cuda --repeats 1 --no-warmup > "$OUT/ptrack2-ncu.txt" 2>&1
  grep -E "probtrack_segment|Throughput|Duration|Hit Rate|Busy|Elapsed" "$OUT/ptrack2-ncu.txt" | head -40
fi
stamp "ptrack2.sh done"
