#!/usr/bin/env bash
# Round 32 (one H100 host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 31's).
#   a. `track geodesic` on the issue-7 volume's tensor (CUDA; --dirs 8): --downsample 5 (as
#      rounds 26 and 31) and 1 (the default, every point), new and prev alternating, three and
#      two rounds, each run into a fresh folder (no rename over an earlier file), with stages,
#      process wall and peak memory; then once each on NVIDIA OpenCL (--downsample 5). Every
#      pair's .tck and .csv compared byte for byte; `check` on CUDA and NVIDIA OpenCL.
#   b. Part a again (without `check`) with c289c11's binary: each batch's CSV rows formatted
#      while the tractogram's thread writes, and stages for the seeds, the tracker's kernels,
#      the fields' upload and the stream's timeline. Then the page cache's write rate into one
#      new file from 1, 2, 4 and 8 threads (scripts/device/pwrite_rate.py, 3 GiB, twice).
#   c. Part b's runs (without the write rate) with the binary that opens output files without
#      truncating an empty temporary (volume::create_file); then each binary twice more with
#      --downsample 5 and --force into one folder (the rename over the earlier run's files).
. "$(dirname "$0")/common.sh"
round_start
# same DIR_A DIR_B: whether the two runs' .tck and .csv are the same bytes.
same() {
  if cmp -s "$1/f.tck" "$2/f.tck" && cmp -s "$1/f.csv" "$2/f.csv"; then echo "same bytes ($(stat -c %s "$1/f.tck") B tck)"; else echo "DIFFER"; ls -l "$1" "$2"; fi
}
if [[ $PART == *[abc]* ]]; then
  gpu_setup
  issue7_volume
  df -hT "$W" | tail -1
  "$B" dti --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/i7/" > /dev/null 2>&1
  T=(track geodesic --tensor "$W/i7/dti_tensor.nii.gz" --seeds "$D/wm.nii.gz" --dirs 8)
  for rep in 1 2 3; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u track.txt "track --downsample 5 $v ($rep)" "$bin" -- "${T[@]}" --backend cuda --downsample 5 --out "$W/d5-$v-$rep/f.tck"
  done; done
  for rep in 1 2; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u track.txt "track --downsample 1 $v ($rep)" "$bin" -- "${T[@]}" --backend cuda --out "$W/d1-$v-$rep/f.tck"
    # The 3.7 GB tractogram is compared below, then removed (disk and page cache).
  done
    echo "downsample 1, round $rep, prev against new: $(same "$W/d1-prev-$rep" "$W/d1-new-$rep")" | tee -a "$OUT/same.txt"
    rm -rf "$W/d1-prev-$rep" "$W/d1-new-$rep"
  done
  for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u track.txt "track --downsample 5 $OCL $v" "$bin" -- "${T[@]}" --backend "$OCL" --downsample 5 --out "$W/ocl-$v/f.tck"
  done
  {
    for rep in 1 2 3; do echo "downsample 5, round $rep, prev against new: $(same "$W/d5-prev-$rep" "$W/d5-new-$rep")"; done
    echo "downsample 5, new round 1 against 3: $(same "$W/d5-new-1" "$W/d5-new-3")"
    echo "NVIDIA OpenCL, prev against new: $(same "$W/ocl-prev" "$W/ocl-new")"
  } | tee -a "$OUT/same.txt"
  [[ $PART == *c* ]] && for rep in 1 2; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u track.txt "track --downsample 5 --force $v ($rep)" "$bin" -- "${T[@]}" --backend cuda --downsample 5 --out "$W/force-$v/f.tck" --force
  done; done
  [[ $PART == *a* ]] && for be in cuda "$OCL"; do
    stamp "check on $be"
    step 200 "$NEW" check --backend "$be" --seed 3201 > "$OUT/check-${be%%:*}.txt" 2>&1
    echo "$be: $(grep -E "passed, [0-9]+ failed" "$OUT/check-${be%%:*}.txt")"
    grep -E "FAIL" "$OUT/check-${be%%:*}.txt" | head -20
  done
  [[ $PART == *b* ]] && for rep in 1 2; do python3 scripts/device/pwrite_rate.py "$W" 3 1 2 4 8 | tee -a "$OUT/pwrite.txt"; done
  echo "=== summary"
  grep -E "^##|process wall|^stages" "$OUT/track.txt" | grep -oE "^## .*|process wall [0-9.]+ s, max RSS [0-9]+ KB|points down [0-9]+ ms|tck [a-z ]+ [0-9]+ ms|seeds [0-9]+ ms|tracker kernels [0-9]+ ms|fields upload [0-9]+ ms|prepare fields [0-9]+ ms|read tensor [0-9]+ ms|csv [0-9]+ ms|trace and write [0-9]+ ms|commit [0-9]+ ms|devices [0-9]+ ms|main [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'
