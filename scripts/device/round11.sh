#!/usr/bin/env bash
# Round 11 on the lent H100 (docs/performance.md "Round 11"; results in
# docs/results/h100-2026-11-25-round11/). Binaries: dist/neuroport (new), dist/neuroport-combo
# (only the combinations off the stack), dist/neuroport-old (round 10's last commit).
#   PART=a (~8 min): `check` on CUDA and NVIDIA OpenCL; FIM example 3 (199 K voxels), old /
#     combo / new alternating, two rounds, both APIs and both local solvers; the new binary
#     without H_G's roots (NEUROPORT_FIM_DIAG_NOROOT: wrong answers, the rest timed); ncu on 8
#     consecutive launches mid-run of the new binary (duration, instructions, registers).
#   PART=b (~6 min): the same without ncu, with dist/neuroport-old = 74ea10e (registers, one
#     chain), dist/neuroport-combo = 3ee47cf (H_G's points two at a time), dist/neuroport =
#     04859bf (and the combinations two at a time, straight-line).
#   PART=c (~5 min): which build first fails `check`'s fim_block[same bits] on CUDA (seeds 111,
#     112, 113): dist/neuroport-old = 903b3e3 (round 10), dist/neuroport-combo = deaa253,
#     dist/neuroport = 74ea10e, and 74ea10e with NVRTC --fmad=false; then FIM example 3 on CUDA
#     with and without --fmad=false.
#   PART=d (~3 min): the kept state (deaa253 and the diagnostic #ifdef): `check` on both APIs
#     (seeds 114, 115 on CUDA), FIM example 3 on both APIs and both local solvers.
#   PART=e (~2 min): work-groups per FIM launch (NEUROPORT_FIM_GROUPS 264 / 528 / 1056 / 4096,
#     the default), example 3, both local solvers, CUDA; 1056 and 4096 on NVIDIA OpenCL.
#   PART=f (~5 min): H_G's points made one slot at a time (dist/neuroport) against the kept state
#     (dist/neuroport-old = 30e76c3): `check` on CUDA at seeds 111-115 and on NVIDIA OpenCL,
#     FIM example 3 alternating, two rounds, both APIs and local solvers.
#   PART=g (~8 min): H_G's root search by interpolation and the conditional point below
#     (dist/neuroport = 3d371ce) against the kept state (dist/neuroport-old = 4733d50): `check`
#     on CUDA at seeds 111-115 and on NVIDIA OpenCL; FIM example 3 alternating, two rounds, both
#     APIs and local solvers; CPU node FIM (16 cores) on example 3 with each binary; `reproduce
#     fim-t1 --scale paper` on CUDA with the new one.
#   PART=h (~3 min): the CPU target again with 3d371ce: node FIM on all 16 cores (exact and
#     004's solver) and Godunov fast sweeping on one thread, run to convergence, example 3.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
OLD="$PWD/dist/neuroport-old"; COMBO="$PWD/dist/neuroport-combo"
F="$OUT/fim.txt"
CHECK_ROWS=fim
same_bits() { # SEED...: `check` on CUDA at each seed; its same-bits row and summary shown
  local seed
  for seed in "$@"; do
    stamp "check cuda seed $seed"
    timeout 120 "$B" check --backend cuda --seed $seed > "$OUT/check-cuda-$seed.txt" 2>&1
    echo "seed $seed: $(grep -E 'same bits' "$OUT/check-cuda-$seed.txt" | sed 's/  */ /g') | $(tail -n 1 "$OUT/check-cuda-$seed.txt")"
  done
}
if [ "$PART" = h ]; then
  for loc in exact paper; do cpu_fim $loc; done
  sweeping
fi
if [ "$PART" = g ]; then
  same_bits 111 112 113 114 115
  checks 117 "$OCL"
  alternate "4733d50" "interpolated root"
  for loc in exact paper; do cpu_fim $loc "$OLD" 4733d50; cpu_fim $loc "$B" interpolated; done
  stamp "reproduce fim-t1 --scale paper --backend cuda"
  step 300 "$B" reproduce fim-t1 --scale paper --backend cuda --out "$OUT/fim-t1-cuda" 2>&1 | tail -25
