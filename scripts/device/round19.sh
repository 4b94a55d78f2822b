#!/usr/bin/env bash
# Round 19 on the lent H100 (docs/performance.md, FIM and registration "Round 19"; results in
# docs/results/h100-2026-11-26-round19/). Binaries: dist/neuroport (new, the commit of each part),
# dist/neuroport-old (round 18's kernels: b855823 with e62ff45's OpenCL profiling switch, which is
# off unless set), dist/neuroport-prev (parts d-h: the binary before the change measured).
#   PART=a (~8 min): FIM, the update's face neighbours without divisions (the blocks across a
#     listed block's faces found once, by six items; fim_roots' neighbours read by six items):
#     `check` on CUDA, NVIDIA OpenCL and PoCL 5.0 (seed 245); `bench fim --example 3` old and new
#     alternating, both local solvers, two rounds on CUDA and NVIDIA OpenCL; ncu's time and
#     instructions per kernel over one solve (004's solver, CUDA); `fim --target` old and new,
#     the four maps compared byte for byte.
#   PART=b (~6 min): OpenCL queues without profiling (NEUROPORT_CL_PROFILING=0): `bench
#     register` on NVIDIA OpenCL with and without, CUDA beside them, three rounds; `register` 12
#     dof NCC with and without, two rounds (CUDA runs are the control: the switch is OpenCL's);
#     `bench fim --example 3` on NVIDIA OpenCL with and without, two rounds; ncu per FIM kernel,
#     exact solver, old and new (part a's exact solver on CUDA was slower).
#   PART=c (~7 min): the blocks across the faces in each item's registers (its block's
#     coordinates found once, NEUROPORT_FIM_DEFINES=NP_FIM_NEXT_REGS) against in local memory
#     (part a's) and the old binary, `bench fim --example 3`, both local solvers, alternating, two
#     rounds on CUDA, one on NVIDIA OpenCL; NVIDIA OpenCL with every launch flushed
#     (NEUROPORT_CL_FLUSH=1): `bench register`, CUDA beside it, three rounds, and `bench fim`.
#     (Parts b and c ran binaries with measuring switches reverted since: NEUROPORT_CL_PROFILING,
#     NEUROPORT_CL_FLUSH, NEUROPORT_FIM_DEFINES; commits e62ff45 and the one after it.)
#   PART=d (~7 min): the faces' blocks in registers (dist/neuroport-prev, commit 30b9212) and
#     then the block's state by an atomic AND in local memory instead of a tree (dist/neuroport):
#     `check` on CUDA, NVIDIA OpenCL and PoCL 5.0 at seeds 248 and 249; `bench fim --example 3`
#     old, prev and new alternating, both local solvers, two rounds on CUDA and NVIDIA OpenCL;
#     ncu per FIM kernel (004's solver and exact); `fim --target` old and new, the maps compared
#     byte for byte.
#   PART=e (~5 min): the README's commands with the old binary and part d's (readme_compare).
#   PART=f (~6 min): only the mask's voxels downloaded (fim_unblock gathers them; the host fills
#     the rest with NaN on every core) against part d's binary (dist/neuroport-prev): `check` on
#     CUDA, NVIDIA OpenCL and PoCL 5.0 at seed 252; `bench fim --example 3` alternating, both
#     local solvers, two rounds on CUDA and NVIDIA OpenCL, stages shown; `fim --target` prev and
#     new, the maps compared byte for byte.
#   PART=g (~5 min): part f's PoCL 5.0 failures (8 FIM rows, roots in place, at seed 252):
#     `check` on PoCL 5.0 with part d's binary (prev) at 252 and the new one at 252 (twice), 248
#     and 249; `fim --target` prev and new on NVIDIA OpenCL, the maps compared with NaN's bits
#     ignored.
#   PART=h (~6 min): the same with PoCL's kernel cache cold for every run (POCL_CACHE_DIR a new
#     folder): `check` on PoCL 5.0 at seed 252, prev and new alternating, six runs each.
#   PART=i (~5 min): the final binary: the README's commands (its first `fim` now from roi1) with
#     round 18's binary (dist/neuroport-old) and this one, every output compared; files that
#     differ compared again with NaN's bits ignored.
#   PART=j (~5 min): the final binary (b30d889: only the iterations' list-length slots read back)
#     against part i's (dbb2706, dist/neuroport-prev): `check` on CUDA, NVIDIA OpenCL and PoCL 5.0
#     at seed 253; `bench fim --example 3` alternating, both local solvers, two rounds on CUDA and
#     NVIDIA OpenCL; `fim --target` prev and new, the maps compared byte for byte.
#   PART=k (~5 min): the review's mend (52f2780: fim_roots' neighbours through np_fim_next and
#     np_fim_across) against b30d889 (dist/neuroport-prev), as part j, seed 256; then with the
#     roots deferred for both local solvers (NEUROPORT_FIM_DEFER=1) on `fim --target`.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
OLD=$PWD/dist/neuroport-old
# ncu_fim old|new LOCAL: ncu's time, warp instructions and registers per FIM kernel over one solve of
# example 3 on CUDA with that binary and local solver, summed per kernel.
ncu_fim() {
  local bin=$B; [ "$1" = old ] && bin=$OLD
  ncu_fim_run "$1-$2" "$bin" "$2"
}
# prev_vs_new SEED: dist/neuroport-prev against $B: `check` on CUDA, NVIDIA OpenCL and PoCL at
# SEED; `bench fim --example 3` alternating (both local solvers, two rounds, CUDA and NVIDIA
# OpenCL) with the walls and the download stages shown; `fim --target` prev and new, the maps
# compared byte for byte.
prev_vs_new() {
  OLD=$PWD/dist/neuroport-prev
  CHECK_ROWS=fim_ checks "$1" cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  alternate "prev" "new"
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
  echo "=== download stages"; grep -E "^##|stages" "$F" | paste - - | sed -E 's/stages:.*(fim download [0-9]+ ms).*(fim download [0-9]+ ms).*(fim download [0-9]+ ms).*(fim download [0-9]+ ms).*/\1, \2, \3, \4/'
  fim_phantom
  fim_target_pairs "prev" "$OLD" "" "new" "$B" ""
}
if [ "$PART" = a ]; then
  CHECK_ROWS=fim_ checks 245 cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  alternate "old" "new"
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
  for v in old new; do ncu_fim "$v" paper; done
  fim_phantom
  fim_target_pairs "old" "$OLD" "" "new" "$B" ""
