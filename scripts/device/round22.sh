#!/usr/bin/env bash
# Round 22 on the lent H100 (docs/performance.md, FIM "Round 22"; results in
# docs/results/h100-2026-11-27-round22/). Binaries: dist/neuroport (new, the commit of each part),
# dist/neuroport-prev (round 21's final, e69c23c).
#   PART=a (~10 min): FIM, fim_update's packed layout (the voxels that go fill the first slots;
#     where at most 32 go, 32 slots with twice the lanes): `check` (FIM rows) on CUDA, NVIDIA
#     OpenCL and PoCL 5.0, seed 290; `bench fim --example 3` prev and new alternating, 004's
#     solver, two rounds, and the exact one once, CUDA and NVIDIA OpenCL; new with
#     NEUROPORT_FIM_PACK=64 (packing without more lanes) and 16 on CUDA, two rounds; ncu per
#     kernel (new); `fim --target` with both local solvers, prev and new, maps compared (the
#     same bytes expected: the packing moves work between items, not arithmetic).
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
PREV=$PWD/dist/neuroport-prev
if [ "$PART" = a ]; then
  fim_against prev "$PREV" 290 exact
  for rep in 1 2; do for k in 64 16; do
    fimi "new pack $k ($rep)" "$B" cuda paper 0 NEUROPORT_FIM_PACK=$k
  done; done > /dev/null
  fimi "new pack 64" "$B" cuda exact 0 NEUROPORT_FIM_PACK=64 > /dev/null
  fim_summary
  fim_maps_same prev "$PREV"
fi
#     Found: CUDA 18.45-18.46 against 18.61-18.66 ms (pack 16: 18.22-18.30, pack 64: 19.37-19.44),
#     NVIDIA OpenCL 21.87-21.95 against 19.16-19.79; exact 60.5 / 60.7 against 62.5 / 61.8 (CUDA /
#     NVIDIA OpenCL); ncu fim_update 15.68 ms, 7.01 G instructions; the same bytes: reverted.
#   PART=b (~3 min): where fim_update's time goes: ncu's warp states, scheduler, occupancy and
#     memory sections on launches 100-101 of example 3 (004's solver, CUDA), prev and new; the
#     exact solver's launch 200 (new).
#     Found (004's solver, prev, launch 100 of 248, 99 us at ncu's clocks): issue 0.67 of the
#     scheduler's cycles, 5.7 warps resident per scheduler (80 registers, 3 groups per SM), 8.4
#     cycles per issued instruction of which 2.1 waiting on fixed-latency results, 1.9 at
#     barriers, 1.3 not selected, 0.45 / 0.35 short / long scoreboard.
if [ "$PART" = b ]; then
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  IFS=, read -ra runs <<< "${RUNS:-prev $PREV paper 100,new $B paper 100,new $B exact 200}"
  for run in "${runs[@]}"; do
    set -- $run
    stamp "ncu sections fim_update $1 $3"
    timeout 240 "$NCU" --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SpeedOfLight -k regex:fim_update \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum,sm__inst_executed.sum" \
      --launch-skip "$4" --launch-count 2 "$2" bench fim --example 3 --backend cuda --local "$3" --repeats 0 \
      > "$OUT/ncu-sections-$1-$3.txt" 2>&1 || echo "(ncu ended with status $?)"
    grep -E "fim_update|Duration|Stall|Warp Cycles|Issued Warp|No Eligible|Active Warps|Eligible Warps|Achieved Occupancy|Theoretical Occupancy|Registers|Block Limit|Executed Ipc|stalled|local_op|inst_executed.sum|Memory Throughput|L1/TEX Hit|L2 Hit|Shared Memory|Waves" "$OUT/ncu-sections-$1-$3.txt" | head -70
  done
