#!/usr/bin/env bash
# Round 29 (nvidia-h100-x2): DTI writes its fit and scalar maps where its voxels lie
# (dti::FitShare), a GPU making the scalar maps from the tensors it keeps. Binaries:
# dist/neuroport (new), dist/neuroport-r28 (round 28's).
#   a. `check --backend all` (CUDA, NVIDIA OpenCL, PoCL 5.0) with the new binary: the new row
#      "dti fit shares in place" among them.
#   b. Whole `dti` on the issue-7 volume, 1 and 2 GPUs, new and round 28's alternating, three
#      rounds (NEUROPORT_STAGES=1: the fit stage); every output compared byte for byte.
#   c. (PART=c, one GPU) reading a DWI written by another tool: the issue-7 DWI recompressed by
#      GNU gzip (one gzip member, as dcm2niix, FSL and nibabel write) against neuroport's own
#      multi-member file: `bench nifti --read-only` and the whole `dti` command on each.
#   d. (PART=d, one GPU) the one-member DWI (GNU gzip -6 and -1) inflated in pieces
#      (volume::gz_split) against one core (NEUROPORT_GZ_SPLIT=0), alternating: read alone (and
#      its peak memory), the whole `dti`; the outputs compared.
#   e. (PART=e) as d, after the pieces' buffers were pooled and their window bytes kept as runs,
#      with one read traced (NEUROPORT_GZ_TRACE=1: each wave's search, inflate and the rest).
. "$(dirname "$0")/common.sh"
exec > >(tee -a "$OUT/log.txt") 2>&1
NEW=$PWD/dist/neuroport
OLD=$PWD/dist/neuroport-r28
PART=${PART:-ab}
nvidia-smi -L
issue7_volume
IN=(--dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs")

if [[ $PART == *a* ]]; then
  stamp "a: check, every device"
  step 400 $NEW check --backend all --seed 2901 > "$OUT/check.txt" 2>&1
  grep -E "dti|FAIL" "$OUT/check.txt" | head -40
  tail -3 "$OUT/check.txt"
fi

if [[ $PART == *b* ]]; then
  export NEUROPORT_STAGES=1
  for rep in 1 2 3; do
    for bin in new old; do
      B=$NEW; [ $bin = old ] && B=$OLD
      for be in cuda:0 cuda:0,cuda:1; do
        wall "dti $bin $be ($rep)" 90 $B --backend $be --force dti "${IN[@]}" --mask "$D/mask.nii.gz" --out "$W/dti-$bin-$be/"
      done
    done
  done
  unset NEUROPORT_STAGES
  stamp "b: the same bytes (new 1 GPU against new 2 GPUs and round 28's 1 and 2 GPUs)"
  same=0; differ=0
  for f in "$W"/dti-new-cuda:0/*; do
    for other in new-cuda:0,cuda:1 old-cuda:0 old-cuda:0,cuda:1; do
      g=${f//new-cuda:0/$other}
      if cmp -s "$f" "$g"; then same=$((same + 1)); else differ=$((differ + 1)); echo "DIFFER $(basename "$f") ($other)"; fi
    done
  done
  echo "$same files identical, $differ differ"
fi
# The issue-7 DWI recompressed by GNU gzip at each given level: $W/dwi<level>.nii.gz.
one_member() {
  gzip -dc "$D/dwi.nii.gz" > "$W/dwi.nii"
  for l in "$@"; do gzip -"$l" -c "$W/dwi.nii" > "$W/dwi$l.nii.gz"; done
  ls -l "$W"/dwi*.nii*
}
# split_reads ROUNDS NAME...: `bench nifti --read-only` of each $W/NAME.nii.gz in pieces and on
# one core, alternating, with peak memory where /usr/bin/time is there.
split_reads() {
  local rounds=$1; shift
  local timev=""; [ -x /usr/bin/time ] && timev="/usr/bin/time -f %MkB"
  for rep in $(seq "$rounds"); do
    for f in "$@"; do
      for sp in 1 0; do
        echo "-- $f split=$sp ($rep): $(NEUROPORT_GZ_SPLIT=$sp $timev $NEW bench nifti --read-only --input "$W/$f.nii.gz" 2>&1 | tr '\n' ' ')"
      done
    done
  done
}
# split_dti ROUNDS: the whole `dti` on $W/dwi6.nii.gz in pieces and on one core, alternating;
# the outputs compared.
split_dti() {
  export NEUROPORT_STAGES=1
  for rep in $(seq "$1"); do
    for sp in 1 0; do
      NEUROPORT_GZ_SPLIT=$sp wall "dti one member split=$sp ($rep)" 90 $NEW --backend cuda:0 --force dti --dwi "$W/dwi6.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/dti-$sp/"
    done
  done
  unset NEUROPORT_STAGES
  echo "$PART: $(same_files "$W/dti-1" "$W/dti-0") outputs identical"
}

if [[ $PART == *c* ]]; then
  stamp "c: one member (gzip -6) against neuroport's members"
  one_member 6
  nproc
  for rep in 1 2; do
    for f in "$D/dwi.nii.gz" "$W/dwi6.nii.gz"; do
      echo "-- $f"; step 60 $NEW bench nifti --read-only --input "$f" 2>&1 | grep -E "^read"
    done
  done
  s=$(date +%s.%N); gzip -dc "$W/dwi6.nii.gz" > /dev/null; echo "gzip -dc: $(awk "BEGIN { print $(date +%s.%N) - $s }") s"
  export NEUROPORT_STAGES=1
  for rep in 1 2 3; do
    wall "dti members ($rep)" 90 $NEW --backend cuda:0 --force dti "${IN[@]}" --mask "$D/mask.nii.gz" --out "$W/dti-m/"
    wall "dti one member ($rep)" 90 $NEW --backend cuda:0 --force dti --dwi "$W/dwi6.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/dti-1/"
  done
  unset NEUROPORT_STAGES
  echo "c: $(same_files "$W/dti-m" "$W/dti-1") outputs identical"
fi
if [[ $PART == *d* ]]; then
  stamp "d: one member in pieces against one core"
  one_member 6 1
  split_reads 3 dwi6 dwi1
  split_dti 3
fi
if [[ $PART == *e* ]]; then
  stamp "e: one member in pieces, traced"
  one_member 6
  NEUROPORT_GZ_TRACE=1 $NEW bench nifti --read-only --input "$W/dwi6.nii.gz" > "$OUT/trace.txt" 2>&1
  awk '/^gz wave/ {n++; s+=$(NF-8); i+=$(NF-5); r+=$(NF-1)} END {print n " waves: search " s " ms, inflate " i " ms, the rest " r " ms"}' "$OUT/trace.txt"; tail -1 "$OUT/trace.txt"
  split_reads 3 dwi6
  split_dti 2
fi
stamp done
