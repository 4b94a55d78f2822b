#!/usr/bin/env bash
# This round's device session in two calls of under 10 minutes each, from the repo root with a
# release binary at ./dist/neuroport:
#   PART=a: every check on every device, the layer's own costs, NIfTI I/O, the whole user
#           pipeline at paper scale on both GPU APIs, probtrack-t2/-t4 (issues 7, 8, 11)
#   PART=b: fim-t1 and airwc at paper scale (issues 9, 10), probtrack-t2 on CUDA, and the layer's
#           copies and the pipeline again after parallel staging copies
# Each step has its own time limit, so one slow step cannot take the others' time.
. "$(dirname "$0")/common.sh"
mkdir -p "$OUT/repro"
case "${PART:-a}" in
a)
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
  stamp "check --backend all"
  step 120 $B check --backend all --seed 7 > "$OUT/check.txt" 2>&1; grep -vE " pass " "$OUT/check.txt" | head -30; grep -c " pass " "$OUT/check.txt"
  stamp "bench layer"
  step 60 $B bench layer --backend all | tee "$OUT/bench-layer.txt"
  stamp "io.sh"
  OUT=$OUT step 150 bash scripts/device/io.sh 2>&1 | tail -40
  stamp "pipeline at paper scale (GPUs)"
  for b in cuda opencl:1:0; do step 120 $B reproduce pipeline --backend $b --scale paper --repeats 1 --out "$OUT/repro/pipeline-$b" 2>&1 | grep -E "^\| |total" ; done
  stamp "probtrack-t2 at paper scale"
  step 150 $B reproduce probtrack-t2 --backend all --scale paper --repeats 3 --out "$OUT/repro" 2>&1 | grep -vE "^  " | tail -40
  stamp "probtrack-t4 at paper scale (GPUs)"
  for b in cuda opencl:1:0; do step 60 $B reproduce probtrack-t4 --backend $b --scale paper --repeats 1 --out "$OUT/repro/t4-$b" 2>&1 | grep -vE "^  " | tail -30; done
  ;;
b)
  stamp "bench layer (staging copies on every core)"
  step 30 $B bench layer --backend cuda | tee "$OUT/bench-layer-b.txt"
  stamp "fim-t1 at paper scale"
  step 170 $B reproduce fim-t1 --backend all --scale paper --repeats 3 --out "$OUT/repro" 2>&1 | grep -vE "^  " | tail -45
  stamp "airwc at paper scale"
  step 170 $B reproduce airwc --backend all --scale paper --repeats 3 --out "$OUT/repro" 2>&1 | grep -vE "^  " | tail -45
  stamp "probtrack-t2 at paper scale (CUDA)"
  step 110 $B reproduce probtrack-t2 --backend cuda --scale paper --repeats 1 --out "$OUT/repro" 2>&1 | grep -vE "^  " | tail -30
  stamp "pipeline at paper scale (CUDA)"
  step 60 $B reproduce pipeline --backend cuda --scale paper --repeats 1 --out "$OUT/repro" 2>&1 | grep -E "^\| |total"
  ;;
esac
stamp "done"
