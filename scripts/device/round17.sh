#!/usr/bin/env bash
# Round 17 on the lent H100 (docs/performance.md, registration "Round 17"; results in
# docs/results/h100-2026-11-26-round17/). Binary: dist/neuroport.
#   PART=a (~3 min): the texture path through slice pairs (a stack of 2-D layers, layer z
#     holding voxels z and z + 1 as one two-channel texel: one bilinear fetch per sample, the z
#     interpolation in the kernel; NEUROPORT_REG_TEX=pairs as halves, pairs-float as floats)
#     against the 3-D scalar texture: `check` with each on CUDA and NVIDIA OpenCL (seed 231);
#     `bench register` (SAD, NCC) alternating, two rounds per API. (Needs commit b529b7c's
#     binary, reverted since.)
#   PART=b (~4 min; needs commit 54344fe's binary): two experiments in one binary. (1) CUDA: the host watches the mapped
#     record's last word (a sentinel it set before the launch, which the kernel overwrites last,
#     after a system fence) instead of waiting for the queue; NEUROPORT_REG_SPIN=0 gives the
#     old wait. (2) Mixed sampling done per tile column outside the slice loop
#     (NEUROPORT_REG_MIXED=R: tile rows below R through the texture unit, the others
#     in-kernel), so each warp issues one sampler's loads. `check` on CUDA and NVIDIA OpenCL
#     with the watch (seed 232) and with R = 8 (seed 233); `bench register` alternating, two
#     rounds per API: spin off / on, R = 4, 8, 12.
#   PART=c (~3 min; needs commit e8aaa67's binary, reverted since): where a lone evaluation's kernel spends the ~10 us it takes beyond a batch's
#     per-map time. ncu (one metric pass) on one lone NCC texture launch, static and dynamic:
#     duration and the SMs' active cycles (min / avg / max: how unevenly they finish); then
#     tiles taken from a counter as groups free up (NEUROPORT_REG_DYNAMIC=1, an experiment whose
#     sums depend on the schedule) against the static assignment: `bench register`
#     alternating, two rounds per API.
#   PART=d (~5 min; needs commit 0feb4b7's binary): the lone evaluation's end made shorter: the last group loads three partials'
#     words before adding any (the same order of additions), and mapped records are watched
#     for every word to change from a sentinel (no fence in the kernel). `check` on CUDA, NVIDIA
#     OpenCL and PoCL 5.0 (seed 234); ncu's SM active cycles on a lone launch (as c);
#     `bench register` with round 14's binary (dist/neuroport-old) and this one alternating,
#     and this one with NEUROPORT_REG_SPIN=0, two rounds per API; `register` on the 1 mm pair,
#     old and new alternating, two rounds per API, outputs compared.
#   PART=e (~2 min; needs commit 83674bc's binary): the 3-D texture of half-float texels (NEUROPORT_REG_TEX=half; the texture
#     unit may filter halves at twice the rate of floats, and a cache line holds twice the
#     texels) against float texels: `check` with halves on CUDA and NVIDIA OpenCL (seed 235),
#     `bench register` (SAD, NCC) alternating, two rounds per API.
#   PART=f (~2 min; results f ran da25a36's binary (the range map in the kernel), f2 d4a2f11's,
#     f3 dec8468's (5 groups per SM)): half texels landed (range-normalised, GPUs only; check's bound gains their
#     rounding): `check` on CUDA, NVIDIA OpenCL and PoCL 5.0 at seeds 236 and 237; `bench
#     register` with round 14's binary (dist/neuroport-old), this one, and this one with float
#     texels (NEUROPORT_REG_TEX=float) alternating, two rounds per API; `reproduce airwc
#     --scale paper` on CUDA and on NVIDIA OpenCL (the texture rows' accuracy with halves).
#   PART=g (~5 min): the README's commands with round 14's binary and this one (common.sh
#     readme_compare), every output compared per backend.
#   PART=h (~2 min; results h ran d4a2f11's binary): the launch shape again with half texels (the texture path's limit moved):
#     `bench register` on CUDA with slices in flight (NEUROPORT_REG_UNROLL 1, 2, 4) x work-groups
#     per SM (NEUROPORT_REG_GROUPS_PER_UNIT 4, 5), two rounds.
#   PART=i (~3 min; needs commit 550bbe8's binary, reverted since): OpenCL's host time per evaluation: value arguments left in the kernel object
#     when unchanged (the default in this binary; NEUROPORT_CL_ARGS=all sets all 17 each launch),
#     and where the host's time goes (NEUROPORT_REG_TRACE=1: the launch call, the read's
#     enqueue, the wait). `check` on NVIDIA OpenCL and PoCL 5.0 (seed 238); `bench register`
#     alternating, two rounds, on NVIDIA OpenCL, once on CUDA.
#   PART=j (~2 min; needs commit ac76a2d's binary): the cost fixed at build time again (round 9's
#     per-cost programs, NEUROPORT_REG_KIND=0 SAD / 2 NCC), now that half texels made the texture
#     path faster: `bench register` of SAD and of NCC, generic and specialised alternating, two
#     rounds, CUDA.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
if [ "$PART" = a ]; then
  for tex in pairs pairs-float; do (OUT="$OUT/check-$tex"; mkdir -p "$OUT"; export NEUROPORT_REG_TEX=$tex; CHECK_ROWS=register checks 231 cuda "$OCL"); done
  for rep in 1 2; do for be in cuda "$OCL"; do
    breg "3-D scalar ($rep)" "$be"
    breg "pairs half ($rep)" "$be" NEUROPORT_REG_TEX=pairs
    breg "pairs float ($rep)" "$be" NEUROPORT_REG_TEX=pairs-float
  done; done
