#!/usr/bin/env bash
# Round 34 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 33's).
#   a. bedpost's sampling kernels, never profiled before, and the ball's exp once a run of equal b
#      (new): `bench bedpost` (moments and naive
#      layouts, CUDA and NVIDIA OpenCL), prev and new alternating, two rounds; ncu's sections on
#      one bedpost_moments launch of each binary; then `bedpost` on the issue-7 volume (CUDA),
#      prev and new alternating, two rounds, every file compared byte for byte.
# (After the round, bedpost.h's NP_BP_EXP=2 and NP_BP_UNROLL switches, measured in parts c, e
# and f and not kept, were taken out; those parts need the binary of their commits.)
. "$(dirname "$0")/common.sh"
round_start
# bench_bp LABEL BINARY BACKEND: `bench bedpost` (moments, naive; median of 3) into bench.txt.
bench_bp() {
  stamp "bench bedpost $1 $3"
  { echo "## $1 $3"; timeout 120 "$2" bench bedpost --backend "$3" --variant moments --variant naive --repeats 3 2>&1 | grep -iE "moments|naive" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$OUT/bench.txt"
}
# ncu_bp LABEL BINARY KERNEL: ncu's sections on one launch of KERNEL in `bench bedpost`.
ncu_bp() {
  local ncu; ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  stamp "ncu $3 $1"
  timeout 240 "$ncu" --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
    --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis --section SpeedOfLight \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,sm__inst_executed.sum,regex:sm__inst_executed_pipe_.*\.avg\.pct_of_peak_sustained_active,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum" \
    -k "regex:$3" --launch-skip 1 --launch-count 1 "$2" bench bedpost --backend cuda --variant "${3#bedpost_}" --repeats 1 \
    > "$OUT/ncu-$3-$1.txt" 2>&1 || echo "(ncu ended with status $?)"
  grep -E "bedpost_|Duration|Warp Cycles|Issued Warp|No Eligible|Active Warps|Eligible Warps|Achieved Occupancy|Theoretical Occupancy|Registers|Block Limit|Executed Ipc|stalled_[a-z_]*_per|pipe_[a-z_]*pct|local_op|inst_executed.sum|Memory Throughput|Compute \(SM\)|Waves" "$OUT/ncu-$3-$1.txt" | grep -vE " 0(\.0+)?$| 0\.0[0-9]$" | head -80
}
bytes() { local same=0 f; for f in "$1"/*; do cmp -s "$f" "$2/$(basename "$f")" && same=$((same + 1)); done; echo "$same of $(ls "$1" | wc -l) the same bytes"; }
# bench_lines: bench.txt's moments and naive times, one line each under its label.
bench_lines() {
  awk '/^##/ {l=$0; next} /(moments|naive) +[0-9]+ +600/ {for(i=1;i<=NF;i++) if($i=="moments"||$i=="naive") print l " | " $i " " $(i+3) " ms"}' "$OUT/bench.txt"
}
# bench_against_prev: bench_bp with prev and new alternating, two rounds, CUDA and NVIDIA OpenCL.
bench_against_prev() {
  local rep be
  for rep in 1 2; do for be in cuda "$OCL"; do
    bench_bp "prev ($rep)" "$OLD" "$be"; bench_bp "new ($rep)" "$NEW" "$be"
  done; done
}
# bedpost_against_prev N: `bedpost` on the issue-7 volume (CUDA), prev and new alternating, N
# rounds, and prev with another seed; new's posterior means against prev's beside that seed's.
bedpost_against_prev() {
  local rep v bin m x o
  issue7_volume
  BP=(bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz")
  for rep in $(seq "$1"); do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u bedpost.txt "bedpost $v ($rep)" "$bin" -- "${BP[@]}" --out "$W/bp-$v-$rep"
  done; done
  u bedpost.txt "bedpost prev seed 1" "$OLD" -- "${BP[@]}" --seed 1 --out "$W/bp-seed1"
  for m in mean_f1samples mean_f2samples mean_dsamples mean_S0samples; do for x in new-1 seed1; do
    o="$W/bp-$x"; [ $x = seed1 ] && o="$W/bp-seed1"
    echo "$m, $x against prev (seed 0): $(python3 scripts/device/nii_rms.py "$o/$m.nii.gz" "$W/bp-prev-1/$m.nii.gz")"
  done; done | tee -a "$OUT/same.txt"
}
if [[ $PART == *a* ]]; then
  gpu_setup
  bench_against_prev
  ncu_bp prev "$OLD" bedpost_moments
  ncu_bp new "$NEW" bedpost_moments
  issue7_volume
  BP=(bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz")
  for rep in 1 2; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u bedpost.txt "bedpost $v ($rep)" "$bin" -- "${BP[@]}" --out "$W/bp-$v-$rep"
  done; done
  for rep in 1 2; do echo "bedpost round $rep, prev against new: $(bytes "$W/bp-prev-$rep" "$W/bp-new-$rep")"; done | tee -a "$OUT/same.txt"
  echo "=== summary"
  cat "$OUT/bench.txt"
  summary "bedpost.txt" "fit and sample|kernels|write|main"
fi
#   b. Part a found bedpost_moments at 128 registers a thread, 25 % occupancy (4 groups of 128 an
#      SM), issue-bound (0.68 issued a scheduler, 3.65 warps), and the ball's exp taken once a run
#      of equal b (tried in part a's new binary, the same bytes) slower: CUDA moments 157.5 -> 156.5
#      ms, naive 207.6 -> 215.1, NVIDIA OpenCL moments 141.3 -> 153.0 (reverted). So the registers
#      capped for the whole program (NVRTC --maxrregcount, NVIDIA OpenCL's -cl-nv-maxrregcount),
#      prev's binary: `bench bedpost` moments and naive at each cap, two rounds.
if [[ $PART == *b* ]]; then
  gpu_setup
  for rep in 1 2; do for cap in 0 96 80 72 64 56; do
    if [ $cap = 0 ]; then bench_bp "cap none ($rep)" "$OLD" cuda; bench_bp "cap none ($rep)" "$OLD" "$OCL"; continue; fi
    NEUROPORT_NVRTC_OPTIONS=--maxrregcount=$cap bench_bp "cap $cap ($rep)" "$OLD" cuda
    NEUROPORT_OPENCL_OPTIONS=-cl-nv-maxrregcount=$cap bench_bp "cap $cap ($rep)" "$OLD" "$OCL"
  done; done
  echo "=== summary"
  bench_lines
fi
#   c. Part b: no cap helped (CUDA unchanged at every cap: NVRTC's --maxrregcount does not reach
#      PTX; NVIDIA OpenCL moments 141 -> 147-155 ms, naive 215 -> 192 at 56). The pass's
#      exponentials (np_bp_exp, NP_BP_EXP: 0 the library's, 1 the hardware's e^x, 2 ex2 with the
#      product's rounding put back) set for the whole program (-D through NEUROPORT_NVRTC_OPTIONS
#      and NEUROPORT_OPENCL_OPTIONS), new's binary: `bench bedpost` two rounds; ncu on moments at
#      1 and 2; `bedpost` on the issue-7 volume at each (CUDA), its posterior means against 0's
#      beside those of 0 with another seed (the Monte-Carlo difference), scripts/device/nii_rms.py.
if [[ $PART == *c* ]]; then
  gpu_setup
  for rep in 1 2; do for x in 0 1 2; do
    NEUROPORT_NVRTC_OPTIONS=-DNP_BP_EXP=$x bench_bp "exp $x ($rep)" "$NEW" cuda
    NEUROPORT_OPENCL_OPTIONS=-DNP_BP_EXP=$x bench_bp "exp $x ($rep)" "$NEW" "$OCL"
  done; done
  NEUROPORT_NVRTC_OPTIONS=-DNP_BP_EXP=1 ncu_bp exp1 "$NEW" bedpost_moments
  NEUROPORT_NVRTC_OPTIONS=-DNP_BP_EXP=2 ncu_bp exp2 "$NEW" bedpost_moments
  issue7_volume
  BP=(bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz")
  for rep in 1 2; do for x in 0 1 2; do
    NEUROPORT_NVRTC_OPTIONS=-DNP_BP_EXP=$x u bedpost.txt "bedpost exp $x ($rep)" "$NEW" -- "${BP[@]}" --out "$W/bp-$x-$rep"
  done; done
  NEUROPORT_NVRTC_OPTIONS=-DNP_BP_EXP=0 u bedpost.txt "bedpost exp 0 seed 1" "$NEW" -- "${BP[@]}" --seed 1 --out "$W/bp-seed1"
  for m in mean_f1samples mean_dsamples mean_S0samples; do for x in 1 2 seed1; do
    o="$W/bp-$x-1"; [ $x = seed1 ] && o="$W/bp-seed1"
    echo "$m, exp $x against exp 0 (seed 0): $(python3 scripts/device/nii_rms.py "$o/$m.nii.gz" "$W/bp-0-1/$m.nii.gz")"
  done; done | tee -a "$OUT/same.txt"
  echo "=== summary"
  bench_lines
  summary "bedpost.txt" "fit and sample|kernels|write|main"
fi
#   d. Part c: the hardware's e^x (1) 17 % faster on CUDA, 10 % on NVIDIA OpenCL, posterior means
#      moved 1/100 of another seed's move; made the default on CUDA and NVIDIA OpenCL. New's
#      binary against prev: `check` (bedpost's rows: the chains' divergence from the CPU's) at
#      three seeds on CUDA and NVIDIA OpenCL; `bench bedpost` alternating, two rounds; `bedpost`
#      on the issue-7 volume alternating, three rounds, posterior means against prev's and
#      prev's with another seed.
if [[ $PART == *d* ]]; then
  gpu_setup
  for seed in 400 401 402; do (OUT="$OUT/check-$seed"; mkdir -p "$OUT"; CHECK_ROWS=bedpost checks "$seed" cuda "$OCL"); done
  bench_against_prev
  bedpost_against_prev 3
  echo "=== summary"
  bench_lines
  summary "bedpost.txt" "fit and sample|kernels|write|main"
fi
#   e. Part d: check passes (seeds 400-402; 0-3 of 256 chains diverged, as before), CUDA moments
#      157.4 -> 130.6 ms, NVIDIA OpenCL 141.2-141.5 -> 126.8-126.9; `bedpost` fit and sample
#      736-742 -> 564-625 ms, process 1.44-1.47 -> 1.26-1.38 s. Now the code's shape, new's binary
#      with -D switches (bedpost.h): the pass's loop unrolled by 2 and 4, the pass called instead
#      of inlined eight times (part c's ncu: "no instruction" stalls rose with the smaller exp,
#      the unrolled sampler being ~10 K lines of PTX); `bench bedpost` two rounds.
if [[ $PART == *e* ]]; then
  gpu_setup
  for rep in 1 2; do for x in "" NP_BP_UNROLL=2 NP_BP_UNROLL=4 NP_BP_PASS_CALLED=1; do
    NEUROPORT_NVRTC_OPTIONS=${x:+-D$x} bench_bp "${x:-default} ($rep)" "$NEW" cuda
    NEUROPORT_OPENCL_OPTIONS=${x:+-D$x} bench_bp "${x:-default} ($rep)" "$NEW" "$OCL"
  done; done
  echo "=== summary"
  bench_lines
fi
#   f. Part e: the pass called (moments CUDA 130.5 -> 124.6 ms, NVIDIA OpenCL 126.4 -> 119.5; naive
#      slower, 176 -> 187), unrolled by 2 (CUDA moments 127.0-127.4, OpenCL unchanged), by 4
#      slower. Now called and unrolled by 2 together, two rounds; and `bedpost` on the issue-7
#      volume with the pass called against inlined (CUDA, NVIDIA OpenCL), outputs compared.
if [[ $PART == *f* ]]; then
  gpu_setup
  for rep in 1 2; do for x in "-DNP_BP_PASS_CALLED=1" "-DNP_BP_PASS_CALLED=1 -DNP_BP_UNROLL=2"; do
    NEUROPORT_NVRTC_OPTIONS="$x" bench_bp "$x ($rep)" "$NEW" cuda
    NEUROPORT_OPENCL_OPTIONS="$x" bench_bp "$x ($rep)" "$NEW" "$OCL"
  done; done
  issue7_volume
  BP=(bedpost --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz")
  for be in cuda "$OCL"; do
    u bedpost.txt "bedpost inlined $be" "$NEW" -- "${BP[@]}" --backend "$be" --out "$W/bp-inl-${be%%:*}"
    NEUROPORT_NVRTC_OPTIONS=-DNP_BP_PASS_CALLED=1 NEUROPORT_OPENCL_OPTIONS=-DNP_BP_PASS_CALLED=1 u bedpost.txt "bedpost called $be" "$NEW" -- "${BP[@]}" --backend "$be" --out "$W/bp-call-${be%%:*}"
    echo "$be, called against inlined: $(bytes "$W/bp-call-${be%%:*}" "$W/bp-inl-${be%%:*}")" | tee -a "$OUT/same.txt"
  done
  echo "=== summary"
  bench_lines
  summary "bedpost.txt" "fit and sample|kernels|write|main"
fi
#   g. Part f: called and unrolled together no faster than called; the called pass gives other
#      bits on CUDA (FMA contraction across the call), the same on NVIDIA OpenCL. The final
#      binary (the pass called in the moments program): `check` at seed 403 on CUDA, NVIDIA
#      OpenCL and PoCL; `bench bedpost` against prev, two rounds; `bedpost` on the issue-7 volume
#      against prev, two rounds, posterior means as part d; `reproduce bedpost-t3 --scale paper`
#      on CUDA and NVIDIA OpenCL.
if [[ $PART == *g* ]]; then
  gpu_setup
  CHECK_ROWS=bedpost checks 403 cuda "$OCL" "$POCL"
  bench_against_prev
  bedpost_against_prev 2
  stamp "reproduce bedpost-t3 --scale paper"
  for be in cuda "$OCL"; do
    step 150 "$NEW" reproduce bedpost-t3 --scale paper --backend "$be" --out "$OUT/bedpost-t3-${be%%:*}" > "$OUT/bedpost-t3-${be%%:*}.log" 2>&1
    grep "^| dataset" "$OUT/bedpost-t3-${be%%:*}/bedpost-t3.md"
  done
  echo "=== summary"
  bench_lines
  summary "bedpost.txt" "fit and sample|kernels|write|main"
fi
#   h. After part g: the gradient table interleaved (a direction's b, gx, gy, gz one 16-byte
#      load; the same arithmetic). New's binary against part g's (dist/neuroport-g): `bench
#      bedpost` alternating, two rounds; `bedpost` on the issue-7 volume, both on CUDA and NVIDIA
#      OpenCL, outputs compared byte for byte; `check` at seed 404 on CUDA and NVIDIA OpenCL.
if [[ $PART == *h* ]]; then
  gpu_setup
  OLD=$PWD/dist/neuroport-g
  bench_against_prev
  issue7_volume
  for be in cuda "$OCL"; do
    for v in prev new; do
      bin=$NEW; [ $v = prev ] && bin=$OLD
      u bedpost.txt "bedpost $v $be" "$bin" -- bedpost --backend "$be" --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp-$v-${be%%:*}"
    done
    echo "$be, new against part g's: $(bytes "$W/bp-new-${be%%:*}" "$W/bp-prev-${be%%:*}")" | tee -a "$OUT/same.txt"
  done
  CHECK_ROWS=bedpost checks 404 cuda "$OCL"
  echo "=== summary"
  bench_lines
  summary "bedpost.txt" "fit and sample|kernels|write|main"
fi
#   i. Part h: the interleaved table, CUDA moments 124.5 -> 100.3 ms, naive 176 -> 130; NVIDIA
#      OpenCL 119.4-119.9 -> 109.4-109.7, naive 168 -> 132; the same bytes, check passing. The final
#      binary against round 33's (prev): `bedpost` on the issue-7 volume, two rounds (as part g);
#      `reproduce bedpost-t3 --scale paper` on CUDA and NVIDIA OpenCL; `check` at seed 405 on PoCL.
if [[ $PART == *i* ]]; then
  gpu_setup
  bedpost_against_prev 2
  for be in cuda "$OCL"; do
    step 150 "$NEW" reproduce bedpost-t3 --scale paper --backend "$be" --out "$OUT/bedpost-t3-${be%%:*}" > "$OUT/bedpost-t3-${be%%:*}.log" 2>&1
    grep "^| dataset" "$OUT/bedpost-t3-${be%%:*}/bedpost-t3.md"
  done
  CHECK_ROWS=bedpost checks 405 "$POCL"
  echo "=== summary"
  summary "bedpost.txt" "fit and sample|kernels|write|main"
fi
