#!/usr/bin/env bash
# Round 6's H100 measurements (issue 10: tiled cost kernel, batched evaluations, scalar texture),
# from the repo root with the release binary carried as dist/neuroport. Key lines last.
#   PART=a (~7 min): `check` on CUDA and NVIDIA OpenCL; `reproduce airwc --scale paper` on CUDA
#     (4 and 8 work-groups per SM) and NVIDIA OpenCL, with the per-level lines; `register` on
#     two 1 mm phantom brains (12 dof NCC, 3 levels) as a user runs it, CUDA and OpenCL; ncu
#     on one full-resolution evaluation, in-kernel and texture.
#   PART=c (~3 min): `bench register` over loop shapes (unroll 2/4/8, CUDA launch bounds,
#     8 groups per SM) on CUDA and NVIDIA OpenCL, and on the CPU.
#   PART=h (~2 min): after pinned read-backs stopped making an event: `bench register`, airwc
#     and `register` on CUDA and NVIDIA OpenCL.
#   PART=g (~1.5 min): `check` and `bench fim --example 3` with the final defaults.
#   PART=f (~4 min): issue 9, `check`, then `bench fim --example 3` with 1-8 work-items per voxel
#     in fim_update, 004's and the exact local solver, CUDA and NVIDIA OpenCL; ncu on fim_update.
#   PART=e (~1 min): `bench register` on CUDA with the fixed image streamed past L2 or not.
#   PART=b (~4 min): after the column-split map and the parallel preparation: `check` (register
#     rows), airwc on CUDA and NVIDIA OpenCL, `register` twice per API, ncu in-kernel.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
if [ "$PART" = h ]; then
  # No completion event made for pinned read-backs: `bench register` and `register`, both APIs.
  C="$OUT/bench.txt"
  for be in cuda $OCL; do
    stamp "bench register $be"
    { echo "## $be"; timeout 100 "$B" bench register --backend "$be" --costs sad,ncc,mi --repeats 5 2>&1 | grep -v "bench register:" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$C"
  done
  VARIANTS="cuda 4|$OCL 4"; REPS="1 2 3"; KERNELS=""
fi
if [ "$PART" = g ]; then
  # The defaults after round 6 (fim_update lanes by local solver: 004's 4, exact 1).
  for be in cuda $OCL; do
    stamp "check --backend $be"
    step 100 "$B" check --backend "$be" --seed 46 > "$OUT/check-${be%%:*}.txt" 2>&1
    grep -E "FAIL|error" "$OUT/check-${be%%:*}.txt" | head; grep -E "fim_block|batch" "$OUT/check-${be%%:*}.txt"; tail -1 "$OUT/check-${be%%:*}.txt"
  done
  F="$OUT/fim.txt"
  for v in "cuda paper" "cuda exact" "$OCL paper" "$OCL exact"; do
    set -- $v
    stamp "bench fim $v"
    { echo "## $v"; step 60 "$B" bench fim --example 3 --backend "$1" --local "$2" --repeats 3 2>&1 | tail -1; } | tee -a "$F"
  done
  exit 0
fi
if [ "$PART" = f ]; then
  # Issue 9: fim_update with 1, 2, 4, 8 work-items per voxel (NEUROPORT_FIM_LANES), example 3.
  for be in cuda $OCL; do
    stamp "check --backend $be"
    step 100 "$B" check --backend "$be" --seed 45 > "$OUT/check-${be%%:*}.txt" 2>&1
    grep -E "FAIL|error" "$OUT/check-${be%%:*}.txt" | head; grep fim_block "$OUT/check-${be%%:*}.txt"; tail -1 "$OUT/check-${be%%:*}.txt"
  done
  F="$OUT/fim.txt"
  for v in "cuda paper 1" "cuda paper 2" "cuda paper 4" "cuda paper 8" "cuda exact 1" "cuda exact 4" "cuda exact 8" "$OCL paper 1" "$OCL paper 4" "$OCL exact 1" "$OCL exact 4"; do
    set -- $v
    stamp "bench fim $v"
    { echo "## $v"; NEUROPORT_FIM_LANES=$3 NEUROPORT_STAGES=1 step 60 "$B" bench fim --example 3 --backend "$1" --local "$2" --repeats 3 2>&1 | tail -2; } | tee -a "$F"
  done
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  if [ -n "$NCU" ]; then
    for l in paper exact; do
      stamp "ncu fim_update ($l)"
      timeout 120 "$NCU" --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats -k regex:^fim_update\$ --launch-skip 300 -c 1 "$B" --backend cuda bench fim --example 3 --local $l --repeats 0 > "$OUT/ncu-fim-$l.txt" 2>&1
      grep -E "Duration|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Block Size|Grid Size" "$OUT/ncu-fim-$l.txt" | head -10
    done
  fi
  echo "=== FIM summary"
  cat "$F"
  exit 0
fi
if [ "$PART" = e ]; then
  # The fixed image streamed past L2 (CUDA __ldcs, default) or not (NEUROPORT_REG_STREAM=0).
  C="$OUT/bench.txt"
  for v in "1" "0" "1" "0"; do
    stamp "bench register cuda, stream $v"
    { echo "## cuda stream $v"; NEUROPORT_REG_STREAM=$v timeout 100 "$B" bench register --backend cuda --costs sad,ncc,mi --repeats 5 2>&1 | grep -v "bench register:" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$C"
  done
  exit 0
fi
if [ "$PART" = c ]; then
  # Loop shape: slices in flight per item (NEUROPORT_REG_UNROLL) and, on CUDA, work-groups
  # resident per SM (NEUROPORT_REG_MIN_BLOCKS caps registers), SAD/NCC/MI, 240x256x176.
  C="$OUT/bench.txt"
  for v in "cuda - -" "cuda 2 -" "cuda 8 -" "cuda 4 6" "cuda 2 8" "cuda 4 -:g8" "$OCL - -" "$OCL 2 -" "$OCL 8 -"; do
    set -- $v
    env=(); [ "$2" != - ] && env+=(NEUROPORT_REG_UNROLL=$2)
    b=${3%%:*}; [ "$b" != - ] && env+=(NEUROPORT_REG_MIN_BLOCKS=$b)
    case "$3" in *:g8) env+=(NEUROPORT_REG_GROUPS_PER_UNIT=8);; esac
    stamp "bench register $v"
    { echo "## $v"; env "${env[@]}" timeout 100 "$B" bench register --backend "$1" --costs sad,ncc,mi --repeats 3 2>&1 | grep -v "bench register:" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$C"
  done
  stamp "bench register cpu (16 cores)"
  { echo "## cpu"; timeout 100 "$B" bench register --backend cpu --costs sad,ncc,mi --repeats 1 --evals 10 2>&1 | grep -v "bench register:"; } | tee -a "$C"
  exit 0
fi
if [ "$PART" = b ]; then
  for be in cuda $OCL; do
    stamp "check --backend $be"
    step 100 "$B" check --backend "$be" --seed 44 > "$OUT/check-${be%%:*}.txt" 2>&1
    grep -E "FAIL|error" "$OUT/check-${be%%:*}.txt" | head; tail -1 "$OUT/check-${be%%:*}.txt"
  done
  VARIANTS="cuda 4|$OCL 4"; REPS="1 2 3"; KERNELS="register_cost"
fi
if [ "$PART" = a ]; then
  for be in cuda $OCL; do
  stamp "check --backend $be"
  step 100 "$B" check --backend "$be" --seed 43 > "$OUT/check-${be%%:*}.txt" 2>&1
  grep -E "FAIL|error" "$OUT/check-${be%%:*}.txt" | head; grep register "$OUT/check-${be%%:*}.txt" | head -14; tail -1 "$OUT/check-${be%%:*}.txt"
  done
  VARIANTS="cuda 4|cuda 8|$OCL 4"; REPS="1 2"; KERNELS="register_cost register_cost_texture"
fi
R="$OUT/airwc.txt"
IFS='|' read -ra VS <<< "$VARIANTS"
for v in "${VS[@]}"; do
  set -- $v
  stamp "reproduce airwc --scale paper --backend $1, $2 groups per unit"
  d="$OUT/airwc-${1%%:*}-$2"
  NEUROPORT_REG_GROUPS_PER_UNIT=$2 step 120 "$B" reproduce airwc --backend "$1" --scale paper --repeats 3 --out "$d" > "$d.log" 2>&1
  { echo "## $1, $2 groups per unit"; grep -hE "time per evaluation|evaluations|registration time|displacement" "$d"/airwc.md 2>/dev/null | grep -v "by cost" | cut -d'|' -f2-7,9-11; grep -hE "by cost" "$d"/airwc.md 2>/dev/null | cut -d'|' -f2-7; grep "level " "$d.log"; } | tee -a "$R"
done
stamp "synth two 1 mm brains"
step 60 "$B" synth t1 --out "$W/a" > /dev/null 2>&1
step 60 "$B" synth t1 --subject 1 --seed 2 --move -5,8,6,-7,5,-9,4,-3,5,2,-2,1 --out "$W/b" > /dev/null 2>&1
U="$OUT/register.txt"
for be in cuda $OCL; do
  for rep in $REPS; do
    stamp "register 12 dof NCC on $be ($rep)"
    { echo "## $be run $rep"; /usr/bin/time -f "process wall %e s, max RSS %M KB" "$B" register --backend "$be" --fixed "$W/a/t1.nii.gz" --moving "$W/b/t1.nii.gz" --dof 12 --cost ncc --out "$W/r-${be%%:*}-$rep" 2>&1 | grep -vE "^/|^$"; } | tee -a "$U"
  done
done
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ]; then
  for k in $KERNELS; do
    stamp "ncu $k"
    timeout 150 "$NCU" --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis -k "regex:^$k\$" --launch-skip 3 -c 1 "$B" reproduce airwc --backend cuda --scale paper --repeats 0 --out "$W/ncu-$k" > "$OUT/ncu-$k.txt" 2>&1
    grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Grid Size|Warp Cycles Per Issued" "$OUT/ncu-$k.txt" | head -14
  done
fi
echo "=== airwc summary"
cut -c1-220 "$R"
echo "=== register (user command)"
cat "$U"

