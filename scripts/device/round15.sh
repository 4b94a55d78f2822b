#!/usr/bin/env bash
# Round 15 on the lent H100 (docs/performance.md, registration "Round 15"; results in
# docs/results/h100-2026-11-26-round15/). Binary: dist/neuroport.
#   PART=a (~2 min; needs commit cf009cb's binary, reverted since): the staged sampler (slabs of the moving image in local memory, exact) and
#     the hybrid (half of each tile's rows staged, half through the texture unit). `check` on
#     CUDA, NVIDIA OpenCL and PoCL 5.0 (seed 191); `bench register` (SAD, NCC; in-kernel,
#     texture, staged, hybrid) two rounds per API; the hybrid's split (4, 12 rows staged) and
#     the staged slab depth (16 slices, a 36 KB box) on CUDA; then `register` on the 1 mm pair
#     with the staged sampler against the in-kernel one (the default), alternating, two rounds
#     per API, outputs compared byte for byte.
#   PART=b (~3 min; needs the binary with the NEUROPORT_REG_LOAD_ALL switch, never committed:
#     7bd70ec is its tidied form without the switch, reverted since): samples outside the moving
#     image load nothing (neither the fixed value nor the moving sample), against the former
#     loop (NEUROPORT_REG_LOAD_ALL=1, same binary):
#     `bench register` (SAD, NCC; in-kernel, texture) alternating, two rounds per API; `check`
#     on CUDA, NVIDIA OpenCL and PoCL 5.0 (seed 192); `register` on the 1 mm pair alternating,
#     two rounds per API, outputs compared byte for byte.
#   PART=c (~2 min): OpenCL's staging slots allocated while the registration builds its pyramid
#     and awaited before the first launch (Gpu::stage_settle), instead of at the second level's
#     first upload: `register` on the 1 mm pair, the binary before (dist/neuroport-old, 7bd70ec)
#     and after alternating, three rounds per API, outputs compared byte for byte.
#   PART=d (~5 min; results d ran 156817e's binary, whose kernel still skipped outside samples):
#     the README's commands (common.sh `readme`) with round 14's binary
#     (dist/neuroport-old, c21cc48) and this one on CUDA, NVIDIA OpenCL and PoCL 5.0: every
#     command's exit and wall, every output compared byte for byte per backend.
#   PART=e (~4 min; results e ran 156817e's binary, as d): `register` on the 1 mm pair with round 14's binary and this one
#     alternating, two rounds per API (the warp row by row, OpenCL's staging settled before the
#     first launch), outputs compared; `check` on CUDA, NVIDIA OpenCL and PoCL 5.0 (seed 193);
#     `bench register` (SAD, NCC) once per API.
#   PART=f (~2 min; needs commit d8b3aa5's binary, reverted since): the texture path with texel pairs (voxels z and z + 1 in one float2
#     texel, filtered in x and y by the texture unit, lerped in z in the kernel;
#     NEUROPORT_REG_TEX_PAIR=1, an experiment) against the scalar texture: `bench register`
#     alternating, two rounds, CUDA and NVIDIA OpenCL; `check` with pairs on both (seed 194).
#   PART=g (~3 min): the final binary: `check` on CUDA, NVIDIA OpenCL and PoCL 5.0 at seeds 197
#     and 198, then PART=d's README comparison against round 14's binary.
#   PART=h (~4 min; run as h with 254a958's binary, and as h2 with 06d3633's, reverted since,
#     and 254a958's as dist/neuroport-prev): NIfTI reads converted on every core: `bench nifti --read-only` on the
#     256x256x100 tensor (157 MB), round 14's binary, dist/neuroport-prev if there (254a958:
#     converted on every core, still copied through one thread) and this alternating, two rounds; the whole
#     `fim --target` (common.sh fim_target_pairs: CUDA and NVIDIA OpenCL, two rounds, maps
#     compared); `dti` on the issue-7 volume (171 MB DWI) on CUDA, alternating, two rounds, stages.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
if [ "$PART" = a ]; then
  CHECK_ROWS=register checks 191 cuda "$OCL" "$POCL"
  for rep in 1 2; do for be in cuda "$OCL"; do breg "default ($rep)" "$be"; done; done
  breg "split 4" cuda NEUROPORT_REG_SPLIT=4
  breg "split 12" cuda NEUROPORT_REG_SPLIT=12
  breg "slab 16, box 9216" cuda NEUROPORT_REG_SZ=16 NEUROPORT_REG_STAGE=9216
  breg "slab 4, box 4096" cuda NEUROPORT_REG_SZ=4 NEUROPORT_REG_STAGE=4096
  t1_pair "$W/b"
  reg_pairs 2 in-kernel "$B" "" staged "$B" NEUROPORT_REG_SAMPLING=staged
  echo "=== summary"; grep -E "^##|registration|process wall" "$OUT/register.txt"
