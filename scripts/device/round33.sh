#!/usr/bin/env bash
# Round 33 (one H100 host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 32's).
#   a. `probtrack` on the issue-7 volume's bedpost samples (CUDA, 100 streamlines a seed, as the
#      user commands of rounds 31-32): prev and new alternating, three rounds, with stages,
#      process wall and peak memory; new on the same samples written uncompressed
#      (FSLOUTPUTTYPE=NIFTI), twice; prev and new once on NVIDIA OpenCL. Outputs compared
#      inflated. Then one sample file's read on 1 and on every core (`bench nifti --read-only`).
#   b. `bedpost` on the issue-7 volume (CUDA): prev and new alternating, three rounds (stages,
#      process wall, peak memory), every file compared byte for byte; once each with
#      FSLOUTPUTTYPE=NIFTI; `probtrack` prev and new twice more on new's samples; then every
#      user command, prev and new alternating, two rounds (common.sh's user_commands).
#   c. Part b's bedpost runs (without FSLOUTPUTTYPE) with the binary that makes the angles' means
#      on the summaries' thread, off the compression's path.
#   d. The devices left to the process's end (NEUROPORT_EXIT=quick: no driver teardown, `_exit`)
#      against the default release, the same binary alternating, three rounds: `probtrack`,
#      `fim --target`, `register`, `dti` (256x256x100) and `bedpost` on CUDA; outputs compared.
#      (The switch was taken out after this part: the process ended no sooner.)
. "$(dirname "$0")/common.sh"
round_start
# bedpost_rounds N: bedpost on the issue-7 volume (CUDA), prev and new alternating, N rounds, into
# $OUT/bedpost.txt and $W/bp-{prev,new}-ROUND; then each round's folders compared byte for byte.
bedpost_rounds() {
  local rep v bin
  BP=(bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz")
  for rep in $(seq "$1"); do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u bedpost.txt "bedpost $v ($rep)" "$bin" -- "${BP[@]}" --out "$W/bp-$v-$rep"
  done; done
  for rep in $(seq "$1"); do echo "bedpost round $rep, prev against new: $(bytes "$W/bp-prev-$rep" "$W/bp-new-$rep")"; done | tee -a "$OUT/same.txt"
}
# bytes A B: how many files of folder A are the same bytes (compressed as they lie) as B's.
bytes() { local same=0 f; for f in "$1"/*; do cmp -s "$f" "$2/$(basename "$f")" && same=$((same + 1)); done; echo "$same of $(ls "$1" | wc -l) the same bytes"; }
if [[ $PART == *a* ]]; then
  gpu_setup
  issue7_volume
  stamp "bedpost, .nii.gz and .nii"
  "$NEW" bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp" > /dev/null 2>&1
  FSLOUTPUTTYPE=NIFTI "$NEW" bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bpn" > /dev/null 2>&1
  ls -l "$W/bp" "$W/bpn" | grep merged | tee "$OUT/samples.txt"
  P=(probtrack --seeds "$D/wm.nii.gz" --nsamples 100)
  for rep in 1 2 3; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u probtrack.txt "probtrack $v ($rep)" "$bin" -- "${P[@]}" --backend cuda --bedpost "$W/bp" --out "$W/pt-$v-$rep"
  done; done
  for rep in 1 2; do
    u probtrack.txt "probtrack new .nii ($rep)" "$NEW" -- "${P[@]}" --backend cuda --bedpost "$W/bpn" --out "$W/pt-nii-$rep"
  done
  for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u probtrack.txt "probtrack $OCL $v" "$bin" -- "${P[@]}" --backend "$OCL" --bedpost "$W/bp" --out "$W/pt-ocl-$v"
  done
  {
    for rep in 1 2 3; do echo "round $rep, prev against new: $(same_inflated "$W/pt-prev-$rep" "$W/pt-new-$rep")"; done
    echo "new .nii against new .nii.gz: $(same_inflated "$W/pt-nii-1" "$W/pt-new-1")"
    echo "NVIDIA OpenCL, prev against new: $(same_inflated "$W/pt-ocl-prev" "$W/pt-ocl-new")"
  } | tee "$OUT/same.txt"
  for rep in 1 2; do
    for t in 1 16; do echo "threads $t: $(RAYON_NUM_THREADS=$t "$NEW" bench nifti --read-only --input "$W/bp/merged_th1samples.nii.gz")"; done
    echo ".nii, threads 16: $("$NEW" bench nifti --read-only --input "$W/bpn/merged_th1samples.nii")"
  done | tee "$OUT/read.txt"
  echo "=== summary"
  summary "probtrack.txt" "read samples|records|samples to records|read mask|sample volumes upload|track|release|main"
fi
if [[ $PART == *d* ]]; then
  gpu_setup
  issue7_volume
  fim_phantom
  t1_pair "$W/b2"
  "$NEW" bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp" > /dev/null 2>&1
  for rep in 1 2 3; do for v in release quick; do
    X=; [ $v = quick ] && X=quick
    NEUROPORT_EXIT=$X u exit.txt "probtrack $v ($rep)" "$NEW" -- probtrack --backend cuda --bedpost "$W/bp" --seeds "$D/wm.nii.gz" --nsamples 100 --out "$W/x-ptx-$v" --force
    mkdir -p "$W/x-fim-$v" "$W/x-reg-$v"
    NEUROPORT_EXIT=$X u exit.txt "fim --target $v ($rep)" "$NEW" -- fim --backend cuda --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" --out "$W/x-fim-$v/f" --force
    NEUROPORT_EXIT=$X u exit.txt "register $v ($rep)" "$NEW" -- register --backend cuda --fixed "$W/a/t1.nii.gz" --moving "$W/b2/t1.nii.gz" --dof 12 --cost ncc --out "$W/x-reg-$v/r" --force
    NEUROPORT_EXIT=$X u exit.txt "dti $v ($rep)" "$NEW" -- dti --backend cuda --dwi "$W/b/dwi.nii.gz" --bvals "$W/b/bvals" --bvecs "$W/b/bvecs" --mask "$W/b/mask.nii.gz" --out "$W/x-dti-$v/" --force
    NEUROPORT_EXIT=$X u exit.txt "bedpost $v ($rep)" "$NEW" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/x-bp-$v" --force
  done; done
  for d in ptx fim reg dti bp; do echo "$d: $(same_inflated "$W/x-$d-release" "$W/x-$d-quick")"; done | tee "$OUT/same.txt"
  echo "=== summary"
  summary "exit.txt" "release|write|main"
fi
if [[ $PART == *c* ]]; then
  gpu_setup
  issue7_volume
  bedpost_rounds 4
  echo "=== summary"
  summary "bedpost.txt" "fit and sample|merged samples|mean angles|summaries|write|release|main"
fi
if [[ $PART == *b* ]]; then
  gpu_setup
  issue7_volume
  bedpost_rounds 3
  for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    FSLOUTPUTTYPE=NIFTI u bedpost.txt "bedpost FSLOUTPUTTYPE=NIFTI $v" "$bin" -- "${BP[@]}" --out "$W/bpn-$v"
  done
  echo "bedpost .nii, prev against new: $(bytes "$W/bpn-prev" "$W/bpn-new")" | tee -a "$OUT/same.txt"
  for rep in 1 2; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u probtrack.txt "probtrack $v ($rep)" "$bin" -- probtrack --seeds "$D/wm.nii.gz" --nsamples 100 --backend cuda --bedpost "$W/bp-new-1" --out "$W/pt-$v-$rep"
  done; echo "probtrack round $rep, prev against new: $(same_inflated "$W/pt-prev-$rep" "$W/pt-new-$rep")" | tee -a "$OUT/same.txt"; done
  rm -rf "$W"/bp-* "$W"/bpn-* "$W"/pt-*
  user_commands "$OLD" "$NEW" same-users.txt
  echo "=== summary"
  for f in bedpost.txt probtrack.txt users.txt; do
    echo "## $f"
    summary "$f" "fit and sample|merged samples|mean angles|summaries|samples to records|read samples|records|write|release|main"
  done
fi
