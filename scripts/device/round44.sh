#!/usr/bin/env bash
# Round 44 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 43's).
#   a. `check` on CUDA, NVIDIA OpenCL and PoCL (probtrack's sample field now covers only what
#      the mask's steps read, so its kernels index a smaller field).
#   b. every user command, round 43's binary against this one, files compared (none should
#      change), peak memory recorded beside each wall.
#   c. peak memory at HCP size (a 145x174x145 sticks DWI, ~100 volumes), round 43's binary
#      against this one, outputs compared: bedpost and probtrack on a small region (synth's
#      roi1) on CUDA and the CPU, dti and track geodesic on the CPU.
. "$(dirname "$0")/common.sh"
round_start
if [[ $PART == *a* ]]; then
  gpu_setup
  B=$NEW
  checks 490 cuda "$OCL" "$POCL"
fi
if [[ $PART == *b* ]]; then
  gpu_setup
  B=$NEW
  user_commands "$OLD" "$NEW" same-users.txt
  summary users.txt "main"
fi
if [[ $PART == *c* ]]; then
  gpu_setup
  B=$NEW
  H="$W/hcp"
  stamp "synth an HCP-size sticks DWI"
  step 120 "$B" synth --model sticks --dims 145,174,145 --voxel 1.25 --b0 4 --dirs 48 --shells 1000,2000 --out "$H" > /dev/null 2>&1
  ls -la "$H"
  for be in cuda cpu; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u hcp.txt "bedpost roi1 $be $v" "$bin" -- bedpost --backend $be --dwi "$H/dwi.nii.gz" --bvals "$H/bvals" --bvecs "$H/bvecs" --mask "$H/roi1.nii.gz" --out "$W/hb-$be-$v" --force
    u hcp.txt "probtrack roi1 $be $v" "$bin" -- probtrack --backend $be --bedpost "$W/hb-$be-$v" --seeds "$H/roi1.nii.gz" --nsamples 100 --out "$W/hp-$be-$v" --force
  done; done
  for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u hcp.txt "probtrack roi2 seeds, roi1 mask, no jitter, step 1, cuda $v" "$bin" -- probtrack --backend cuda --bedpost "$W/hb-cuda-$v" --seeds "$H/roi2.nii.gz" --mask "$H/roi1.nii.gz" --no-jitter --step 1.0 --nsamples 200 --seed 7 --out-tck "$W/hq-$v.tck" --out "$W/hq-cuda-$v" --force
    u hcp.txt "probtrack cuda,cpu 10000 $v" "$bin" -- probtrack --backend cuda,cpu --bedpost "$W/hb-cuda-$v" --seeds "$H/roi1.nii.gz" --nsamples 10000 --seed 7 --out "$W/hs-cuda-$v" --force
  done
  cmp "$W/hq-prev.tck" "$W/hq-new.tck" && echo "probtrack no-jitter .tck: same bytes" | tee -a "$OUT/same-hcp.txt"
  for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u hcp.txt "dti cpu $v" "$bin" -- dti --backend cpu --dwi "$H/dwi.nii.gz" --bvals "$H/bvals" --bvecs "$H/bvecs" --mask "$H/mask.nii.gz" --out "$W/hd-$v/" --force
  done
  for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    mkdir -p "$W/ht-$v"
    u hcp.txt "track geodesic cpu $v" "$bin" -- track geodesic --backend cpu --tensor "$W/hd-new/dti_tensor.nii.gz" --seeds "$H/roi1.nii.gz" --dirs 8 --out "$W/ht-$v/fibres.tck" --force
  done
  for d in hb-cuda hp-cuda hq-cuda hs-cuda hb-cpu hp-cpu hd ht; do echo "$d: $(same_inflated "$W/$d-prev" "$W/$d-new")"; done | tee -a "$OUT/same-hcp.txt"
  summary hcp.txt "main"
fi
