#!/usr/bin/env bash
# Round 45 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 44's).
#   a. `check` on CUDA, NVIDIA OpenCL and PoCL (probtrack's sample field now holds only the
#      mask's voxels, through an index over its box: its kernels read one index more).
#   b. every user command, round 44's binary against this one, files compared, peak memory
#      recorded beside each wall; probtrack's kernels against round 44's (`bench probtrack`).
#   c. HCP size (a 145x174x145 sticks DWI, 100 volumes): bedpost's read (volume by volume on
#      every core now) for a small region and the whole mask, probtrack with the whole mask
#      (the field compacted to the mask), round 44's binary against this one, outputs compared.
. "$(dirname "$0")/common.sh"
round_start
if [[ $PART == *a* ]]; then
  gpu_setup
  B=$NEW
  checks 491 cuda "$OCL" "$POCL"
fi
if [[ $PART == *b* ]]; then
  gpu_setup
  B=$NEW
  user_commands "$OLD" "$NEW" same-users.txt
  summary users.txt "main"
  for be in cuda "$OCL" cpu; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    stamp "bench probtrack $be $v"
    step 200 "$bin" bench probtrack --backend "$be" --force 2>&1 | tee -a "$OUT/bench-probtrack.txt" | tail -12
  done; done
fi
if [[ $PART == *c* ]]; then
  gpu_setup
  B=$NEW
  H="$W/hcp"
  stamp "synth an HCP-size sticks DWI"
  step 120 "$B" synth --model sticks --dims 145,174,145 --voxel 1.25 --b0 4 --dirs 48 --shells 1000,2000 --out "$H" > /dev/null 2>&1
  ls -la "$H"
  # The whole mask's bedpost on CUDA alone (on 16 cores its sampling would take minutes).
  for mb in roi1:cuda roi1:cpu mask:cuda; do for v in prev new; do
    m=${mb%:*}; be=${mb#*:}
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u hcp.txt "bedpost $m $be $v" "$bin" -- bedpost --backend $be --dwi "$H/dwi.nii.gz" --bvals "$H/bvals" --bvecs "$H/bvecs" --mask "$H/$m.nii.gz" --out "$W/hb-$m-$be-$v" --force
  done; done
  for be in cuda cpu; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u hcp.txt "probtrack whole mask, roi1 seeds, $be $v" "$bin" -- probtrack --backend $be --bedpost "$W/hb-mask-cuda-new" --seeds "$H/roi1.nii.gz" --nsamples 100 --seed 7 --out "$W/hp-$be-$v" --force
  done; done
  for d in hb-roi1-cuda hb-roi1-cpu hb-mask-cuda hp-cuda hp-cpu; do echo "$d: $(same_inflated "$W/$d-prev" "$W/$d-new")"; done | tee -a "$OUT/same-hcp.txt"
  summary hcp.txt "read[a-z ]*|main"
fi
