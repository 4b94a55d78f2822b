#!/usr/bin/env bash
# Round 12 on the lent H100 (docs/performance.md "Round 12"; results in
# docs/results/h100-2026-11-25-round12/). Binaries: dist/neuroport (new), dist/neuroport-old.
#   PART=a (~5 min): the user's whole `neuroport fim --target` command on a 256x256x100 1 mm
#     tensor phantom (synth, 7 volumes, no noise; tensors fitted on CUDA; two 3-voxel spheres at
#     the ends of the white matter from scripts/device/fim_regions.py), old and new binary
#     alternating, two rounds, CUDA and NVIDIA OpenCL, stages and peak memory; the outputs of the
#     two binaries compared byte for byte; the tensor's read alone (bench nifti --read-only).
#   PART=b (~1 min): FIM example 3 (bench) old / new on CUDA; `check` on both APIs.
#   PART=d (~2 min): connectivity's two regions solved together (stacked along z in one run)
#     against one after the other (NEUROPORT_FIM_STACK=0), same binary, alternating, two rounds,
#     CUDA and NVIDIA OpenCL, outputs compared byte for byte; `check` on both APIs.
#   PART=c (~4 min): the README's commands (synth, dti, track geodesic, bedpost, probtrack, fim,
#     register on two 1 mm brains) with the old and the new binary on cuda, NVIDIA OpenCL and
#     auto, alternating, two rounds: each command's wall and stages, and every output compared
#     byte for byte between the binaries (the GPU opened on the discovery thread must change
#     nothing but the wall); then PART=a's fim --target runs again.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
OLD="$PWD/dist/neuroport-old"
F="$OUT/fim.txt"
CHECK_ROWS=fim
if [ "$PART" = c ]; then
  readme_inputs
  for rep in 1 2; do for be in cuda "$OCL" auto; do
    stamp "README commands $be ($rep)"
    readme "$OLD" "$be" "$W/r-old-${be%%:*}-$rep"; readme "$B" "$be" "$W/r-new-${be%%:*}-$rep"
  done; done
  for be in cuda opencl auto; do
    (cd "$W/r-old-$be-1" && find . -type f | sort | while read -r f; do cmp -s "$f" "$W/r-new-$be-1/$f" || echo "$be: $f DIFFERS"; done; echo "$be: $(find . -type f | wc -l) files compared")
  done | tee "$OUT/same-readme.txt"
  PART=a
fi
if [ "$PART" = a ] || [ "$PART" = d ]; then
  fim_phantom
fi
if [ "$PART" = d ]; then
  fim_target_pairs "one after the other" "$B" NEUROPORT_FIM_STACK=0 "stacked" "$B" ""
  checks 131 cuda "$OCL"
fi
if [ "$PART" = a ]; then
  for rep in 1 2; do for bin in "$OLD" "$B"; do
    { echo "## read $(basename "$bin") ($rep)"; "$bin" bench nifti --input "$W/d/dti_tensor.nii.gz" --read-only 2>&1 | tail -1; } | tee -a "$OUT/read.txt"
  done; done
  fim_target_pairs "old" "$OLD" "" "new" "$B" ""
fi
if [ "$PART" = b ]; then
  for loc in paper exact; do fim "old" "$OLD" cuda $loc; fim "new" "$B" cuda $loc; done
  checks 121 cuda "$OCL"
fi
