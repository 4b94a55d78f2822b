#!/usr/bin/env bash
# Round 20 on the lent H100 (docs/performance.md, FIM "Round 20"; results in
# docs/results/h100-2026-11-26-round20/). Binaries: dist/neuroport (new, the commit of each part),
# dist/neuroport-prev (round 19's final, f1bbf3a).
#   PART=a (~9 min): FIM, the skip of voxels none of whose neighbours moved since their last
#     evaluation (launch stamps seen/moved): `check` on CUDA, NVIDIA OpenCL and PoCL 5.0 (seed
#     260); `bench fim --example 3` prev, new and new with NEUROPORT_FIM_SKIP=0 alternating, both
#     local solvers, two rounds on CUDA and NVIDIA OpenCL; ncu per FIM kernel (new, 004's
#     solver); `fim --target` prev and new, the four maps compared byte for byte.
#     Found: the maps differed from run to run on both GPUs (a voxel's lanes each read the
#     stamps across its faces and could read a racing write differently; PoCL and check's 14^3
#     field passed).
#   PART=b (~9 min): the fix (lane 0 decides for the voxel's lanes) as part a, seed 261, and
#     `check` with part a's kernels (dist/neuroport-bug, with the fix's new check row for many
#     work-groups) on CUDA and NVIDIA OpenCL: the row must fail there.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
PREV=$PWD/dist/neuroport-prev
# ncu_fim LOCAL [ENV...]: ncu's time, warp instructions and registers per FIM kernel over one
# solve of example 3 on CUDA with $B and that local solver, summed per kernel.
ncu_fim() {
  local loc=$1; shift
  ncu_fim_run "$loc$#" "$B" "$loc" "$@"
}
# three LABELS...: `fim` with prev, new and new without the skip alternating, two rounds, CUDA
# and NVIDIA OpenCL, both local solvers; the summary lines.
three() {
  local rep be loc
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do
    fim "prev ($rep)" "$PREV" "$be" $loc
    fim "new ($rep)" "$B" "$be" $loc
    fim "new no skip ($rep)" "$B" "$be" $loc NEUROPORT_FIM_SKIP=0
  done; done; done
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
}
if [ "$PART" = a ] || [ "$PART" = b ]; then
  CHECK_ROWS=fim_ checks $([ "$PART" = a ] && echo 260 || echo 261) cuda "$OCL" "$POCL"
  if [ "$PART" = b ]; then
    (OUT="$OUT/bug"; mkdir -p "$OUT"; B=$PWD/dist/neuroport-bug; CHECK_ROWS=fim_ checks 261 cuda "$OCL")
  fi
  three
  ncu_fim paper
  fim_phantom
  fim_target_pairs "prev" "$PREV" "" "new" "$B" ""
fi
# Part c (~4 min): the skip's update took 91 registers against round 19's 71 (ncu, part b): two
# work-groups an SM instead of three. CUDA, example 3: prev, and new with NVRTC's
# --maxrregcount none / 80 / 72 / 64 (004's solver) and none / 96 / 80 (exact), two rounds; ncu
# per kernel, exact solver, new, none and 80. Then `check` (FIM rows) with part a's kernels
# (dist/neuroport-bug) and the fix, each with the many-groups row now on example 3's full size,
# on CUDA and NVIDIA OpenCL, seed 262 (part b's 96x96x40 row passed with part a's kernels).
if [ "$PART" = c ]; then
  (OUT="$OUT/bug"; mkdir -p "$OUT"; B=$PWD/dist/neuroport-bug; CHECK_ROWS=fim_ checks 262 cuda "$OCL")
  CHECK_ROWS=fim_ checks 262 cuda "$OCL"
  F="$OUT/fim.txt"
  for rep in 1 2; do
    fim "prev ($rep)" "$PREV" cuda paper
    for r in none 80 72 64; do
      if [ $r = none ]; then fim "new ($rep)" "$B" cuda paper; else fim "new maxrreg $r ($rep)" "$B" cuda paper NEUROPORT_NVRTC_OPTIONS=--maxrregcount=$r; fi
    done
    fim "prev ($rep)" "$PREV" cuda exact
    for r in none 96 80; do
      if [ $r = none ]; then fim "new ($rep)" "$B" cuda exact; else fim "new maxrreg $r ($rep)" "$B" cuda exact NEUROPORT_NVRTC_OPTIONS=--maxrregcount=$r; fi
    done
  done
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
  ncu_fim exact
  ncu_fim exact NEUROPORT_NVRTC_OPTIONS=--maxrregcount=80
