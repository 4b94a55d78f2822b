#!/usr/bin/env bash
# Round 8's H100 measurements (issue 10: OpenCL's per-evaluation wait), from the repo root with
# the release binary carried as dist/neuroport. Key lines last.
#   PART=a (~8 min): `check` on NVIDIA OpenCL (register rows); `bench register` on NVIDIA
#     OpenCL with the evaluation's wait polled (NEUROPORT_CL_SPIN=1, the new default) and slept
#     in clFinish (=0), alternating, and on CUDA beside them; `reproduce airwc --scale paper` on
#     both APIs (OpenCL both ways); `register` on two 1 mm brains, every voxel and --samples 20000.
#     (Outcome: polling was slower; removed.)
#   PART=b (~4 min): untimed OpenCL work queued without event objects (NEUROPORT_CL_EVENTS=1
#     puts them back) and by-value kernel arguments set only when changed
#     (NEUROPORT_CL_ARG_CACHE=0 sets all): `check` on NVIDIA OpenCL, `bench register` in the
#     four combinations and on CUDA, alternating; airwc and `register` with the defaults.
#   PART=c (~4 min): the reduction's buffers kept across levels: `check` on both APIs,
#     `register` on two 1 mm brains 3x per API, airwc on both APIs.
#   PART=d (~2 min): the staging slots made on a thread while the pyramid is built: `check` on
#     CUDA, `register` on two 1 mm brains 4x per API.
#   PART=e (~1 min): FIM example 3 on CUDA with the staging slots made ahead (`bench fim`).
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
U="$OUT/register.txt"; R="$OUT/airwc.txt"; C="$OUT/bench.txt"
checks() { # seed, then backends: `check` on each, failures and the register rows shown
  local seed=$1; shift
  for be in "$@"; do
    stamp "check --backend $be"
    step 120 "$B" check --backend "$be" --seed "$seed" > "$OUT/check-${be%%:*}.txt" 2>&1
    grep -E "FAIL|error" "$OUT/check-${be%%:*}.txt" | head; grep register "$OUT/check-${be%%:*}.txt" | head -14; tail -n 1 "$OUT/check-${be%%:*}.txt"
  done
}
brains() { # airwc pair (b) at 1 mm in $W/a, $W/b
  stamp "synth two 1 mm brains"
  step 60 "$B" synth t1 --out "$W/a" > /dev/null 2>&1
  step 60 "$B" synth t1 --subject 1 --seed 2 --move -5,8,6,-7,5,-9,4,-3,5,2,-2,1 --out "$W/b" > /dev/null 2>&1
}
reg() { # backend, run, samples: `register` 12 dof NCC on the pair, its lines to $U
  stamp "register 12 dof NCC on $1, samples $3 ($2)"
  { echo "## $1 samples $3 run $2"; /usr/bin/time -f "process wall %e s, max RSS %M KB" "$B" register --backend "$1" --fixed "$W/a/t1.nii.gz" --moving "$W/b/t1.nii.gz" --dof 12 --cost ncc --samples "$3" --out "$W/r-${1%%:*}-$3-$2" 2>&1 | grep -vE "^/|^$"; } | tee -a "$U"
}
airwc() { # backend, label, env...: `reproduce airwc --scale paper`, its key rows to $R
  local be=$1 label=$2; shift 2
  stamp "reproduce airwc --scale paper --backend $be $label"
  local d="$OUT/airwc-${be%%:*}$label"
  env "$@" timeout 120 "$B" reproduce airwc --backend "$be" --scale paper --repeats 3 --out "$d" > "$d.log" 2>&1 || echo "(step ended with status $?)"
  { echo "## $be$label"; grep -hE "time per evaluation|evaluations|registration time|displacement" "$d"/airwc.md 2>/dev/null | grep -v "by cost" | cut -d'|' -f2-7,9-11; grep "level " "$d.log"; } | tee -a "$R"
}
bench() { # label, backend, env...: `bench register` sad and ncc, to $C
  local label=$1 be=$2; shift 2
  stamp "bench register $label"
  { echo "## $label"; env "$@" timeout 100 "$B" bench register --backend "$be" --costs sad,ncc --repeats 5 2>&1 | grep -v "bench register:" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$C"
}
if [ "$PART" = a ]; then
  checks 81 "$OCL"
  for rep in 1 2; do
    for v in "cuda 1" "$OCL 1" "$OCL 0"; do set -- $v; bench "$1 spin $2 ($rep)" "$1" NEUROPORT_CL_SPIN=$2; done
  done
  for v in "cuda 1" "$OCL 1" "$OCL 0"; do set -- $v; airwc "$1" "-$2" NEUROPORT_CL_SPIN=$2; done
  brains
  for v in "cuda 0" "$OCL 0" "cuda 20000" "$OCL 20000"; do set -- $v; for rep in 1 2; do reg "$1" $rep "$2"; done; done
fi
if [ "$PART" = b ]; then
  checks 82 "$OCL"
  for rep in 1 2; do
    for v in "cuda 0 1" "$OCL 1 1" "$OCL 0 1" "$OCL 1 0" "$OCL 0 0"; do
      set -- $v; bench "$1 events $2 arg cache $3 ($rep)" "$1" NEUROPORT_CL_EVENTS=$2 NEUROPORT_CL_ARG_CACHE=$3
    done
  done
  for be in cuda "$OCL"; do airwc "$be" ""; done
  brains
  for be in cuda "$OCL"; do for rep in 1 2 3; do reg "$be" $rep 0; done; done
fi
if [ "$PART" = c ]; then
  # The reduction's buffers made once and kept across levels (they were allocated, pinned
  # memory included, and freed at every level).
  checks 83 cuda "$OCL"
  brains
  for rep in 1 2 3; do for be in cuda "$OCL"; do reg "$be" $rep 0; done; done
  for be in cuda "$OCL"; do airwc "$be" ""; done
fi
if [ "$PART" = d ]; then
  # The staging slots allocated on a thread while the pyramid is built (Gpu::stage_ahead).
  checks 84 cuda
  brains
  for rep in 1 2 3 4; do for be in cuda "$OCL"; do reg "$be" $rep 0; done; done
fi
if [ "$PART" = e ]; then
  # FIM (issue 9): the staging slots made while the kernels load and the volumes are reordered.
  F="$OUT/fim.txt"
  for LOC in paper exact; do
    stamp "bench fim cuda $LOC"
    { echo "## cuda $LOC"; NEUROPORT_STAGES=1 timeout 120 "$B" bench fim --example 3 --backend cuda --local $LOC --repeats 3 2>&1 | tail -2 | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$F"
  done
fi
[ -s "$C" ] && { echo "=== bench summary"; grep -E "^##|ms/eval" "$C" | cut -c1-200; }
[ -s "$R" ] && { echo "=== airwc summary"; grep -E "^##|registration time|time per evaluation" "$R" | grep -v "1 thread" | cut -c1-220; }
[ -s "$U" ] && { echo "=== register (user command)"; grep -E "^##|level|registration|process wall" "$U"; }
exit 0
