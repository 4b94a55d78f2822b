#!/usr/bin/env bash
# Round 21 on the lent H100 (docs/performance.md, FIM "Round 21"; results in
# docs/results/h100-2026-11-26-round21/). Binaries: dist/neuroport (new, the commit of each part),
# dist/neuroport-prev (round 20's final, 636cb77).
#   PART=a (~6 min): FIM, the skip extended to several Jacobi updates a launch (after the first,
#     only voxels an in-block neighbour of which the update before lowered) and deferred roots
#     with them: `check` (FIM rows) on CUDA and NVIDIA OpenCL, seed 270; `bench fim --example 3`
#     with --inner 1-4, 004's solver, prev (inner 1) and new alternating on CUDA, two rounds; the
#     exact solver and NVIDIA OpenCL once; `fim --target` prev and new on CUDA (inner 1, the
#     default), the four maps compared byte for byte.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
PREV=$PWD/dist/neuroport-prev
# fimi LABEL BINARY BACKEND LOCAL INNER [ENV...]: `bench fim --example 3 --inner INNER` (median
# of 3, stages on), its last two lines appended to $F under "## LABEL".
fimi() {
  local label=$1 bin=$2 be=$3 loc=$4 inner=$5; shift 5
  stamp "bench fim $label $be $loc inner $inner"
  { echo "## $label $be $loc inner $inner"; env "$@" NEUROPORT_STAGES=1 timeout 120 "$bin" bench fim --example 3 --backend "$be" --local "$loc" --inner "$inner" --repeats 3 2>&1 | tail -2 | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$F"
}
summary() { echo "=== summary"; grep -E "^##|wall" "$F" | sed -e 's/ host syncs.*//' -e 's/active blocks per iteration/active/' | paste - -; }
if [ "$PART" = a ]; then
  CHECK_ROWS=fim_ checks 270 cuda "$OCL"
  F="$OUT/fim.txt"
  for rep in 1 2; do
    fimi "prev ($rep)" "$PREV" cuda paper 1
    for inner in 1 2 3 4; do fimi "new ($rep)" "$B" cuda paper $inner; done
  done > /dev/null
  fimi "prev" "$PREV" cuda exact 1 > /dev/null
  for inner in 1 2 4; do fimi "new" "$B" cuda exact $inner; done > /dev/null
  for inner in 1 2 4; do fimi "new" "$B" "$OCL" paper $inner; done > /dev/null
  summary
  fim_phantom
  for rep in 1 2; do
    fim_target "prev ($rep)" "$PREV" cuda "$W/old-cuda"
    fim_target "new ($rep)" "$B" cuda "$W/new-cuda"
  done > /dev/null
  grep -E "^##|stages" "$OUT/user.txt" | sed -E 's/stages:.*(fim iterations [0-9]+ ms).*/\1/' | paste - -
  for m in cost1 cost2 total pathway; do cmp -s "$W/old-cuda_$m.nii.gz" "$W/new-cuda_$m.nii.gz" && echo "cuda $m: same bytes" || echo "cuda $m: DIFFER"; done | tee "$OUT/same.txt"
fi
