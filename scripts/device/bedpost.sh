#!/usr/bin/env bash
# Ball-and-sticks MCMC (issue 4, paper 003 Sec. III-A/IV-A) on the GPU machine, from the repo
# root with a release binary at ./dist/neuroport or ./neuroport. About 2-3 minutes on an H100
# box (16 cores). Prints:
#   1. `check --backend all`: every bedpost kernel layout against the CPU (rng bit-exact,
#      energy, short chains: "diverged share" must stay small) - all rows must say pass;
#   2. `bench bedpost`: voxel-loops/s of every layout (naive, cached, moments, cached_moments,
#      warp) on every GPU at 205,082 voxels x 600 loops (003 Table III dataset 1), the default
#      layout on OpenCL CPUs, and the native CPU on all cores and on one thread (per-core rate);
#      the "Table III ds1 s" column is the kernel time of that workload (target <= 0.2 s on the
#      H100, OpenCL within 1.2x of CUDA);
#   3. `reproduce bedpost-t3 --scale paper`: Table III beside ours (CPU rows extrapolated from
#      a subset of voxels, labelled so).
# Reports go to $OUT (bedpost-check.txt, bedpost-bench.txt, repro/bedpost-t3.*).
. "$(dirname "$0")/common.sh"
mkdir -p "$OUT/repro"
"$B" devices
echo "--- check (all devices)"
"$B" check --backend all --seed 11 | tee "$OUT/bedpost-check.txt"
echo "--- bench bedpost: every layout on every device ($((SECONDS - t0)) s so far)"
"$B" bench bedpost --backend all --voxels 205082 --cpu-voxels 4096 --loops 600 --repeats 3 | tee "$OUT/bedpost-bench.txt"
echo "--- one CPU thread (per-core rate)"
"$B" --threads 1 bench bedpost --backend cpu --cpu-voxels 512 --loops 600 --repeats 3
echo "--- reproduce bedpost-t3 at paper scale ($((SECONDS - t0)) s so far)"
"$B" reproduce bedpost-t3 --backend all --scale paper --repeats 3 --out "$OUT/repro"
echo "--- bedpost.sh done in $((SECONDS - t0)) s"
