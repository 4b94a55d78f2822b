#!/usr/bin/env bash
# Round 22 on the lent H100 (docs/performance.md, FIM "Round 22"; results in
# docs/results/h100-2026-11-27-round22/). Binaries: dist/neuroport (new, the commit of each part),
# dist/neuroport-prev (round 21's final, e69c23c).
#   PART=a (~10 min): FIM, fim_update's packed layout (the voxels that go fill the first slots;
#     where at most 32 go, 32 slots with twice the lanes): `check` (FIM rows) on CUDA, NVIDIA
#     OpenCL and PoCL 5.0, seed 290; `bench fim --example 3` prev and new alternating, 004's
#     solver, two rounds, and the exact one once, CUDA and NVIDIA OpenCL; new with
#     NEUROPORT_FIM_PACK=64 (packing without more lanes) and 16 on CUDA, two rounds; ncu per
#     kernel (new); `fim --target` with both local solvers, prev and new, maps compared (the
#     same bytes expected: the packing moves work between items, not arithmetic).
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
PREV=$PWD/dist/neuroport-prev
if [ "$PART" = a ]; then
  fim_against prev "$PREV" 290 exact
  for rep in 1 2; do for k in 64 16; do
    fimi "new pack $k ($rep)" "$B" cuda paper 0 NEUROPORT_FIM_PACK=$k
  done; done > /dev/null
  fimi "new pack 64" "$B" cuda exact 0 NEUROPORT_FIM_PACK=64 > /dev/null
  fim_summary
  fim_maps_same prev "$PREV"
fi
