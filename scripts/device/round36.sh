#!/usr/bin/env bash
# Round 36 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 35's).
#   a. NVIDIA OpenCL's lone evaluation (issue 10: 1.2-1.3x CUDA's wall, kernels at 0.99-1.04x;
#      rounds 17-19 and 35 found the ~13 us launch call and the read's enqueue on its path).
#      examples/cl_gate_probe (dist/cl_gate_probe): a ~50 us kernel and a 32-byte record, launched
#      as register does (a), enqueued one evaluation ahead and held by a user event (b: the
#      parameter written from pinned memory; c: parameter and record through mapped buffers the
#      kernel touches), three runs of 500; then `bench register` on CUDA and NVIDIA OpenCL.
. "$(dirname "$0")/common.sh"
round_start
if [[ $PART == *a* ]]; then
  gpu_setup
  for rep in 1 2 3; do
    stamp "cl_gate_probe NVIDIA ($rep)"
    step 120 dist/cl_gate_probe NVIDIA 500 | tee -a "$OUT/probe.txt"
  done
  stamp "cl_gate_probe PoCL"
  step 120 dist/cl_gate_probe Portable 20 | tee -a "$OUT/probe.txt"
  for rep in 1 2; do breg "new ($rep)" cuda; breg "new ($rep)" "$OCL"; done
fi
#   b, c. The round's merged binary against round 35's: `check` (every row) on CUDA, NVIDIA OpenCL
#      and PoCL; `bench register` alternating (the cost kernels' new finiteness tests); `register`
#      12 dof NCC on two 1 mm brains, alternating, files compared; every user command on
#      user-sized inputs, files compared (the tensor, samples and NaN rules). c: the same less
#      the user commands, after the NaN/Inf tests went into a program of their own.
if [[ $PART == *b* || $PART == *c* ]]; then
  gpu_setup
  checks 436 cuda "$OCL" "$POCL"
  register_against_prev
  if [[ $PART == *b* ]]; then
    user_commands "$OLD" "$NEW" same-users.txt
    summary users.txt "main"
  fi
fi