fi
#     (RUNS: comma-separated "LABEL BINARY LOCAL SKIP" runs instead of those three.)
#   PART=c (~3 min): where the registration's lone texture evaluation goes: ncu's sections, the
#     SM and L1TEX throughput breakdowns and the stall reasons of register_cost_texture (one map a
#     launch, 240x256x176), NCC and SAD, CUDA; `bench register` SAD and NCC on CUDA and NVIDIA
#     OpenCL for the lease's baseline.
#     Found (NCC, 54 us at 1.56 GHz): issue 57 %, L1TEX 62 %, the texture data pipe 53 %, DRAM
#     37 %, 47.6 % occupancy (0.8 waves), 4.5 of ~9.5 cycles per issued instruction on long
#     scoreboard; 25.4 M warp instructions (SAD 22.1 M): nothing saturated, latency-bound.
#     `bench register`: CUDA texture SAD 0.0485 / NCC 0.0503 ms wall (kernels 0.0473 / 0.0487).
if [ "$PART" = c ]; then
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  for cost in ncc sad; do
    stamp "ncu register_cost_texture $cost"
    timeout 240 "$NCU" --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
      --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section SpeedOfLight -k regex:register_cost_texture \
      --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,breakdown:sm__throughput.avg.pct_of_peak_sustained_elapsed,breakdown:l1tex__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum" \
      --launch-skip 20 --launch-count 1 "$B" bench register --backend cuda --costs $cost --evals 40 --repeats 1 \
      > "$OUT/ncu-register-$cost.txt" 2>&1 || echo "(ncu ended with status $?)"
    grep -vE "^==PROF==|^\s*$|^    -----|^    Section|^    Metric Name" "$OUT/ncu-register-$cost.txt" | grep -E "register_cost|\s[0-9.,]+$" | head -90
  done
  for be in cuda "$OCL"; do breg "base" "$be"; done
fi
#   PART=d (~7 min): fim_update without the barrier at the end of each listed block (only item 0
#     reads local memory after the block's last barrier): `check` (FIM rows) on CUDA, NVIDIA
#     OpenCL and PoCL 5.0, seed 292; `bench fim --example 3` prev and new alternating, 004's
#     solver, two rounds, and the exact one once, CUDA and NVIDIA OpenCL; ncu per kernel (new);
#     `fim --target` with both local solvers, prev and new, maps compared (the same bytes
#     expected).
#     Found: the same bytes and `check` passing, but no faster (004's 18.81-18.94 against
#     18.55-18.68 ms CUDA, 19.20-19.52 against 19.12-19.39 NVIDIA OpenCL; exact 62.16 / 60.97
#     against 62.31 / 61.91); ncu fim_update 16.06 ms, 7.47 G instructions: reverted.
#   PART=e (~7 min): as d, for fim_update's combinations of eq. 6 written out one call per
#     combination (NP_FIM_COMBOS), each compiled for its own sides (seed 294).
#     Found: the same bytes and `check` passing, warp instructions 7.34 -> 6.08 G, but 004's
#     solver 25.6-25.7 against 18.6-18.7 ms (CUDA), 30.5 against 19.2 (NVIDIA OpenCL), exact 73.0
#     against 62.0: part b with RUNS="new ... paper 100" (e2): 6.0 cycles per issued
#     instruction stalled on instruction fetch (0.24 before) and 30 / 54 MB of local-memory
#     spill loads / stores at the 80-register cap: reverted.
if [ "$PART" = d ] || [ "$PART" = e ]; then
  fim_against prev "$PREV" $([ "$PART" = d ] && echo 292 || echo 294) exact
  fim_maps_same prev "$PREV"
