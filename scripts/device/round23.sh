#!/usr/bin/env bash
# Round 23 on the lent H100 (docs/performance.md, FIM "Round 23"; results in
# docs/results/h100-2026-11-27-round23/). Binaries: dist/neuroport (new, the commit of each part),
# dist/neuroport-prev (round 22's final, 65811e6; removed for part n), dist/neuroport-b (part a:
# c833111),
# dist/neuroport-c (part b: 770fb67, part a's new), dist/neuroport-d (part c: d4db633, part b's
# new), dist/neuroport-f0 (part f: 8f50d9b, part c's new), dist/neuroport-m (part n: part m's).
#   PART=a (~8 min): FIM, fewer operations per combination of eq. 6: b (c833111) forms S v and
#     S w once (the quadratic's coefficients and the critical points from them) and multiplies by
#     1 / S's diagonal held per voxel; new (b and the validity test only where the solution would
#     lower the lane's minimum, the same bits as b). `check` (FIM rows) on CUDA, NVIDIA OpenCL
#     and PoCL 5.0, seed 310; `bench fim --example 3` prev, b and new alternating, 004's solver,
#     two rounds, and the exact solver once, CUDA and NVIDIA OpenCL; ncu per kernel (new);
#     `fim --target` with both local solvers: b against new byte for byte, prev against new by
#     value (fim_compare.py).
#     Found: `check` passes (49 / 48 / 47 rows); 004's solver, kernels: CUDA 16.87-16.94 ->
#     15.41-15.44 (b) and 15.42-15.52 ms (new); NVIDIA OpenCL 17.33 and 21.36 (prev), 18.00-18.18
#     (b), 18.28-18.90 (new); exact: CUDA 61.99 / 62.15 / 63.29 ms (440 / 448 / 448 iterations),
#     NVIDIA OpenCL 62.04 / 69.52 / 69.86 (440 / 576 / 576); ncu fim_update 13.96 ms, 6.11 G warp
#     instructions (round 22: 15.60 ms, 7.32 G); b and new the same bytes; prev against new at
#     most 6.8e-6 (exact) and 1.4e-5 (004's) of u, 2.1e-6 of the largest u.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
PREV=$PWD/dist/neuroport-prev
if [ "$PART" = a ]; then
  CHECK_ROWS=fim_ checks 310 cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  fim_rounds paper "prev $PREV" "b $PWD/dist/neuroport-b" "new $B" > /dev/null
  for be in cuda "$OCL"; do fimi prev "$PREV" $be exact 0; fimi b "$PWD/dist/neuroport-b" $be exact 0; fimi new "$B" $be exact 0; done > /dev/null
  fim_summary
  ncu_fim_run paper "$B" paper
  fim_phantom
  maps_against b "$PWD/dist/neuroport-b"
  maps_against prev "$PREV"
fi
#   PART=b (~8 min): FIM, fewer instructions per combination again: new (the combination's sides
#     decoded by multiply and shift, the usable-neighbour test as one test of the largest used,
#     denormals flushed on both dialects: --ftz=true, -cl-denorms-are-zero) against c (part a's
#     new) and prev. `check` (FIM rows) on CUDA, NVIDIA OpenCL and PoCL 5.0, seed 312; `bench fim
#     --example 3` prev, c and new alternating, 004's solver, two rounds, the exact solver once,
#     CUDA and NVIDIA OpenCL; new on NVIDIA OpenCL capped at 80 registers
#     (NEUROPORT_OPENCL_OPTIONS=-cl-nv-maxrregcount=80), two rounds, and its build log's registers
#     (-cl-nv-verbose); ncu per kernel (new); `fim --target` maps, prev against new by value.
if [ "$PART" = b ]; then
  CHECK_ROWS=fim_ checks 312 cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  C=$PWD/dist/neuroport-c
  fim_rounds paper "prev $PREV" "c $C" "new $B" > /dev/null
  for rep in 1 2; do fimi "new cap 80 ($rep)" "$B" "$OCL" paper 0 NEUROPORT_OPENCL_OPTIONS=-cl-nv-maxrregcount=80; done > /dev/null
  for be in cuda "$OCL"; do fimi prev "$PREV" $be exact 0; fimi c "$C" $be exact 0; fimi new "$B" $be exact 0; done > /dev/null
  fim_summary
  stamp "NVIDIA OpenCL registers"
  NEUROPORT_OPENCL_LOG=1 NEUROPORT_OPENCL_OPTIONS=-cl-nv-verbose timeout 60 "$B" bench fim --example 3 --backend "$OCL" --local paper --repeats 0 > "$OUT/ocl-log.txt" 2>&1
  grep -E "Compiling entry|Used [0-9]+ registers" "$OUT/ocl-log.txt" | head -20
  ncu_fim_run paper "$B" paper
  fim_phantom
  maps_against prev "$PREV"