fi
if [ "$PART" = b ]; then
  for rep in 1 2; do for be in cuda "$OCL"; do
    breg "load all ($rep)" "$be" NEUROPORT_REG_LOAD_ALL=1
    breg "inside only ($rep)" "$be"
  done; done
  CHECK_ROWS=register checks 192 cuda "$OCL" "$POCL"
  t1_pair "$W/b"
  reg_pairs 2 "load all" "$B" NEUROPORT_REG_LOAD_ALL=1 "inside only" "$B" ""
  echo "=== summary"; grep -E "^##|level 3|registration|process wall" "$OUT/register.txt"
fi
if [ "$PART" = c ]; then
  OLD="$PWD/dist/neuroport-old"
  t1_pair "$W/b"
  reg_pairs 3 old "$OLD" "" new "$B" ""
  echo "=== summary"; grep -E "^##|^level|registration|stages|process wall" "$OUT/register.txt" | sed 's/ evaluations in / in /'
fi
if [ "$PART" = g ]; then
  for seed in 197 198; do (OUT="$OUT/check-$seed"; mkdir -p "$OUT"; CHECK_ROWS=XXX checks "$seed" cuda "$OCL" "$POCL"); done
  PART=d
fi
if [ "$PART" = d ]; then
  readme_compare "$PWD/dist/neuroport-old"
fi
if [ "$PART" = e ]; then
  OLD="$PWD/dist/neuroport-old"
  t1_pair "$W/b"
  reg_pairs 2 old "$OLD" "" new "$B" ""
  echo "=== summary"; grep -E "^##|registration|stages|process wall" "$OUT/register.txt" | sed 's/ evaluations in / in /'
  CHECK_ROWS=register checks 193 cuda "$OCL" "$POCL"
  for be in cuda "$OCL"; do breg final "$be"; done
fi
if [ "$PART" = f ]; then
  for rep in 1 2; do for be in cuda "$OCL"; do
    breg "scalar texels ($rep)" "$be"
    breg "texel pairs ($rep)" "$be" NEUROPORT_REG_TEX_PAIR=1
  done; done
  for be in cuda "$OCL"; do
    stamp "check $be, texel pairs"
    NEUROPORT_REG_TEX_PAIR=1 step 150 "$B" check --backend "$be" --seed 194 > "$OUT/check-pair-${be%%:*}.txt" 2>&1
    grep -E "register .* texture|passed" "$OUT/check-pair-${be%%:*}.txt"
  done
fi
if [ "$PART" = h ]; then
  OLD="$PWD/dist/neuroport-old"
  fim_phantom
  PREV="$PWD/dist/neuroport-prev"
  for rep in 1 2; do for b in "$OLD" $([ -x "$PREV" ] && echo "$PREV") "$B"; do
    stamp "bench nifti $(basename "$b") ($rep)"
    { echo "## $(basename "$b") ($rep)"; step 120 "$b" bench nifti --input "$W/d/dti_tensor.nii.gz" --read-only --repeats 3 2>&1 | grep -i read; } | tee -a "$OUT/nifti.txt"
  done; done
  fim_target_pairs old "$OLD" "" new "$B" ""
  echo "=== fim --target"; grep -E "^##|^stages|process wall" "$OUT/user.txt" | sed -E 's/stages: exec->main [0-9]+ ms, read ([0-9]+ ms).*main ([0-9]+ ms)/read \1 main \2/'
  stamp "synth the issue-7 volume"
  step 60 "$B" synth --model sticks --dims 96,112,72 --voxel 1.8,1.8,1.8 --b0 6 --dirs 64 --shells 1000,2000 --out "$W/i7" > /dev/null
  for rep in 1 2; do for b in "$OLD" "$B"; do
    { echo "## $(basename "$b") ($rep)"; NEUROPORT_STAGES=1 wall "dti cuda" 60 "$b" dti --backend cuda --dwi "$W/i7/dwi.nii.gz" --bvals "$W/i7/bvals" --bvecs "$W/i7/bvecs" --mask "$W/i7/mask.nii.gz" --out "$W/dti-$(basename "$b")-$rep" --force; } | tee -a "$OUT/dti.txt"
  done; done
  for f in "$W"/dti-neuroport-old-1*; do cmp -s "$f" "${f/neuroport-old-1/neuroport-1}" || echo "DIFFERS: $f"; done | tee "$OUT/same-dti.txt"; echo "$(ls "$W"/dti-neuroport-old-1* | wc -l) dti outputs compared" | tee -a "$OUT/same-dti.txt"
fi
