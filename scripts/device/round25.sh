#!/usr/bin/env bash
# Round 25 on the lent H100 (docs/performance.md, FIM "Round 25"; results in
# docs/results/h100-2026-11-27-round25/). Binaries: dist/neuroport (new, the commit of each part),
# dist/neuroport-prev (round 24's final outputs).
#   PART=a (~8 min): FIM, the whole solve's wall against its kernels (example 3: ~24.5 ms of wall
#     for ~14.5 ms of kernels on CUDA in round 24). 004's reordering now moves only the mask's
#     voxels, on the device. `bench fim --example 3` with the stages printed, prev and new
#     alternating, two rounds, CUDA and NVIDIA OpenCL, both local solvers; nsys's summaries of
#     one new solve where nsys is installed; `fim --target` on the 402 K-voxel phantom, prev
#     against new byte for byte; `check`'s FIM rows on CUDA, NVIDIA OpenCL and PoCL 5.0.
#     Found: CUDA 26.95-28.47 -> 24.68-24.86 ms (004's), 55.64-57.74 -> 53.59-53.83 (exact);
#     NVIDIA OpenCL 28.45-29.06 -> 25.94-26.28, 65.66-66.35 -> 64.11-64.36; maps the same bytes;
#     `check` 49 / 48 / 47 rows pass (seed 340).
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
OLD=$PWD/dist/neuroport-prev
#   PART=b (~1 min): where the rest of the host's time goes: a build with the set-up's steps
#     recorded as stages (dist/neuroport-trace, not committed), `bench fim --example 3` on CUDA
#     and NVIDIA OpenCL, 004's solver, twice each.
#     Found (whole ms): of the 2-3 ms of buffers, ~1-2 ms the page-locked count slot.
#   PART=c (~8 min): the set-up's page-locked slot made once per kernel set, the output grid filled
#     while the device iterates, the buffers freed beside the placing, the mask's voxels found
#     once per field: `bench fim` examples 1-3 (004's solver; example 3 exact too), prev, part a's
#     build (dist/neuroport-a) and new alternating, two rounds, CUDA and NVIDIA OpenCL, stages
#     printed; `fim --target` prev against new byte for byte; `check`'s FIM rows at seed 342.
#     Found: CUDA 004's 27.90-28.95 (prev) / 23.89-25.51 (a) / 21.74-21.81 ms (new), but about
#     one solve in four ran its iterations 10-20 ms long with new (part e); maps the same bytes;
#     `check` passes.
#   PART=d (~6 min): the free left running past the solve (joined before the next solve's
#     allocations); the field's host steps timed to the microsecond (dist/neuroport-trace, not
#     committed); `bench fim --example 3` prev / new alternating, two rounds; `fim --target` on the
#     402 K-voxel phantom, prev / new alternating (the user's command, process wall), maps compared;
#     PoCL 5.0's registration rows at seeds 334 and 335 (round 24's intermittent miscount), its
#     kernel cache off, twice each.
#     Found: fields' host steps 2.2-3.7 ms (the mask scan 0.6-1.7); `fim --target` 0.83-0.93 s
#     either way, maps the same bytes; PoCL seed 334 failed once (5 texture rows) in four runs.
#   PART=e (~2 min): parts c-d showed solves whose iterations stage ran 10-20 ms long (about one
#     in four; none in prev or part a). Which change: the NaN output grid filled on a pool thread
#     while the device iterates (NEUROPORT_FIM_GRID=ahead, the default in c-d), on every core
#     while it iterates (ahead-par), or after the download on every core (late), against part a's
#     build; `bench fim --example 3` on CUDA, both local solvers, three rounds (dist/neuroport-grid).
#     Found: long iterations in 9 of 24 solves with one thread, 0 of 24 with every core during or
#     after the loop, 0 in part a's build: the grid is filled after the download again.
#   PART=f (~4 min): gzip members in multiples of 32 even ones (the 157 MB tensor: 64 of 2.4 MB
#     instead of 38 of 4 MiB). The phantom's tensor and the issue-7 DWI (415 MB) written by prev
#     and by new (the same values: compared inflated), each read by new (`bench nifti
#     --read-only`, best of 3), alternating, three rounds; the new tensor on 1, 4, 16 threads;
#     `bench nifti` (writing too) with each binary on the tensor.
#     Found: the same values; tensor read 0.079-0.087 -> 0.070-0.074 s, DWI unchanged.
#   PART=g (~5 min): PoCL 5.0's overlap miscount (issue 10; found by a helper in a noble chroot:
#     about one fresh compile in ten dropped the per-item copy of `inside` across
#     np_reg_block_sum's first barrier; the counts now cross it in volatile copies). `check` on
#     PoCL 5.0 with its kernel cache off at seeds 334 and 335, new six times each, prev (part f's
#     build, without the fix) three times each, alternating; then `check` (every row) at seed
#     350 on CUDA, NVIDIA OpenCL and PoCL 5.0 with new.
#     Found: new 12 of 12 pass, prev 6 of 6 (the fault did not come); 49 / 48 / 47 rows pass.
#   PART=h (~6 min): `reproduce fim-t1 --scale paper` on the CPU (16 cores), CUDA and NVIDIA
#     OpenCL in one run, the final binary.
#     Found: example 3 CUDA 0.055 s exact / 0.024 s 004's, NVIDIA OpenCL 0.061 / 0.027; node
#     FIM 16.4x fast sweeping.
#   PART=i (~4 min): the registration with the PoCL mend (volatile copies of the counts in
#     np_reg_block_sum) against part f's build: `register` 12 dof NCC on two 1 mm brains on
#     CUDA and NVIDIA OpenCL, the matrices compared byte for byte and the warped images
#     inflated; `bench register` SAD and NCC alternating, two rounds, CUDA and NVIDIA OpenCL.
#     Found: the same matrices' bytes and warped values on both APIs; bench unchanged.
case "$PART" in
  a)
    { command -v nsys ncu; ls -d /usr/local/cuda*/bin /opt/nvidia/nsight-systems* 2>/dev/null; nproc; } | tee "$OUT/tools.txt"
    F="$OUT/fim.txt"
    alternate prev new > /dev/null
    NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems*/bin/nsys /usr/local/cuda*/bin/nsys 2>/dev/null | head -1)
    if [ -n "$NSYS" ]; then
      stamp "nsys"
      step 120 "$NSYS" profile -o "$W/ex3" --force-overwrite true "$B" bench fim --example 3 --backend cuda --local paper --repeats 1 > "$OUT/nsys-run.txt" 2>&1
      step 120 "$NSYS" stats --report cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum "$W/ex3.nsys-rep" > "$OUT/nsys-stats.txt" 2>&1
    fi
    CHECK_ROWS=fim_ checks 340 cuda "$OCL" "$POCL"
    fim_maps_same prev "$OLD"
    fim_summary
    ;;
  b)
    F="$OUT/fim.txt"
    for rep in 1 2; do for be in cuda "$OCL"; do fim "trace ($rep)" "$PWD/dist/neuroport-trace" "$be" paper; done; done
    ;;
  c)
    F="$OUT/fim.txt"
    A=$PWD/dist/neuroport-a
    for rep in 1 2; do for be in cuda "$OCL"; do
      for loc in paper exact; do fim "prev ($rep)" "$OLD" "$be" $loc; fim "a ($rep)" "$A" "$be" $loc; fim "new ($rep)" "$B" "$be" $loc; done
      for e in 1 2; do for v in prev new; do
        bin=$B; [ $v = prev ] && bin=$OLD
        { echo "## $v ($rep) $be example $e"; NEUROPORT_STAGES=1 timeout 120 "$bin" bench fim --example $e --backend "$be" --local paper --repeats 3 2>&1 | tail -2 | sed 's/ (NVIDIA H100 80GB HBM3)//'; } >> "$F"
      done; done
    done; done > /dev/null
    CHECK_ROWS=fim_ checks 342 cuda "$OCL" "$POCL"
    fim_maps_same prev "$OLD"
    fim_summary
    ;;
  d)
    F="$OUT/fim.txt"
    for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do
      fim "prev ($rep)" "$OLD" "$be" $loc; fim "new ($rep)" "$B" "$be" $loc
    done; done; done > /dev/null
    for be in cuda "$OCL"; do NEUROPORT_STAGES=1 "$PWD/dist/neuroport-trace" bench fim --example 3 --backend "$be" --local paper --repeats 3 2>&1 | grep -E "TRACE|wall|stages" | sed 's/ (NVIDIA H100 80GB HBM3)//'; done > "$OUT/trace.txt"
    fim_phantom
    fim_target_pairs prev "$OLD" "" new "$B" ""
    for seed in 334 335; do for rep in 1 2; do
      stamp "PoCL registration rows, seed $seed ($rep)"
      POCL_KERNEL_CACHE=0 timeout 150 "$B" check --backend "$POCL" --seed $seed 2>&1 | grep -E "register|passed" | sed "s/^/$seed.$rep /"
    done; done | tee "$OUT/pocl-register.txt" | grep -E "fail|passed"
    fim_summary
    ;;
  e)
    F="$OUT/fim.txt"
    G=$PWD/dist/neuroport-grid
    for rep in 1 2 3; do for loc in paper exact; do
      fim "a ($rep)" "$PWD/dist/neuroport-a" cuda $loc
      for m in ahead ahead-par late; do fim "$m ($rep)" "$G" cuda $loc NEUROPORT_FIM_GRID=$m; done
    done; done > /dev/null
    awk '/^## /{l=$0} /^stages/{n=split($0,a,"fim iterations "); s=""; for(i=2;i<=n;i++){split(a[i],b," "); s=s" "b[1]} print l":"s}' "$F"
    fim_summary
    ;;
  f)
    issue7_volume
    fim_phantom
    stamp "prev's files"
    step 120 "$OLD" dti --backend cuda --dwi "$W/b/dwi.nii.gz" --bvals "$W/b/bvals" --bvecs "$W/b/bvecs" --mask "$W/b/mask.nii.gz" --out "$W/dold/" > /dev/null
    step 120 "$OLD" synth --model sticks --dims 96,112,72 --voxel 1.8,1.8,1.8 --b0 6 --dirs 64 --shells 1000,2000 --out "$W/i7old" > /dev/null
    for pair in "$W/dold/dti_tensor.nii.gz $W/d/dti_tensor.nii.gz" "$W/i7old/dwi.nii.gz $D/dwi.nii.gz"; do
      set -- $pair
      cmp -s <(gzip -dc "$1") <(gzip -dc "$2") && echo "$(basename "$2"): the same values" || echo "$(basename "$2"): DIFFER inflated"
      echo "$(basename "$2"): prev $(stat -c %s "$1") bytes, new $(stat -c %s "$2") bytes"
    done | tee "$OUT/same.txt"
    for rep in 1 2 3; do for pair in "tensor $W/dold/dti_tensor.nii.gz $W/d/dti_tensor.nii.gz" "dwi $W/i7old/dwi.nii.gz $D/dwi.nii.gz"; do
      set -- $pair
      echo "## prev's file ($rep) $1"; timeout 60 "$B" bench nifti --read-only --input "$2" 2>&1 | tail -1
      echo "## new's file ($rep) $1"; timeout 60 "$B" bench nifti --read-only --input "$3" 2>&1 | tail -1
    done; done | tee "$OUT/read.txt"
    for t in 1 4 16; do for v in prev new; do
      f=$W/d/dti_tensor.nii.gz; [ $v = prev ] && f=$W/dold/dti_tensor.nii.gz
      echo "## $v's file, $t threads"; RAYON_NUM_THREADS=$t timeout 60 "$B" bench nifti --read-only --input "$f" 2>&1 | tail -1
    done; done | tee -a "$OUT/read.txt"
    for v in prev new; do bin=$B; [ $v = prev ] && bin=$OLD
      echo "## bench nifti $v"; timeout 120 "$bin" bench nifti --input "$W/d/dti_tensor.nii.gz" 2>&1 | tail -6
    done | tee "$OUT/write.txt"
    ;;
  g)
    PF=$PWD/dist/neuroport-f
    for rep in 1 2 3 4 5 6; do for seed in 334 335; do for v in new prev; do
      [ $v = prev ] && [ $rep -gt 3 ] && continue
      bin=$B; [ $v = prev ] && bin=$PF
      echo "## $v seed $seed ($rep): $(POCL_KERNEL_CACHE=0 timeout 150 "$bin" check --backend "$POCL" --seed $seed 2>&1 | grep -E "register|passed" | grep -E "FAIL|passed" | tr '\n' ' ' | cut -c1-400)"
    done; done; done | tee "$OUT/pocl-register.txt"
    echo "new runs with a failure: $(grep -c '^## new.* [1-9][0-9]* failed' "$OUT/pocl-register.txt") of $(grep -c '^## new' "$OUT/pocl-register.txt"); prev: $(grep -c '^## prev.* [1-9][0-9]* failed' "$OUT/pocl-register.txt") of $(grep -c '^## prev' "$OUT/pocl-register.txt")"
    CHECK_ROWS="fim_|register" checks 350 cuda "$OCL" "$POCL"
    ;;
  h)
    stamp "reproduce fim-t1 --scale paper --backend cpu,cuda,$OCL"
    step 560 "$B" reproduce fim-t1 --scale paper --backend "cpu,cuda,$OCL" --out "$OUT/fim-t1" 2>&1 | tail -12
    cut -d'|' -f2-4,6-8 "$OUT/fim-t1/fim-t1.md" | grep -E "example|^ config" | head -30
    ;;
  i)
    PF=$PWD/dist/neuroport-f
    t1_pair "$W/b"
    for be in cuda "$OCL"; do for v in prev new; do
      bin=$B; [ $v = prev ] && bin=$PF
      timeout 120 "$bin" register --backend "$be" --fixed "$W/a/t1.nii.gz" --moving "$W/b/t1.nii.gz" --dof 12 --cost ncc --out "$W/r-$v-${be%%:*}" 2>&1 | tail -1 | sed "s/^/$v $be: /"
    done
      for x in _affine.txt .mat; do cmp -s "$W/r-prev-${be%%:*}$x" "$W/r-new-${be%%:*}$x" && echo "$be $x: same bytes" || echo "$be $x: DIFFER"; done
      cmp -s <(gzip -dc "$W/r-prev-${be%%:*}_warped.nii.gz") <(gzip -dc "$W/r-new-${be%%:*}_warped.nii.gz") && echo "$be warped: the same values" || echo "$be warped: DIFFER"
    done | tee "$OUT/same.txt"
    for rep in 1 2; do for be in cuda "$OCL"; do
      (B=$PF; breg "prev ($rep)" "$be"); breg "new ($rep)" "$be"
    done; done > /dev/null
    cat "$OUT/bench.txt"
    ;;
esac