fi
#     Found: `check` passes (49 / 48 / 47 rows); 004's solver, kernels: CUDA 16.94-16.97 (prev),
#     15.53-15.54 (c), 14.49-14.52 ms (new); NVIDIA OpenCL 17.58-17.59, 18.20-18.32, 17.15-17.16,
#     and new capped at 80 registers 15.23-15.31 (92 uncapped); exact: CUDA 62.21 / 63.71 / 60.04
#     ms (440 / 448 / 448 iterations), NVIDIA OpenCL 61.98 / 70.15 / 66.80 (440 / 576 / 576); ncu
#     fim_update 12.92 ms, 5.73 G warp instructions, fim_settle 5.50 ms; the maps as part a's.
#   PART=c (~8 min): new (H_G's evaluations with 1 / S's diagonal and g^T S g by symmetry, GPU and
#     CPU; NVIDIA's OpenCL capped at 80 registers where roots are deferred) against d (part b's
#     new) and prev: `check` (FIM rows) on CUDA, NVIDIA OpenCL and PoCL 5.0, seed 314; `bench fim
#     --example 3` prev, d and new alternating, both solvers, two rounds, CUDA and NVIDIA OpenCL;
#     the exact solver on NVIDIA OpenCL with NEUROPORT_OPENCL_OPTIONS=-cl-nv-maxrregcount=96 (as
#     CUDA's cap) and its registers uncapped (-cl-nv-verbose); ncu per kernel, both solvers
#     (new); node FIM on all cores, both solvers, prev and new; `fim --target` maps, prev against
#     new by value, and timed.
if [ "$PART" = c ]; then
  CHECK_ROWS=fim_ checks 314 cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  D=$PWD/dist/neuroport-d
  fim_rounds "paper exact" "prev $PREV" "d $D" "new $B" > /dev/null
  for rep in 1 2; do fimi "new cap 96 ($rep)" "$B" "$OCL" exact 0 NEUROPORT_OPENCL_OPTIONS=-cl-nv-maxrregcount=96; done > /dev/null
  fim_summary
  stamp "NVIDIA OpenCL registers, exact"
  NEUROPORT_OPENCL_LOG=1 NEUROPORT_OPENCL_OPTIONS=-cl-nv-verbose timeout 60 "$B" bench fim --example 3 --backend "$OCL" --local exact --repeats 0 > "$OUT/ocl-log-exact.txt" 2>&1
  grep -E "Compiling entry|Used [0-9]+ registers" "$OUT/ocl-log-exact.txt" | grep -A1 "fim_update" | head -4
  for loc in paper exact; do cpu_fim $loc "$PREV" prev; cpu_fim $loc "$B" new; done > /dev/null
  grep -A1 "node FIM" "$F" | grep -v "^--"
  ncu_fim_run paper "$B" paper
  ncu_fim_run exact "$B" exact
  fim_phantom
  maps_against prev "$PREV"
