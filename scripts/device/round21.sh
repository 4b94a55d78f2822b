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
#     Found: 004's solver 19.1-19.4 ms of kernels at inner 2 against 22.6-23.7 at 1 (CUDA), 19.5
#     against 24.5 (NVIDIA OpenCL); 3 and 4 slower than 2; the exact solver slower at 2 and 4.
#   PART=b (~8 min): the skip's stamps per Jacobi update (an in-block neighbour that moved before
#     the voxel's last evaluation is not read again), inner 2 the default with deferred roots
#     (004's solver on GPUs): `check` on CUDA, NVIDIA OpenCL and PoCL 5.0 (seed 273); `bench fim
#     --example 3` prev and new alternating, both local solvers, two rounds, CUDA and NVIDIA
#     OpenCL, and new at inner 3; ncu per kernel (new, 004's solver); `fim --target` (exact, inner
#     1) prev and new on CUDA, the maps compared byte for byte.
#     Found: evaluations 98.1 -> 96.6 per voxel, kernels 19.1-19.4 -> 20.0-20.2 ms (004's solver)
#     and the exact solver +1 to +2 % against prev: back to part a's kernels.
#   PART=c (~3 min): part a's kernels with inner 2 the default for 004's solver on GPUs; its
#     launch shapes at inner 2 (CUDA, two rounds, alternating): fim_roots with 1,024 / 512
#     groups (4,096), 16 slots a root (32), 2 and 3 lanes a voxel (4); the exact solver with its
#     roots deferred (inner 2) once; NVIDIA OpenCL's base and 1,024 root groups.
#     Found: the defaults best (19.25-19.26 ms CUDA; root groups 1,024 / 512: 19.4-19.5 /
#     19.8-19.9; 16 slots 20.4-20.5; 2 / 3 lanes 20.8-20.9 / 19.6-19.8).
#   PART=d (~6 min): fim_roots' queue without voxels that have no finite neighbour, and its round
#     0 with the solutions alone where their points below do not fit (the point below the
#     bracket's end in each later round): `check` (FIM rows) on CUDA, NVIDIA OpenCL and PoCL 5.0,
#     seed 275; `bench fim --example 3` part c's binary (dist/neuroport-c) and new alternating,
#     004's solver two rounds, the exact one once, CUDA and NVIDIA OpenCL; ncu per kernel (new).
#     Found: CUDA 19.25-19.29 -> 18.65-18.68 ms (248 iterations), NVIDIA OpenCL 19.44-19.64 ->
#     19.06-19.40; exact unchanged; ncu fim_roots 5.82 -> 5.24 ms, 0.82 -> 0.55 G instructions.
#   PART=e (~2 min): the update's work-groups a launch (NEUROPORT_FIM_GROUPS, default 4,096; also
#     fim_roots' and fim_neighbours') at 1,188 / 2,048 / 8,192, 004's solver on CUDA, two
#     rounds; the exact solver at 2,048 once.
#     Found: 1,188 / 2,048 / 8,192 groups 18.56-18.58 / 18.46-18.50 / 18.96-18.99 ms against
#     18.60-18.61 (exact at 2,048: 62.56 against 61.77): 4,096 stays.
#   PART=f (~6 min): fim_roots' later rounds, once H_G^2 - 1 is known at both ends of the
#     bracket, put half the slots around the secant's zero (0.5 to 512 widths either side) and
#     half evenly inside: `check` (FIM rows) on CUDA, NVIDIA OpenCL and PoCL 5.0, seed 278;
#     `bench fim --example 3` part d's binary (dist/neuroport-d) and new alternating, 004's
#     solver, two rounds, CUDA and NVIDIA OpenCL; ncu per kernel (new).
#     Found: rounds per non-trivial root 3.14 -> 2.44 on PoCL (128x128x50), but 264 iterations
#     against 248 and 18.99-19.08 ms against 18.53-19.44 (CUDA), 19.28-19.46 against 18.93-19.21
#     (NVIDIA OpenCL); ncu fim_roots 20.2 against 21.1 us a launch, 62 registers: reverted.
#   PART=g (~2 min): with the queue filtered, fim_roots' groups (NEUROPORT_FIM_ROOT_GROUPS) 132 /
#     264 / 528 / 1,024 against 4,096, 004's solver on CUDA, two rounds; NVIDIA OpenCL at the best
#     and 4,096 once.
#     Found: 1,024 root groups 18.41-18.48 against 18.56-18.61 ms (noise), fewer slower (132: 20.7-20.9,
#     264: 19.4-19.5, 528: 18.8); NVIDIA OpenCL 264 / 528 20.1 / 19.5 against 19.4: 4,096 stays.
#   PART=h (~7 min), the final binary: `check` on CUDA, NVIDIA OpenCL and PoCL 5.0 (seed 280);
#     the README's commands with prev and new on all three (the same files expected: their `fim`
#     runs the exact solver, one Jacobi update as before); `fim --target --local paper` on the
#     256x256x100 phantom, prev and new alternating, two rounds, CUDA and NVIDIA OpenCL.
#   PART=i (~4 min), the review's mend (the lowest neighbour through one helper, np_fim_nb_min,
#     for the root search's floor and the settled test): `check` (FIM rows) on CUDA and NVIDIA
#     OpenCL, seed 284; `bench fim --example 3` part h's binary (dist/neuroport-h) and new
#     alternating, 004's solver, two rounds, and the exact one once, CUDA and NVIDIA OpenCL;
#     `fim --target` with both local solvers, h and new, CUDA and NVIDIA OpenCL, maps compared.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
PREV=$PWD/dist/neuroport-prev
# fimi, fim_summary, fim_against, target_same, fim_maps_same: common.sh.
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
  fim_summary
  target_same
