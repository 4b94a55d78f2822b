#!/usr/bin/env bash
# Affine registration, round 4 (issue 10, branch reg3), on the H100 box from the repo root with
# the release binary carried (scripts/device/common.sh finds it); writes under $OUT/reg3.
# Prints, each step under its own timeout (whole script ~5 minutes):
#   1. `synth t1` writes the airwc pair at 240x256x176 (subject 0, and the same head moved
#      rigidly: 002 Fig. 1's case);
#   2. ncu (--set full, first 3 launches of the cost kernel) on `register --backend cuda --cost
#      sad --levels 1` (in-kernel sampling): duration, DRAM / L2 / SM throughput, achieved and
#      theoretical occupancy, registers per thread, the limiting block resource. The kernel no
#      longer divides per voxel (x, y, z advanced with carries); ncu says what is left between
#      its time and the ~0.02 ms floor;
#   3. the same for the texture kernel, the first 3 launches of register_cost_texture in
#      `reproduce airwc --scale paper --backend cuda` (its in-kernel runs go by unprofiled);
#   4. `reproduce airwc --scale paper` on cuda, then NVIDIA OpenCL (picked from `devices`):
#      ms per evaluation per cost, evaluations, registration time (target <= 0.2 s for the 12-dof
#      case (b)), error against the known transform (case (b): against placement x axis scaling).
. "$(dirname "$0")/common.sh"
R=$OUT/reg3
mkdir -p "$R"
"$B" devices
OCL=$("$B" devices 2>/dev/null | grep -i opencl | grep -i nvidia | grep -oE 'opencl:[0-9]+:[0-9]+' | head -1)
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
stamp "synth t1 pair, 240x256x176 at 1 mm"
step 60 "$B" synth t1 --out "$R/a" --seed 1 --force
step 60 "$B" synth t1 --out "$R/b" --seed 2 --move 7,-11,5,8,-6,10 --force
ncu_summary() { # the lines of an ncu report that say where the time goes
  grep -E "register_cost|Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|L1/TEX Hit Rate|Compute \(SM\) Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Block Limit|Waves Per SM|Executed Ipc Active|Issue Slots Busy" "$1" | head -60
}
if [ -n "$NCU" ]; then
  stamp "ncu: register_cost (in-kernel), SAD, full resolution"
  step 120 "$NCU" --set full -k regex:'^register_cost$' -c 3 "$B" register --backend cuda --fixed "$R/a/t1.nii.gz" \
    --moving "$R/b/t1.nii.gz" --dof 6 --cost sad --levels 1 --out "$R/ncu-reg/" --force > "$R/ncu-inkernel.txt" 2>&1
  ncu_summary "$R/ncu-inkernel.txt"
  stamp "ncu: register_cost_texture, airwc paper"
  step 150 "$NCU" --set full -k regex:'register_cost_texture' -c 3 "$B" reproduce airwc --backend cuda --scale paper \
    --repeats 1 --out "$R/ncu-airwc" --force > "$R/ncu-texture.txt" 2>&1
  ncu_summary "$R/ncu-texture.txt"
else
  echo "ncu not found"
fi
summary() { grep -hE "time per evaluation|registration time|evaluations|displacement" "$1"/*.md 2>/dev/null | head -40; }
stamp "reproduce airwc --scale paper --backend cuda"
step 100 "$B" reproduce airwc --backend cuda --scale paper --repeats 3 --out "$R/airwc-cuda" --force 2>&1 | tail -2
summary "$R/airwc-cuda"
if [ -n "${OCL:-}" ]; then
  stamp "reproduce airwc --scale paper --backend $OCL"
  step 100 "$B" reproduce airwc --backend "$OCL" --scale paper --repeats 3 --out "$R/airwc-nvidia-opencl" --force 2>&1 | tail -2
  summary "$R/airwc-nvidia-opencl"
else
  echo "no NVIDIA OpenCL device listed by 'devices'"
fi
stamp "reg3.sh done"
