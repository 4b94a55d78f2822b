#!/usr/bin/env bash
# Round 5's H100 measurements, one call per part (every step under its own limit), from the repo
# root with the release binary carried as dist/neuroport. Key lines last.
#   PART=a (~7 min): `check` on CUDA and NVIDIA OpenCL (counts of pass / FAIL, failing rows);
#     issue 9: `bench fim --example 3` with the exact and 004's local solver on CUDA, NVIDIA
#     OpenCL and the CPU (16 cores); CUDA with 1, 2, 8 Jacobi updates per block and the host
#     list; ncu on one fim_update launch (speed of light, occupancy, warp states).
#   PART=b: issue 10, scripts/device/reg5.sh (registration per evaluation and airwc).
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
  step "$lim" "$B" bench fim --example 3 "$@" 2>&1 | tail -1 | tee -a "$F"
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
  bash scripts/device/reg5.sh
fi
stamp "round5.sh done"
