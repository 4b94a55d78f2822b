#!/usr/bin/env bash
# Round 10's H100 measurements, from the repo root with the release binary carried as
# dist/neuroport and the previous commit's as dist/neuroport-old. Key lines last.
#   PART=a (~6 min): `check` on CUDA and NVIDIA OpenCL (the layer's mapped-memory row, the
#     registration rows with whole tiles skipping the inside test); `bench register` old against
#     new alternating, two rounds per API, then the new one with NEUROPORT_REG_MAPPED=0 (the
#     record copied back, as before) and NEUROPORT_REG_TEX_NEAR=1 (texture tiles mapped from
#     their first slice); FIM example 3 on the thinner phantom (199 K white-matter voxels, the
#     new binary) against the old 402 K one (old binary), both APIs, both local solvers;
#     `register` on two 1 mm brains, 3 runs per API.
#   PART=b (~3 min): `reproduce fim-t1 --scale paper` on CUDA (Table 1 with the new example 3).
#   PART=c (~2 min): FIM example 3 (199 K voxels) with the neighbour blocks found once per block
#     (new) against dividing the block index at every halo read (old), alternating, both APIs,
#     both local solvers, two rounds; then 2, 8 and 16 lanes per voxel on CUDA.
#   PART=d (~2 min): ncu, durations and grid sizes of 16 consecutive launches mid-run of example 3
#     (199 K voxels; 004's solver, then the exact one): where an iteration's time goes.
#   PART=e (~3 min): OpenCL's read-back as one blocking read (new) against a read and clFinish
#     (old binary), `bench register` alternating, two rounds, both APIs, then the new binary with
#     NEUROPORT_CL_BLOCKING_READ=0; `register` on two 1 mm brains, 3 runs per API.
#   PART=f (~4 min): FIM with the candidates folded into the next iteration's update (two
#     launches an iteration, new) against 004's schedule (old binary), alternating, both APIs,
#     both local solvers, two rounds; the new binary with NEUROPORT_FIM_FOLD=0; CUDA with
#     registers capped at 80 and 64 (3 and 4 resident groups per SM instead of 2).
#   PART=g (~2 min): FIM's u put back in grid order on the device (fim_unblock) and n values
#     downloaded (new) against the blocked download and a host gather (old binary), alternating,
#     both APIs, both local solvers, two rounds, with the stages (alloc and free timed too).
#   PART=h (~3 min): FIM's staging slots allocated ahead on OpenCL GPUs too (new) against CUDA
#     only (old binary), alternating, both APIs, both local solvers, two rounds, stages; then
#     `reproduce fim-t1 --scale paper` on CUDA (PART=b).
#   PART=i (~2 min): FIM's host reordering a block at a time (the block's position divided out
#     once) against a division pair per slot (old binary), alternating, both APIs, both local
#     solvers, two rounds, stages.
#   PART=j (~4 min): the CPU target on the 199 K example 3: node FIM on all 16 cores (exact and
#     004's local solver) against fast sweeping with the Godunov Hamiltonian on one thread.
#   PART=k (~2 min): after the review's refactors (one FIM loop for both schedules, the
#     registration's records as one enum, register_brains): `check` on both APIs, `bench
#     register` on CUDA with and without the mapped record, FIM example 3 on both APIs with
#     both schedules, `register` on two 1 mm brains.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
OLD="$PWD/dist/neuroport-old"
C="$OUT/bench.txt"; F="$OUT/fim.txt"; U="$OUT/register.txt"
CHECK_ROWS='mapped|register (ncc|sad)'
bench() { # label, binary, backend, env...
  local label=$1 bin=$2 be=$3; shift 3
  stamp "bench register $label"
  { echo "## $label"; env "$@" timeout 100 "$bin" bench register --backend "$be" --costs sad,ncc --repeats 5 2>&1 | grep -v "bench register:" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$C"
}
if [ "$PART" = a ]; then
  checks 101 cuda "$OCL"
  for rep in 1 2; do for be in cuda "$OCL"; do
    bench "$be old ($rep)" "$OLD" "$be"
    bench "$be new ($rep)" "$B" "$be"
  done; done
  bench "cuda new, record copied back" "$B" cuda NEUROPORT_REG_MAPPED=0
  bench "cuda new, texture tiles from their first slice" "$B" cuda NEUROPORT_REG_TEX_NEAR=1
  bench "$OCL new, texture tiles from their first slice" "$B" "$OCL" NEUROPORT_REG_TEX_NEAR=1
  for be in cuda "$OCL"; do for loc in paper exact; do
    fim "old (402 K voxels)" "$OLD" "$be" $loc; fim "new (199 K voxels)" "$B" "$be" $loc
  done; done
  register_brains "$U"
fi
if [ "$PART" = c ]; then
  checks 103 cuda "$OCL"
  alternate old new
  for lanes in 2 8 16; do for loc in paper exact; do fim "new lanes $lanes" "$B" cuda $loc NEUROPORT_FIM_LANES=$lanes; done; done
fi
if [ "$PART" = d ]; then
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  for loc in paper exact; do
    stamp "ncu fim $loc"
    timeout 240 "$NCU" --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,sm__warps_active.avg.pct_of_peak_sustained_active --launch-skip 1600 --launch-count 16 "$B" bench fim --example 3 --backend cuda --local $loc --repeats 1 > "$OUT/ncu-fim-$loc.txt" 2>&1 || echo "(ncu ended with status $?)"
    grep -E "fim_[a-z]+|gpu__time_duration|launch__grid_size|warps_active" "$OUT/ncu-fim-$loc.txt" | grep -v "^==" | sed 's/  */ /g' | head -80
  done
fi
if [ "$PART" = e ]; then
  checks 105 cuda "$OCL"
  for rep in 1 2; do for be in "$OCL" cuda; do
    bench "$be old ($rep)" "$OLD" "$be"
    bench "$be new ($rep)" "$B" "$be"
  done; done
  bench "$OCL new, read and clFinish" "$B" "$OCL" NEUROPORT_CL_BLOCKING_READ=0
  register_brains "$U"
fi
if [ "$PART" = f ]; then
  checks 106 cuda "$OCL"
  alternate old new
  for loc in paper exact; do fim "new, 004's schedule" "$B" cuda $loc NEUROPORT_FIM_FOLD=0; done
  for r in 80 64; do for loc in paper exact; do fim "new, maxrregcount $r" "$B" cuda $loc NEUROPORT_NVRTC_OPTIONS=--maxrregcount=$r; done; done
fi
if [ "$PART" = g ] || [ "$PART" = h ] || [ "$PART" = i ]; then
  checks 107 cuda "$OCL"
  alternate old new
  grep -E "^##|^stages" "$F" | sed 's/exec->main 0 ms, devices 0 ms, //'
fi
if [ "$PART" = k ]; then
  checks 108 cuda "$OCL"
  bench "cuda" "$B" cuda
  bench "cuda, record copied back" "$B" cuda NEUROPORT_REG_MAPPED=0
  for be in cuda "$OCL"; do for loc in paper exact; do
    fim "folded" "$B" "$be" $loc; fim "004's schedule" "$B" "$be" $loc NEUROPORT_FIM_FOLD=0
  done; done
  register_brains "$U"
fi
if [ "$PART" = j ]; then
  for loc in exact paper; do cpu_fim $loc; done
  sweeping
fi
if [ "$PART" = b ] || [ "$PART" = h ]; then
  stamp "reproduce fim-t1 --scale paper --backend cuda"
  step 300 "$B" reproduce fim-t1 --scale paper --backend cuda --out "$OUT/fim-t1-cuda" 2>&1 | tail -25
fi
[ -s "$C" ] && { echo "=== bench summary"; grep -E "^##|ms/eval" "$C" | grep -E "^##|ncc|sad" | cut -c1-220; }
[ -s "$F" ] && { echo "=== fim summary"; grep -E "^##|ms wall" "$F" | cut -c1-200; }
exit 0
