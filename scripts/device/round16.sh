#!/usr/bin/env bash
# Round 16 on the lent H100 (docs/performance.md, FIM "Round 16"; results in
# docs/results/h100-2026-11-26-round16/). Binary: dist/neuroport, built at the commit each part names.
#   PART=a (~2 min; commit 7f7ac2a, reverted after it): the wide root (cl/common/fim.h np_fim_ws): `check` on PoCL 5.0, CUDA and
#     NVIDIA OpenCL at seed 201; then `bench fim --example 3` with NEUROPORT_FIM_WIDE = 65 (never
#     wide: the sequential search alone, as round 15), 4, 8, 2 and 16 alternating, two rounds,
#     CUDA and NVIDIA OpenCL, both local solvers.
#   PART=b (~4 min; commit after f621aa5): what one update launch costs by list length: ncu
#     (one metric pass: duration, instructions, warps active) on the first 24 fim_update and
#     fim_neighbours launches of example 3 (the lists grow from the seed's one block) and on 8
#     launches mid-run (~900 blocks), CUDA, 004's and the exact solver, and the build without
#     H_G's roots (NEUROPORT_FIM_DIAG_NOROOT=1, wrong answers, for timing); the launches' list
#     lengths from `bench fim --active-out`.
#   PART=c (~4 min; commit 0eb3352, the deferred roots, reverted after it: PoCL 3.1's
#     LLVM 15 crashed building fim_roots): `check` on CUDA, NVIDIA OpenCL and PoCL 5.0 at seed
#     202; `bench fim --example 3`, 004's solver with roots deferred (the default) and in place
#     (NEUROPORT_FIM_DEFER=0) alternating, two rounds, both APIs; the exact solver deferred
#     (NEUROPORT_FIM_DEFER=1) against in place, one round.
#   PART=d (~2 min; commit 0eb3352): where the deferred roots' time goes: ncu (one metric pass:
#     duration, instructions, warps active, registers) on 8 fim_update and 8 fim_roots launches
#     mid-run (from the 300th), 004's solver, roots deferred and (fim_update only) in place.
#   PART=e (~5 min; the commit after 0eb3352 that rewrote fim_roots): the deferred roots with a
#     search whose every step is parallel (no serial work on item 0 in the rounds): `check` on
#     CUDA, NVIDIA OpenCL and PoCL 5.0 at seed 203; `bench fim --example 3` 004's solver deferred
#     (default) and in place alternating, two rounds, both APIs; the exact solver deferred
#     against in place, one round; ncu durations of fim_update and fim_roots mid-run (PART=d's).
#   PART=f (~3 min; the commit after 128257d): fim_roots with points about the secant's zero
#     and two work-groups per compute unit: PART=e again without the checks on PoCL.
#   PART=g (~6 min): the final binary: `check` on CUDA, NVIDIA OpenCL and PoCL 5.0 at seeds 205
#     and 206; `reproduce fim-t1 --scale quick` on CUDA; the README's commands against round 14's
#     binary (dist/neuroport-old, c21cc48; round 15's gave the same bytes), outputs compared.
#   PART=h (~3 min): where fim_roots' ~28 us go: ncu --set full on its 301st launch (004's
#     solver, example 3, CUDA), the details page and the SASS with stall samples (top 40).
#   PART=i (~3 min; a build with NEUROPORT_FIM_ROOT_GROUPS, not kept unless said): fim_roots
#     launched on 4,096 work-groups (as the update; 10 waves at 3 groups per SM, all but ~25
#     without a root) against 264 and 132, 004's solver, in place beside them, two rounds, both APIs.
#   PART=j (~4 min; the commit that made fim_roots' slots settable): fim_roots with 64, 32, 16 and
#     8 slots a root (NEUROPORT_FIM_ROOT_SLOTS; fewer items a root, more roots resident, the
#     solutions spread over more rounds), 004's solver, in place beside them, two rounds, both
#     APIs; `check` on CUDA and NVIDIA OpenCL at seed 207 with 16 slots.
#   PART=k (~6 min): `check` on CUDA at seeds 210-221 with the roots in place
#     (NEUROPORT_FIM_DEFER=0), deferred with 64 slots and with 32 (the default): the rows of 004's
#     fixed point (failed at seed 205 with 32 slots, final).
#   PART=l (~1 min; a build with NEUROPORT_CHECK_DEBUG, not kept): seed 205's failing voxel:
#     `check` on CUDA with the roots in place, deferred on 64 and on 32 slots, the worst voxel of
#     each fixed-point row with its neighbours and S.
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
if [ "$PART" = b ]; then
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo ncu)
  M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg
  for v in paper exact paper-noroot; do
    loc=${v%-noroot}; env=""; [ "$v" != "$loc" ] && env="NEUROPORT_FIM_DIAG_NOROOT=1"
    stamp "active lists $v"
    env $env "$B" bench fim --example 3 --backend cuda --local $loc --repeats 1 --active-out "$OUT/active-$v.txt" 2>&1 | tail -1
    for k in fim_update fim_neighbours; do for at in "0 24" "300 8"; do
      set -- $at
      stamp "ncu $k $v from launch $1"
      step 200 env $env "$NCU" --kernel-name $k --launch-skip $1 --launch-count $2 --metrics $M --csv \
        "$B" bench fim --example 3 --backend cuda --local $loc --repeats 0 > "$OUT/ncu-$k-$v-$1.csv" 2> "$OUT/ncu-$k-$v-$1.err"
      grep -c gpu__time_duration "$OUT/ncu-$k-$v-$1.csv"
    done; done
  done