fi
if [ "$PART" = b ]; then
  for rep in 1 2 3; do
    breg "profiling ($rep)" "$OCL"
    breg "no profiling ($rep)" "$OCL" NEUROPORT_CL_PROFILING=0
    breg "cuda ($rep)" cuda
  done
  t1_pair "$W/b"
  reg_pairs 2 "profiling" "$B" "" "no profiling" "$B" "NEUROPORT_CL_PROFILING=0"
  F="$OUT/fim.txt"
  for rep in 1 2; do for loc in paper exact; do
    fim "profiling ($rep)" "$B" "$OCL" $loc
    fim "no profiling ($rep)" "$B" "$OCL" $loc NEUROPORT_CL_PROFILING=0
  done; done
  for v in old new; do ncu_fim "$v" exact; done
fi
if [ "$PART" = c ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do
    [ "$be" != cuda ] && [ $rep = 2 ] && continue
    fim "old ($rep)" "$OLD" "$be" $loc
    fim "local memory ($rep)" "$B" "$be" $loc
    fim "registers ($rep)" "$B" "$be" $loc NEUROPORT_FIM_DEFINES=NP_FIM_NEXT_REGS
  done; done; done
  for loc in paper exact; do fim "flushed (1)" "$B" "$OCL" $loc NEUROPORT_CL_FLUSH=1; done
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
  for rep in 1 2 3; do
    breg "unflushed ($rep)" "$OCL"
    breg "flushed ($rep)" "$OCL" NEUROPORT_CL_FLUSH=1
    breg "cuda ($rep)" cuda
  done
fi
if [ "$PART" = d ]; then
  for seed in 248 249; do (OUT="$OUT/check-$seed"; mkdir -p "$OUT"; CHECK_ROWS=fim_ checks "$seed" cuda "$OCL" "$POCL"); done
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do
    fim "old ($rep)" "$OLD" "$be" $loc
    fim "prev ($rep)" "$PWD/dist/neuroport-prev" "$be" $loc
    fim "new ($rep)" "$B" "$be" $loc
  done; done; done
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
  for loc in paper exact; do ncu_fim new $loc; done
  fim_phantom
  fim_target_pairs "old" "$OLD" "" "new" "$B" ""
fi
if [ "$PART" = e ]; then
  readme_compare "$OLD"
fi
if [ "$PART" = f ]; then
  prev_vs_new 252
fi
if [ "$PART" = g ]; then
  PREV=$PWD/dist/neuroport-prev
  for run in "prev 252" "new 252" "new 252" "new 248" "new 249" "prev 252"; do
    set -- $run; bin=$B; [ $1 = prev ] && bin=$PREV
    stamp "check $1 seed $2 on $POCL"
    timeout 150 "$bin" check --backend "$POCL" --seed $2 2>&1 | grep -E "fim_|passed" | sed "s/^/$1 $2 /" | grep -E "FAIL|passed"
  done
  fim_phantom
  for v in prev new; do
    bin=$B; [ $v = prev ] && bin=$PREV
    fim_target "$v" "$bin" "$OCL" "$W/$v" > /dev/null
  done
  for m in cost1 cost2 total pathway; do
    python3 - "$W/prev_$m.nii.gz" "$W/new_$m.nii.gz" <<'PY'
import gzip, sys, array, math
a, b = (gzip.open(f).read() for f in sys.argv[1:3])
x, y = array.array('f', a[352:]), array.array('f', b[352:])
if len(a) != len(b) or a[:352] != b[:352]:
    print(sys.argv[2], "header or size differs"); sys.exit()
d = sum(1 for p, q in zip(x, y) if not (math.isnan(p) and math.isnan(q)) and p != q) if len(a) % 4 == 0 else (a != b)
nan = lambda v: sorted({hex(array.array('I', array.array('f', [f]).tobytes())[0]) for f in v if math.isnan(f)})
print(sys.argv[2].split('/')[-1], "values differing:", d, "NaN bits prev", nan(x)[:3], "new", nan(y)[:3])
PY
  done
fi
if [ "$PART" = i ]; then
  readme_compare "$OLD"
  for be in cuda "$OCL" "$POCL"; do
    (cd "$W/r-old-${be//:/-}" && find . -name "*.nii.gz" | sort | while read -r f; do
      cmp -s "$f" "$W/r-new-${be//:/-}/$f" && continue
      python3 - "$f" "$W/r-new-${be//:/-}/$f" "$be" <<'PY'
import gzip, sys, array, math
a, b = (gzip.open(f).read() for f in sys.argv[1:3])
if len(a) != len(b) or a[:352] != b[:352] or len(a) % 4:
    print(sys.argv[3], sys.argv[1], "header, size or type differs"); sys.exit()
x, y = array.array('f', a[352:]), array.array('f', b[352:])
d = sum(1 for p, q in zip(x, y) if not (math.isnan(p) and math.isnan(q)) and p != q)
print(sys.argv[3], sys.argv[1], "values differing with NaN's bits ignored:", d)
PY
    done)
  done | tee "$OUT/same-values.txt"
fi
if [ "$PART" = j ]; then
  prev_vs_new 253
fi
if [ "$PART" = k ]; then
  prev_vs_new 256
  (OUT="$OUT/deferred"; mkdir -p "$OUT"; fim_target_pairs "prev" "$OLD" "NEUROPORT_FIM_DEFER=1" "new" "$B" "NEUROPORT_FIM_DEFER=1")
fi
if [ "$PART" = h ]; then
  PREV=$PWD/dist/neuroport-prev
  for rep in 1 2 3 4 5 6; do for v in prev new; do
    bin=$B; [ $v = prev ] && bin=$PREV
    stamp "check $v ($rep) cold cache"
    POCL_CACHE_DIR=$(mktemp -d -p "$W") timeout 150 "$bin" check --backend "$POCL" --seed 252 2>&1 | grep -E "fim_|passed" | sed "s/^/$v $rep /" | grep -E "FAIL|passed"
  done; done
fi
