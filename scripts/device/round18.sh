#!/usr/bin/env bash
# Round 18 on the lent H100 (docs/performance.md, registration "Round 18"; results in
# docs/results/h100-2026-11-26-round18/). Binary: dist/neuroport.
#   PART=a (~2 min; needs commit c8c70a0's binary, reverted since): the fixed image read as
#     halves by the texture path (register_cost_texture_half; NEUROPORT_REG_FIXED=float kept
#     floats): `check` on CUDA, NVIDIA OpenCL and PoCL 5.0 (seed 241; PoCL also with
#     NEUROPORT_REG_FIXED=half, its vload_half); ncu's DRAM bytes and L2 hit rate on lone NCC
#     texture launches (float fixed, half fixed streamed, half fixed with plain loads); `bench
#     register` on CUDA alternating (float, half, half with plain loads
#     NEUROPORT_REG_STREAM=0), two rounds.
#   PART=b (~3 min; needs commit 3599a86's binary, reverted since): NVIDIA OpenCL: the record read back with one blocking read (default) or a
#     read and a queue wait (NEUROPORT_REG_READ=async): `check` on NVIDIA OpenCL and PoCL 5.0
#     (seed 242), `bench register` alternating with CUDA beside them, three rounds.
#   PART=c (~5 min; c, d and e ran commit 67a1ca0's binary; its lanes knob reverted since): fim_roots' lanes per slot (NEUROPORT_FIM_ROOT_LANES; a round of the root
#     search lasts one lane's share of H_G's ~28 candidate points) against its slots per root
#     (NEUROPORT_FIM_ROOT_SLOTS): `bench fim --example 3 --local paper` alternating over
#     (slots, lanes) = (64, 4) the default, (32, 4), (64, 8), (32, 8), (16, 16), two rounds on
#     CUDA, one on NVIDIA OpenCL.
#   PART=d (~4 min): the fixed-point row with g in f64 (round 16's seed-205 failure was the CPU's
#     f32 g: 004's validity test accepting a candidate that f64 rejects): `check` on CUDA at
#     seeds 205, 206, 210-219 with 64 and 32 slots, the fixed-point rows; seed 205 with 32 slots
#     also with the old f32 g (NEUROPORT_CHECK_G32=1) and the worst voxel's debug lines; NVIDIA
#     OpenCL at 205 and 206 with 32 slots.
#   PART=e (~4 min): fewer items a root: (slots, lanes) = (64, 4) the default, (32, 4), (32, 2),
#     (16, 2), (64, 2), (32, 1), `bench fim --example 3 --local paper` alternating, two rounds
#     on CUDA, one on NVIDIA OpenCL.
#   PART=f (~6 min): the final binary, 32 slots a root by default: `check` on CUDA, NVIDIA
#     OpenCL and PoCL 5.0 at seeds 243 and 244; `bench fim --example 3` with 64 slots (round
#     17's default, NEUROPORT_FIM_ROOT_SLOTS=64) and the default alternating, both local solvers,
#     two rounds on CUDA and NVIDIA OpenCL; `reproduce fim-t1 --scale quick` on CUDA.
#   PART=g (~5 min): the README's commands with round 14's binary and this one (common.sh
#     readme_compare), every output compared per backend.
#   PART=h (~4 min): with the roots deferred, the update's lanes per voxel again
#     (NEUROPORT_FIM_LANES 2, 3, 4; fim_roots' slots take the same lanes) x slots a root (32,
#     64): `bench fim --example 3 --local paper` alternating, two rounds on CUDA, one on NVIDIA
#     OpenCL.
#   PART=i (~4 min): work-groups per launch with the roots deferred and 32 slots: the update's
#     and neighbours' (NEUROPORT_FIM_GROUPS) and fim_roots' (NEUROPORT_FIM_ROOT_GROUPS), `bench fim
#     --example 3 --local paper` alternating, two rounds on CUDA, one on NVIDIA OpenCL.
#   PART=j (~4 min): how often the fixed-point row (g in f64) fails with the final binary: `check`
#     at seeds 250-299 on CUDA and 250-269 on NVIDIA OpenCL, the FIM rows' failures counted and
#     the fixed-point rows' worst values kept.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
# fim_sweep "NAME1 NAME2" VAR1 VAR2 "V1 V2"...: `bench fim --example 3 --local paper` with VAR1=V1
# VAR2=V2 for each pair (labelled "NAME1 V1 NAME2 V2"), alternating, two rounds on CUDA and one
# on NVIDIA OpenCL, into $OUT/fim.txt; then a summary line per run.
fim_sweep() {
  local names=($1) v1=$2 v2=$3 rep be v; shift 3
  local pairs=("$@")
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    [ "$be" != cuda ] && [ $rep = 2 ] && continue
    for v in "${pairs[@]}"; do
      local a=${v% *} b=${v#* }
      fim "${names[0]} $a ${names[1]} $b ($rep)" "$B" "$be" paper "$v1=$a" "$v2=$b"
    done
  done; done
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
}
if [ "$PART" = a ]; then
  CHECK_ROWS=register checks 241 cuda "$OCL" "$POCL"
  (OUT="$OUT/check-pocl-half"; mkdir -p "$OUT"; export NEUROPORT_REG_FIXED=half; CHECK_ROWS=register checks 241 "$POCL")
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  for v in float half half-plain; do
    stamp "ncu $v"
    envs=(NEUROPORT_REG_FIXED=${v%%-*}); [ "$v" = half-plain ] && envs+=(NEUROPORT_REG_STREAM=0)
    env "${envs[@]}" timeout 200 "$NCU" --metrics gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct -k "regex:^register_cost_texture" --launch-skip 30 -c 3 "$B" bench register --backend cuda --costs ncc --evals 40 --repeats 1 > "$OUT/ncu-$v.txt" 2>&1 || echo "(ncu ended with status $?)"
    grep -E "register_cost|gpu__time|dram__|lts__|l1tex__" "$OUT/ncu-$v.txt"
  done
  for rep in 1 2; do
    breg "fixed float ($rep)" cuda NEUROPORT_REG_FIXED=float
    breg "fixed half ($rep)" cuda
    breg "fixed half, plain loads ($rep)" cuda NEUROPORT_REG_STREAM=0
  done
fi
if [ "$PART" = b ]; then
  CHECK_ROWS=register checks 242 "$OCL" "$POCL"
  for rep in 1 2 3; do
    breg "read + wait ($rep)" "$OCL" NEUROPORT_REG_READ=async
    breg "blocking read ($rep)" "$OCL"
    breg "cuda ($rep)" cuda
  done
fi
if [ "$PART" = c ]; then
  fim_sweep "slots lanes" NEUROPORT_FIM_ROOT_SLOTS NEUROPORT_FIM_ROOT_LANES "64 4" "32 4" "64 8" "32 8" "16 16"
fi
if [ "$PART" = d ]; then
  for seed in 205 206 $(seq 210 219); do for sl in 64 32; do
    NEUROPORT_FIM_ROOT_SLOTS=$sl timeout 60 "$B" check --backend cuda --seed $seed 2>&1 | grep -E "fixed point" | sed "s/^/$seed slots$sl /" | awk '{print $1, $2, $5, $6, $7, $8, $9, $10, $11}'
  done; done | tee "$OUT/fixed-point.txt"
  for g in g64 g32; do
    stamp "seed 205, 32 slots, $g, debug"
    env NEUROPORT_FIM_ROOT_SLOTS=32 NEUROPORT_CHECK_DEBUG=1 $([ $g = g32 ] && echo NEUROPORT_CHECK_G32=1) timeout 60 "$B" check --backend cuda --seed 205 > "$OUT/debug-205-$g.txt" 2>&1
    grep -E "fixed point|g f32|^  u|passed" "$OUT/debug-205-$g.txt"
  done
  (export NEUROPORT_FIM_ROOT_SLOTS=32; CHECK_ROWS=fim_ checks 205 "$OCL"; OUT="$OUT/206"; mkdir -p "$OUT"; CHECK_ROWS=fim_ checks 206 "$OCL")
fi
if [ "$PART" = e ]; then
  fim_sweep "slots lanes" NEUROPORT_FIM_ROOT_SLOTS NEUROPORT_FIM_ROOT_LANES "64 4" "32 4" "32 2" "16 2" "64 2" "32 1"
fi
if [ "$PART" = f ]; then
  for seed in 243 244; do (OUT="$OUT/check-$seed"; mkdir -p "$OUT"; CHECK_ROWS=fim_ checks "$seed" cuda "$OCL" "$POCL"); done
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do
    fim "64 slots ($rep)" "$B" "$be" $loc NEUROPORT_FIM_ROOT_SLOTS=64
    fim "32 slots ($rep)" "$B" "$be" $loc
  done; done; done
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
  wall "reproduce fim-t1 quick cuda" 300 "$B" reproduce fim-t1 --scale quick --backend cuda --out "$W/rep"
  cp "$W"/rep/*.md "$OUT/" 2>/dev/null
fi
if [ "$PART" = g ]; then
  readme_compare "$PWD/dist/neuroport-old"
fi
if [ "$PART" = h ]; then
  fim_sweep "lanes slots" NEUROPORT_FIM_LANES NEUROPORT_FIM_ROOT_SLOTS "4 32" "2 32" "3 32" "2 64" "3 64"
fi
if [ "$PART" = i ]; then
  fim_sweep "groups root-groups" NEUROPORT_FIM_GROUPS NEUROPORT_FIM_ROOT_GROUPS "4096 4096" "1056 4096" "2112 4096" "4096 1056" "1056 1056"
fi
if [ "$PART" = j ]; then
  for be in cuda "$OCL"; do
    last=$([ "$be" = cuda ] && echo 299 || echo 269)
    for seed in $(seq 250 "$last"); do
      timeout 60 "$B" check --backend "$be" --seed $seed 2>&1 | grep -E "fim_|passed" | sed "s/^/$seed /"
    done > "$OUT/seeds-${be//:/-}.txt"
    echo "$be: $(grep -c ' FAIL ' "$OUT/seeds-${be//:/-}.txt") FIM rows failed over $(grep -c passed "$OUT/seeds-${be//:/-}.txt") runs; worst fixed point: $(grep 'fixed point' "$OUT/seeds-${be//:/-}.txt" | awk '{for (i = 1; i <= NF; i++) if ($i == "pass" || $i == "FAIL") { print $(i + 1); break }}' | sort -g | tail -1)"
    grep -E " FAIL |failed" "$OUT/seeds-${be//:/-}.txt" | grep -v " 0 failed" | head
  done
fi