fi
#     Found: `check` passes (49 / 48 / 47 rows); kernels, prev / d / new: 004's solver on CUDA
#     16.84-16.85 / 14.45-14.49 / 14.50-14.51 ms, on NVIDIA OpenCL 17.30-17.36 / 17.03-17.08 /
#     15.02-15.41; exact on CUDA 61.84-62.37 / 59.87-59.95 / 53.37-53.46 (440 / 448 / 432
#     iterations), on NVIDIA OpenCL 61.37-62.45 / 66.60-66.80 / 60.93-60.94 (440 / 576 / 560;
#     capped at 96: 61.50-61.57, 90 registers uncapped); node FIM on 16 cores 2523 -> 2034 ms
#     (004's), 2955 -> 2577 (exact); ncu: fim_update 13.03 ms, 5.73 G (004's), 63.89 ms, 15.75 G
#     (exact); fim_settle 5.30 ms, 0.575 G; `fim --target` iterations stage 503 -> 434 ms (exact,
#     CUDA), 142 -> 120 (004's), NVIDIA OpenCL 511 -> 426, 138 -> 118; maps within 8.3e-6 of u
#     (exact), 1.4e-5 (004's), 2.7e-6 of the largest u.
#   PART=d (~1 min): where the exact solver's iterations go: the active list at every iteration
#     (`bench fim --active-out`), both solvers, CUDA and NVIDIA OpenCL, new and prev.
if [ "$PART" = d ]; then
  for bin in new prev; do b=$B; [ $bin = prev ] && b=$PREV
  for be in cuda "$OCL"; do for loc in exact paper; do
    stamp "active list $bin $be $loc"
    timeout 60 "$b" bench fim --example 3 --backend "$be" --local $loc --repeats 0 --active-out "$OUT/active-$bin-${be%%:*}-$loc.txt" 2>&1 | tail -1
  done; done; done
  for f in "$OUT"/active-*.txt; do
    awk -v f="$(basename "$f")" '{n++; a[n] = $1} END {t = 0; for (i = n; i > 0 && a[i] <= 16; i--) t++; s = 0; for (i = 1; i <= n; i++) if (a[i] <= 16) s++; print f, n, "iterations,", s, "with <= 16 blocks,", t, "of them at the end"}' "$f"
  done
