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
PART=${PART:-ab}
round_start
OLD=$PWD/dist/neuroport-r29
issue7_volume
gzip -dc "$D/dwi.nii.gz" > "$W/dwi.nii"
for l in 6 1; do gzip -"$l" -c "$W/dwi.nii" > "$W/dwi$l.nii.gz"; done
rm "$W/dwi.nii"
ls -l "$W"/dwi*.nii.gz
# read_once LABEL BIN SPLIT FILE: one `bench nifti --read-only`, with CPU time and peak memory.
read_once() {
  echo "-- $1: $(NEUROPORT_GZ_SPLIT=$3 /usr/bin/time -f '%U user %S sys %MkB' "$2" bench nifti --read-only --input "$4" 2>&1 | grep -vE '^\s*$' | tr '\n' ' ')"
}
# compare ROUNDS LABEL:BIN...: each binary's read in pieces, then one core's, of both files,
# alternating.
compare() {
  local rounds=$1 rep f lb; shift
  for rep in $(seq "$rounds"); do
    for f in dwi6 dwi1; do
      for lb in "$@"; do read_once "$f ${lb%%:*} ($rep)" "${lb#*:}" 1 "$W/$f.nii.gz"; done
      read_once "$f one core ($rep)" $NEW 0 "$W/$f.nii.gz"
    done
  done
}
# traced LABEL BIN: one read of the -6 file with each wave timed, the waves summed.
traced() {
  NEUROPORT_GZ_TRACE=1 "$2" bench nifti --read-only --input "$W/dwi6.nii.gz" > "$OUT/trace-$1.txt" 2>&1
  echo "$1: $(awk '/^gz wave/ {n++; s+=$(NF-8); i+=$(NF-5); r+=$(NF-1)} END {print n " waves: search " s " ms, inflate " i " ms, the rest " r " ms"}' "$OUT/trace-$1.txt")"
}
if [[ $PART == *a* ]]; then
  stamp "a: reads, in pieces (new, round 29) and one core"
  compare 3 new:$NEW r29:$OLD
  traced NEW $NEW
  traced OLD $OLD
fi
if [[ $PART == *c* ]]; then
  stamp "c: reads: new (waves ahead), marking pass alone, round 29, one core"
  compare 3 new:$NEW marking:$PWD/dist/neuroport-m r29:$OLD
  traced NEW $NEW
fi
if [[ $PART == *e* ]]; then
  stamp "e: reads: final, part c's, round 29, one core"
  compare 3 final:$NEW prev:$PWD/dist/neuroport-prev r29:$OLD
  traced final $NEW
  traced prev $PWD/dist/neuroport-prev
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
