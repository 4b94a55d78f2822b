#!/usr/bin/env bash
# Round 42 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 41's).
#   a. `check` on CUDA, NVIDIA OpenCL and PoCL (check's table layout changed).
#   b. every user command, round 41's binary against this one, files compared (register's warped
#      image now comes from its matrix as written: a last-bit change in some runs); then
#      `resample` of the moving 1 mm brain through register's matrix (the same bytes as its
#      warped image expected) and of its brain mask with nearest neighbour, timed.
#   c. `fim --backend cpu` on the 402 K-voxel phantom with stderr to a file: its progress lines.
. "$(dirname "$0")/common.sh"
round_start
if [[ $PART == *a* ]]; then
  gpu_setup
  B=$NEW
  checks 480 cuda "$OCL" "$POCL"
fi
if [[ $PART == *b* ]]; then
  gpu_setup
  B=$NEW
  user_commands "$OLD" "$NEW" same-users.txt
  summary users.txt "main"
  stamp "resample"
  for rep in 1 2; do
    wall "resample linear ($rep)" 60 "$NEW" resample --ref "$W/a/t1.nii.gz" --moving "$W/b2/t1.nii.gz" --affine "$W/ub-reg-new/r_affine.txt" --out "$W/rs-lin.nii.gz" --force
    wall "resample nearest mask ($rep)" 60 "$NEW" resample --ref "$W/a/t1.nii.gz" --moving "$W/b2/brain.nii.gz" --affine "$W/ub-reg-new/r_affine.txt" --interp nearest --out "$W/rs-nn.nii.gz" --force
    wall "resample --fsl-mat ($rep)" 60 "$NEW" resample --ref "$W/a/t1.nii.gz" --moving "$W/b2/t1.nii.gz" --fsl-mat "$W/ub-reg-new/r.mat" --out "$W/rs-mat.nii.gz" --force
  done
  cmp <(gzip -dc "$W/rs-lin.nii.gz") <(gzip -dc "$W/ub-reg-new/r_warped.nii.gz") && echo "resample linear = register's warped image, byte for byte" | tee -a "$OUT/same-users.txt"
fi
if [[ $PART == *c* ]]; then
  gpu_setup
  B=$NEW
  [ -e "$W/d/dti_tensor.nii.gz" ] || fim_phantom
  stamp "fim on the CPU, progress in a log"
  step 120 "$NEW" fim --backend cpu --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" --out "$W/fim-cpu/f" --force 2> "$OUT/fim-cpu-log.txt" > /dev/null
  cat "$OUT/fim-cpu-log.txt"
fi
