#!/usr/bin/env bash
# Affine registration cost kernel, round 5 (issue 10, branch reg4), on the H100 box from the repo
# root with the release binary carried; writes under $OUT/reg4. ~3 minutes, each step under its
# own timeout. The kernel now keeps NP_REG_UNROLL (4) voxels' loads in flight per item and the
# grid is NEUROPORT_REG_GROUPS_PER_UNIT (default 4) work-groups per SM: a whole wave.
#   1. `synth t1` pair at 240x256x176 (002 Fig. 1's case: the same head moved rigidly);
#   2. sweep of groups per SM (2, 4, 6, 8) on cuda, in-kernel sampling (`register --levels 1
#      --dof 6 --cost sad`; the CLI samples in-kernel) — the summary line gives ms per
#      evaluation at full resolution, one wave per launch whatever k as long as k groups fit);
#   3. LAST, the key rows: `reproduce airwc --scale paper` on cuda, then NVIDIA OpenCL: ms per
#      evaluation per cost and sampling, evaluations, registration time (12-dof case (b):
#      target <= 0.2 s), error against the known transform.
. "$(dirname "$0")/common.sh"
R=$OUT/reg4
mkdir -p "$R"
OCL=$("$B" devices 2>/dev/null | grep -i opencl | grep -i nvidia | grep -oE 'opencl:[0-9]+:[0-9]+' | head -1)
stamp "synth t1 pair, 240x256x176 at 1 mm"
step 60 "$B" synth t1 --out "$R/a" --seed 1 --force >/dev/null
step 60 "$B" synth t1 --out "$R/b" --seed 2 --move 7,-11,5,8,-6,10 --force >/dev/null
for k in 2 4 6 8; do
  stamp "cuda register sad, levels 1, $k groups per SM"
  NEUROPORT_REG_GROUPS_PER_UNIT=$k step 30 "$B" register --backend cuda --fixed "$R/a/t1.nii.gz" --moving "$R/b/t1.nii.gz" \
    --dof 6 --cost sad --levels 1 --out "$R/sweep$k/" --force 2>&1 | grep -E "ms per evaluation" | tail -1
done
summary() { grep -hE "time per evaluation|registration time|evaluations|displacement" "$1"/*.md 2>/dev/null | head -40; }
stamp "reproduce airwc --scale paper --backend cuda"
step 100 "$B" reproduce airwc --backend cuda --scale paper --repeats 3 --out "$R/airwc-cuda" --force > "$R/airwc-cuda.log" 2>&1
if [ -n "${OCL:-}" ]; then
  stamp "reproduce airwc --scale paper --backend $OCL"
  step 100 "$B" reproduce airwc --backend "$OCL" --scale paper --repeats 3 --out "$R/airwc-nvidia-opencl" --force > "$R/airwc-ocl.log" 2>&1
else
  echo "no NVIDIA OpenCL device listed by 'devices'"
fi
echo "=== key rows: cuda"
tail -2 "$R/airwc-cuda.log"; summary "$R/airwc-cuda"
echo "=== key rows: NVIDIA OpenCL ${OCL:-none}"
[ -n "${OCL:-}" ] && { tail -2 "$R/airwc-ocl.log"; summary "$R/airwc-nvidia-opencl"; }
stamp "reg4.sh done"
