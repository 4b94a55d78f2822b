#!/usr/bin/env bash
# Round 5's H100 measurements, one call per part (every step under its own limit), from the repo
# root with the release binary carried as dist/neuroport. Key lines last.
#   PART=a (~7 min): `check` on CUDA and NVIDIA OpenCL (counts of pass / FAIL, failing rows);
#     issue 9: `bench fim --example 3` with the exact and 004's local solver on CUDA, NVIDIA
#     OpenCL and the CPU (16 cores); CUDA with 1, 2, 8 Jacobi updates per block and the host
#     list; ncu on one fim_update launch (speed of light, occupancy, warp states).
#   PART=b (~2 min): issue 10, `reproduce airwc --scale paper` on CUDA (4, 8, 16 work-groups
#     per SM) and NVIDIA OpenCL; FIM example 3 (exact solver) with 1 and 2 updates per block.
#   PART=c (~2.5 min): `reproduce fim-t1 --scale paper` on CUDA and NVIDIA OpenCL.
#   PART=d (~2-6 min): `reproduce fim-t1 --scale paper` on the CPU (16 cores, one thread).
. "$(dirname "$0")/common.sh"
"$B" devices | tee "$OUT/devices.txt"
OCL=$(grep -i opencl "$OUT/devices.txt" | grep -i nvidia | grep -oE 'opencl:[0-9]+:[0-9]+' | head -1)
PART=${PART:-a}
if [ "$PART" = a ]; then
W=$(mktemp -d)
trap 'rm -rf "$W"; pack' EXIT
export NEUROPORT_PTX_CACHE="$W/ptx"
for be in cuda $OCL; do
  stamp "check --backend $be"
  step 100 "$B" check --backend "$be" --seed 41 > "$OUT/check-${be%%:*}.txt" 2>&1
  grep -E "FAIL|error" "$OUT/check-${be%%:*}.txt" | head; tail -1 "$OUT/check-${be%%:*}.txt"
done
F="$OUT/fim.txt"
fim() { # fim LABEL LIMIT ARGS...: one bench fim line, also kept in $F
  local label=$1 lim=$2; shift 2
  stamp "bench fim $label"
  echo "## $label" >> "$F"
  NEUROPORT_STAGES=1 step "$lim" "$B" bench fim --example 3 "$@" 2>&1 | tail -2 | tee -a "$F"
}
for be in cuda $OCL; do
  fim "$be paper" 60 --backend "$be" --local paper --repeats 3
  fim "$be exact" 60 --backend "$be" --local exact --repeats 3
done
for i in 1 2 8; do fim "cuda paper inner $i" 40 --backend cuda --local paper --inner $i --repeats 1; done
fim "cuda paper host list" 40 --backend cuda --local paper --host-list --repeats 1
fim "cpu paper" 60 --backend cpu --local paper --repeats 0
fim "cpu exact" 60 --backend cpu --local exact --repeats 0
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ]; then
  for l in paper exact; do
    stamp "ncu fim_update ($l)"
    timeout 120 "$NCU" --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats -k regex:^fim_update\$ --launch-skip 300 -c 1 "$B" --backend cuda bench fim --example 3 --local $l --repeats 0 > "$OUT/ncu-fim-$l.txt" 2>&1
    grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Local Memory|Warp Cycles Per Issued|Block Limit Registers|Grid Size" "$OUT/ncu-fim-$l.txt" | head -14
  done
fi
echo "=== FIM summary"
cat "$F"
fi
if [ "$PART" = b ]; then
  # Issue 10: airwc at 002's size on CUDA (work-groups per SM 4, the default, then 8 and 16) and
  # NVIDIA OpenCL; then FIM example 3, exact solver, with 1 and 2 updates per block.
  R="$OUT/airwc.txt"
  for v in "cuda 4" "cuda 8" "cuda 16" "$OCL 4"; do
    set -- $v
    stamp "reproduce airwc --scale paper --backend $1, $2 groups per unit"
    d="$OUT/airwc-${1%%:*}-$2"
    NEUROPORT_REG_GROUPS_PER_UNIT=$2 step 100 "$B" reproduce airwc --backend "$1" --scale paper --repeats 3 --out "$d" > "$d.log" 2>&1
    { echo "## $1, $2 groups per unit"; grep -hE "time per evaluation|evaluations|registration time|displacement" "$d"/airwc.md 2>/dev/null | grep -v "by cost" | cut -d'|' -f2-7; grep -hE "by cost" "$d"/airwc.md 2>/dev/null | cut -d'|' -f2-7; } | tee -a "$R"
  done
  F="$OUT/fim.txt"
  for i in 1 2; do
    stamp "bench fim cuda exact inner $i"
    { echo "## cuda exact inner $i"; step 60 "$B" bench fim --example 3 --backend cuda --local exact --inner $i --repeats 1 2>&1 | tail -1; } | tee -a "$F"
  done
  echo "=== airwc summary"
  cat "$R"
fi
if [ "$PART" = c ]; then
  # Issue 9: 004 Table 1 at paper scale on CUDA and NVIDIA OpenCL (GPU rows only).
  for be in cuda $OCL; do
    stamp "reproduce fim-t1 --scale paper --backend $be"
    d="$OUT/fim-t1-${be%%:*}"
    step 200 "$B" reproduce fim-t1 --backend "$be" --scale paper --repeats 3 --out "$d" > "$d.log" 2>&1
    grep -h "run time" "$d"/fim-t1.md 2>/dev/null | cut -d'|' -f2-7
  done
fi
if [ "$PART" = d ]; then
  # Issue 9: the CPU rows of 004 Table 1 at paper scale (16 cores and one thread).
  stamp "reproduce fim-t1 --scale paper --backend cpu"
  d="$OUT/fim-t1-cpu"
  step 400 "$B" reproduce fim-t1 --backend cpu --scale paper --repeats 1 --out "$d" > "$d.log" 2>&1
  grep -h "run time" "$d"/fim-t1.md 2>/dev/null | cut -d'|' -f2-7
  grep -h "faster than fast sweeping\|max difference" "$d"/fim-t1.md 2>/dev/null | cut -c1-260
fi
stamp "round5.sh done"
