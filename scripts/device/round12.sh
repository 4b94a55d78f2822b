#!/usr/bin/env bash
# Round 12 on the lent H100 (docs/performance.md "Round 12"; results in
# docs/results/h100-2026-11-26-round12/). Binaries: dist/neuroport (new), dist/neuroport-old.
#   PART=a (~5 min): the user's whole `neuroport fim --target` command on a 256x256x100 1 mm
#     tensor phantom (synth, 7 volumes, no noise; tensors fitted on CUDA; two 3-voxel spheres at
#     the ends of the white matter from scripts/device/fim_regions.py), old and new binary
#     alternating, two rounds, CUDA and NVIDIA OpenCL, stages and peak memory; the outputs of the
#     two binaries compared byte for byte.
#   PART=b (~1 min): FIM example 3 (bench) old / new on CUDA; `check` on both APIs.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
OLD="$PWD/dist/neuroport-old"
F="$OUT/fim.txt"
CHECK_ROWS=fim
# user LABEL BINARY BACKEND PREFIX: `neuroport fim --target` on the phantom; its summary,
# stages and the process's wall and peak memory appended to $OUT/user.txt.
user() {
  local label=$1 bin=$2 be=$3 prefix=$4 err; err=$(mktemp)
  stamp "fim --target $label $be"
  NEUROPORT_STAGES=1 /usr/bin/time -f "process wall %e s, max RSS %M KB" timeout 120 "$bin" fim --backend "$be" \
    --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" \
    --out "$prefix" --force > /dev/null 2> "$err"
  { echo "## $label $be"; grep -vE '^\s*$' "$err" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$OUT/user.txt"
  rm -f "$err"
}
if [ "$PART" = a ]; then
  stamp "synth 256x256x100 at 1 mm"
  step 120 "$B" synth --out "$W/b" --dims 256,256,100 --voxel 1,1,1 --dirs 6 --b0 1 --snr inf > /dev/null
  stamp "dti on CUDA"
  step 120 "$B" dti --backend cuda --dwi "$W/b/dwi.nii.gz" --bvals "$W/b/bvals" --bvecs "$W/b/bvecs" --mask "$W/b/mask.nii.gz" --out "$W/d/" > /dev/null
  step 120 python3 scripts/device/fim_regions.py "$W/b/wm.nii.gz" "$W/src.nii.gz" "$W/tgt.nii.gz"
  for rep in 1 2; do for be in cuda "$OCL"; do
    user "old ($rep)" "$OLD" "$be" "$W/old-${be%%:*}"
    user "new ($rep)" "$B" "$be" "$W/new-${be%%:*}"
  done; done
  for be in cuda opencl; do for m in cost1 cost2 total pathway; do
    cmp -s "$W/old-${be}_$m.nii.gz" "$W/new-${be}_$m.nii.gz" && echo "$be $m: same bytes" || echo "$be $m: DIFFER"
  done; done | tee "$OUT/same.txt"
fi
if [ "$PART" = b ]; then
  for loc in paper exact; do fim "old" "$OLD" cuda $loc; fim "new" "$B" cuda $loc; done
  checks 121 cuda "$OCL"
fi
