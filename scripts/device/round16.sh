#!/usr/bin/env bash
# Round 16 on the lent H100 (docs/performance.md, FIM "Round 16"; results in
# docs/results/h100-2026-11-26-round16/). Binary: dist/neuroport, built at the commit each part names.
#   PART=a (~2 min; commit 7f7ac2a, reverted after it): the wide root (cl/common/fim.h np_fim_ws): `check` on PoCL 5.0, CUDA and
#     NVIDIA OpenCL at seed 201; then `bench fim --example 3` with NEUROPORT_FIM_WIDE = 65 (never
#     wide: the sequential search alone, as round 15), 4, 8, 2 and 16 alternating, two rounds,
#     CUDA and NVIDIA OpenCL, both local solvers.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
if [ "$PART" = a ]; then
  checks 201 "$POCL" cuda "$OCL"
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do for w in ${WIDES:-65 4 8 2 16}; do
    fim "wide $w ($rep)" "$B" "$be" $loc NEUROPORT_FIM_WIDE=$w
  done; done; done; done
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
fi
