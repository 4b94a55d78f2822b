#!/usr/bin/env bash
# Round 35 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 34's).
#   a. bedpost_moments at 128 registers a thread (round 34: 25 % occupancy, issue-bound at 3.65
#      warps a scheduler). Two measuring switches in new's binary, through -D options: the
#      registers capped on CUDA by __maxnreg__ (NP_BP_MAXREG; round 34's NVRTC --maxrregcount
#      never reached PTX), and the chain's 32 RNG words read and written back around each draw
#      instead of held across the run (NP_BP_RNG_GLOBAL=1, the same arithmetic). `bench bedpost
#      --variant moments` two rounds; ncu's launch and occupancy sections for three of them; then
#      `bedpost` on the issue-7 volume at the fastest settings, files against the default's.
. "$(dirname "$0")/common.sh"
round_start
# bench_bp LABEL BINARY BACKEND: `bench bedpost` (moments; median of 3) into bench.txt.
bench_bp() {
  stamp "bench bedpost $1 $3"
  { echo "## $1 $3"; timeout 120 "$2" bench bedpost --backend "$3" --variant moments --repeats 3 2>&1 | grep -iE "moments" | sed 's/ (NVIDIA H[0-9]* [^)]*)//'; } | tee -a "$OUT/bench.txt"
}
bench_lines() {
  awk '/^##/ {l=$0; next} /moments +[0-9]+ +600/ {for(i=1;i<=NF;i++) if($i=="moments") print l " | " $i " " $(i+3) " ms"}' "$OUT/bench.txt"
}
# bp_summary: the bench lines, ncu's registers and the bedpost runs (parts a, b).
bp_summary() {
  echo "=== summary"
  bench_lines
  cat "$OUT/regs.txt"
  summary "bedpost.txt" "fit and sample|main"
}
# bedpost_both: `bedpost` on the issue-7 volume, prev and new alternating on NVIDIA OpenCL and
# CUDA, two rounds, each backend's files compared (parts d, e).
bedpost_both() {
  issue7_volume
  BP=(bedpost --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz")
  for rep in 1 2; do for be in "$OCL" cuda; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u bedpost.txt "bedpost $v $be ($rep)" "$bin" -- "${BP[@]}" --backend "$be" --out "$W/bp-$v-${be//:/}-$rep"
  done; done; done
  for be in "$OCL" cuda; do echo "bedpost $be prev against new: $(same_inflated "$W/bp-prev-${be//:/}-1" "$W/bp-new-${be//:/}-1" 2>/dev/null) files the same"; done | tee -a "$OUT/same.txt"
}
# regs LABEL OPTIONS: registers and occupancy of one bedpost_moments launch under ncu (CUDA).
regs() {
  local ncu; ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  stamp "ncu $1"
  NEUROPORT_NVRTC_OPTIONS="$2" timeout 200 "$ncu" --section LaunchStats --section Occupancy --section SpeedOfLight \
    --metrics sm__inst_executed.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum -k regex:bedpost_moments --launch-skip 1 --launch-count 1 \
    "$NEW" bench bedpost --backend cuda --variant moments --repeats 1 > "$OUT/ncu-$1.txt" 2>&1 || echo "(ncu ended with status $?)"
  echo "## $1: $(grep -E "Registers Per|Achieved Occupancy|Theoretical Occupancy|Duration|inst_executed.sum|local_op" "$OUT/ncu-$1.txt" | awk '{print $1, $2, $3, $NF}' | paste -sd';')" | tee -a "$OUT/regs.txt"
}
if [[ $PART == *a* ]]; then
  gpu_setup
  for rep in 1 2; do
    bench_bp "prev ($rep)" "$OLD" cuda
    for x in "" "-DNP_BP_RNG_GLOBAL=1" "-DNP_BP_MAXREG=96" "-DNP_BP_MAXREG=80" "-DNP_BP_MAXREG=64" \
             "-DNP_BP_RNG_GLOBAL=1 -DNP_BP_MAXREG=96" "-DNP_BP_RNG_GLOBAL=1 -DNP_BP_MAXREG=80" "-DNP_BP_RNG_GLOBAL=1 -DNP_BP_MAXREG=64"; do
      NEUROPORT_NVRTC_OPTIONS="$x" bench_bp "new ${x:-default} ($rep)" "$NEW" cuda
    done
    bench_bp "prev ($rep)" "$OLD" "$OCL"
    for x in "" "-DNP_BP_RNG_GLOBAL=1" "-DNP_BP_RNG_GLOBAL=1 -cl-nv-maxrregcount=96" "-DNP_BP_RNG_GLOBAL=1 -cl-nv-maxrregcount=80"; do
      NEUROPORT_OPENCL_OPTIONS="$x" bench_bp "new ${x:-default} ($rep)" "$NEW" "$OCL"
    done
  done
  regs default ""
  regs rng "-DNP_BP_RNG_GLOBAL=1"
  regs rng-80 "-DNP_BP_RNG_GLOBAL=1 -DNP_BP_MAXREG=80"
  issue7_volume
  BP=(bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz")
  for x in "" "-DNP_BP_RNG_GLOBAL=1" "-DNP_BP_MAXREG=80" "-DNP_BP_RNG_GLOBAL=1 -DNP_BP_MAXREG=80"; do
    l=$(echo "${x:-default}" | tr -d ' =-' ); NEUROPORT_NVRTC_OPTIONS="$x" u bedpost.txt "bedpost ${x:-default}" "$NEW" -- "${BP[@]}" --out "$W/bp-$l"
  done
  for l in DNP_BP_RNG_GLOBAL1 DNP_BP_MAXREG80 DNP_BP_RNG_GLOBAL1DNP_BP_MAXREG80; do echo "bedpost $l against default: $(same_inflated "$W/bp-$l" "$W/bp-default" 2>/dev/null) files the same"; done | tee -a "$OUT/same.txt"
  bp_summary
fi
#   b. Part a (H200): CUDA moments 100.2-100.5 ms by default; every __maxnreg__ cap slower (96:
#      106.2, 80: 113.7, 64: 130.1-130.4), the RNG words not held slower (123.2-123.4; 118
#      registers against 142, ncu), both together slower; NVIDIA OpenCL 109.6-109.9 by default,
#      the RNG words not held 113.8-113.9, and with -cl-nv-maxrregcount=96 **101.2-101.4**
#      (80: 109.4-109.7); every variant wrote the default's 21 files on CUDA. ncu (default): 142
#      registers, 18.75 % occupancy, 1.24 GB of local loads a 50-loop launch (the called pass's
#      v1, v2 and slot passed by pointer through the stack). New's binary now passes them by
#      value. `bench bedpost` prev against new (CUDA, NVIDIA OpenCL) and NVIDIA OpenCL's caps with
#      and without the RNG words held, two rounds; ncu on new; `bedpost` on the issue-7 volume,
#      prev against new on CUDA and NVIDIA OpenCL, and NVIDIA OpenCL's best settings against its
#      default, files compared.
if [[ $PART == *b* ]]; then
  gpu_setup
  for rep in 1 2; do
    bench_bp "prev ($rep)" "$OLD" cuda; bench_bp "new ($rep)" "$NEW" cuda
    bench_bp "prev ($rep)" "$OLD" "$OCL"; bench_bp "new ($rep)" "$NEW" "$OCL"
    for cap in 112 104 96 88; do
      NEUROPORT_OPENCL_OPTIONS="-cl-nv-maxrregcount=$cap" bench_bp "new cap $cap ($rep)" "$NEW" "$OCL"
      NEUROPORT_OPENCL_OPTIONS="-DNP_BP_RNG_GLOBAL=1 -cl-nv-maxrregcount=$cap" bench_bp "new rng cap $cap ($rep)" "$NEW" "$OCL"
    done
  done
  regs new ""
  issue7_volume
  BP=(bedpost --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz")
  for be in cuda "$OCL"; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u bedpost.txt "bedpost $v $be" "$bin" -- "${BP[@]}" --backend "$be" --out "$W/bp-$v-${be//:/}"
  done; done
  for x in "-cl-nv-maxrregcount=96" "-DNP_BP_RNG_GLOBAL=1 -cl-nv-maxrregcount=96" "-cl-nv-maxrregcount=104"; do
    l=$(echo "$x" | tr -d ' =-'); NEUROPORT_OPENCL_OPTIONS="$x" u bedpost.txt "bedpost new $OCL $x" "$NEW" -- "${BP[@]}" --backend "$OCL" --out "$W/bp-$l"
    echo "bedpost new $OCL $x against its default: $(same_inflated "$W/bp-$l" "$W/bp-new-${OCL//:/}" 2>/dev/null) files the same" | tee -a "$OUT/same.txt"
  done
  for be in cuda "$OCL"; do echo "bedpost $be prev against new: $(same_inflated "$W/bp-prev-${be//:/}" "$W/bp-new-${be//:/}" 2>/dev/null) files the same"; done | tee -a "$OUT/same.txt"
  bp_summary
fi
#   c. Part b: the pass's arguments by value made CUDA slower (100.2 -> 111.3-111.4 ms; 128
#      registers, no local loads, other bits: 1 of 21 files the same) and NVIDIA OpenCL uncapped
#      slower (109.7 -> 115.9-116.0; the same bytes), but capped much faster: 112 registers
#      97.1-97.3 ms, 104: 101.8-102.1, 96: 97.8-98.2, 88: 98.8-99.0 (the same bytes at 96 and
#      104); the RNG words not held slower at every cap. So NVIDIA OpenCL's cap alone, prev's
#      program (arguments by pointer) at 128, 112, 104, 96 against new's at 112 and 96, two rounds.
if [[ $PART == *c* ]]; then
  gpu_setup
  for rep in 1 2; do
    bench_bp "prev ($rep)" "$OLD" "$OCL"
    for cap in 128 112 104 96; do NEUROPORT_OPENCL_OPTIONS="-cl-nv-maxrregcount=$cap" bench_bp "prev cap $cap ($rep)" "$OLD" "$OCL"; done
    for cap in 112 96; do NEUROPORT_OPENCL_OPTIONS="-cl-nv-maxrregcount=$cap" bench_bp "new cap $cap ($rep)" "$NEW" "$OCL"; done
  done
  echo "=== summary"
  bench_lines
fi
#   d. Part c: prev's program (the pass's arguments by pointer, as before) capped at 96 on NVIDIA
#      OpenCL 99.4-99.6 ms against 109.6-109.7 uncapped (128: 107.5-107.8, 112: 104.1-104.3, 104:
#      104.4-104.5); by value at 112 96.9-97.0. Kept: the cap alone (bedpost.cl's
#      NP_OPENCL_NV_OPTIONS), the switches and the by-value pass taken out. New's binary against
#      prev: `bench bedpost` every layout on NVIDIA OpenCL (the cap is the program's) and moments
#      on CUDA (unchanged), two rounds; `check`'s bedpost rows on NVIDIA OpenCL and CUDA; `bedpost`
#      on the issue-7 volume, prev against new on both, files compared; `reproduce bedpost-t3
#      --scale paper` on NVIDIA OpenCL.
if [[ $PART == *d* ]]; then
  gpu_setup
  for rep in 1 2; do
    bench_bp "prev ($rep)" "$OLD" cuda; bench_bp "new ($rep)" "$NEW" cuda
    for v in prev new; do
      bin=$NEW; [ $v = prev ] && bin=$OLD
      stamp "bench bedpost all layouts $v $OCL"
      { echo "## all $v ($rep) $OCL"; timeout 150 "$bin" bench bedpost --backend "$OCL" --repeats 3 2>&1 | grep -E " 600 " | sed 's/ (NVIDIA H[0-9]* [^)]*)//'; } | tee -a "$OUT/bench-all.txt"
    done
  done
  CHECK_ROWS=bedpost checks 410 cuda "$OCL"
  bedpost_both
  stamp "reproduce bedpost-t3 --scale paper"
  step 150 "$NEW" reproduce bedpost-t3 --scale paper --backend "$OCL" --out "$OUT/bedpost-t3-opencl" > "$OUT/bedpost-t3-opencl.log" 2>&1
  grep "^| dataset" "$OUT/bedpost-t3-opencl/bedpost-t3.md"
  echo "=== summary"
  bench_lines
  cat "$OUT/bench-all.txt"
  grep -hE "bedpost|rows|FAIL|pass" "$OUT"/check*.txt 2>/dev/null | head -20
  summary "bedpost.txt" "fit and sample|main"
fi
#   e. Part d (the cap on bedpost.cl, every layout's program): NVIDIA OpenCL moments 109.5-109.9
#      -> 99.7-99.9 ms, cached 920 -> 898, cached_moments 722 -> 709, but naive 132.6 -> 138.7-139.1
#      and warp 567 -> 646; CUDA unchanged (100.4-100.8); `check` passes (CUDA 51 rows, NVIDIA
#      OpenCL 50); `bedpost` the same 21 files as prev on both. Now the cap in the moments
#      program only (the host's prefix; a source's markers now all count). New against prev:
#      `bench bedpost` every layout on NVIDIA OpenCL, two rounds; `check`'s bedpost rows there;
#      `bedpost` on the issue-7 volume on NVIDIA OpenCL and CUDA, two rounds, files compared.
if [[ $PART == *e* ]]; then
  gpu_setup
  for rep in 1 2; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    stamp "bench bedpost all layouts $v $OCL"
    { echo "## all $v ($rep) $OCL"; timeout 150 "$bin" bench bedpost --backend "$OCL" --repeats 3 2>&1 | grep -E " 600 " | sed 's/ (NVIDIA H[0-9]* [^)]*)//'; } | tee -a "$OUT/bench-all.txt"
  done; done
  CHECK_ROWS=bedpost checks 411 "$OCL"
  bedpost_both
  echo "=== summary"
  cat "$OUT/bench-all.txt"
  summary "bedpost.txt" "fit and sample|main"
fi
#   f. Part e kept NVIDIA OpenCL's moments cap (109.3-109.7 -> 99.6 ms, the same bytes). Where else
#      does NVIDIA's OpenCL compiler take more registers than it should? Every other kernel bench
#      on CUDA and on NVIDIA OpenCL uncapped and capped (the whole program, NEUROPORT_OPENCL_OPTIONS)
#      at 128, 96 and 64, one round: geodesic (RK2, kernel and texture), probtrack (003 Table II),
#      register (every cost and sampling), dti.
if [[ $PART == *f* ]]; then
  gpu_setup
  bench_one() { # LABEL BACKEND OPTS -- ARGS
    local label=$1 be=$2 opts=$3; shift 4
    stamp "bench $* $label $be"
    { echo "## $1 $label $be"; NEUROPORT_OPENCL_OPTIONS="$opts" timeout 150 "$NEW" bench "$@" --backend "$be" 2>&1 | grep -vE "^\s*$" | tail -n 14 | sed 's/ (NVIDIA H[0-9]* [^)]*)//'; } >> "$OUT/bench-$1.txt"
  }
  for rep in ${REPS:-1}; do
    for b in geodesic probtrack register dti; do
      bench_one "cuda ($rep)" cuda "" -- $b
      for cap in 0 128 96 64; do
        o=""; [ $cap != 0 ] && o="-cl-nv-maxrregcount=$cap"
        bench_one "cap $cap ($rep)" "$OCL" "$o" -- $b
      done
    done
  done
  echo "=== summary"
  for b in geodesic probtrack register dti; do echo "##### $b"; cat "$OUT/bench-$b.txt"; done
fi
#   g. Part f: NVIDIA OpenCL's probtrack trace kernels 18.15 -> 16.73-16.75 ms at any cap of 128,
#      96 or 64 (CUDA 18.41); geodesic, register and dti no better capped (geodesic's in-kernel
#      slower: 98.8 -> 103.6 at 128, 128.5 at 64). So probtrack on both dialects: CUDA with
#      __maxnreg__ on its tracing kernels (NP_PT_MAXREG, a measuring switch) at 128, 96, 80, 64,
#      NVIDIA OpenCL at 128, 96, 80, two rounds; ncu's registers of probtrack_segment on each
#      dialect... (CUDA only: ncu); `probtrack` on the issue-7 volume's samples at the fastest
#      settings, files against the default's.
if [[ $PART == *g* ]]; then
  gpu_setup
  bench_pt() { # LABEL BACKEND NVRTC_OPTS OPENCL_OPTS
    stamp "bench probtrack $1 $2"
    { echo "## $1 $2"; NEUROPORT_NVRTC_OPTIONS="$3" NEUROPORT_OPENCL_OPTIONS="$4" timeout 100 "$NEW" bench probtrack --backend "$2" 2>&1 | grep -E "^(cuda|opencl):" | sed 's/ (NVIDIA [^)]*)//'; } | tee -a "$OUT/bench-pt.txt"
  }
  for rep in 1 2; do
    bench_pt "default ($rep)" cuda "" ""
    for cap in 128 96 80 64; do bench_pt "maxreg $cap ($rep)" cuda "-DNP_PT_MAXREG=$cap" ""; done
    bench_pt "default ($rep)" "$OCL" "" ""
    for cap in 128 96 80; do bench_pt "cap $cap ($rep)" "$OCL" "" "-cl-nv-maxrregcount=$cap"; done
  done
  ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  for x in "" "-DNP_PT_MAXREG=96"; do
    NEUROPORT_NVRTC_OPTIONS="$x" timeout 150 "$ncu" --section LaunchStats --section Occupancy -k regex:probtrack_segment --launch-skip 1 --launch-count 1 \
      "$NEW" bench probtrack --backend cuda --repeats 1 > "$OUT/ncu-pt${x//[ =-]/}.txt" 2>&1
    echo "ncu ${x:-default}: $(grep -E "Registers Per|Theoretical Occ|Achieved Occ|Duration" "$OUT/ncu-pt${x//[ =-]/}.txt" | awk '{print $1, $2, $NF}' | paste -sd';')" | tee -a "$OUT/regs.txt"
  done
  issue7_volume
  "$NEW" bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp" > /dev/null 2>&1
  PT=(probtrack --bedpost "$W/bp" --seeds "$D/wm.nii.gz" --nsamples 100)
  for be in cuda "$OCL"; do
    u pt.txt "probtrack default $be" "$NEW" -- "${PT[@]}" --backend "$be" --out "$W/pt-def-${be//:/}"
  done
  for cap in 128 96; do
    NEUROPORT_NVRTC_OPTIONS="-DNP_PT_MAXREG=$cap" u pt.txt "probtrack maxreg $cap cuda" "$NEW" -- "${PT[@]}" --backend cuda --out "$W/pt-$cap-cuda"
    NEUROPORT_OPENCL_OPTIONS="-cl-nv-maxrregcount=$cap" u pt.txt "probtrack cap $cap $OCL" "$NEW" -- "${PT[@]}" --backend "$OCL" --out "$W/pt-$cap-${OCL//:/}"
    for be in cuda "$OCL"; do echo "probtrack $be cap $cap against default: $(same_inflated "$W/pt-$cap-${be//:/}" "$W/pt-def-${be//:/}" 2>/dev/null) files the same"; done | tee -a "$OUT/same.txt"
  done
  echo "=== summary"
  awk '/^##/ {l=$0; next} {print l " | trace " $6 " ms, wall " $11 " ms"}' "$OUT/bench-pt.txt"
  cat "$OUT/regs.txt"
  summary pt.txt "trace|main"
fi
#   h. Part g: CUDA's probtrack_segment 37 registers, __maxnreg__ 128-64 no change (18.27-18.38
#      ms); NVIDIA OpenCL 18.15-18.16 -> 16.69-16.73 ms at caps 128, 96, 80, `probtrack` the same
#      3 files at 128 and 96 on both. Kept: probtrack.cl asks NVIDIA's OpenCL for 128. New's
#      binary against prev: `bench probtrack` on NVIDIA OpenCL and CUDA, two rounds; `check`'s
#      probtrack rows on NVIDIA OpenCL; `probtrack` on the issue-7 volume's samples, files compared.
if [[ $PART == *h* ]]; then
  gpu_setup
  bench_pt2() { # LABEL BINARY BACKEND
    stamp "bench probtrack $1 $3"
    { echo "## $1 $3"; timeout 100 "$2" bench probtrack --backend "$3" 2>&1 | grep -E "^(cuda|opencl):" | sed 's/ (NVIDIA [^)]*)//'; } | tee -a "$OUT/bench-pt.txt"
  }
  for rep in 1 2; do for be in "$OCL" cuda; do bench_pt2 "prev ($rep)" "$OLD" "$be"; bench_pt2 "new ($rep)" "$NEW" "$be"; done; done
  CHECK_ROWS=probtrack checks 412 "$OCL"
  issue7_volume
  "$NEW" bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp" > /dev/null 2>&1
  PT=(probtrack --bedpost "$W/bp" --seeds "$D/wm.nii.gz" --nsamples 100)
  for rep in 1 2; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u pt.txt "probtrack $v $OCL ($rep)" "$bin" -- "${PT[@]}" --backend "$OCL" --out "$W/pt-$v-$rep"
  done; done
  echo "probtrack $OCL prev against new: $(same_inflated "$W/pt-prev-1" "$W/pt-new-1" 2>/dev/null) files the same" | tee -a "$OUT/same.txt"
  echo "=== summary"
  awk '/^##/ {l=$0; next} {print l " | trace " $6 " ms, wall " $11 " ms"}' "$OUT/bench-pt.txt"
  summary pt.txt "trace|main"
fi
#   i. The round's binary after the helpers' merges (fim/track/probtrack/dti/bedpost inputs with
#      NaN or nothing fittable; option and output checks): `check` (every row) at seed 415 on
#      CUDA, NVIDIA OpenCL and PoCL; every user command on user-sized inputs, round 34's binary
#      and this one alternating, outputs compared (CUDA).
if [[ $PART == *i* ]]; then
  gpu_setup
  (OUT="$OUT/check"; mkdir -p "$OUT"; checks 415 cuda "$OCL" "$POCL")
  user_commands "$OLD" "$NEW" same.txt
  echo "=== summary"
  cat "$OUT/same.txt"
  summary users.txt "main"
fi
#   j. Issue 10's gap (NVIDIA OpenCL's lone texture evaluation 1.2-1.3x CUDA's wall, ~13 us of it
#      in the launch call; round 17 had skipped unchanged value arguments only, no gain): every
#      argument, buffers and images too, set only when its bytes changed since the kernel's last
#      launch (a record that any buffer or image release empties). New against prev and against
#      new with NEUROPORT_CL_SET_ALL=1 (every argument set, as before): `bench register` and
#      `bench fim --example 3` on NVIDIA OpenCL, two rounds; `check` there; `register` and `fim
#      --target` on NVIDIA OpenCL, files against prev's.
if [[ $PART == *j* ]]; then
  gpu_setup
  for rep in 1 2; do
    for v in prev new all; do
      bin=$NEW; [ $v = prev ] && bin=$OLD
      stamp "bench register $v $OCL"
      { echo "## $v ($rep)"; if [ $v = all ]; then export NEUROPORT_CL_SET_ALL=1; fi; timeout 120 "$bin" bench register --backend "$OCL" 2>&1 | grep -E "ms/eval" | sed 's/ (NVIDIA [^)]*)//'; unset NEUROPORT_CL_SET_ALL; } >> "$OUT/bench-reg.txt"
      stamp "bench fim $v $OCL"
      { echo "## $v ($rep)"; if [ $v = all ]; then export NEUROPORT_CL_SET_ALL=1; fi; timeout 120 "$bin" bench fim --example 3 --local paper --backend "$OCL" 2>&1 | grep -iE "wall|kernel" | tail -2; unset NEUROPORT_CL_SET_ALL; } >> "$OUT/bench-fim.txt"
    done
    stamp "bench register cuda"
    { echo "## cuda ($rep)"; timeout 120 "$NEW" bench register --backend cuda 2>&1 | grep -E "ms/eval" | sed 's/ (NVIDIA [^)]*)//'; } >> "$OUT/bench-reg.txt"
  done
  checks 416 "$OCL"
  fim_phantom
  t1_pair "$W/b2"
  for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    mkdir -p "$W/fim-$v" "$W/reg-$v"
    u users.txt "fim --target $v" "$bin" -- fim --backend "$OCL" --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" --out "$W/fim-$v/f"
    u users.txt "register $v" "$bin" -- register --backend "$OCL" --fixed "$W/a/t1.nii.gz" --moving "$W/b2/t1.nii.gz" --dof 12 --cost ncc --out "$W/reg-$v/r"
  done
  for d in fim reg; do echo "$d $OCL prev against new: $(same_inflated "$W/$d-prev" "$W/$d-new" 2>/dev/null)"; done | tee -a "$OUT/same.txt"
  echo "=== summary"
  grep -E "^##|texture +(sad|ncc)|in-kernel +ncc" "$OUT/bench-reg.txt" | cut -c1-120
  cat "$OUT/bench-fim.txt"
  summary users.txt "main"
fi
# (Part j: no change, SAD 0.0658-0.0661 ms wall against 0.0619-0.0646 and 0.0636-0.0672 with
# every argument set; the argument record was reverted, cb61b7d has it.)