fi
if [ "$PART" = b ]; then
  CHECK_ROWS=fim_ checks 273 cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  OLD=$PREV alternate "prev" "new" > /dev/null
  fimi "new" "$B" cuda paper 3 > /dev/null
  fimi "new" "$B" "$OCL" paper 3 > /dev/null
  fim_summary
  ncu_fim_run paper "$B" paper
  target_same
fi
if [ "$PART" = c ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do
    fimi "new ($rep)" "$B" cuda paper 0
    for v in NEUROPORT_FIM_ROOT_GROUPS=1024 NEUROPORT_FIM_ROOT_GROUPS=512 NEUROPORT_FIM_ROOT_SLOTS=16 NEUROPORT_FIM_LANES=2 NEUROPORT_FIM_LANES=3; do
      fimi "new $v ($rep)" "$B" cuda paper 0 $v
    done
  done > /dev/null
  fimi "new" "$B" cuda exact 0 > /dev/null
  fimi "new NEUROPORT_FIM_DEFER=1" "$B" cuda exact 0 NEUROPORT_FIM_DEFER=1 > /dev/null
  fimi "new" "$B" "$OCL" paper 0 > /dev/null
  fimi "new NEUROPORT_FIM_ROOT_GROUPS=1024" "$B" "$OCL" paper 0 NEUROPORT_FIM_ROOT_GROUPS=1024 > /dev/null
  fimi "new" "$B" "$OCL" paper 0 > /dev/null
  fim_summary
fi
if [ "$PART" = d ]; then
  fim_against c "$PWD/dist/neuroport-c" 275 exact
fi
if [ "$PART" = e ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do
    fimi "new ($rep)" "$B" cuda paper 0
    for g in 1188 2048 8192; do fimi "new groups $g ($rep)" "$B" cuda paper 0 NEUROPORT_FIM_GROUPS=$g; done
  done > /dev/null
  fimi "new" "$B" cuda exact 0 > /dev/null
  fimi "new groups 2048" "$B" cuda exact 0 NEUROPORT_FIM_GROUPS=2048 > /dev/null
  fimi "new groups 1188" "$B" "$OCL" paper 0 NEUROPORT_FIM_GROUPS=1188 > /dev/null
  fimi "new" "$B" "$OCL" paper 0 > /dev/null
  fim_summary
fi
if [ "$PART" = f ]; then
  fim_against d "$PWD/dist/neuroport-d" 278
fi
if [ "$PART" = g ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do
    fimi "new ($rep)" "$B" cuda paper 0
    for g in 132 264 528 1024; do fimi "new root groups $g ($rep)" "$B" cuda paper 0 NEUROPORT_FIM_ROOT_GROUPS=$g; done
  done > /dev/null
  for g in 264 528; do fimi "new root groups $g" "$B" "$OCL" paper 0 NEUROPORT_FIM_ROOT_GROUPS=$g; done > /dev/null
  fimi "new" "$B" "$OCL" paper 0 > /dev/null
  fim_summary
fi
if [ "$PART" = h ]; then
  CHECK_ROWS=fim_ checks 280 cuda "$OCL" "$POCL"
  readme_compare "$PREV"
  fim_phantom
  for rep in 1 2; do for be in cuda "$OCL"; do
    for v in prev new; do
      bin=$B; [ $v = prev ] && bin=$PREV
      stamp "fim --target --local paper $v $be"
      { echo "## $v ($rep) $be paper"; NEUROPORT_STAGES=1 /usr/bin/time -f "process wall %e s" timeout 120 "$bin" fim --backend "$be" --local paper \
        --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" \
        --out "$W/p-$v" --force 2>&1 >/dev/null | grep -vE '^\s*$' | sed 's/ (NVIDIA H100 80GB HBM3)//'; } >> "$OUT/user.txt"
    done
  done; done
  grep -E "^##|E\(gamma\)|stages|process wall" "$OUT/user.txt" | sed -E 's/stages:.*(fim iterations [0-9]+ ms).*(main [0-9]+ ms)/\1, \2/' | cut -c1-260
fi
if [ "$PART" = i ]; then
  CHECK_ROWS=fim_ checks 284 cuda "$OCL"
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    fimi "h ($rep)" "$PWD/dist/neuroport-h" $be paper 0
    fimi "new ($rep)" "$B" $be paper 0
  done; done > /dev/null
  for be in cuda "$OCL"; do fimi "h" "$PWD/dist/neuroport-h" $be exact 0; fimi "new" "$B" $be exact 0; done > /dev/null
  fim_summary
  fim_maps_same h "$PWD/dist/neuroport-h"
fi
