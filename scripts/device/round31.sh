#!/usr/bin/env bash
# Round 31 (one H100 host): the .nii.gz members deflated by volume::deflate_floats (neuroport's
# own encoder) instead of miniz_oxide's level 1. Binaries: dist/neuroport (new),
# dist/neuroport-prev (round 30's).
#   a. On the issue-7 volume (CUDA): `synth`, `dti`, `bedpost` and `probtrack` (on each binary's
#      own samples), new and prev alternating, three rounds, with stages, the process's wall and
#      peak memory; every output compared inflated (the compressed bytes differ by design) and
#      the outputs' sizes summed. `bench nifti` (reads, then writes on one core and on all) on the
#      DWI and on bedpost's merged samples, each binary, two rounds; the DWI each binary wrote
#      read back by the new binary (`--read-only`), three rounds.
#   b. Every user command on user-sized inputs, new (with the directions' own sincos) and prev
#      alternating, two rounds, stages and process wall: `dti` on the 256x256x100 DWI, `bedpost`,
#      `probtrack`, `track geodesic --dirs 8 --downsample 5` on the issue-7 volume, `fim --target`
#      on the 402 K-voxel phantom, `register` 12 dof NCC on two 1 mm brains (CUDA); the outputs
#      compared inflated.
#   c. Part b again with the round's final binary (Jacobi four tensors at a time for dti's extra
#      maps, bedpost's dyads and chains' starts), each differing file's values counted
#      (scripts/device/nii_diff.py).
#   d. Part c again with bedpost's merged samples placed a run of the grid a task.
#   e. Part d again with the round's last binary (probtrack's records a run of rows at once).
#   f. The encoder's output kept by each thread from member to member (dist/neuroport-t) against
#      a buffer allocated a member (dist/neuroport): `bench nifti` on the issue-7 DWI and
#      `bedpost` on it, alternating, three rounds.
. "$(dirname "$0")/common.sh"
round_start
if [[ $PART == *a* ]]; then
  issue7_volume
  for rep in 1 2 3; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u synth.txt "synth $v ($rep)" "$bin" -- synth --model sticks --dims 96,112,72 --voxel 1.8,1.8,1.8 --b0 6 --dirs 64 --shells 1000,2000 --out "$W/s-$v" --force
    u dti.txt "dti $v ($rep)" "$bin" -- dti --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/t-$v/" --force
    u bedpost.txt "bedpost $v ($rep)" "$bin" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp-$v" --force
    u probtrack.txt "probtrack $v ($rep)" "$bin" -- probtrack --backend cuda --bedpost "$W/bp-$v" --seeds "$D/wm.nii.gz" --nsamples 100 --out "$W/ptx-$v" --force
  done; done
  {
    echo "synth: $(same_inflated "$W/s-prev" "$W/s-new") the same inflated"
    echo "dti: $(same_inflated "$W/t-prev" "$W/t-new")"
    echo "bedpost: $(same_inflated "$W/bp-prev" "$W/bp-new")"
    echo "probtrack: $(same_inflated "$W/ptx-prev" "$W/ptx-new")"
    for d in s t bp ptx; do
      echo "$d bytes: prev $(du -bc "$W/$d-prev"/*.nii.gz | tail -1 | cut -f1), new $(du -bc "$W/$d-new"/*.nii.gz | tail -1 | cut -f1)"
    done
    ls -l "$W"/bp-prev/merged_th1samples.nii.gz "$W"/bp-new/merged_th1samples.nii.gz "$W"/s-prev/dwi.nii.gz "$W"/s-new/dwi.nii.gz
  } | tee "$OUT/same.txt"
  for rep in 1 2; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    for f in "$D/dwi.nii.gz" "$W/bp-new/merged_th1samples.nii.gz"; do
      stamp "bench nifti $v $(basename "$f") ($rep)"
      { echo "## $v ($rep) $(basename "$f")"; timeout 120 "$bin" bench nifti --input "$f" 2>&1 | grep -vE '^\s*$'; } >> "$OUT/bench-nifti.txt"
    done
  done; done
  for rep in 1 2 3; do for v in prev new; do
    echo "-- read the DWI $v wrote ($rep): $(/usr/bin/time -f '%U user %S sys %MkB' "$NEW" bench nifti --read-only --input "$W/s-$v/dwi.nii.gz" 2>&1 | grep -vE '^\s*$' | tr '\n' ' ')" >> "$OUT/read.txt"
  done; done
  echo "=== summary"
  for f in synth dti bedpost probtrack; do
    echo "== $f"
    grep -E "^##|process wall|^stages" "$OUT/$f.txt" | grep -oE "^## .*|process wall [0-9.]+ s, max RSS [0-9]+ KB|write [0-9]+ ms|read [0-9]+ ms|main [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'
  done
  cat "$OUT/bench-nifti.txt" "$OUT/read.txt"
fi
if [[ $PART == *[bcde]* ]]; then
  user_commands "$OLD" "$NEW" same-b.txt
  echo "=== summary b"
  grep -E "^##|process wall|^stages" "$OUT/users.txt" | sed -E 's/^stages: //'
fi
if [[ $PART == *f* ]]; then
  issue7_volume
  for rep in 1 2 3; do for v in new kept; do
    bin=$NEW; [ $v = kept ] && bin=$PWD/dist/neuroport-t
    { echo "## $v ($rep)"; timeout 120 "$bin" bench nifti --input "$D/dwi.nii.gz" 2>&1 | grep -E "write .nii.gz"; } >> "$OUT/bench-f.txt"
    u bedpost-f.txt "bedpost $v ($rep)" "$bin" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/f-bp-$v" --force
  done; done
  echo "bedpost: $(same_inflated "$W/f-bp-new" "$W/f-bp-kept") the same inflated" | tee "$OUT/same-f.txt"
  cat "$OUT/bench-f.txt"
  grep -E "^##|process wall|^stages" "$OUT/bedpost-f.txt" | grep -oE "^## .*|process wall [0-9.]+ s|write [0-9]+ ms;|main [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'
fi
stamp done
