#!/usr/bin/env bash
# DTI end to end on the GPU machine, from the repo root with a release binary (no Rust needed):
# the DTI kernel benchmark on every device, synth -> dti on every backend (run summary, byte-
# identical reruns), one-line errors with a GPU present, and `devices` without NVRTC.
# Prints everything; copies reports into $OUT. About a minute on an H100 host.
. "$(dirname "$0")/common.sh"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT

echo "--- bench dti: every device, 4M voxels, median of 5 after a warm-up"
$B bench dti --voxels 4194304 --repeats 5 | tee "$OUT/bench-dti.txt"
echo "--- bench dti: one CPU thread (per-core rate), 256k voxels"
$B bench dti --backend cpu --threads 1 --voxels 262144 --repeats 3 | tee "$OUT/bench-dti-1thread.txt"

echo "--- synth + dti on every backend (128x128x64 phantom, 35 volumes, SNR 30)"
$B synth --out "$W/d" --dims 128,128,64 --seed 1 >/dev/null
specs=$($B devices | awk 'NR > 1 && $2 ~ /^(cpu|opencl:[0-9]+:[0-9]+|cuda:[0-9]+)$/ { print $2 }')
for s in $specs; do
  for run in a b; do
    start=$(date +%s.%N)
    $B dti --dwi "$W/d/dwi.nii.gz" --bvals "$W/d/bvals" --bvecs "$W/d/bvecs" --mask "$W/d/mask.nii.gz" \
      --out "$W/$s-$run/dti" --backend "$s" 2> "$W/summary" >/dev/null
    rc=$?
    echo "$s run $run: exit $rc, $(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $start }") s wall: $(tail -1 "$W/summary")"
  done
  same=yes
  for f in "$W/$s-a"/*.nii.gz; do cmp -s "$f" "$W/$s-b/$(basename "$f")" || same=no; done
  echo "$s: reruns byte-identical: $same; FA md5 $(md5sum < "$W/$s-a/dti_FA.nii.gz" | cut -c1-12)"
done | tee "$OUT/dti-backends.txt"

echo "--- bad input with a GPU present: one line, non-zero exit, no output"
head -c 200000 "$W/d/dwi.nii.gz" > "$W/trunc.nii.gz"
for s in $specs; do
  mkdir -p "$W/bad-$s"
  RUST_BACKTRACE=1 $B dti --dwi "$W/trunc.nii.gz" --bvals "$W/d/bvals" --bvecs "$W/d/bvecs" --out "$W/bad-$s/dti" --backend "$s" 2> "$W/err"
  echo "$s: exit $?, $(wc -l < "$W/err") stderr line(s), $(ls "$W/bad-$s" | wc -l) files left: $(head -c 200 "$W/err")"
done
$B dti --dwi "$W/d/dwi.nii.gz" --bvals "$W/d/bvals" --bvecs "$W/d/bvecs" --out "$W/x" --backend cuda:7 2>&1 | head -3

echo "--- devices with NVRTC off the library path (expect 'CUDA unavailable: libnvrtc...' and exit 0)"
env LD_LIBRARY_PATH=/nonexistent $B devices; echo "exit $?"
echo "--- devices with no OpenCL ICD (expect 'OpenCL unavailable' and exit 0)"
env OCL_ICD_VENDORS=/nonexistent OPENCL_VENDOR_PATH=/nonexistent $B devices; echo "exit $?"