fi
#   PART=f (~8 min), the final binary (round 21's code but for fim_roots' warning fix): `check`
#     on CUDA, NVIDIA OpenCL and PoCL 5.0 (seed 296); the README's commands with prev and new on
#     all three (the same files expected); `fim --target` with both local solvers, maps compared;
#     `bench fim --example 3` prev and new, 004's and exact, CUDA and NVIDIA OpenCL, once.
#     Found: `check` 49 / 48 / 47 rows pass; the README's 42 files and both solvers' maps the same
#     bytes on every device; kernels 18.47 (004's; prev's first, cold run 21.36) and 61.58
#     against 61.30 ms (exact) on CUDA, 19.16 against 19.04 and 61.38 against 61.10 on NVIDIA
#     OpenCL.
#   PART=g (~9 min): fim_settle, the deferred roots and the neighbours in one launch (the roots
#     with their neighbours as the update's launch began, recorded at the queue): `check` (FIM
#     rows) on CUDA, NVIDIA OpenCL and PoCL 5.0, seed 298; `bench fim --example 3` prev, new and
#     new with NEUROPORT_FIM_SETTLE=0 (two launches) alternating, 004's solver, two rounds, CUDA
#     and NVIDIA OpenCL; the exact solver once (unchanged); ncu per kernel (new); both solvers'
#     `fim --target` maps prev against new (the same bytes expected: the same roots, lists and
#     schedule, on PoCL 3.1 here the same bytes); `fim --target --local paper` timed, prev and
#     new, CUDA and NVIDIA OpenCL.
if [ "$PART" = g ]; then
  CHECK_ROWS=fim_ checks 298 cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    fimi "prev ($rep)" "$PREV" $be paper 0
    fimi "new ($rep)" "$B" $be paper 0
    fimi "new SETTLE=0 ($rep)" "$B" $be paper 0 NEUROPORT_FIM_SETTLE=0
  done; done > /dev/null
  for be in cuda "$OCL"; do fimi prev "$PREV" $be exact 0; fimi new "$B" $be exact 0; done > /dev/null
  fim_summary
  ncu_fim_run paper "$B" paper
  fim_maps_same prev "$PREV"
  for rep in 1 2; do for be in cuda "$OCL"; do for v in prev new; do
    bin=$B; [ $v = prev ] && bin=$PREV
    stamp "fim --target --local paper $v $be"
    { echo "## $v ($rep) $be paper"; NEUROPORT_STAGES=1 /usr/bin/time -f "process wall %e s" timeout 120 "$bin" fim --backend "$be" --local paper \
      --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" \
      --out "$W/q-$v" --force 2>&1 >/dev/null | grep -vE '^\s*$' | sed 's/ (NVIDIA H100 80GB HBM3)//'; } >> "$OUT/user.txt"
  done; done; done
  grep -E "^##|E\(gamma\)|stages|process wall" "$OUT/user.txt" | sed -E 's/stages:.*(fim iterations [0-9]+ ms).*(main [0-9]+ ms)/\1, \2/' | cut -c1-200
fi
#     Found: kernels 18.61-18.63 -> 16.81-16.83 ms on CUDA, 19.22-19.27 -> 17.29-17.45 on NVIDIA
#     OpenCL (SETTLE=0: 17.90-17.95 / 18.67-18.85), the same 248 / 256 iterations; exact
#     unchanged; ncu fim_settle 5.77 ms (fim_roots + fim_neighbours were 5.23 + 2.24); the maps the
#     same bytes; `check` passing; `fim --target --local paper` iterations 139-141 against
#     144-145 ms (CUDA), 143-147 against 149 (NVIDIA OpenCL). Kept.
#   PART=h (~8 min), the final binary (fim_settle, and `check`'s same-bits row comparing it with
#     the roots' own launch): as part f, seed 300.
#     Found: `check` 49 / 48 / 47 rows pass; the README's 42 files and both solvers' maps the same
#     bytes as round 21's on every device; kernels 16.86 against 18.62 ms (004's, CUDA), 17.48
#     against 19.04 (NVIDIA OpenCL); exact 61.88 / 61.82 against 61.94 / 61.45.
#   (Parts f and h run the same steps.)
if [ "$PART" = f ] || [ "$PART" = h ]; then
  checks $([ "$PART" = f ] && echo 296 || echo 300) cuda "$OCL" "$POCL"
  readme_compare "$PREV"
  fim_maps_same prev "$PREV"
  F="$OUT/fim.txt"
  for be in cuda "$OCL"; do for loc in paper exact; do fimi prev "$PREV" $be $loc 0; fimi new "$B" $be $loc 0; done; done > /dev/null
  fim_summary
fi
#   PART=i (~4 min), the review's mend (fim_roots gone: with `settle` off, fim_settle's two parts
#     run one after the other; np_fim_at, without a caller, gone): `check` (FIM rows) on CUDA,
#     NVIDIA OpenCL and PoCL 5.0, seed 302 (its same-bits row compares one launch with two); both
#     solvers' `fim --target` maps prev against new.
#     Found: `check` 49 / 48 / 47 rows pass; the maps the same bytes on CUDA and NVIDIA OpenCL.
if [ "$PART" = i ]; then
  CHECK_ROWS=fim_ checks 302 cuda "$OCL" "$POCL"
  fim_maps_same prev "$PREV"
fi
