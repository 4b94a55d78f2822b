#!/usr/bin/env bash
# Round 30 (one H100 host): a one-member .nii.gz inflated in pieces by one marking pass of
# volume::inflate_marked (round 29: two zlib-rs passes). Binaries: dist/neuroport (new),
# dist/neuroport-r29 (round 29's).
#   a. The issue-7 DWI recompressed by GNU gzip -6 and -1 (one member, as dcm2niix, FSL and
#      nibabel write): `bench nifti --read-only` in pieces by the new binary, by round 29's, and on
#      one core, alternating, three rounds, with CPU time and peak memory; one read of each
#      binary traced (each wave's search, inflate and the rest).
#   b. The whole `dti` on the -6 file, new against round 29's (both in pieces) and one core,
#      alternating, three rounds; the outputs compared byte for byte.
#   c. (after a and b) as a, with dist/neuroport-m (part a's binary: the marking pass alone)
#      beside the new one, which makes the next wave while the reader converts this one and
#      reads the compressed file on every core.
#   e. (after the review) as c, with dist/neuroport-prev (part c's new binary) beside the final
#      one, which fills in runs of one marker at once and takes more literals a look.
#   d. The -6 file on 2, 4 and 8 of the host's cores (taskset; rayon takes as many threads), in
#      pieces forced (NEUROPORT_GZ_SPLIT=1) against one core, alternating, three rounds: where
#      the split starts to pay (it was taken by itself from 8 threads; from 4 after this part).
. "$(dirname "$0")/common.sh"
exec > >(tee -a "$OUT/log.txt") 2>&1
NEW=$PWD/dist/neuroport
OLD=$PWD/dist/neuroport-r29
PART=${PART:-ab}
nvidia-smi -L
lscpu | grep -E "^(CPU\(s\)|Thread|Core|Socket|Model name)"
issue7_volume
gzip -dc "$D/dwi.nii.gz" > "$W/dwi.nii"
for l in 6 1; do gzip -"$l" -c "$W/dwi.nii" > "$W/dwi$l.nii.gz"; done
rm "$W/dwi.nii"
ls -l "$W"/dwi*.nii.gz
# read LABEL BIN SPLIT FILE: one `bench nifti --read-only`, with CPU time and peak memory.
read_once() {
  echo "-- $1: $(NEUROPORT_GZ_SPLIT=$3 /usr/bin/time -f '%U user %S sys %MkB' "$2" bench nifti --read-only --input "$4" 2>&1 | grep -vE '^\s*$' | tr '\n' ' ')"
}
if [[ $PART == *a* ]]; then
  stamp "a: reads, in pieces (new, round 29) and one core"
  for rep in 1 2 3; do
    for f in dwi6 dwi1; do
      read_once "$f new ($rep)" $NEW 1 "$W/$f.nii.gz"
      read_once "$f r29 ($rep)" $OLD 1 "$W/$f.nii.gz"
      read_once "$f one core ($rep)" $NEW 0 "$W/$f.nii.gz"
    done
  done
  for bin in NEW OLD; do
    NEUROPORT_GZ_TRACE=1 ${!bin} bench nifti --read-only --input "$W/dwi6.nii.gz" > "$OUT/trace-$bin.txt" 2>&1
    echo "$bin: $(awk '/^gz wave/ {n++; s+=$(NF-8); i+=$(NF-5); r+=$(NF-1)} END {print n " waves: search " s " ms, inflate " i " ms, the rest " r " ms"}' "$OUT/trace-$bin.txt")"
  done
fi
if [[ $PART == *c* ]]; then
  stamp "c: reads: new (waves ahead), marking pass alone, round 29, one core"
  for rep in 1 2 3; do
    for f in dwi6 dwi1; do
      read_once "$f new ($rep)" $NEW 1 "$W/$f.nii.gz"
      read_once "$f marking ($rep)" $PWD/dist/neuroport-m 1 "$W/$f.nii.gz"
      read_once "$f r29 ($rep)" $OLD 1 "$W/$f.nii.gz"
      read_once "$f one core ($rep)" $NEW 0 "$W/$f.nii.gz"
    done
  done
  NEUROPORT_GZ_TRACE=1 $NEW bench nifti --read-only --input "$W/dwi6.nii.gz" > "$OUT/trace-NEW.txt" 2>&1
  echo "NEW: $(awk '/^gz wave/ {n++; s+=$(NF-8); i+=$(NF-5); r+=$(NF-1)} END {print n " waves: search " s " ms, inflate " i " ms, the rest " r " ms"}' "$OUT/trace-NEW.txt")"
fi
if [[ $PART == *e* ]]; then
  stamp "e: reads: final, part c's, round 29, one core"
  for rep in 1 2 3; do
    for f in dwi6 dwi1; do
      read_once "$f final ($rep)" $NEW 1 "$W/$f.nii.gz"
      read_once "$f prev ($rep)" $PWD/dist/neuroport-prev 1 "$W/$f.nii.gz"
      read_once "$f r29 ($rep)" $OLD 1 "$W/$f.nii.gz"
      read_once "$f one core ($rep)" $NEW 0 "$W/$f.nii.gz"
    done
  done
  for bin in $NEW $PWD/dist/neuroport-prev; do
    NEUROPORT_GZ_TRACE=1 $bin bench nifti --read-only --input "$W/dwi6.nii.gz" > "$OUT/trace.txt" 2>&1
    echo "$(basename $bin): $(awk '/^gz wave/ {n++; s+=$(NF-8); i+=$(NF-5); r+=$(NF-1)} END {print n " waves: search " s " ms, inflate " i " ms, the rest " r " ms"}' "$OUT/trace.txt")"
  done
fi
if [[ $PART == *d* ]]; then
  stamp "d: in pieces on 2, 4 and 8 cores against one core"
  for rep in 1 2 3; do
    for n in 2 4 8; do
      for sp in 1 0; do
        echo "-- $n cores split=$sp ($rep): $(NEUROPORT_GZ_SPLIT=$sp /usr/bin/time -f '%U user %S sys %MkB' taskset -c 0-$((n - 1)) $NEW bench nifti --read-only --input "$W/dwi6.nii.gz" 2>&1 | grep -vE '^\s*$' | tr '\n' ' ')"
      done
    done
  done
fi
if [[ $PART == *b* ]]; then
  stamp "b: dti on the one-member DWI"
  export NEUROPORT_STAGES=1
  for rep in 1 2 3; do
    for run in new r29 one; do
      B=$NEW; sp=1
      [ $run = r29 ] && B=$OLD
      [ $run = one ] && sp=0
      NEUROPORT_GZ_SPLIT=$sp wall "dti $run ($rep)" 90 $B --backend cuda:0 --force dti --dwi "$W/dwi6.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/dti-$run/"
    done
  done
  unset NEUROPORT_STAGES
  echo "b: new against r29: $(same_files "$W/dti-new" "$W/dti-r29") outputs identical; against one core: $(same_files "$W/dti-new" "$W/dti-one")"
fi
stamp done
