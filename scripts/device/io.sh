#!/usr/bin/env bash
# NIfTI I/O on the GPU machine's host (16 cores), from the repo root with a release binary:
# read and write throughput of the 171 MB issue-7 volume (.nii.gz write on 1, 2, 4, 8 and 16
# cores: the target is >= 8x one core's at 16), gzip -dc of the same file for comparison,
# peak memory of a read (/usr/bin/time -v, when present), and a nibabel-free integrity check
# (gzip -t) of the multi-member file. Prints everything; copies reports into $OUT. ~1 minute.
. "$(dirname "$0")/common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

echo "--- synth: the issue-7 volume (96x112x72, 134 volumes, 415 MB float32)"
$B synth --model sticks --dims 96,112,72 --voxel 1.8,1.8,1.8 --b0 6 --dirs 64 --shells 1000,2000 --out "$W/d" >/dev/null
ls -l "$W/d/dwi.nii.gz"
echo "--- gzip -dc of the same file (one core)"
start=$(date +%s.%N); gzip -dc "$W/d/dwi.nii.gz" > /dev/null
echo "gzip -dc: $(awk "BEGIN { printf \"%.3f\", $(date +%s.%N) - $start }") s"
echo "--- bench nifti: read, .nii.gz write on 1..16 cores, .nii write (best of 3)"
cores=1,2,4,8,$(nproc)
$B bench nifti --input "$W/d/dwi.nii.gz" --scratch "$W" --cores "$cores" --repeats 3 | tee "$OUT/bench-nifti.txt"
echo "--- written file: gzip -t and member count"
$B synth --model sticks --dims 96,112,72 --voxel 1.8,1.8,1.8 --b0 6 --dirs 64 --shells 1000,2000 --out "$W/e" >/dev/null
gzip -t "$W/e/dwi.nii.gz" && echo "gzip -t: ok"
if [ -x /usr/bin/time ]; then
  echo "--- peak memory of one read (data: 415 MB)"
  /usr/bin/time -v $B bench nifti --input "$W/d/dwi.nii.gz" --read-only --repeats 1 2>&1 | grep -E "read |Maximum resident|Elapsed"
fi
echo "--- FSLOUTPUTTYPE=NIFTI: dti on the volume, wall time, compressed vs not"
for t in NIFTI_GZ NIFTI; do
  start=$(date +%s.%N)
  FSLOUTPUTTYPE=$t $B dti --dwi "$W/d/dwi.nii.gz" --bvals "$W/d/bvals" --bvecs "$W/d/bvecs" --mask "$W/d/mask.nii.gz" --out "$W/dti-$t/" > /dev/null 2> "$W/err"
  echo "$t: exit $?, $(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $start }") s wall, $(du -sm "$W/dti-$t" | cut -f1) MB written: $(tail -1 "$W/err")"
done | tee "$OUT/dti-output-type.txt"
