#!/usr/bin/env bash
# Round 37 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 36's).
#   a. register's kernels get a 32-byte spec again (round 36 had added a field they never read,
#      a suspect for NVIDIA OpenCL's texture SAD being 1-2 % slower), and check's texture rows
#      now run on a holed moving image too: `check` on CUDA, NVIDIA OpenCL and PoCL at two
#      seeds; `bench register` alternating with round 36's binary, two rounds; `register` 12 dof
#      NCC on two 1 mm brains, alternating, files compared.
#   b. the merged binary (voxel-coordinate helper, the tensor warning's wording, the helper's
#      bug fixes, --max-steps' limit and sparse tally chunks) against round 36's: `check` on
#      the three backends; every user command on user-sized inputs, files compared.
. "$(dirname "$0")/common.sh"
round_start
if [[ $PART == *a* ]]; then
  gpu_setup
  B=$NEW
  checks 437 cuda "$OCL" "$POCL"
  CHECK_ROWS="register .* texture" checks 438 cuda "$OCL"
  register_against_prev
fi
#   c. the new refusals on the GPUs: `register` with a moving image whose finite voxels are a
#      small block (the no-overlap error, after a level's evaluations on the device), and
#      `probtrack --max-steps 100000000` (the new limit: its counters' indices near 5e8 in the
#      tally kernel) against --max-steps 2000 on the same seed, files compared.
if [[ $PART == *c* ]]; then
  gpu_setup
  B=$NEW
  t1_pair "$W/b"
  python3 - "$W/b/t1.nii.gz" "$W/speck.nii" <<'PY'
import gzip, struct, sys, array
raw = gzip.open(sys.argv[1]).read()
off = int(struct.unpack('<f', raw[108:112])[0])
dims = struct.unpack('<8h', raw[40:56])
nx, ny, nz = dims[1:4]
v = array.array('f', raw[off:off + 4 * nx * ny * nz])
for i in range(len(v)):
    x, y, z = i % nx, (i // nx) % ny, i // (nx * ny)
    if not (x < 20 and y < 20 and z < 20):
        v[i] = float('nan')
open(sys.argv[2], 'wb').write(raw[:off] + v.tobytes())
PY
  for be in cuda "$OCL"; do
    stamp "register speck $be"
    step 60 "$B" register --backend "$be" --fixed "$W/a/t1.nii.gz" --moving "$W/speck.nii" --out "$W/speck-${be%%:*}/" 2>&1 | tail -2; echo "exit ${PIPESTATUS[0]}"
    ls "$W/speck-${be%%:*}" 2>&1 | head -2
  done
  issue7_volume
  "$B" bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp" > /dev/null 2>&1
  for be in cuda "$OCL"; do for ms in 2000 100000000; do
    u users.txt "probtrack max-steps $ms $be" "$B" -- probtrack --backend "$be" --bedpost "$W/bp" --seeds "$D/wm.nii.gz" --nsamples 20 --max-steps "$ms" --seed 5 --out "$W/pt-$ms-${be%%:*}"
  done; done
  for be in cuda opencl; do echo "$be: $(same_inflated "$W/pt-2000-$be" "$W/pt-100000000-$be")"; done | tee "$OUT/same-maxsteps.txt"
  grep -E "^##|waytotal|process wall" "$OUT/users.txt" | cut -c1-220
fi
if [[ $PART == *b* ]]; then
  gpu_setup
  B=$NEW
  checks 439 cuda "$OCL" "$POCL"
  user_commands "$OLD" "$NEW" same-users.txt
  summary users.txt "main"
fi