fi
if [[ $PART == *d* ]]; then
  user_commands "$OLD" "$NEW" same-d.txt
  echo "=== summary d"
  grep -E "^##|process wall|^stages" "$OUT/users.txt" | grep -oE "^## .*|process wall [0-9.]+ s, max RSS [0-9]+ KB|(summaries|write|read|read samples|records|trace and write|commit|devices|fit and sample|register|fim iterations) [0-9]+ ms|main [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'
fi
if [[ $PART == *e* ]]; then
  issue7_volume
  for rep in 1 2 3; do for v in prev d new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD; [ $v = d ] && bin=$PWD/dist/neuroport-d
    u bedpost-e.txt "bedpost $v ($rep)" "$bin" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/e-bp-$v" --force
  done; done
  { echo "new against prev: $(same_inflated "$W/e-bp-new" "$W/e-bp-prev")"; echo "d against prev: $(same_inflated "$W/e-bp-d" "$W/e-bp-prev")"; } | tee "$OUT/same-e.txt"
  echo "=== summary e"
  grep -E "^##|process wall|^stages" "$OUT/bedpost-e.txt" | grep -oE "^## .*|process wall [0-9.]+ s|(summaries|merged samples|write) [0-9]+ ms|main [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'
fi
if [[ $PART == *f* ]]; then
  ./dist/touch_rate 2048 1 4 16 | tee "$OUT/touch.txt"
fi
if [[ $PART == *g* ]]; then
  G=$(mktemp -d)
  ./dist/mmap_write_rate "$G" 3072 1 4 8 16 | tee "$OUT/mmap-write.txt"
  rm -rf "$G"
fi
if [[ $PART == *[hj]* ]]; then
  gpu_setup
  issue7_volume
  "$B" dti --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/i7/" > /dev/null 2>&1
  T=(track geodesic --tensor "$W/i7/dti_tensor.nii.gz" --seeds "$D/wm.nii.gz" --dirs 8 --backend cuda)
  for ds in 5 1; do for rep in 1 2; do for v in prev thread new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    if [ $v = thread ]; then export NEUROPORT_TCK_WRITE=thread; else unset NEUROPORT_TCK_WRITE; fi
    u track-${PART}.txt "track --downsample $ds $v ($rep)" "$bin" -- "${T[@]}" --downsample $ds --out "$W/h$ds-$v-$rep/f.tck"
  done
    unset NEUROPORT_TCK_WRITE
    echo "downsample $ds round $rep: new against prev $(same "$W/h$ds-new-$rep" "$W/h$ds-prev-$rep"), thread against prev $(same "$W/h$ds-thread-$rep" "$W/h$ds-prev-$rep")" | tee -a "$OUT/same-${PART}.txt"
    [ $ds = 1 ] && rm -rf "$W"/h1-*-$rep
  done; done
  echo "=== summary $PART"
  grep -E "^##|process wall|^stages" "$OUT/track-${PART}.txt" | grep -oE "^## .*|process wall [0-9.]+ s, max RSS [0-9]+ KB|tck [a-z ]+ [0-9]+ ms|trace and write [0-9]+ ms|main [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'
fi
if [[ $PART == *i* ]]; then
  G=$(mktemp -d)
  for t in 16 8; do ./dist/mmap_window_rate "$G" 3072 $t 76 256 3072 | tee -a "$OUT/mmap-window.txt"; done
  rm -rf "$G"
fi
stamp done
