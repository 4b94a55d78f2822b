#!/usr/bin/env bash
# This round's device session (issues 8, 9, 10), two calls of under 10 minutes, from the repo
# root with a release binary at ./dist/neuroport:
#   PART=a: every check on every device; bench probtrack on CUDA (both compaction paths, with
#           and without overlap), NVIDIA OpenCL, the CPU on 16 threads and on 1; probtrack-t2
#           at paper scale on CUDA
#   PART=b: fim-t1 at paper scale on CUDA, NVIDIA OpenCL and the CPU; airwc at paper scale on
#           CUDA and NVIDIA OpenCL
# (scripts/device/{host,ptrack2,fim2,reg2}.sh are the per-issue versions.) Each step has its own
# time limit, so one slow step cannot take the others' time.
. "$(dirname "$0")/common.sh"
mkdir -p "$OUT/repro"
NVCL=$($B devices 2>/dev/null | grep -i nvidia | grep -oE "opencl:[0-9]+:[0-9]+" | head -1)
echo "NVIDIA OpenCL device: ${NVCL:-none}"
case "${PART:-a}" in
a)
  stamp "check --backend all"
  step 170 $B check --backend all --seed 7 > "$OUT/check.txt" 2>&1; grep -vE " pass " "$OUT/check.txt" | head -30; echo "rows passed: $(grep -c " pass " "$OUT/check.txt")"
  stamp "bench probtrack CUDA"
  step 100 $B bench probtrack --backend cuda --compaction device,host --overlap --repeats 3 2>&1 | tee "$OUT/bench-probtrack-cuda.txt"
  [ -n "$NVCL" ] && { stamp "bench probtrack $NVCL"; step 60 $B bench probtrack --backend "$NVCL" --overlap --repeats 3 2>&1 | tee "$OUT/bench-probtrack-nvcl.txt"; }
  stamp "bench probtrack cpu (16 threads, 1 thread)"
  step 45 $B bench probtrack --backend cpu --repeats 1 2>&1 | tee "$OUT/bench-probtrack-cpu.txt"
  step 60 $B --threads 1 bench probtrack --backend cpu --repeats 1 2>&1 | tee "$OUT/bench-probtrack-cpu1.txt"
  stamp "probtrack-t2 paper CUDA"
  step 90 $B reproduce probtrack-t2 --backend cuda --scale paper --repeats 3 --out "$OUT/repro/t2-cuda" 2>&1 | grep -vE "^  " | tail -30
  ;;
b)
  for b in cuda $NVCL; do
    stamp "fim-t1 paper $b"
    step 80 $B reproduce fim-t1 --backend $b --scale paper --repeats 3 --out "$OUT/repro/fim-$b" 2>&1 | grep -vE "^  " | tail -30
  done
  stamp "fim-t1 paper cpu"
  step 150 $B reproduce fim-t1 --backend cpu --scale paper --repeats 1 --out "$OUT/repro/fim-cpu" 2>&1 | grep -vE "^  " | tail -30
  for b in cuda $NVCL; do
    stamp "airwc paper $b"
    step 90 $B reproduce airwc --backend $b --scale paper --repeats 3 --out "$OUT/repro/airwc-$b" 2>&1 | grep -vE "^  " | tail -30
  done
  ;;
esac
stamp "done"