fi
if [ "$PART" = c ] || [ "$PART" = e ] || [ "$PART" = f ]; then
  case $PART in
    c) checks 202 cuda "$OCL" "$POCL" ;;
    e) checks 203 cuda "$OCL" "$POCL" ;;
    f) checks 204 cuda "$OCL" ;;
  esac
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    fim "in place ($rep)" "$B" "$be" paper NEUROPORT_FIM_DEFER=0
    fim "deferred ($rep)" "$B" "$be" paper
  done; done
  for be in cuda "$OCL"; do
    fim "in place" "$B" "$be" exact
    fim "deferred" "$B" "$be" exact NEUROPORT_FIM_DEFER=1
  done
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
fi
if [ "$PART" = d ] || [ "$PART" = e ] || [ "$PART" = f ]; then
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo ncu)
  M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__occupancy_limit_registers
  for v in deferred inplace; do
    env=""; [ $v = inplace ] && env="NEUROPORT_FIM_DEFER=0"
    for k in fim_update fim_roots; do
      [ $v = inplace ] && [ $k = fim_roots ] && continue
      stamp "ncu $k $v"
      step 200 env $env "$NCU" --kernel-name $k --launch-skip 300 --launch-count 8 --metrics $M --csv \
        "$B" bench fim --example 3 --backend cuda --local paper --repeats 0 > "$OUT/ncu-$k-$v.csv" 2> "$OUT/ncu-$k-$v.err"
      grep -E "gpu__time_duration|registers_per" "$OUT/ncu-$k-$v.csv" | awk -F'","' '{print $(NF-2), $NF}' | head -4
    done
  done
