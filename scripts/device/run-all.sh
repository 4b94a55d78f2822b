#!/usr/bin/env bash
# The whole device session in one call (the lent GPU machine has no Rust): run from the repo
# root with a release binary at dist/neuroport (build here: scripts/device/build.sh). Each
# method's script prints its checks, benchmarks and tables; reports go to $OUT when set.
set -u
cd "$(dirname "$0")/../.."
export NEUROPORT=${NEUROPORT:-$PWD/dist/neuroport}
# Reports are written to a work folder, then packed: the device tool returns at most 8 files.
FINAL_OUT=${OUT:-$PWD/device-out}
export OUT=$(mktemp -d)
mkdir -p "$FINAL_OUT"
# libnvrtc.so.13 is not always on the default search path
for d in /usr/local/cuda/lib64 /usr/local/cuda-13.0/lib64 /usr/lib/x86_64-linux-gnu; do
  [ -e "$d/libnvrtc.so.13" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1 | head -3
for s in ${SCRIPTS:-foundation dti geodesic bedpost io}; do
  f=scripts/device/$s.sh
  [ -f "$f" ] || continue
  echo "=== $s ($(date +%T))"
  start=$SECONDS
  timeout "${PER_SCRIPT_S:-240}" bash "$f" 2>&1 | tee "$OUT/$s.log"
  echo "=== $s done in $((SECONDS - start)) s"
done
cp "$OUT"/*.log "$FINAL_OUT"/ 2>/dev/null
tar czf "$FINAL_OUT/reports.tar.gz" -C "$OUT" .
echo "reports: $FINAL_OUT/reports.tar.gz"
