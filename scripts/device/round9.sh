#!/usr/bin/env bash
# Round 9's H100 measurements, from the repo root with the release binary carried as
# dist/neuroport (and the previous FIM kernels' binary as dist/neuroport-old). Key lines last.
#   PART=a (~6 min): `check` on CUDA and NVIDIA OpenCL; `bench register` (sad, ncc) with the
#     mixed sampler's in-kernel rows at 2-10 of 16 (NEUROPORT_REG_MIXED_ROWS) beside the
#     texture and in-kernel paths; FIM example 3 with H_G's roots shared by the whole work-group
#     against the old binary (roots shared by the voxel's 4 lanes), both local solvers, both
#     APIs, then lanes 1, 2, 8 on CUDA.
#     Outcome: neither helped (docs/performance.md); both were reverted after commit 210d3e6,
#     whose binary this part needs (NEUROPORT_REG_MIXED_ROWS and the mixed rows are not in later ones).
#   PART=b (~3 min): FIM with updates Jacobi across blocks (the same bits on every run): `check`
#     on both APIs, then example 3 with the old binary (dist/neuroport-old: halos read as other
#     groups write them) and the new one alternating, both local solvers, both APIs, 2 rounds.
#   PART=c (~3 min): registration through 16-bit texels (Sampling::Texture16): `check` on both
#     APIs, `bench register` (in-kernel, texture, texture16; sad, ncc) twice per API, and the
#     Outcome: slower than float texels (docs/performance.md); reverted after commit ec2f36c, whose
#     binary this part needs.
#   PART=d (~2 min): ncu --set full on one launch each of register_cost_texture and
#     register_cost (a lone NCC evaluation at 240x256x176, `bench register`), reports in $OUT.
#   PART=e (~4 min): one registration program per cost (NP_REG_KIND; NEUROPORT_REG_GENERIC=1
#     the old single program): `check` on both APIs, `bench register` both ways alternating,
#     two rounds per API, then `register` on two 1 mm brains 3x per API. Outcome: no gain on the
#     texture path, in-kernel NCC 29 % slower; reverted after commit 8261091 (docs/performance.md).
#   PART=f (~2 min): the registration kernels' launch shape again at round 9's code: work-groups
#     per SM (NEUROPORT_REG_GROUPS_PER_UNIT 4, 5, 8) x slices in flight (NEUROPORT_REG_UNROLL 2, 4)
#     on CUDA; FIM example 3 with 2 Jacobi updates per block per iteration (--inner 2).
#   PART=g (~2 min): the inside test without branches (bitwise &), against the previous binary
#     (dist/neuroport-old), `bench register` alternating, two rounds per API. Outcome: texture -2 %,
#     in-kernel +4 %, PoCL in-kernel +12-38 %; reverted after commit 116fe5b.
#   PART=h (~3 min): FIM with one iteration in 8 timed by device events (the rest queued without
#     them), against the previous binary (every launch timed), alternating, both APIs, both
#     local solvers, two rounds; then the new one with NEUROPORT_FIM_TIME_ALL=1 (the sampled
#     kernel time against the full one).
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
OLD="$PWD/dist/neuroport-old"
C="$OUT/bench.txt"; F="$OUT/fim.txt"
CHECK_ROWS='fim_|mixed'
bench() { # label, backend, env...: `bench register` sad and ncc, to $C
  local label=$1 be=$2; shift 2
  stamp "bench register $label"
  { echo "## $label"; env "$@" timeout 100 "$B" bench register --backend "$be" --costs sad,ncc --repeats 5 2>&1 | grep -v "bench register:" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$C"
}
if [ "$PART" = a ]; then
  checks 91 cuda "$OCL"
  for rows in 2 4 6 8 10; do bench "cuda mixed rows $rows" cuda NEUROPORT_REG_MIXED_ROWS=$rows; done
  for rows in 4 6 8; do bench "$OCL mixed rows $rows" "$OCL" NEUROPORT_REG_MIXED_ROWS=$rows; done
  for rep in 1 2; do
    for be in cuda "$OCL"; do
      for loc in paper exact; do fim "old ($rep)" "$OLD" "$be" $loc; fim "new ($rep)" "$B" "$be" $loc; done
    done
  done
  for lanes in 1 2 8; do for loc in paper exact; do fim "new lanes $lanes" "$B" cuda $loc NEUROPORT_FIM_LANES=$lanes; done; done
fi
if [ "$PART" = b ]; then
  checks 92 cuda "$OCL"
  for rep in 1 2; do
    for be in cuda "$OCL"; do
      for loc in paper exact; do fim "old ($rep)" "$OLD" "$be" $loc; fim "new ($rep)" "$B" "$be" $loc; done
    done
  done
fi
if [ "$PART" = c ]; then
  checks 93 cuda "$OCL"
  for rep in 1 2; do for be in cuda "$OCL"; do bench "$be ($rep)" "$be"; done; done
fi
if [ "$PART" = d ]; then
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  echo "ncu: $NCU"
  for k in register_cost_texture register_cost; do
    stamp "ncu $k"
    timeout 240 "$NCU" --set full -k "regex:^$k\$" --launch-skip 30 -c 1 "$B" bench register --backend cuda --costs ncc --evals 40 --repeats 1 > "$OUT/ncu-$k.txt" 2>&1 || echo "(ncu ended with status $?)"
    grep -E "Duration|Elapsed Cycles|SM Active|Throughput|Pipe|Issue Slots|Hit Rate|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Stall|L1/TEX|Texture|TEX|Mem Busy|Max Bandwidth|Eligible|Theoretical Occ" "$OUT/ncu-$k.txt" | grep -v "^==" | head -60
  done
fi
if [ "$PART" = e ]; then
  U="$OUT/register.txt"
  checks 95 cuda "$OCL"
  for rep in 1 2; do for be in cuda "$OCL"; do for gen in 1 0; do bench "$be generic $gen ($rep)" "$be" NEUROPORT_REG_GENERIC=$gen; done; done; done
  register_brains "$U"
fi
if [ "$PART" = f ]; then
  for un in 2 4; do for gpu in 4 5 8; do bench "cuda groups/SM $gpu unroll $un" cuda NEUROPORT_REG_GROUPS_PER_UNIT=$gpu NEUROPORT_REG_UNROLL=$un; done; done
  for loc in paper exact; do
    for inner in 1 2; do
      stamp "bench fim cuda $loc inner $inner"
      { echo "## cuda $loc inner $inner"; timeout 120 "$B" bench fim --example 3 --backend cuda --local $loc --inner $inner --repeats 3 2>&1 | tail -1 | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$F"
    done
  done
fi
if [ "$PART" = g ]; then
  for rep in 1 2; do for be in cuda "$OCL"; do
    B="$OLD" bench "$be old ($rep)" "$be"
    bench "$be new ($rep)" "$be"
  done; done
fi
if [ "$PART" = h ]; then
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do
    fim "old ($rep)" "$OLD" "$be" $loc; fim "new ($rep)" "$B" "$be" $loc
  done; done; done
  for be in cuda "$OCL"; do for loc in paper exact; do fim "new, every iteration timed" "$B" "$be" $loc NEUROPORT_FIM_TIME_ALL=1; done; done
fi
[ -s "$C" ] && { echo "=== bench summary"; grep -E "^##|ms/eval" "$C" | grep -E "^##|ncc|sad" | cut -c1-220; }
[ -s "$F" ] && { echo "=== fim summary"; grep -E "^##|ms wall" "$F" | cut -c1-200; }
exit 0
