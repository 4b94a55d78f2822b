#!/usr/bin/env bash
# Probabilistic streamlining (issue 8, paper 003 Sec. III-B/IV-B) on the GPU machine, from the
# repo root with a release binary at ./dist/neuroport or ./neuroport (or $NEUROPORT). A few
# minutes on an H100 box (16 cores). Prints:
#   1. `check --backend all`: probtrack[device compaction] and probtrack[host compaction] on
#      every device against the CPU reference - exact (tolerance 0): every row must say pass;
#   2. `reproduce probtrack-t2 --scale paper`: 003 Table II beside ours on CUDA, NVIDIA OpenCL
#      (opencl:1:0), PoCL and the native CPU (1 thread and all cores; CPU-like devices run 1 seed
#      in 16, labelled extrapolated), both compaction paths on every GPU, with 'steps per
#      second' rows. Target: dataset 2, step 0.1, threshold 0.9 (~2.8e8 steps on our stand-in,
#      3.05e8 in 003) in <= 60 ms of kernel + reduction on the H100 (>= 5e9 steps/s); the
#      floor is 32 B per step (one interleaved record) / ~3.0 TB/s = ~1e11 steps/s if every
#      read missed the cache (the records of a sample volume, 20 MB, mostly sit in L2);
#   3. `reproduce probtrack-t4 --scale paper`: 003 Table IV (A1 ... A200, A_MaxStep, B, C) for
#      both compaction paths; the notes say per device whether B/C still win;
# Reports go to $OUT (probtrack-check.txt, repro/probtrack-t2.*, repro/probtrack-t4.*).
. "$(dirname "$0")/common.sh"
mkdir -p "$OUT/repro"
"$B" devices
echo "--- check (all devices; probtrack rows)"
"$B" check --backend all --seed 11 | tee "$OUT/probtrack-check.txt" | grep -E "device|probtrack"
echo "--- reproduce probtrack-t2 at paper scale ($((SECONDS - t0)) s so far)"
"$B" reproduce probtrack-t2 --backend all --scale paper --repeats 3 --out "$OUT/repro"
echo "--- reproduce probtrack-t4 at paper scale ($((SECONDS - t0)) s so far)"
"$B" reproduce probtrack-t4 --backend all --scale paper --repeats 1 --out "$OUT/repro"
echo "--- steps per second (dataset 2, step 0.1, threshold 0.9)"
grep -E "dataset 2: step 0.1 .*(steps per second|total time)" "$OUT/repro/probtrack-t2.md" || true
echo "--- probtrack.sh done in $((SECONDS - t0)) s"
