#!/usr/bin/env bash
# Round 13 on the lent H100 (docs/performance.md, registration "Round 13"; results in
# docs/results/h100-2026-11-26-round13/). Binaries: dist/neuroport (new), dist/neuroport-old.
#   PART=a (~4 min): the user's whole `neuroport register` command on two 1 mm T1 brains
#     (240x256x176, the airwc pair (b): 12 dof, NCC), old and new binary alternating, two
#     rounds, CUDA and NVIDIA OpenCL, stages and peak memory, outputs compared byte for byte;
#     the new binary also with NEUROPORT_NO_RELEASE=1 (the device not released before exit:
#     what the release costs), and the README's small `fim --target` the same way.
#   PART=b (~6 min): FIM eager activation (a lowered face activates the block across it;
#     docs/fim.md). `bench fim --example 3` old / new alternating, two rounds, CUDA and NVIDIA
#     OpenCL, both local solvers, and the new binary with NEUROPORT_FIM_EAGER=0 (004's
#     activation) and 1 (lowered faces only, no activation on convergence); `check` on both APIs; the whole `fim --target` command (fim_phantom) old /
#     new, two rounds, outputs compared; `reproduce fim-t1 --scale paper` on CUDA. SEEDS="141
#     142" runs `check` at each seed (PART=e: the final binary, SEEDS 141-143).
#   PART=c (~3 min): example 3 with eager activation across the launch settings, CUDA, both
#     local solvers: lanes per voxel 2 / 4 (default) / 8, 2 Jacobi updates per block (--inner 2),
#     work-groups per launch 1056 / 4096 (default) / 16384, and the diagnostic build without
#     H_G's roots (NEUROPORT_FIM_DIAG_NOROOT=1, wrong answers by design: what is left without
#     them).
#   PART=f (~4 min): accuracy and the empty-candidate filter. On fim_phantom's connectivity
#     problem, CPU node FIM (all cores) as the reference, and CUDA with eager activation, with its
#     faces taken on any lowering (NEUROPORT_FIM_FACES_ANY=1) and with 004's rule
#     (NEUROPORT_FIM_EAGER=0): cost1 and total compared with scripts/device/fim_compare.py, and
#     E(gamma). Then `bench fim --example 3` old (dist/neuroport-old: the binary before the
#     filter) / new alternating, two rounds, both APIs and local solvers, and faces-any on CUDA.
#   PART=g (~6 min): the final binary (eager activation on any lowering of a face) against
#     round 12's (dist/neuroport-r12): `bench fim --example 3` alternating, two rounds, both
#     APIs and local solvers; the exact solver at 2 and 4 lanes; `check` at seeds 151-153; the
#     whole `fim --target` (fim_phantom) old / new, two rounds, its maps against CPU node FIM
#     and byte for byte against round 12's; `reproduce fim-t1 --scale paper` on CUDA.
#   PART=h (~5 min): reuse (a voxel whose neighbours did not change since its last evaluation
#     is not evaluated again; the same bits; reverted, commit fa4dad3 has it): `bench fim --example 3` with NEUROPORT_FIM_REUSE=0
#     / default alternating, two rounds, both APIs and local solvers; `check` at seeds 161-163;
#     the whole `fim --target` both ways, two rounds, maps compared byte for byte;
#     `reproduce fim-t1 --scale paper` on CUDA.
#   PART=i (~2 min): the binary before reuse (dist/neuroport-old, commit 406dc96) against the
#     new one, alternating, two rounds, both APIs and local solvers; the new one with
#     NEUROPORT_FIM_REUSE=0 once each.
#   PART=d (~3 min): lanes per voxel with eager activation, example 3, CUDA and NVIDIA OpenCL,
#     two rounds alternating: exact solver 2 / 3 / 4 lanes, 004's solver 3 / 4.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
OLD="$PWD/dist/neuroport-old"
# reg (common.sh) logs into user.txt here.
REG_LOG="$OUT/user.txt"
# conn LABEL BINARY BACKEND PREFIX [ENV...]: the README's connectivity command on synth's phantom.
conn() {
  local label=$1 bin=$2 be=$3 prefix=$4; shift 4
  { echo "## $label $be"; wall "fim --target" 60 env "$@" NEUROPORT_STAGES=1 "$bin" fim --backend "$be" --tensor "$W/demo/dti_tensor.nii.gz" \
    --mask "$W/demo/wm.nii.gz" --source "$W/demo/roi1.nii.gz" --target "$W/demo/roi2.nii.gz" --out "$prefix"; } | tee -a "$OUT/conn.txt"
}
if [ "$PART" = a ]; then
  stamp "synth two 1 mm brains and the README phantom"
  step 60 "$B" synth t1 --out "$W/a" > /dev/null 2>&1
  step 60 "$B" synth t1 --subject 1 --seed 2 --move -5,8,6,-7,5,-9,4,-3,5,2,-2,1 --out "$W/b" > /dev/null 2>&1
  step 60 "$B" synth --out "$W/demo" > /dev/null 2>&1
  step 60 "$B" dti --backend cpu --dwi "$W/demo/dwi.nii.gz" --bvals "$W/demo/bvals" --bvecs "$W/demo/bvecs" --mask "$W/demo/mask.nii.gz" --out "$W/demo/dti" > /dev/null 2>&1
  for rep in 1 2; do for be in cuda "$OCL"; do
    reg old "$OLD" "$be" "$W/old-${be%%:*}-$rep"
    reg new "$B" "$be" "$W/new-${be%%:*}-$rep"
    reg "new no-release" "$B" "$be" "$W/nr-${be%%:*}-$rep" NEUROPORT_NO_RELEASE=1
    conn old "$OLD" "$be" "$W/cold-${be%%:*}-$rep"
    conn new "$B" "$be" "$W/cnew-${be%%:*}-$rep"
    conn "new no-release" "$B" "$be" "$W/cnr-${be%%:*}-$rep" NEUROPORT_NO_RELEASE=1
  done; done
  for be in cuda opencl; do for f in _warped.nii.gz _affine.txt .mat; do
    cmp -s "$W/old-$be-1$f" "$W/new-$be-1$f" && echo "$be $f same" || echo "$be $f DIFFERS"
    cmp -s "$W/old-$be-1$f" "$W/nr-$be-1$f" && echo "$be $f same (no-release)" || echo "$be $f DIFFERS (no-release)"
  done; done | tee "$OUT/same.txt"
  echo "=== summary"; grep -E "^##|registration|stages|process wall" "$OUT/user.txt"
