#!/usr/bin/env bash
# Affine registration, round 3 (issue 10): one-launch cost kernel (last-work-group reduction,
# MI/NMI entropies on the device, one 32-byte record read into pinned memory per evaluation),
# coarse-level search. From the repo root with the release binary at ./dist/neuroport (or
# ./neuroport, ./target/release/neuroport); writes under $OUT. Prints:
#   1. `check --backend cuda` and `check --backend opencl` register rows: in-kernel overlap and
#      MI/NMI joint histograms identical to the CPU's, sums within float32 accumulation, MI/NMI
#      entropies within float rounding; texture rows within the bound derived from the
#      device's filter_bits() (8 on NVIDIA);
#   2. `reproduce airwc --scale paper` on cuda, then NVIDIA OpenCL, then the CPU (all cores +
#      one thread), each under its own timeout: ms per evaluation per cost (sad, ssd, ncc, mi,
#      nmi; in-kernel and texture), evaluations, registration time, error vs the known
#      transform. Targets: <= 0.05 ms per SAD/NCC evaluation on CUDA (floor ~0.02-0.03 ms),
#      MI <= 3x SAD, whole 12-dof registration <= 0.2 s, OpenCL within 1.2x of CUDA.
# Budget: under 6 minutes (timeouts 60 + 60 + 90 + 90 + 150 s).
. "$(dirname "$0")/common.sh"
mkdir -p "$OUT/reg2"
"$B" devices
stamp "check cuda"
timeout 60 "$B" check --backend cuda --seed 11 | grep -E "register|^error" | tee "$OUT/reg2/check-cuda.txt"
stamp "check opencl"
timeout 60 "$B" check --backend opencl --seed 11 | grep -E "register|^error" | tee "$OUT/reg2/check-opencl.txt"
summary() { # the per-evaluation and total rows of a reproduce run
  grep -hE "time per evaluation|registration time|evaluations|displacement" "$1"/*.md 2>/dev/null | head -60
}
for b in cuda opencl cpu; do
  stamp "reproduce airwc --scale paper --backend $b"
  lim=90; [ "$b" = cpu ] && lim=150
  timeout $lim "$B" reproduce airwc --backend "$b" --scale paper --repeats 3 --out "$OUT/reg2/airwc-$b" 2>&1 | tail -3
  summary "$OUT/reg2/airwc-$b"
done
stamp "reg2.sh done"
