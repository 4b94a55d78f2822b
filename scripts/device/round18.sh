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
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
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
