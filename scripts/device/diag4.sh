#!/usr/bin/env bash
# Diagnosis at the start of round 4 (issue 10): ncu on the registration cost kernels at 002's
# size (240x256x176) during `reproduce airwc --scale paper --backend cuda`, first launches of
# the in-kernel and the texture kernel; prints the speed-of-light, memory, occupancy, launch
# and warp-state sections. Under ~3 minutes.
. "$(dirname "$0")/common.sh"
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
"$B" devices
S="--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis"
for k in register_cost register_cost_texture; do
  stamp "ncu $k"
  timeout 120 "$NCU" $S -k "regex:^$k\$" --launch-skip 20 -c 2 "$B" reproduce airwc --backend cuda --scale paper --repeats 1 --out "$OUT/diag-airwc-$RANDOM" > "$OUT/ncu-$k.txt" 2>&1
  grep -vE "^  +[0-9a-z]" "$OUT/ncu-$k.txt" | head -5
  sed -n '/==PROF== Disconnected/,$p' "$OUT/ncu-$k.txt" | head -150
done
stamp "diag4.sh done"
