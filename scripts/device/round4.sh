#!/usr/bin/env bash
# Round 4's closing measurements on the H100 box, one call (~7 minutes; every step under its own
# limit), from the repo root with the release binary carried. Prints, the key lines last:
#   1. `check --backend cuda` and NVIDIA OpenCL: every row (counts of pass / FAIL);
#   2. the issue-7 commands, second runs (discovery now overlaps the read): dti, bedpost 600
#      loops and track geodesic --dirs 8 on CUDA and NVIDIA OpenCL, wall + stages;
#   3. `bench fim --example 3` on CUDA and NVIDIA OpenCL, and on the CPU (16 cores);
#   4. `reproduce airwc --scale paper` on CUDA and NVIDIA OpenCL: the time-per-evaluation,
#      evaluations, registration time and error rows.
. "$(dirname "$0")/common.sh"
"$B" devices | tee "$OUT/devices.txt"
OCL=$(grep -i opencl "$OUT/devices.txt" | grep -i nvidia | grep -oE 'opencl:[0-9]+:[0-9]+' | head -1)
PART=${PART:-all}
if [ "$PART" = all ] || [ "$PART" = a ]; then
for be in cuda $OCL; do
  stamp "check --backend $be"
  step 90 "$B" check --backend "$be" --seed 31 > "$OUT/check-${be%%:*}.txt" 2>&1
  grep -E "FAIL|error" "$OUT/check-${be%%:*}.txt" | head; tail -1 "$OUT/check-${be%%:*}.txt"
done
issue7_volume
export NEUROPORT_STAGES=1
in=(--dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz")
for be in cuda $OCL; do
  o="$W/${be%%:*}"
  for run in first again; do wall "dti $be ($run)" 60 $B dti --backend $be "${in[@]}" --out "$o/dti" --force; done
  for run in first again; do wall "bedpost $be 600 loops ($run)" 90 $B bedpost --backend $be "${in[@]}" --out "$o/bp" --force; done
  for run in 1 2; do wall "track geodesic $be --dirs 8 (new file $run)" 90 $B track geodesic --backend $be --tensor "$o/dti_tensor.nii.gz" --seeds "$D/wm.nii.gz" --dirs 8 --out "$o/fibres-$run.tck"; rm -f "$o/fibres-$run.tck"; done
done
unset NEUROPORT_STAGES
fi
if [ "$PART" = all ] || [ "$PART" = b ]; then
for be in cuda $OCL cpu; do
  stamp "bench fim --example 3 --backend $be"
  r=5; [ $be = cpu ] && r=0
  step 60 "$B" --backend "$be" bench fim --example 3 --repeats $r 2>&1 | tail -1
done
for be in cuda $OCL; do
  stamp "reproduce airwc --scale paper --backend $be"
  d="$OUT/airwc-${be%%:*}"
  step 100 "$B" reproduce airwc --backend "$be" --scale paper --repeats 3 --out "$d" > "$d.log" 2>&1
  grep -hE "time per evaluation|evaluations|registration time|displacement" "$d"/airwc.md 2>/dev/null | grep -v "by cost" | cut -d'|' -f2-7 
  grep -hE "by cost" "$d"/airwc.md 2>/dev/null | cut -d'|' -f2-7
done
fi
stamp "round4.sh done"
