#!/usr/bin/env bash
# Geodesic ray-tracing (paper 001) on the GPU machine, from the repo root with a release binary
# (dist/neuroport, or ./neuroport). Prints: the conformance check of every kernel on every device
# (geodesic_trace_* rows), the RK2 steps/s benchmark (1M fibres x 1000 steps on each GPU device and
# interpolation; CPUs measure the same rate on fewer fibres), and the paper tables geodesic-t1,
# -t3, -f6, -f7 at paper scale. Reports go to $OUT. About 2 minutes on an H100 host.
# NCU=1 adds an Nsight Compute profile of both tracing kernels (not part of the time budget).
set -u
B=${NEUROPORT:-./dist/neuroport}
[ -x "$B" ] || B=./neuroport
OUT=${OUT:-device-out}
mkdir -p "$OUT"
t0=$SECONDS
stamp() { echo "--- $1 ($((SECONDS - t0)) s)"; }

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

if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
  stamp "ncu: tracing kernels, 262144 fibres x 200 steps"
  ncu --kernel-name regex:geodesic_trace --launch-count 2 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
      --section ComputeWorkloadAnalysis --section SchedulerStats --section WarpStateStats \
      $B --backend cuda bench geodesic --fibres 262144 --steps 200 --repeats 1 2>&1 | tee "$OUT/geodesic-ncu.txt"
  stamp "ncu: geodesic-t3's 4096-seed launch (latency-bound: few warps per SM)"
  ncu --kernel-name regex:geodesic_trace_texture --launch-skip 6 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats \
      $B reproduce geodesic-t3 --backend cuda --scale paper --repeats 1 --out "$OUT/ncu-t3" 2>&1 | tee -a "$OUT/geodesic-ncu.txt"
fi
stamp "done"
