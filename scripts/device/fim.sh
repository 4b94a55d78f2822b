#!/usr/bin/env bash
# Fast Iterative Method (issue 9, paper 004) on the GPU machine, from the repo root with a
# release binary at ./dist/neuroport or ./neuroport. About 2-3 minutes on an H100 box (16 cores).
# Prints:
#   1. `check --backend all`: the fim rows (fim_node on the CPU; fim_block[device list],
#      [host list], [tsai] on every GPU/OpenCL device against CPU node FIM, tolerance
#      L * (1e-6 + 8 eps_f32)) - all must say pass;
#   2. `reproduce fim-t1 --scale paper --repeats 3`: 004 Table 1 beside ours. Read off:
#      example 3 (256x256x100 brain-like stand-in) "block FIM, device list" on cuda: ours <= 0.010 s
#      (kernel ms column = compute alone); the same on opencl within 1.2x of cuda; the note
#      "CPU node FIM (all cores) is N x faster than fast sweeping Godunov" for example 3: N >= 10.
#      Iterations, updates per voxel, active blocks per iteration and each solver's difference
#      from node FIM are in the notes.
# Reports go to $OUT (fim-check.txt, repro/fim-t1.*).
. "$(dirname "$0")/common.sh"
mkdir -p "$OUT/repro"
"$B" devices
echo "--- check (all devices), fim rows"
"$B" check --backend all --seed 9 > "$OUT/fim-check.txt" 2>&1
grep -E "fim|passed" "$OUT/fim-check.txt"
echo "--- reproduce fim-t1 at paper scale ($((SECONDS - t0)) s so far)"
timeout 200 "$B" reproduce fim-t1 --backend all --scale paper --repeats 3 --out "$OUT/repro"
echo "--- fim.sh done in $((SECONDS - t0)) s"