fi
# Part d (~8 min): fim_update with __launch_bounds__(256, 3) on CUDA where roots are deferred
# (004's solver): `check` (FIM rows) on CUDA, NVIDIA OpenCL and PoCL 5.0 at seed 263; `bench fim
# --example 3` prev and new alternating, both local solvers, two rounds, CUDA and NVIDIA OpenCL;
# ncu per kernel (004's solver); `fim --target` prev and new, the maps compared byte for byte.
if [ "$PART" = d ]; then
  CHECK_ROWS=fim_ checks 263 cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  OLD=$PREV alternate "prev" "new"
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
  ncu_fim paper
  fim_phantom
  fim_target_pairs "prev" "$PREV" "" "new" "$B" ""
fi
# Part e (~4 min): fim_update with __maxnreg__(80) on CUDA where roots are deferred (part d's
# bounds let ptxas take 72): `check` (FIM rows) on CUDA at seed 264; `bench fim --example 3`
# prev and new alternating on CUDA, 004's solver three rounds, exact two; ncu per kernel (004's
# solver); `fim --target` prev and new, the maps compared byte for byte.
if [ "$PART" = e ]; then
  CHECK_ROWS=fim_ checks 264 cuda
  F="$OUT/fim.txt"
  for rep in 1 2 3; do for loc in paper exact; do
    [ $loc = exact ] && [ $rep = 3 ] && continue
    fim "prev ($rep)" "$PREV" cuda $loc; fim "new ($rep)" "$B" cuda $loc
  done; done
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
  ncu_fim paper
  fim_phantom
  fim_target_pairs "prev" "$PREV" "" "new" "$B" ""
fi
# Part f (~4 min): where the skip pays. `fim --target` (exact solver, two regions stacked) with
# prev, new and new without the skip (NEUROPORT_FIM_SKIP=0), three rounds on CUDA and NVIDIA
# OpenCL; `bench fim --example 3` new with and without the skip, both local solvers, two rounds
# on CUDA.
if [ "$PART" = f ]; then
  fim_phantom
  for rep in 1 2 3; do for be in cuda "$OCL"; do
    fim_target "prev ($rep)" "$PREV" "$be" "$W/prev"
    fim_target "new ($rep)" "$B" "$be" "$W/new"
    fim_target "new no skip ($rep)" "$B" "$be" "$W/noskip" NEUROPORT_FIM_SKIP=0
  done; done > /dev/null
  grep -E "^##|stages" "$OUT/user.txt" | sed -E 's/stages:.*(fim iterations [0-9]+ ms).*/\1/' | paste - -
  F="$OUT/fim.txt"
  for rep in 1 2; do for loc in paper exact; do
    fim "new ($rep)" "$B" cuda $loc; fim "new no skip ($rep)" "$B" cuda $loc NEUROPORT_FIM_SKIP=0
  done; done > /dev/null
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
fi
# Part g (~4 min): fim_update capped at 96 registers on CUDA with roots in place (the exact
# solver took 100 with the skip: four groups an SM instead of five). `check` (FIM rows) on CUDA
# at seed 265; `fim --target` prev and new, three rounds on CUDA (maps compared byte for byte);
# `bench fim --example 3` prev and new on CUDA, both local solvers, two rounds; ncu per kernel,
# exact solver.
if [ "$PART" = g ]; then
  CHECK_ROWS=fim_ checks 265 cuda
  fim_phantom
  for rep in 1 2 3; do
    fim_target "prev ($rep)" "$PREV" cuda "$W/old-cuda"
    fim_target "new ($rep)" "$B" cuda "$W/new-cuda"
  done > /dev/null
  grep -E "^##|stages" "$OUT/user.txt" | sed -E 's/stages:.*(fim iterations [0-9]+ ms).*/\1/' | paste - -
  for m in cost1 cost2 total pathway; do cmp -s "$W/old-cuda_$m.nii.gz" "$W/new-cuda_$m.nii.gz" && echo "cuda $m: same bytes" || echo "cuda $m: DIFFER"; done | tee "$OUT/same.txt"
  F="$OUT/fim.txt"
  for rep in 1 2; do for loc in paper exact; do
    fim "prev ($rep)" "$PREV" cuda $loc; fim "new ($rep)" "$B" cuda $loc
  done; done > /dev/null
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
  ncu_fim exact