fi
#     Found: CUDA's exact solve (new) ends its front at ~432 iterations (10 with <= 16 blocks);
#     NVIDIA OpenCL's at ~445 like it, then 8-16 blocks stay listed for 115 more iterations (121
#     with <= 16 blocks): a late correction crawling one block an iteration through converged
#     white matter. prev: 440 iterations on both, 18-20 with <= 16 blocks. 004's solver: 9-16.
#   PART=e (~3 min): the exact solver with 1 (its default, roots in place), 2 and 3 Jacobi updates
#     a launch (`--inner`), CUDA and NVIDIA OpenCL, two rounds; ncu on one mid-run fim_update of
#     each solver (CUDA): thread instructions per warp instruction (how full the warps are) and
#     the warp-state stalls.
if [ "$PART" = e ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do for inner in 0 2 3; do
    fimi "new ($rep)" "$B" "$be" exact $inner
  done; done; done > /dev/null
  fim_summary
  NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  for run in "paper 100" "exact 200"; do
    set -- $run
    stamp "ncu fim_update $1"
    timeout 200 "$NCU" --section WarpStateStats --section SchedulerStats -k regex:fim_update \
      --metrics smsp__thread_inst_executed_per_inst_executed.ratio,smsp__inst_executed.sum,smsp__thread_inst_executed.sum \
      --launch-skip "$2" --launch-count 1 "$B" bench fim --example 3 --backend cuda --local "$1" --repeats 0 \
      > "$OUT/ncu-update-$1.txt" 2>&1 || echo "(ncu ended with status $?)"
    grep -E "thread_inst|inst_executed.sum|Issued Warp|Eligible Warps|Active Warps|Stall|Warp Cycles" "$OUT/ncu-update-$1.txt" | head -20
  done
fi
#     Found: exact, kernels, inner 1 / 2 / 3: CUDA 53.36-53.63 / 58.96-59.32 / 64.33-65.68 ms
#     (432 / 264 / 200 iterations), NVIDIA OpenCL 60.64-60.71 / 55.59-55.70 / 63.46-63.74 (560 /
#     248 / 192): one update a launch stays. Warps' fill (thread instructions per warp
#     instruction): 004's update 23.5 of 32, the exact one 9.75 (its roots in place: a voxel's
#     two lanes evaluate H_G while the warp's other voxels wait), issue 0.64 / 0.50.
#   PART=f (~6 min): the exact solver's roots in place shared by the group's items (the voxels
#     still searching numbered each round, up to 32 items each): `check` (FIM rows) on CUDA,
#     NVIDIA OpenCL and PoCL 5.0, seed 316; `bench fim --example 3` f0 and new alternating, both
#     solvers, two rounds (004's unchanged: its roots are deferred), CUDA and NVIDIA OpenCL; ncu
#     per kernel, exact (new); `fim --target` maps f0 against new, both solvers (the same bytes
#     expected: H_G is the minimum over its candidates however they are split), and timed.
if [ "$PART" = f ]; then
  CHECK_ROWS=fim_ checks 316 cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  F0=$PWD/dist/neuroport-f0
  fim_rounds "exact paper" "f0 $F0" "new $B" > /dev/null
  fim_summary
  ncu_fim_run exact "$B" exact
  fim_phantom
  maps_against f0 "$F0"
fi
#     Found: `check` passes (49 / 48 / 47 rows); exact, kernels: CUDA 53.29-53.31 -> 43.90-43.97
#     ms (wall 65.6-65.8 -> 55.7-56.1), NVIDIA OpenCL 60.86-61.85 -> 55.07-55.09 (the same 432 /
#     560 iterations); 004's unchanged (14.45-14.55 CUDA); ncu exact fim_update 63.89 -> 51.84 ms,
#     15.75 -> 12.70 G; the maps the same bytes (both solvers, CUDA and NVIDIA OpenCL); `fim
#     --target` exact solve 444.5 -> 373.1 ms (CUDA), 425.4 -> 419.9 (NVIDIA OpenCL).
#   PART=g (~3 min): the exact solver with the roots shared: lanes per voxel 2 (default), 3, 4
#     (NEUROPORT_FIM_LANES) and items per root 8, 16, 32 (default; -DNP_FIM_SHARE through
#     NEUROPORT_NVRTC_OPTIONS / NEUROPORT_OPENCL_OPTIONS), CUDA and NVIDIA OpenCL, two rounds.
if [ "$PART" = g ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    opt=NEUROPORT_NVRTC_OPTIONS; [ "$be" = cuda ] || opt=NEUROPORT_OPENCL_OPTIONS
    for lanes in 2 3 4; do fimi "lanes $lanes ($rep)" "$B" "$be" exact 0 NEUROPORT_FIM_LANES=$lanes; done
    for share in 8 16; do fimi "share $share ($rep)" "$B" "$be" exact 0 "$opt=-DNP_FIM_SHARE=$share"; done
  done; done > /dev/null
  fim_summary
fi
#     Found: lanes 2 / 3 / 4: CUDA 43.81-44.06 / 52.43-52.57 / 64.10-64.28 ms, NVIDIA OpenCL
#     55.01-55.03 / 71.27-71.50 / 74.30-74.98; items per root 8 / 16 (32): CUDA 44.56-44.64 /
#     43.38-43.46, NVIDIA OpenCL 56.14-56.38 / 54.81-55.72: within 1-2 %, the defaults stay.
#   PART=h (~7 min): `reproduce fim-t1 --scale paper` with the round's final binary on the CPU (16
#     cores), CUDA and NVIDIA OpenCL in one run: 004's Table 1 on today's H100 host.
if [ "$PART" = h ]; then
  stamp "reproduce fim-t1 --scale paper --backend cpu,cuda,$OCL"
  step 560 "$B" reproduce fim-t1 --scale paper --backend "cpu,cuda,$OCL" --out "$OUT/fim-t1" 2>&1 | tail -12
  cut -d'|' -f2-4,6-8 "$OUT/fim-t1/fim-t1.md" | grep -E "example 3|^ config" | head -20
fi
#     Found (example 3): CUDA 0.060 s exact, 0.030 s 004's; NVIDIA OpenCL 0.073 / 0.031; node FIM
#     16 cores 2.94 s, sweeping Godunov 1 thread 46.4 s (168 sweeps): 15.8x; the 64^3 helix: CUDA
#     0.158 s exact, 0.368 s 004's.
#   PART=i (~2 min): 004's solver with its roots in place (NEUROPORT_FIM_DEFER=0), now that the
#     roots' evaluations are shared by the group's items, at 1 and 2 Jacobi updates a launch,
#     against the default (deferred to fim_settle), CUDA and NVIDIA OpenCL, two rounds.
if [ "$PART" = i ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    fimi "deferred ($rep)" "$B" "$be" paper 0
    fimi "in place ($rep)" "$B" "$be" paper 0 NEUROPORT_FIM_DEFER=0
    fimi "in place ($rep)" "$B" "$be" paper 2 NEUROPORT_FIM_DEFER=0
  done; done > /dev/null
  fim_summary
fi
#     Found: deferred 14.50-14.51 ms CUDA, 15.15-15.24 NVIDIA OpenCL; in place 26.75-26.83 /
#     27.26-27.81 (472 / 448 iterations), in place at 2 updates a launch 23.76-24.03 /
#     24.57-24.59: deferral stays.
#   PART=j (~1 min): the 64^3 helix (`bench fim --example 2`), 004's solver deferred (default) and
#     in place (NEUROPORT_FIM_DEFER=0), and the exact solver, CUDA, two rounds.
if [ "$PART" = j ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do
    for env in X=1 NEUROPORT_FIM_DEFER=0; do
      stamp "helix paper $env"
      { echo "## helix paper $env ($rep)"; env $env timeout 120 "$B" bench fim --example 2 --backend cuda --local paper --repeats 3 2>&1 | tail -1; } >> "$F"
    done
    stamp "helix exact"
    { echo "## helix exact ($rep)"; timeout 120 "$B" bench fim --example 2 --backend cuda --local exact --repeats 3 2>&1 | tail -1; } >> "$F"
  done
  fim_summary
fi
#     Found: 004's solver deferred 351.5-351.8 ms of kernels (488 iterations, 624 updates per
#     voxel, 414 evaluated), in place 170.1-170.4 (632, 349, 253); exact 149.0-149.1 (616, 350).
#   PART=k (~3 min): more Jacobi updates a launch for short folded lists (NEUROPORT_FIM_SHORT=
#     LEN,INNER: a list of at most LEN blocks gets INNER updates): the exact solver at none
#     (default), 16,4 32,2 64,4 128,4 64,8; 004's at none and 64,4; CUDA and NVIDIA OpenCL, two
#     rounds.
if [ "$PART" = k ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    for sh in none 16,4 32,2 64,4 128,4 64,8; do fimi "short $sh ($rep)" "$B" "$be" exact 0 NEUROPORT_FIM_SHORT=$sh; done
    for sh in none 64,4; do fimi "short $sh ($rep)" "$B" "$be" paper 0 NEUROPORT_FIM_SHORT=$sh; done
  done; done > /dev/null
  fim_summary
fi
#     Found: exact, CUDA: none 43.72-44.12 ms, 16,4 46.20-46.25, 32,2 45.29-45.45, 64,4
#     47.18-47.39, 128,4 47.42-47.58, 64,8 46.44-46.67; NVIDIA OpenCL: none 55.03-55.05 (560
#     iterations), 16,4 50.99-51.23, 32,2 48.93 (440), 64,4 50.65-50.78, 128,4 49.42-49.60 (416),
#     64,8 57.70-57.82; 004's none / 64,4: CUDA 14.48-14.58 / 14.87-14.91, NVIDIA OpenCL
#     14.97-15.11 / 14.80-14.99. Helps NVIDIA OpenCL's crawl, costs CUDA 3-8 %: left off.
#   PART=l (~4 min), the final binary: `check` on CUDA, NVIDIA OpenCL and PoCL 5.0, seed 318; both
#     solvers' `fim --target` maps against f0 (part c's binary; the same bytes expected: the
#     roots' sharing keeps every bit and the short-list knob is off by default).
if [ "$PART" = l ]; then
  checks 318 cuda "$OCL" "$POCL"
  fim_phantom
  maps_against f0 "$PWD/dist/neuroport-f0"
fi
#     Found: `check` passes (all rows: 49 / 48 / 47); the 16 maps the same bytes as f0's.
#   PART=m (~3 min): fim_update's register cap: 004's solver (80) at 64 and the exact solver (96) at
#     80, 72 and 64 (CUDA: -DNP_FIM_MAXREG=N; NVIDIA OpenCL: -cl-nv-maxrregcount=N, the exact
#     solver's program uncapped by default), two rounds.
if [ "$PART" = m ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    if [ "$be" = cuda ]; then opt=NEUROPORT_NVRTC_OPTIONS; pre=-DNP_FIM_MAXREG=; else opt=NEUROPORT_OPENCL_OPTIONS; pre=-cl-nv-maxrregcount=; fi
    fimi "cap default ($rep)" "$B" "$be" paper 0
    fimi "cap 64 ($rep)" "$B" "$be" paper 0 "$opt=${pre}64"
    fimi "cap default ($rep)" "$B" "$be" exact 0
    for n in 80 72 64; do fimi "cap $n ($rep)" "$B" "$be" exact 0 "$opt=$pre$n"; done
  done; done > /dev/null
  fim_summary
fi
#     Found: 004's solver at 80 (default) / 64: CUDA 14.52-14.56 / 14.04-14.15 ms, NVIDIA OpenCL
#     15.04-15.06 / 14.76 and 17.28; the exact solver at 96 (CUDA default; NVIDIA OpenCL uncapped,
#     90) / 80 / 72 / 64: CUDA 43.79-43.98 / 43.39-43.73 / 43.99-44.12 / 44.52-44.67, NVIDIA OpenCL
#     55.05-55.24 / 51.79-51.82 / 52.69-52.79 / 53.56-53.68.
#   PART=n (~5 min), the final binary (the exact solver's program capped at 80 on both dialects;
#     dist/neuroport-m is part m's): `check` (FIM rows) on CUDA, NVIDIA OpenCL and PoCL 5.0, seed
#     320; `bench fim --example 3` m and new alternating, both solvers, two rounds; the maps
#     against f0 (the same bytes expected: a register cap changes no arithmetic).
if [ "$PART" = n ]; then
  CHECK_ROWS=fim_ checks 320 cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  fim_rounds "exact paper" "m $PWD/dist/neuroport-m" "new $B" > /dev/null
  fim_summary
  fim_phantom
  maps_against f0 "$PWD/dist/neuroport-f0"
fi
#     Found: `check` passes (49 / 48 / 47 rows); exact, m / new: CUDA 44.00-44.02 / 43.43-43.47 ms,
#     NVIDIA OpenCL 55.02-55.07 / 51.53-51.80 (wall 69.3-77.0); 004's unchanged (CUDA
#     14.52-14.61, NVIDIA OpenCL 14.96-15.16); the maps the same bytes as f0's.
