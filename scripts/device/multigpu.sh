#!/usr/bin/env bash
# Issue 12 on a multi-GPU box (nvidia-h200-x2 / -x4 / -x8), from the repo root with the release
# binary at ./dist/neuroport; about 6 minutes on an x8, every step under its own time limit.
#   1. `devices` and what `--backend gpus` resolves to (each GPU once: CUDA and NVIDIA's OpenCL
#      list the same boards, matched by PCI address).
#   2. `bench split --scale paper`: bedpost on the 358,600-voxel pipeline volume and on 003
#      Table III dataset 2, geodesic RK2 1M fibres x 1000 steps, probtrack 003 Table II
#      dataset 2 (step 0.1 voxel, threshold 0.9), on 1, 2, 4, 8 GPUs: split-phase wall time
#      (median of 3 after a warm-up), speed-up and scaling efficiency. Targets: >= 90 % from 1
#      to 2 GPUs on bedpost and probtrack, >= 80 % to 8.
#   3. Whole commands on the pipeline volume (with NIfTI I/O): bedpost, track geodesic (250k
#      fibres from the white matter: 1M would write gigabytes of .tck) and probtrack (every
#      white-matter voxel x 50) on cuda:0, cuda:0,cuda:1 and every GPU (twice, alternating): wall time, and the outputs compared
#      byte for byte (several GPUs of one kind must write the bytes one writes).
# Found (round 27, nvidia-h100-x4, seven runs, docs/results/h100x4-2026-11-27-round27): `gpus`
# refused itself until GPUs were matched by UUID / full PCI address; split-phase efficiency 1 -> 2
# GPUs ended at bedpost 79-85 % (pipeline volume) and 70-80 % (dataset 2), probtrack 53-60 %,
# geodesic 72-97 % (targets >= 90 % missed: per-device set-up, cut and paste of 25-40 ms against
# runs of 0.1-0.7 s); every output of 2 and 4 GPUs byte-identical to 1 GPU's. No 8-GPU kind lent.
# Round 28 (scripts/device/round28.sh): shares read and written in place, bedpost 87-93 % and
# 88-95 % on 2 GPUs, 66 % and 60 % on 4.
. "$(dirname "$0")/common.sh"
W=${TMPDIR:-/tmp}/neuroport-multigpu
mkdir -p "$W"
timed() { local s=$(date +%s.%N); "$@"; local rc=$?; echo "wall $(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $s }") s (status $rc)"; }

stamp "GPUs"
nvidia-smi -L
nvidia-smi topo -m 2>/dev/null | head -12
N=$(nvidia-smi -L | grep -c '^GPU ')
$B devices
echo "nvidia-smi lists $N GPUs"

$B devices --json > "$OUT/devices.json"
grep -E '"(spec|pci|uuid)"' "$OUT/devices.json" | paste - - - | head -12
# `gpus` must take each GPU once: a quick split's shares name N devices.
step 60 $B --backend gpus bench split --scale quick --workloads geodesic --repeats 1 > /dev/null 2> "$OUT/gpus.err"
grep -E "warning|error" "$OUT/gpus.err" | head -3
got=$(grep -E "^  geodesic on $N: " "$OUT/gpus.err" | grep -o '#[0-9]*' | sort -u | wc -l)
echo "gpus resolved to $got devices (expected $N)"
ALL=$(seq -s, -f 'cuda:%g' 0 $((N - 1)))
stamp "bench split (paper scale), 1..$N GPUs of $ALL"
step 300 $B --backend "$ALL" bench split --scale paper --repeats 3 > "$OUT/split.txt" 2> "$OUT/split.err"
cat "$OUT/split.txt"
grep -E "warning|error" "$OUT/split.err" | head -5
grep -E " on $N: " "$OUT/split.err" | head -4
# Where each workload's split time goes on 1 and 2 GPUs (stages: each worker's make and chunks).
for w in bedpost-pipeline bedpost-t3 geodesic probtrack; do
  NEUROPORT_STAGES=1 step 120 $B --backend cuda:0,cuda:1 bench split --scale paper --repeats 1 --workloads $w > /dev/null 2> "$OUT/stages-$w.err"
  echo "--- $w"; grep -E "^  $w on" "$OUT/stages-$w.err"; grep '^stages' "$OUT/stages-$w.err" | cut -c1-2500
done

stamp "synth the pipeline volume"
D=$W/data
step 90 $B synth --model sticks --dims 96,112,72 --voxel 1.8,1.8,1.8 --b0 6 --dirs 64 --shells 1000,2000 --out "$D" --force > /dev/null
IN=(--dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs")
LISTS="cuda:0 $ALL"
[ "$N" -gt 2 ] && LISTS="cuda:0 cuda:0,cuda:1 $ALL"
export NEUROPORT_STAGES=1
for rep in 1 2; do
for be in $LISTS; do
  stamp "bedpost --backend $be"
  timed step 90 $B --backend $be --force bedpost "${IN[@]}" --mask "$D/mask.nii.gz" --out "$W/bp-$be" > /dev/null 2> "$W/bp-$be.err"; grep -vE "^$" "$W/bp-$be.err" | tail -3
  stamp "track geodesic 250k fibres --backend $be"
  timed step 90 $B --backend $be --force track geodesic "${IN[@]}" --seeds "$D/wm.nii.gz" --seed-count 250000 --max-steps 1000 --step 0.2 --out "$W/tr-$be.tck" > /dev/null 2> "$W/tr-$be.err"; tail -3 "$W/tr-$be.err"
  stamp "probtrack --backend $be"
  timed step 90 $B --backend $be --force probtrack --bedpost "$W/bp-cuda:0" --seeds "$D/wm.nii.gz" --nsamples 50 --out "$W/pt-$be" > /dev/null 2> "$W/pt-$be.err"; tail -3 "$W/pt-$be.err"
done
done

stamp "1 GPU vs all GPUs: the same bytes"
same=0
for f in "$W"/bp-cuda:0/* "$W"/pt-cuda:0/* "$W/tr-cuda:0.tck" "$W/tr-cuda:0.csv"; do
  for other in ${LISTS#cuda:0 }; do
    g=${f//cuda:0/$other}
    if cmp -s "$f" "$g"; then same=$((same + 1)); else echo "DIFFER $(basename "$f") ($other)"; fi
  done
done
echo "$same files identical"
cp "$W"/*.err "$OUT/" 2>/dev/null
rm -rf "$W"
stamp "done"
