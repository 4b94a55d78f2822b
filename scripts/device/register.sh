#!/usr/bin/env bash
# Affine registration (issue 10, paper 002 AIRWC) on the GPU machine, from the repo root with a
# release binary at ./dist/neuroport or ./neuroport. Prints:
#   1. `check --backend all`: the register rows (in-kernel: overlap and MI/NMI histograms equal
#      to the CPU's, sums within float32 accumulation; texture: within the 8-bit filter bound);
#   2. `reproduce airwc --scale paper`: 240x256x176 phantoms, (a) same subject 6 dof SAD,
#      (b) two subjects 12 dof NCC, per device (1 thread: evaluation time only; all cores, CUDA
#      and OpenCL in-kernel and texture): ms per evaluation, evaluations, registration time,
#      error vs the known transform, speed-ups; published 6.7 ms / 354 / 2.39 s / 6 s beside.
#      Targets: <= 0.05 ms per SAD/NCC evaluation on CUDA, whole 12-dof multi-resolution
#      registration <= 0.2 s wall, OpenCL within 1.2x of CUDA.
# Not yet: per-cost (SSD, MI, NMI) evaluation times at paper scale (no T1 synth command to
# write the pair to disk for `register` yet).
. "$(dirname "$0")/common.sh"
mkdir -p "$OUT/repro"
"$B" devices
echo "--- check (all devices)"
"$B" check --backend all --seed 11 | grep -E "register|kernel" | tee "$OUT/register-check.txt"
echo "--- reproduce airwc at paper scale ($((SECONDS - t0)) s so far)"
"$B" reproduce airwc --backend all --scale paper --repeats 3 --out "$OUT/repro"
echo "--- register.sh done in $((SECONDS - t0)) s"
