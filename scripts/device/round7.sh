#!/usr/bin/env bash
# Round 7's H100 measurements (issue 9: where an update launch of the block FIM goes), from the
# repo root with the release binary carried as dist/neuroport. Key lines last.
#   PART=a (~2 min): `bench fim --example 3` with 4096 (round 6), 1056, 528, 264 work-groups
#     per launch (NEUROPORT_FIM_GROUPS), and with the root replaced by the smallest candidate
#     (NEUROPORT_FIM_DIAG_NOROOT, a diagnostic: not a solver), CUDA and NVIDIA OpenCL.
#   PART=b (~3 min): after the root shared by a voxel's work-items: `check` (fim rows), then
#     `bench fim --example 3`, 004's and the exact solver at 1, 2, 4, 8 work-items per voxel,
#     CUDA and NVIDIA OpenCL; ncu on one update launch.
#   PART=c (~2 min): after S stored only for updated blocks, u set on the device, 4 lanes for
#     both solvers and CUDA built to OpenCL's division and sqrt: `check` (fim rows), `bench fim
#     --example 3` (both solvers, both APIs, and CUDA with correctly rounded division and sqrt).
#   PART=d (~2 min): ncu on 6 consecutive launches of an iteration in mid-run (update,
#     neighbours, candidates' update, x2), 004's and the exact solver.
#   PART=e (~2 min): registers per item capped (NVRTC --maxrregcount 64, 72, 80) so that more
#     groups of fim_update are resident, `bench fim --example 3` on CUDA, both solvers.
#   PART=f (~4 min; run twice: f, then g with the final binary: the fim-t1 plot by grid): the final defaults: `reproduce fim-t1 --scale paper` on CUDA and NVIDIA
#     OpenCL (004 Table 1 beside ours), `bench fim --example 3` both solvers, both APIs.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
F="$OUT/fim.txt"
fim() { # label, env..., then backend and local solver
  local label=$1; shift
  stamp "bench fim $label"
  { echo "## $label"; env "$@" NEUROPORT_STAGES=1 timeout 60 "$B" bench fim --example 3 --backend "${BE}" --local "${LOC}" --repeats 3 2>&1 | tail -2 | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$F"
}
checks() { # `check` on both APIs with seed $1, the FIM rows shown
  for be in cuda $OCL; do
    stamp "check --backend $be"
    step 100 "$B" check --backend "$be" --seed "$1" > "$OUT/check-${be%%:*}.txt" 2>&1
    grep -E "FAIL|error" "$OUT/check-${be%%:*}.txt" | head; grep -E "fim" "$OUT/check-${be%%:*}.txt"; tail -1 "$OUT/check-${be%%:*}.txt"
  done
}
if [ "$PART" = a ]; then
  for BE in cuda $OCL; do
    LOC=paper
    for g in 4096 1056 528 264; do fim "$BE $LOC groups $g" NEUROPORT_FIM_GROUPS=$g; done
    fim "$BE $LOC groups 4096 noroot" NEUROPORT_FIM_DIAG_NOROOT=1
    fim "$BE $LOC groups 528 noroot" NEUROPORT_FIM_GROUPS=528 NEUROPORT_FIM_DIAG_NOROOT=1
    LOC=exact
    for g in 4096 528; do fim "$BE $LOC groups $g" NEUROPORT_FIM_GROUPS=$g; done
  done
fi
if [ "$PART" = b ]; then
  checks 47
  for BE in cuda $OCL; do
    for LOC in paper exact; do
      for l in 1 2 4 8; do fim "$BE $LOC lanes $l" NEUROPORT_FIM_LANES=$l; done
    done
  done
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  if [ -n "$NCU" ]; then
    for LOC in paper exact; do
      stamp "ncu fim_update ($LOC, 4 lanes)"
      NEUROPORT_FIM_LANES=4 timeout 120 "$NCU" --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats -k regex:^fim_update\$ --launch-skip 300 -c 1 "$B" --backend cuda bench fim --example 3 --local $LOC --repeats 0 > "$OUT/ncu-fim-$LOC.txt" 2>&1
      grep -E "Duration|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued" "$OUT/ncu-fim-$LOC.txt" | head -8
    done
  fi
fi
if [ "$PART" = c ]; then
  checks 48
  for BE in cuda $OCL; do
    for LOC in paper exact; do fim "$BE $LOC"; done
  done
  BE=cuda
  for LOC in paper exact; do fim "$BE $LOC, IEEE division and sqrt" NEUROPORT_NVRTC_IEEE=1; done
fi
if [ "$PART" = d ]; then
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  for LOC in paper exact; do
    stamp "ncu fim ($LOC)"
    timeout 200 "$NCU" --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats -k regex:^fim_ --launch-skip 900 -c 6 "$B" --backend cuda bench fim --example 3 --local $LOC --repeats 0 > "$OUT/ncu-fim-$LOC.txt" 2>&1
    grep -E "^  fim_|Duration|Compute \(SM\) Throughput|Registers Per Thread|Achieved Occupancy|Warp Cycles Per Issued|No Eligible|Stall" "$OUT/ncu-fim-$LOC.txt" | head -60
  done
fi
if [ "$PART" = e ]; then
  BE=cuda
  for LOC in paper exact; do
    fim "$BE $LOC"
    for r in 64 72 80; do fim "$BE $LOC maxrregcount $r" NEUROPORT_NVRTC_OPTIONS=--maxrregcount=$r; done
  done
fi
if [ "$PART" = f ]; then
  for be in cuda $OCL; do
    stamp "reproduce fim-t1 --scale paper --backend $be"
    d="$OUT/fim-t1-${be%%:*}"
    step 200 "$B" reproduce fim-t1 --backend "$be" --scale paper --repeats 3 --out "$d" > "$d.log" 2>&1
    grep -h "run time" "$d"/fim-t1.md 2>/dev/null | cut -d'|' -f2-7
  done
  for BE in cuda $OCL; do
    for LOC in paper exact; do fim "$BE $LOC"; done
  done
fi
