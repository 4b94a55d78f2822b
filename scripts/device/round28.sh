#!/usr/bin/env bash
# Round 28, issue 12 on two GPUs (nvidia-h100-x2): bedpost's split loads each chunk from the whole
# arrays and reads it back into them (runtime::columns, the staging gathering and scattering
# component runs) instead of cutting shares out and pasting them back; DTI's fit reads its share
# of the DWI the same way. Binaries: dist/neuroport (new), dist/neuroport-r27 (round 27's).
#   a. `check` on cuda:0 (the layer's new share-copy row, DTI and bedpost rows).
#   b. `bench split --scale paper --workloads bedpost-pipeline,bedpost-t3` on cuda:0,cuda:1, new
#      and round 27's alternating, two rounds; stages of one new run.
#   c. Whole `dti` and `bedpost` on the issue-7 volume, 1 and 2 GPUs, new and round 27's
#      alternating, two rounds; every output file of the four compared byte for byte.
# Run a (PART=abc): bedpost split 80-81 -> 93 % (pipeline volume), 68-74 -> 88-89 % (dataset 2);
# 99 files identical; check 50 rows passed. Run b (PART=bc, after bedpost's fit of the mask's
# measurements alone): docs/results/h100x2-2026-11-27-round28/b.
#   g. (PART=g, nvidia-h100-x4) every workload on 1, 2 and 4 GPUs, new and round 27's binary.
#   h. (PART=h, nvidia-h100-x2) a list's GPUs opened ahead while the command reads (commit
#      dcf0be6; reverted after run h: no gain, performance.md).
#   f. (PART=f, nvidia-h100-x1) `check` on CUDA, NVIDIA OpenCL and PoCL with the final binary.
#   d. (PART=d) the devices released at the end against left to the process's exit (the
#      NEUROPORT_RELEASE switch it measured was removed after: no gain).
. "$(dirname "$0")/common.sh"
exec > >(tee -a "$OUT/log.txt") 2>&1
NEW=$PWD/dist/neuroport
OLD=$PWD/dist/neuroport-r27
PART=${PART:-abc}
nvidia-smi -L
if [[ $PART == *[abcdh]* ]]; then
  issue7_volume
  IN=(--dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs")
fi

if [[ $PART == *a* ]]; then
  stamp "a: check on cuda:0"
  step 240 $NEW check --backend cuda:0 --seed 2801 > "$OUT/check-cuda.txt" 2>&1
  grep -E "layer|dti|bedpost|FAIL" "$OUT/check-cuda.txt" | head -40
  tail -2 "$OUT/check-cuda.txt"
fi

if [[ $PART == *b* ]]; then
  for rep in 1 2; do
    for bin in new old; do
      B=$NEW; [ $bin = old ] && B=$OLD
      stamp "b: bench split bedpost, $bin ($rep)"
      step 200 $B --backend cuda:0,cuda:1 bench split --scale paper --repeats 3 --workloads bedpost-pipeline,bedpost-t3 > "$OUT/split-$bin-$rep.txt" 2> "$OUT/split-$bin-$rep.err"
      cat "$OUT/split-$bin-$rep.txt"
    done
  done
  stamp "b: stages, new"
  NEUROPORT_STAGES=1 step 120 $NEW --backend cuda:0,cuda:1 bench split --scale paper --repeats 1 --workloads bedpost-pipeline > /dev/null 2> "$OUT/stages-bedpost.err"
  grep -E "^  bedpost" "$OUT/stages-bedpost.err"; grep '^stages' "$OUT/stages-bedpost.err" | cut -c1-3000
fi

if [[ $PART == *c* ]]; then
  export NEUROPORT_STAGES=1
  for rep in 1 2; do
    for bin in new old; do
      B=$NEW; [ $bin = old ] && B=$OLD
      for be in cuda:0 cuda:0,cuda:1; do
        wall "dti $bin $be ($rep)" 90 $B --backend $be --force dti "${IN[@]}" --mask "$D/mask.nii.gz" --out "$W/dti-$bin-$be/"
        wall "bedpost $bin $be ($rep)" 120 $B --backend $be --force bedpost "${IN[@]}" --mask "$D/mask.nii.gz" --out "$W/bp-$bin-$be"
      done
    done
  done
  unset NEUROPORT_STAGES
  stamp "c: the same bytes (new 1 GPU against new 2 GPUs and round 27's 1 and 2 GPUs)"
  same=0; differ=0
  for f in "$W"/bp-new-cuda:0/* "$W"/dti-new-cuda:0/*; do
    for other in new-cuda:0,cuda:1 old-cuda:0 old-cuda:0,cuda:1; do
      g=${f//new-cuda:0/$other}
      if cmp -s "$f" "$g"; then same=$((same + 1)); else differ=$((differ + 1)); echo "DIFFER $(basename "$f") ($other)"; fi
    done
  done
  echo "$same files identical, $differ differ"
fi
if [[ $PART == *d* ]]; then
  # d. Releasing the devices at the end (contexts, memory) against leaving it to the process's
  # exit (NEUROPORT_RELEASE=0): process wall of dti, bedpost, fim and register, alternating.
  export NEUROPORT_STAGES=1
  t1_pair "$W/b"
  step 60 $NEW --force dti "${IN[@]}" --mask "$D/mask.nii.gz" --out "$W/ten/" > /dev/null 2>&1
  for rep in 1 2 3; do
    for rel in 1 0; do
      for be in cuda:0 cuda:0,cuda:1; do
        NEUROPORT_RELEASE=$rel wall "dti release=$rel $be ($rep)" 90 $NEW --backend $be --force dti "${IN[@]}" --mask "$D/mask.nii.gz" --out "$W/dti-$rel-$be/"
        NEUROPORT_RELEASE=$rel wall "bedpost release=$rel $be ($rep)" 120 $NEW --backend $be --force bedpost "${IN[@]}" --mask "$D/mask.nii.gz" --out "$W/bp-$rel-$be"
      done
      NEUROPORT_RELEASE=$rel wall "fim release=$rel ($rep)" 90 $NEW --force fim --tensor "$W/ten/dti_tensor.nii.gz" --mask "$D/wm.nii.gz" --source "$D/roi1.nii.gz" --target "$D/roi2.nii.gz" --out "$W/fim-$rel"
      NEUROPORT_RELEASE=$rel wall "register release=$rel ($rep)" 90 $NEW --force register --fixed "$W/a/t1.nii.gz" --moving "$W/b/t1.nii.gz" --dof 12 --cost ncc --out "$W/reg-$rel"
    done
  done
  unset NEUROPORT_STAGES
  same=0; differ=0
  for f in "$W"/dti-1-cuda:0/* "$W"/bp-1-cuda:0/* "$W"/fim-1* "$W"/reg-1*; do
    g=${f/-1-cuda:0/-0-cuda:0}; g=${g/fim-1/fim-0}; g=${g/reg-1/reg-0}
    if cmp -s "$f" "$g"; then same=$((same + 1)); else differ=$((differ + 1)); echo "DIFFER $f"; fi
  done
  echo "d: $same files identical, $differ differ"
fi
if [[ $PART == *h* ]]; then
  # h. (nvidia-h100-x2) a list's GPUs opened ahead, side by side, while the command reads: dti
  # and bedpost on cuda:0,cuda:1 (and dti on cuda:0), new against dist/neuroport-r28a (this
  # round's binary before it), alternating, three rounds; outputs compared.
  PREV=$PWD/dist/neuroport-r28a
  export NEUROPORT_STAGES=1
  for rep in 1 2 3; do
    for bin in new prev; do
      B=$NEW; [ $bin = prev ] && B=$PREV
      wall "dti $bin cuda:0,cuda:1 ($rep)" 90 $B --backend cuda:0,cuda:1 --force dti "${IN[@]}" --mask "$D/mask.nii.gz" --out "$W/dti-$bin/"
      wall "bedpost $bin cuda:0,cuda:1 ($rep)" 120 $B --backend cuda:0,cuda:1 --force bedpost "${IN[@]}" --mask "$D/mask.nii.gz" --out "$W/bp-$bin"
      wall "dti $bin cuda:0 ($rep)" 90 $B --backend cuda:0 --force dti "${IN[@]}" --mask "$D/mask.nii.gz" --out "$W/dti1-$bin/"
    done
  done
  unset NEUROPORT_STAGES
  same=0; differ=0
  for f in "$W"/dti-new/* "$W"/bp-new/* "$W"/dti1-new/*; do
    g=${f/-new/-prev}
    if cmp -s "$f" "$g"; then same=$((same + 1)); else differ=$((differ + 1)); echo "DIFFER $f"; fi
  done
  echo "h: $same files identical, $differ differ"
fi

if [[ $PART == *g* ]]; then
  # g. (nvidia-h100-x4) every workload of `bench split` on 1, 2 and 4 GPUs, new and round 27's.
  N=$(nvidia-smi -L | grep -c '^GPU ')
  ALL=$(seq -s, -f 'cuda:%g' 0 $((N - 1)))
  for bin in new old; do
    B=$NEW; [ $bin = old ] && B=$OLD
    stamp "g: bench split on $ALL, $bin"
    step 240 $B --backend "$ALL" bench split --scale paper --repeats 3 > "$OUT/split4-$bin.txt" 2> "$OUT/split4-$bin.err"
    cat "$OUT/split4-$bin.txt"
  done
fi

if [[ $PART == *f* ]]; then
  # f. (one H100) `check` with the round's final binary on CUDA, NVIDIA's OpenCL and PoCL.
  gpu_setup
  for be in cuda:0 "$OCL" "$POCL"; do
    stamp "f: check on $be"
    step 200 $NEW check --backend "$be" --seed 2802 > "$OUT/check-${be//:/-}.txt" 2>&1
    grep -E "FAIL|layer share" "$OUT/check-${be//:/-}.txt"; tail -1 "$OUT/check-${be//:/-}.txt"
  done
fi
stamp done