fi
if [ "$PART" = b ]; then
  CHECK_ROWS=register checks 232 cuda "$OCL"
  (OUT="$OUT/check-mixed"; mkdir -p "$OUT"; export NEUROPORT_REG_MIXED=8; CHECK_ROWS=register checks 233 cuda "$OCL")
  for rep in 1 2; do
    for be in cuda "$OCL"; do
      breg "queue wait ($rep)" "$be" NEUROPORT_REG_SPIN=0
      breg "record watch ($rep)" "$be"
    done
    for rows in 4 8 12; do breg "mixed $rows ($rep)" cuda NEUROPORT_REG_MIXED=$rows; done
  done
fi
if [ "$PART" = c ]; then
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  for d in 0 1; do
    stamp "ncu dynamic=$d"
    NEUROPORT_REG_DYNAMIC=$d timeout 200 "$NCU" --metrics gpu__time_duration.sum,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.max,smsp__cycles_active.avg -k "regex:^register_cost_texture\$" --launch-skip 30 -c 3 "$B" bench register --backend cuda --costs ncc --evals 40 --repeats 1 > "$OUT/ncu-d$d.txt" 2>&1 || echo "(ncu ended with status $?)"
    grep -E "gpu__time|sm__cycles|smsp__cycles" "$OUT/ncu-d$d.txt"
  done
  for rep in 1 2; do for be in cuda "$OCL"; do
    breg "static ($rep)" "$be"
    breg "dynamic ($rep)" "$be" NEUROPORT_REG_DYNAMIC=1
  done; done
fi
if [ "$PART" = d ]; then
  OLD="$PWD/dist/neuroport-old"
  CHECK_ROWS=register checks 234 cuda "$OCL" "$POCL"
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  stamp "ncu"
  timeout 200 "$NCU" --metrics gpu__time_duration.sum,sm__cycles_active.min,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.max -k "regex:^register_cost_texture\$" --launch-skip 30 -c 3 "$B" bench register --backend cuda --costs ncc --evals 40 --repeats 1 > "$OUT/ncu.txt" 2>&1 || echo "(ncu ended with status $?)"
  grep -E "gpu__time|sm__cycles" "$OUT/ncu.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    B="$OLD" breg "round 14 ($rep)" "$be"
    breg "new ($rep)" "$be"
    breg "new, queue wait ($rep)" "$be" NEUROPORT_REG_SPIN=0
  done; done
  t1_pair "$W/b"
  reg_pairs 2 old "$OLD" "" new "$B" ""
  echo "=== summary"; grep -E "^##|registration|process wall" "$OUT/register.txt" | sed 's/ evaluations in / in /'
fi
if [ "$PART" = e ]; then
  (OUT="$OUT/check-half"; mkdir -p "$OUT"; export NEUROPORT_REG_TEX=half; CHECK_ROWS=register checks 235 cuda "$OCL")
  for rep in 1 2; do for be in cuda "$OCL"; do
    breg "float texels ($rep)" "$be"
    breg "half texels ($rep)" "$be" NEUROPORT_REG_TEX=half
  done; done
fi
if [ "$PART" = f ]; then
  OLD="$PWD/dist/neuroport-old"
  for seed in 236 237; do (OUT="$OUT/check-$seed"; mkdir -p "$OUT"; CHECK_ROWS="register|fim_|layer" checks "$seed" cuda "$OCL" "$POCL"); done
  for rep in 1 2; do for be in cuda "$OCL"; do
    B="$OLD" breg "round 14 ($rep)" "$be"
    breg "half texels ($rep)" "$be"
    breg "float texels ($rep)" "$be" NEUROPORT_REG_TEX=float
  done; done
  for be in cuda "$OCL"; do
    stamp "reproduce airwc $be"
    step 200 "$B" reproduce airwc --backend "$be" --scale paper --repeats 3 --out "$OUT/airwc-${be//:/-}" 2>&1 | grep -vE "^  " | tail -20
  done
fi
if [ "$PART" = g ]; then
  readme_compare "$PWD/dist/neuroport-old"
fi
if [ "$PART" = h ]; then
  for rep in 1 2; do for u in 2 1 4; do for gpu in 4 5; do
    breg "unroll $u, $gpu per SM ($rep)" cuda NEUROPORT_REG_UNROLL=$u NEUROPORT_REG_GROUPS_PER_UNIT=$gpu
  done; done; done
fi
if [ "$PART" = i ]; then
  CHECK_ROWS=XXX checks 238 "$OCL" "$POCL"
  for rep in 1 2; do
    breg "all arguments ($rep)" "$OCL" NEUROPORT_CL_ARGS=all NEUROPORT_REG_TRACE=1
    breg "changed arguments ($rep)" "$OCL" NEUROPORT_REG_TRACE=1
  done
  breg "cuda" cuda NEUROPORT_REG_TRACE=1
  for a in all cached; do
    stamp "trace $a"
    NEUROPORT_CL_ARGS=$a NEUROPORT_REG_TRACE=1 timeout 100 "$B" bench register --backend "$OCL" --costs ncc --repeats 5 2>&1 | grep -E "trace|texture" | sed "s/^/$a: /"
  done
  stamp "trace cuda"
  NEUROPORT_REG_TRACE=1 timeout 100 "$B" bench register --backend cuda --costs ncc --repeats 5 2>&1 | grep -E "trace|texture"
fi
if [ "$PART" = j ]; then
  for rep in 1 2; do
    for k in 0 2; do
      c=$([ $k = 0 ] && echo sad || echo ncc)
      BREG_COSTS=$c breg "generic $c ($rep)" cuda
      BREG_COSTS=$c breg "kind $k $c ($rep)" cuda NEUROPORT_REG_KIND=$k
    done
  done
fi