fi
if [ "$PART" = b ]; then
  F="$OUT/fim.txt"
  alternate "old" "eager"
  for be in cuda "$OCL"; do for loc in paper exact; do for e in 0 1; do fim "eager mode $e" "$B" "$be" $loc NEUROPORT_FIM_EAGER=$e; done; done; done
  checks_at ${SEEDS:-141}
  fim_phantom
  fim_target_pairs "old" "$OLD" "" "new" "$B" ""
  stamp "reproduce fim-t1 --scale paper on CUDA"
  step 300 "$B" reproduce fim-t1 --scale paper --backend cuda --out "$OUT/fim-t1-cuda" > "$OUT/fim-t1-cuda.log" 2>&1
  tail -5 "$OUT/fim-t1-cuda.log"
  echo "=== summary"; grep -E "^##|iterations" "$F" | sed 's/^\(.\{220\}\).*/\1/'
  grep -E "^##|E\(gamma\)|process wall" "$OUT/user.txt"
fi
if [ "$PART" = c ]; then
  F="$OUT/fim.txt"
  for loc in paper exact; do
    fim "default" "$B" cuda $loc
    for l in 2 8; do fim "lanes $l" "$B" cuda $loc NEUROPORT_FIM_LANES=$l; done
    for g in 1056 16384; do fim "groups $g" "$B" cuda $loc NEUROPORT_FIM_GROUPS=$g; done
    fim "no roots (diagnostic)" "$B" cuda $loc NEUROPORT_FIM_DIAG_NOROOT=1
    stamp "inner 2 $loc"
    { echo "## inner 2 cuda $loc"; NEUROPORT_STAGES=1 timeout 120 "$B" bench fim --example 3 --backend cuda --local $loc --inner 2 --repeats 3 2>&1 | tail -2 | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$F"
    fim "default again" "$B" cuda $loc
  done
  echo "=== summary"; grep -E "^##|iterations" "$F" | sed 's/^\(.\{200\}\).*/\1/'
fi
if [ "$PART" = d ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    for l in 4 2 3; do fim "lanes $l ($rep)" "$B" "$be" exact NEUROPORT_FIM_LANES=$l; done
    for l in 4 3; do fim "lanes $l ($rep)" "$B" "$be" paper NEUROPORT_FIM_LANES=$l; done
  done; done
  echo "=== summary"; grep -E "^##|iterations" "$F" | sed 's/^\(.\{120\}\).*/\1/'
fi
if [ "$PART" = f ]; then
  F="$OUT/fim.txt"
  fim_phantom
  fim_target "node FIM (reference)" "$B" cpu "$W/node"
  fim_target "eager" "$B" cuda "$W/eager"
  fim_target "eager, faces on any lowering" "$B" cuda "$W/any" NEUROPORT_FIM_FACES_ANY=1
  fim_target "004's activation" "$B" cuda "$W/r12" NEUROPORT_FIM_EAGER=0
  for m in cost1 total; do
    echo "## $m against node FIM"; python3 scripts/device/fim_compare.py "$W/node_$m.nii.gz" "$W/eager_$m.nii.gz" "$W/any_$m.nii.gz" "$W/r12_$m.nii.gz"
  done | sed "s#$W/##g" | tee "$OUT/accuracy.txt"
  alternate "before the filter" "filter"
  for loc in paper exact; do fim "faces on any lowering" "$B" cuda $loc NEUROPORT_FIM_FACES_ANY=1; done
  echo "=== summary"; grep -E "^##|iterations" "$F" | sed 's/^\(.\{150\}\).*/\1/'
  grep -E "^##|E\(gamma\)|process wall" "$OUT/user.txt"
fi
if [ "$PART" = g ]; then
  F="$OUT/fim.txt"
  OLD="$PWD/dist/neuroport-r12"
  alternate "round 12" "final"
  for be in cuda "$OCL"; do for l in 4 2; do fim "exact, lanes $l" "$B" "$be" exact NEUROPORT_FIM_LANES=$l; done; done
  checks_at 151 152 153
  fim_phantom
  fim_target "node FIM (reference)" "$B" cpu "$W/node"
  fim_target_pairs "round 12" "$OLD" "" "final" "$B" ""
  for m in cost1 total; do
    echo "## $m against node FIM"; python3 scripts/device/fim_compare.py "$W/node_$m.nii.gz" "$W/new-cuda_$m.nii.gz" "$W/new-opencl_$m.nii.gz" "$W/old-cuda_$m.nii.gz" "$W/old-opencl_$m.nii.gz"
  done | sed "s#$W/##g" | tee "$OUT/accuracy.txt"
  stamp "reproduce fim-t1 --scale paper on CUDA"
  step 300 "$B" reproduce fim-t1 --scale paper --backend cuda --out "$OUT/fim-t1-cuda" > "$OUT/fim-t1-cuda.log" 2>&1
  echo "=== summary"; grep -E "^##|iterations" "$F" | sed 's/^\(.\{150\}\).*/\1/'
  grep -E "^##|E\(gamma\)|process wall" "$OUT/user.txt"; tail -qn1 "$OUT"/check-*/check-*.txt
fi
if [ "$PART" = h ]; then
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do
    fim "no reuse ($rep)" "$B" "$be" $loc NEUROPORT_FIM_REUSE=0; fim "reuse ($rep)" "$B" "$be" $loc
  done; done; done
  checks_at 161 162 163
  fim_phantom
  fim_target_pairs "no reuse" "$B" NEUROPORT_FIM_REUSE=0 "reuse" "$B" ""
  stamp "reproduce fim-t1 --scale paper on CUDA"
  step 300 "$B" reproduce fim-t1 --scale paper --backend cuda --out "$OUT/fim-t1-cuda" > "$OUT/fim-t1-cuda.log" 2>&1
  echo "=== summary"; grep -E "^##|iterations" "$F" | sed 's/^\(.\{150\}\).*/\1/'
  grep -E "^##|E\(gamma\)|process wall" "$OUT/user.txt"; tail -qn1 "$OUT"/check-*/check-*.txt
  grep "brain-like |\|64^3 helix |" "$OUT/fim-t1-cuda/fim-t1.md" | cut -d'|' -f2,4,7,9
fi
if [ "$PART" = i ]; then
  F="$OUT/fim.txt"
  alternate "before reuse" "reuse"
  for be in cuda "$OCL"; do for loc in paper exact; do fim "reuse off" "$B" "$be" $loc NEUROPORT_FIM_REUSE=0; done; done
  echo "=== summary"; grep -E "^##|iterations" "$F" | sed 's/^\(.\{110\}\).*/\1/'
fi