fi
if [ "$PART" = f ]; then
  same_bits 111 112 113 114 115
  checks 116 "$OCL"
  alternate "30e76c3" "points by slot"
fi
if [ "$PART" = e ]; then
  for rep in 1 2; do for loc in paper exact; do for g in 4096 264 528 1056; do
    fim "groups $g ($rep)" "$B" cuda $loc NEUROPORT_FIM_GROUPS=$g
  done; done; done
  for loc in paper exact; do for g in 4096 1056; do fim "groups $g" "$B" "$OCL" $loc NEUROPORT_FIM_GROUPS=$g; done; done
fi
if [ "$PART" = d ]; then
  checks 114 cuda "$OCL"
  stamp "check cuda seed 115"
  timeout 120 "$B" check --backend cuda --seed 115 > "$OUT/check-115.txt" 2>&1; grep -E "same bits" "$OUT/check-115.txt"; tail -n 1 "$OUT/check-115.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do fim "kept ($rep)" "$B" "$be" $loc; done; done; done
fi
if [ "$PART" = c ]; then
  for seed in 111 112 113; do
    for v in "903b3e3:$OLD" "deaa253:$COMBO" "74ea10e:$B" "74ea10e-fmad-false:$B"; do
      bin=${v#*:}; opt=""; [ "${v%%:*}" = 74ea10e-fmad-false ] && opt=--fmad=false
      stamp "check cuda seed $seed ${v%%:*}"
      NEUROPORT_NVRTC_OPTIONS=$opt timeout 120 "$bin" check --backend cuda --seed $seed > "$OUT/check-$seed-${v%%:*}.txt" 2>&1
      echo "seed $seed ${v%%:*}: $(grep -E 'same bits' "$OUT/check-$seed-${v%%:*}.txt" | sed 's/  */ /g') | $(tail -n 1 "$OUT/check-$seed-${v%%:*}.txt")"
    done
  done
  for rep in 1 2; do for loc in paper exact; do
    fim "74ea10e ($rep)" "$B" cuda $loc; fim "74ea10e --fmad=false ($rep)" "$B" cuda $loc NEUROPORT_NVRTC_OPTIONS=--fmad=false
  done; done
fi
if [ "$PART" = b ]; then
  checks 112 cuda "$OCL"
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do
    fim "74ea10e ($rep)" "$OLD" "$be" $loc; fim "3ee47cf ($rep)" "$COMBO" "$be" $loc; fim "04859bf ($rep)" "$B" "$be" $loc
  done; done; done
  for loc in paper exact; do fim "04859bf, no roots (diagnostic)" "$B" cuda $loc NEUROPORT_FIM_DIAG_NOROOT=1; done
fi
if [ "$PART" = a ]; then
  checks 111 cuda "$OCL"
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do
    fim "old ($rep)" "$OLD" "$be" $loc; fim "combo ($rep)" "$COMBO" "$be" $loc; fim "new ($rep)" "$B" "$be" $loc
  done; done; done
  for loc in paper exact; do fim "new, no roots (diagnostic)" "$B" cuda $loc NEUROPORT_FIM_DIAG_NOROOT=1; done
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  for loc in paper exact; do
    stamp "ncu fim $loc"
    timeout 180 "$NCU" --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum --launch-skip 800 --launch-count 8 "$B" bench fim --example 3 --backend cuda --local $loc --repeats 1 > "$OUT/ncu-fim-$loc.txt" 2>&1 || echo "(ncu ended with status $?)"
    grep -E "fim_[a-z]+|gpu__time|grid_size|registers|inst_executed|warps_active|lg_throttle|local_op" "$OUT/ncu-fim-$loc.txt" | grep -v "^==" | sed 's/  */ /g' | head -80
  done
fi