fi
if [ "$PART" = g ]; then
  for seed in 205 206; do (OUT="$OUT/check-$seed"; mkdir -p "$OUT"; CHECK_ROWS=fim_ checks "$seed" cuda "$OCL" "$POCL"); done
  wall "reproduce fim-t1 quick cuda" 300 "$B" reproduce fim-t1 --scale quick --backend cuda --out "$W/rep"
  cp "$W"/rep/*.md "$OUT/" 2>/dev/null
  readme_compare "$PWD/dist/neuroport-old"
fi
if [ "$PART" = h ]; then
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo ncu)
  stamp "ncu fim_roots full"
  step 240 "$NCU" --kernel-name fim_roots --launch-skip 300 --launch-count 1 --set full --import-source no -f -o "$OUT/fim_roots" \
    "$B" bench fim --example 3 --backend cuda --local paper --repeats 0 > "$OUT/ncu-roots.log" 2>&1
  tail -2 "$OUT/ncu-roots.log"
  step 120 "$NCU" --import "$OUT/fim_roots.ncu-rep" --page details > "$OUT/details-roots.txt" 2>&1
  step 120 "$NCU" --import "$OUT/fim_roots.ncu-rep" --page source --csv --print-source sass > "$OUT/sass-roots.csv" 2> "$OUT/sass-roots.err"
  grep -E "Duration|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Executed Ipc A|Issue Slots Busy|Grid Size|Block Size|Waves" "$OUT/details-roots.txt" | head -14
  python3 - "$OUT/sass-roots.csv" <<'PY' | tee "$OUT/sass-top-roots.txt"
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[1]; data = rows[2:]  # the first row names the kernel
ia = hdr.index("Address"); isrc = hdr.index("Source"); iss = hdr.index("Warp Stall Sampling (All Samples)")
tot = sum(float(r[iss] or 0) for r in data)
print(f"{len(data)} SASS instructions, {tot:.0f} stall samples")
for i, r in sorted(enumerate(data), key=lambda x: -float(x[1][iss] or 0))[:40]:
    print(f"{i:6d} {100*float(r[iss] or 0)/max(tot,1):5.1f}%  {r[isrc][:90]}")
PY
fi
if [ "$PART" = i ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    fim "in place ($rep)" "$B" "$be" paper NEUROPORT_FIM_DEFER=0
    for rg in 4096 264 132; do fim "deferred on $rg ($rep)" "$B" "$be" paper NEUROPORT_FIM_ROOT_GROUPS=$rg; done
  done; done
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
fi
if [ "$PART" = j ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    fim "in place ($rep)" "$B" "$be" paper NEUROPORT_FIM_DEFER=0
    for sl in 64 32 16 8; do fim "deferred, $sl slots ($rep)" "$B" "$be" paper NEUROPORT_FIM_ROOT_SLOTS=$sl; done
  done; done
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
  (export NEUROPORT_FIM_ROOT_SLOTS=16; CHECK_ROWS=fim_ checks 207 cuda "$OCL")
fi
if [ "$PART" = k ]; then
  for seed in $(seq 210 221); do
    for v in "inplace NEUROPORT_FIM_DEFER=0" "slots64 NEUROPORT_FIM_ROOT_SLOTS=64" "slots32 NEUROPORT_FIM_ROOT_SLOTS=32"; do
      set -- $v
      env "$2" timeout 60 "$B" check --backend cuda --seed $seed 2>&1 | grep -E "fixed point|deferred roots" | sed "s/^/$seed $1 /" | awk '{print $1, $2, $5, $6, $7, $8, $9, $10, $11}'
    done
  done | tee "$OUT/fixed-point-seeds.txt"
  echo "=== failures"; grep -c FAIL "$OUT/fixed-point-seeds.txt"; grep FAIL "$OUT/fixed-point-seeds.txt"
fi
if [ "$PART" = l ]; then
  for v in "inplace NEUROPORT_FIM_DEFER=0" "slots64 NEUROPORT_FIM_ROOT_SLOTS=64" "slots32 NEUROPORT_FIM_ROOT_SLOTS=32"; do
    set -- $v
    echo "## $1"; env "$2" NEUROPORT_CHECK_DEBUG=1 timeout 60 "$B" check --backend cuda --seed 205 2>&1 | grep -E "worst voxel|fixed point\]|fixed point, "
  done | tee "$OUT/seed205.txt"
fi
