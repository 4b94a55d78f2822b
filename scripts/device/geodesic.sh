#!/usr/bin/env bash
# Geodesic ray-tracing (paper 001) on the GPU machine, from the repo root with a release binary
# (dist/neuroport, or ./neuroport). Prints: the conformance check of every kernel on every device
# (geodesic_trace_* rows), the RK2 steps/s benchmark (1M fibres x 1000 steps on each GPU device and
# interpolation; CPUs measure the same rate on fewer fibres), and the paper tables geodesic-t1,
# -t3, -f6, -f7 at paper scale. Reports go to $OUT. About 2 minutes on an H100 host.
# NCU=1 adds Nsight Compute profiles of both tracing kernels and of geodesic-t3's 4096-seed launch
# (not part of the time budget; reports in $OUT/geodesic-ncu-*.txt).
. "$(dirname "$0")/common.sh"

stamp "devices"
$B devices

stamp "check: every kernel against the CPU reference (look at the geodesic_trace_* rows)"
$B check --backend all --seed 7 | tee "$OUT/geodesic-check.txt"

stamp "bench: RK2 steps/s, long 1024x64x64 volume, h = 0.2, no fibre leaves"
$B bench geodesic --backend all --fibres 1000000 --steps 1000 --cpu-fibres 16384 --repeats 3 | tee "$OUT/geodesic-bench.txt"
stamp "bench: CUDA with every point written (12 B per step) and fetched, 262144 fibres"
$B bench geodesic --backend cuda --fibres 262144 --steps 1000 --points --repeats 3 | tee -a "$OUT/geodesic-bench.txt"

stamp "bench: CUDA block size sweep (NEUROPORT_GEODESIC_BLOCK; default 64, 32 below 256 fibres per SM)"
for b in 32 64 128 256; do
  echo "block $b"; NEUROPORT_GEODESIC_BLOCK=$b $B bench geodesic --backend cuda --fibres 1000000 --steps 250 --repeats 2 | tail -n +3
done | tee -a "$OUT/geodesic-bench.txt"

stamp "reproduce geodesic-t1 geodesic-t3 geodesic-f6 geodesic-f7 (paper scale)"
$B reproduce geodesic-t1 geodesic-t3 geodesic-f6 geodesic-f7 --backend all --scale paper --repeats 3 --out "$OUT/repro"

if [ "${NCU:-0}" = 1 ]; then
  NCU_BIN=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats --section InstructionStats"
  # One profile per kernel (a regex over both would profile the texture kernel's warm-up and run).
  for k in texture kernel; do
    stamp "ncu: geodesic_trace_$k, 262144 fibres x 200 steps (ncu locks the SM clock at 1.6 GHz)"
    $NCU_BIN --kernel-name geodesic_trace_$k --launch-count 1 $S \
        $B bench geodesic --backend cuda --interp $k --fibres 262144 --steps 200 --repeats 1 > "$OUT/geodesic-ncu-$k.txt" 2>&1
    grep -E "Duration|Registers Per|Occupancy|DRAM Throughput|L1/TEX Hit|L2 Hit|Cache Throughput|Issue Slots Busy|Warp Cycles Per Issued|Executed Instructions  " "$OUT/geodesic-ncu-$k.txt"
  done
  stamp "ncu: geodesic-t3's 4096-seed texture launch (latency-bound: one warp per SM)"
  $NCU_BIN --kernel-name geodesic_trace_texture --launch-skip 6 --launch-count 1 $S \
      $B reproduce geodesic-t3 --backend cuda --scale paper --repeats 1 --out "$OUT/ncu-t3" > "$OUT/geodesic-ncu-t3.txt" 2>&1
  grep -E "Duration|Grid Size|Registers Per|L1/TEX Hit|L2 Hit|Issue Slots Busy|Warp Cycles Per Issued|Executed Instructions  |stalled" "$OUT/geodesic-ncu-t3.txt"
fi
stamp "done"