fi
# Part h (~8 min): the evaluated voxels packed into the first slots of the block (warps of
# skipped voxels idle) against part g's binary (dist/neuroport-prev2): `check` (FIM rows) on
# CUDA, NVIDIA OpenCL and PoCL 5.0 at seed 266; `bench fim --example 3` prev (round 19), prev2
# and new alternating, both local solvers, two rounds on CUDA and NVIDIA OpenCL; ncu per kernel
# (004's solver and exact); `fim --target` prev and new, the maps compared byte for byte.
# Found: the same bytes and `check` passed, update instructions -17 % (004's) and -12 % (exact)
# under ncu but no kernel time gained (CUDA 22.7 against 22.5-22.6 ms, 61.8-62.1 against 62.6;
# NVIDIA OpenCL 23.0-23.4 against 23.8-23.9, 63.0 against 61.7-61.9): reverted.
if [ "$PART" = h ]; then
  CHECK_ROWS=fim_ checks 266 cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do
    fim "prev ($rep)" "$PREV" "$be" $loc
    fim "prev2 ($rep)" "$PWD/dist/neuroport-prev2" "$be" $loc
    fim "new ($rep)" "$B" "$be" $loc
  done; done; done > /dev/null
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
  ncu_fim paper
  ncu_fim exact
  fim_phantom
  fim_target_pairs "prev" "$PREV" "" "new" "$B" ""
  grep -E "^##|stages" "$OUT/user.txt" | sed -E 's/stages:.*(fim iterations [0-9]+ ms).*/\1/' | paste - -
fi
# Part i (~5 min): the final binary (part g's kernels): the README's commands with round 19's
# binary and this one on CUDA, NVIDIA OpenCL and PoCL 5.0, every output compared byte for byte.
if [ "$PART" = i ]; then
  readme_compare "$PREV"
fi
# Part j (~4 min): launch sizes of the small kernels. fim_neighbours strides by its launched
# size now (was the update's groups x 64 items); NEUROPORT_FIM_NBR_GROUPS 4096 (default) / 1024 /
# 256 groups of 64 items, and fim_roots' NEUROPORT_FIM_ROOT_GROUPS 4096 (default) / 2048 / 1024,
# `bench fim --example 3` on CUDA, 004's solver (both) and exact (neighbours), two rounds;
# `check` (FIM rows) on CUDA at seed 267.
# Found: the defaults are best (neighbours at 1024 / 256 groups 22.7-22.8 / 24.7-24.9 ms against
# 22.5 with 004's solver; roots at 2048 / 1024 22.5 / 22.5-22.8): the switch and the stride
# change were reverted.
if [ "$PART" = j ]; then
  CHECK_ROWS=fim_ checks 267 cuda
  F="$OUT/fim.txt"
  for rep in 1 2; do
    for g in 4096 1024 256; do fim "nbr $g ($rep)" "$B" cuda paper NEUROPORT_FIM_NBR_GROUPS=$g; done
    for g in 2048 1024; do fim "roots $g ($rep)" "$B" cuda paper NEUROPORT_FIM_ROOT_GROUPS=$g; done
    for g in 4096 1024 256; do fim "nbr $g ($rep)" "$B" cuda exact NEUROPORT_FIM_NBR_GROUPS=$g; done
  done > /dev/null
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//; s/ updates per voxel.*//' | paste - -
fi
