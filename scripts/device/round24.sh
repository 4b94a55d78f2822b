#!/usr/bin/env bash
# Round 24 on the lent H100 (docs/performance.md, FIM "Round 24"; results in
# docs/results/h100-2026-11-27-round24/). Binaries: dist/neuroport (new, the commit of each part),
# dist/neuroport-prev (round 23's final build).
#   PART=a (~10 min): FIM, the probe of deferred roots (004's solver on GPUs: count the voxels
#     that want H_G's root over the first 16 iterations, and where they are frequent solve again
#     with the roots in place). `check` (FIM rows) on CUDA, NVIDIA OpenCL and PoCL 5.0, seed 330;
#     `bench fim` on the 64^3 helix (example 2) and on example 3 with 004's solver, prev and new
#     alternating, two rounds, CUDA and NVIDIA OpenCL, new with the probe off
#     (`NEUROPORT_FIM_PROBE=0`: roots deferred as before) and with the roots in place
#     (`NEUROPORT_FIM_DEFER=0`) beside them; example 1 once; `fim --target` on the 402 K-voxel
#     phantom with both local solvers, prev against new byte for byte.
#     Found: `check` passes (49 / 48 / 47 rows); the helix with 004's solver, kernels: CUDA
#     351.7-352.5 -> 140.6-140.9 ms (in place alone 140.2, probe off 352), NVIDIA OpenCL
#     364.7-365.3 -> 142.8-143.0; probes: helix 2,053-2,058 of 157,952 listed voxels (in place),
#     example 3 4 of 162,368 (deferred, 14.52-14.70 ms against prev's 14.56-14.58 on CUDA),
#     example 1 0; the phantom's maps the same bytes as prev's.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
PREV=$PWD/dist/neuroport-prev
# ex LABEL BINARY BACKEND EXAMPLE [ENV...]: `bench fim --example EXAMPLE --local paper` (median of
# 3), its last line appended to $F under "## LABEL".
ex() {
  local label=$1 bin=$2 be=$3 e=$4; shift 4
  stamp "bench fim example $e $label $be"
  { echo "## $label $be example $e"; env "$@" timeout 120 "$bin" bench fim --example "$e" --backend "$be" --local paper --repeats 3 2>&1 | tail -1 | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$F"
}
case "$PART" in
  a)
    CHECK_ROWS=fim_ checks 330 cuda "$OCL" "$POCL"
    F="$OUT/fim.txt"
    for rep in 1 2; do for be in cuda "$OCL"; do for e in 2 3; do
      ex "prev ($rep)" "$PREV" "$be" "$e"
      ex "new ($rep)" "$B" "$be" "$e"
      ex "new, probe off ($rep)" "$B" "$be" "$e" NEUROPORT_FIM_PROBE=0
      ex "new, roots in place ($rep)" "$B" "$be" "$e" NEUROPORT_FIM_DEFER=0
    done; done; done > /dev/null
    for be in cuda "$OCL"; do ex "new" "$B" "$be" 1; done > /dev/null
    fim_summary
    fim_maps_same prev "$PREV"
    ;;
  b)
    # Reading our multi-member .nii.gz: dist/readtime (examples/readtime.rs, a temporary example
    # in commit 'nifti: our gzip members inflated...', built at round 23's reader: read_nifti three
    # times in one process) against dist/readtime-new (built with that commit), 1 / 4 / 16
    # threads, the 256x256x100 tensor (157 MB raw) and DWI (183 MB); then the user's
    # `fim --target` with prev and new alternating, two rounds on CUDA, its stages.
    # Found: tensor 105-121 -> 75-92 ms on 16 threads (1: 415-508 -> 404-419), DWI 102-111 ->
    # 67-72; `fim --target` read stage 131-140 -> 97-100 ms.
    fim_phantom
    for f in "$W/d/dti_tensor.nii.gz" "$W/b/dwi.nii.gz"; do for t in 1 4 16; do for v in readtime readtime-new; do
      echo "## $v $(basename "$f") threads $t"; RAYON_NUM_THREADS=$t timeout 60 "dist/$v" "$f" 2>&1
    done; done; done | tee "$OUT/read.txt"
    for rep in 1 2; do
      fim_target "prev ($rep)" "$PREV" cuda "$W/old-cuda"
      fim_target "new ($rep)" "$B" cuda "$W/new-cuda"
    done > /dev/null
    grep -E "^##|stages|process" "$OUT/user.txt" | cut -c1-260
    ;;
  c)
    # The same with the project's own measure: `bench nifti --read-only` (best of 3) with prev
    # and new alternating, two rounds, on the tensor and the issue-7 DWI (171 MB), and `dti` on
    # the issue-7 volume (its read stage).
    # Found: tensor 0.131-0.215 -> 0.107-0.108 s, issue-7 DWI 0.311-0.328 -> 0.219-0.290 s;
    # `dti` read 301-311 -> 195-196 ms, main 512-521 -> 471-497 ms.
    issue7_volume
    fim_phantom
    for rep in 1 2; do for f in "$W/d/dti_tensor.nii.gz" "$D/dwi.nii.gz"; do for v in prev new; do
      bin=$B; [ $v = prev ] && bin=$PREV
      echo "## $v ($rep) $(basename "$(dirname "$f")")/$(basename "$f")"; timeout 60 "$bin" bench nifti --read-only --input "$f" 2>&1 | tail -1
    done; done; done | tee "$OUT/read.txt"
    for rep in 1 2; do for v in prev new; do
      bin=$B; [ $v = prev ] && bin=$PREV
      wall "dti $v ($rep)" 120 env NEUROPORT_STAGES=1 "$bin" dti --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/dti-$v/" --force
    done; done | tee "$OUT/dti.txt"
    ;;
  d)
    # fim_settle's work-groups (004's solver, roots deferred): the roots' part launches 4,096
    # groups (NEUROPORT_FIM_ROOT_GROUPS) while example 3 queues a few roots a launch; 1,056, 528
    # and 264 against the default, two rounds, CUDA and NVIDIA OpenCL.
    # Found: no gain (CUDA 14.39-15.34 against 14.62-14.64 ms): not changed.
    F="$OUT/fim.txt"
    fim_rounds paper "default $B" "rg1056 $B NEUROPORT_FIM_ROOT_GROUPS=1056" "rg528 $B NEUROPORT_FIM_ROOT_GROUPS=528" "rg264 $B NEUROPORT_FIM_ROOT_GROUPS=264" > /dev/null
    fim_summary
    ;;
  e)
    # Short lists late in a solve (gpu::ShortLists): with the exact solver (one Jacobi update a
    # launch), lists of at most 32 blocks get 2 once a list of 256 has been read back, for the
    # crawl of a late correction (NVIDIA OpenCL's exact solve: 560 iterations against CUDA's
    # 432). `check` (FIM rows) at seed 332 on CUDA, NVIDIA OpenCL and PoCL 5.0; `bench fim` on
    # example 3 and the helix, exact, prev, new and new with them off (NEUROPORT_FIM_SHORT=0,1)
    # alternating, two rounds, CUDA and NVIDIA OpenCL; example 3 with 004's solver once (not
    # changed); `fim --target` maps against prev's by value.
    # Found: `check` passes; NVIDIA OpenCL exact 560 -> 512 iterations, 51.73-51.81 ms against
    # 51.74-51.95 off; CUDA 43.70-43.74 against 43.29-43.40: reverted after this part (a7c7d30).
    CHECK_ROWS=fim_ checks 332 cuda "$OCL" "$POCL"
    F="$OUT/fim.txt"
    for rep in 1 2; do for be in cuda "$OCL"; do
      for e in 3 2; do for v in prev new off; do
        bin=$B; [ $v = prev ] && bin=$PREV
        off=NP_UNSET=1; [ $v = off ] && off=NEUROPORT_FIM_SHORT=0,1
        stamp "bench fim example $e exact $v $be"
        { echo "## $v ($rep) $be example $e exact"; env "$off" timeout 120 "$bin" bench fim --example $e --backend "$be" --repeats 3 2>&1 | tail -1 | sed 's/ (NVIDIA H100 80GB HBM3)//'; } >> "$F"
      done; done
    done; done
    for be in cuda "$OCL"; do ex "new" "$B" "$be" 3; done > /dev/null
    fim_summary
    fim_maps_same prev "$PREV"
    ;;
  f)
    # The active count read without draining the queue: queued into pinned memory every 8
    # iterations and waited for 8 iterations later (the loop may run up to 16 empty iterations
    # past the last; iterations counted from the lists' lengths). `check` (FIM rows) at seed 334
    # on CUDA, NVIDIA OpenCL and PoCL 5.0; `bench fim --example 3` prev and new alternating, both
    # local solvers, two rounds, CUDA and NVIDIA OpenCL, stages on; `fim --target` maps against
    # prev's (the same bytes expected).
    # Found: maps the same bytes; `check` passes on CUDA and NVIDIA OpenCL, on PoCL 5.0 44 of 47
    # (the in-kernel registration rows: overlap 36352 against the CPU's 57464; not FIM). Wall:
    # CUDA 25.2-25.5 -> 27.4-27.7 ms (004's), 55.6-56.0 -> 56.2-57.2 (exact); NVIDIA OpenCL exact
    # 69.3-71.0 -> 65.4-65.5, 004's 29.5-29.8 -> 27.1-29.9. Iterations now counted to the last
    # listed (252 / 432 / 251 / 557 against 256 / 432 / 256 / 560).
    CHECK_ROWS=fim_ checks 334 cuda "$OCL" "$POCL"
    F="$OUT/fim.txt"
    fim_rounds "paper exact" "prev $PREV" "new $B" > /dev/null
    fim_summary
    fim_maps_same prev "$PREV"
    ;;
  g)
    # Part f's reads ahead cost CUDA 1-2 ms of wall while NVIDIA OpenCL's exact solve gained
    # 4-5 ms: every check waited for the read queued 8 iterations earlier, so the loop ran 8-16
    # empty iterations past the last (each a full grid of work-groups). Now one binary with
    # the reads every 4 iterations (default), every 8 (NEUROPORT_FIM_CHECK=8) and every 8
    # waiting for themselves as before (NEUROPORT_FIM_ASYNC=0), and prev; both local solvers,
    # two rounds, CUDA and NVIDIA OpenCL, stages on.
    # Found: walls too noisy in this lease (CUDA prev 30-53 ms); NVIDIA OpenCL exact 66-67 ms a
    # check late every 8 against 72-73 waited at once. PoCL 5.0 `check` (prev and new, seeds 334,
    # 335): mi/nmi in-kernel rows fail (overlap miscounted). The late read left off by default.
    F="$OUT/fim.txt"
    fim_rounds "paper exact" "prev $PREV" "sync8 $B NEUROPORT_FIM_ASYNC=0" "ahead8 $B NEUROPORT_FIM_CHECK=8" "ahead4 $B" > /dev/null
    fim_summary
    ;;
  h)
    # The round's final binary: `check` (every row) at seed 336 on CUDA, NVIDIA OpenCL and PoCL
    # 5.0; `reproduce fim-t1 --scale paper` on the CPU (16 cores), CUDA and NVIDIA OpenCL in one
    # run (004's Table 1 on today's H100 host; the helix's 004's-solver rows now with the probe).
    # Found: `check` 49 / 48 / 47 passed; example 3 CUDA 0.060 s exact, 0.027 s 004's; the helix
    # 0.154 / 0.155 s (round 23: 0.158 / 0.368); node FIM 15.8x fast sweeping.
    CHECK_ROWS="fim_|register" checks 336 cuda "$OCL" "$POCL"
    stamp "reproduce fim-t1 --scale paper --backend cpu,cuda,$OCL"
    step 560 "$B" reproduce fim-t1 --scale paper --backend "cpu,cuda,$OCL" --out "$OUT/fim-t1" 2>&1 | tail -12
    cut -d'|' -f2-4,6-8 "$OUT/fim-t1/fim-t1.md" | grep -E "example|^ config" | head -30
    ;;
  i)
    # PoCL 5.0's registration miscount (parts f, g: in-kernel rows, the overlap counted a tile's
    # slice all in or all out, which rows fail changing from run to run): `check` on PoCL at seed
    # 334 three times as built, twice with the loop not unrolled (NEUROPORT_REG_UNROLL=1), twice
    # with PoCL's optimisations off (NEUROPORT_OPENCL_OPTIONS=-cl-opt-disable); the register rows.
    # Found: 47 passed in all five runs as built and unrolled 1 (the fault did not show on this
    # machine); opt off did not finish within 150 s.
    for run in "as built" "as built" "as built" "unroll 1" "unroll 1" "opt off" "opt off"; do
      case $run in "unroll 1") e=NEUROPORT_REG_UNROLL=1;; "opt off") e=NEUROPORT_OPENCL_OPTIONS=-cl-opt-disable;; *) e=NP_UNSET=1;; esac
      echo "## $run"; env "$e" timeout 150 "$B" check --backend "$POCL" --seed 334 2>&1 | grep -E "register .*(in-kernel|texture)|passed" | grep -E "FAIL|passed"
    done | tee "$OUT/pocl.txt"
    ;;
  j)
    # Reading without waves: each core takes the next member (read under a lock), inflates and
    # converts it, so no member waits for another's wave (dist/neuroport-mid: part b/c's
    # reader in waves; prev: round 23's). `bench nifti --read-only` (best of 3) with prev, mid
    # and new alternating, two rounds, on the tensor and the issue-7 DWI, and the tensor with 1,
    # 4 and 16 threads; `dti` on the issue-7 volume (its read stage), mid and new.
    # Found: tensor prev 0.164-0.204 s, mid 0.117-0.122, new 0.094-0.124; DWI 0.301-0.394 /
    # 0.194-0.265 / 0.155-0.165; 1 / 4 / 16 threads (tensor) mid 0.597 / 0.236 / 0.130, new
    # 0.491 / 0.200 / 0.102; `dti` read stage mid 209-216, new 173-191 ms, but main 462-488
    # against 537-558 (new always ran second, after mid's outputs: part k).
    MID=$PWD/dist/neuroport-mid
    issue7_volume
    fim_phantom
    for rep in 1 2; do for f in "$W/d/dti_tensor.nii.gz" "$D/dwi.nii.gz"; do for v in prev mid new; do
      bin=$B; [ $v = prev ] && bin=$PREV; [ $v = mid ] && bin=$MID
      echo "## $v ($rep) $(basename "$(dirname "$f")")/$(basename "$f")"; timeout 60 "$bin" bench nifti --read-only --input "$f" 2>&1 | tail -1
    done; done; done | tee "$OUT/read.txt"
    for t in 1 4 16; do for v in mid new; do
      bin=$B; [ $v = mid ] && bin=$MID
      echo "## $v threads $t tensor"; RAYON_NUM_THREADS=$t timeout 60 "$bin" bench nifti --read-only --input "$W/d/dti_tensor.nii.gz" 2>&1 | tail -1
    done; done | tee -a "$OUT/read.txt"
    for rep in 1 2; do for v in mid new; do
      bin=$B; [ $v = mid ] && bin=$MID
      wall "dti $v ($rep)" 120 env NEUROPORT_STAGES=1 "$bin" dti --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/dti-$v/" --force
    done; done | tee "$OUT/dti.txt" | grep -oE "^dti [a-z]+ \([0-9]\)|read [0-9]+ ms|main [0-9]+ ms" | paste - - -
    for m in FA MD V1 tensor; do cmp -s "$W/dti-mid/dti_$m.nii.gz" "$W/dti-new/dti_$m.nii.gz" && echo "dti_$m: same bytes" || echo "dti_$m: DIFFER"; done
    ;;
  k)
    # Part j's `dti` runs put new always after mid, right after mid's 200 MB of outputs: here
    # mid and new in ABBA order, three times, each after `sync` and a second's pause.
    # Found: read stage mid 180-201 ms, new 140-223 (140-153 in four of six); main 474-613
    # against 431-554 ms (device start 53-206 ms in both): no regression.
    MID=$PWD/dist/neuroport-mid
    issue7_volume
    for v in mid new new mid mid new new mid mid new new mid; do
      bin=$B; [ $v = mid ] && bin=$MID
      sync; sleep 1
      wall "dti $v" 120 env NEUROPORT_STAGES=1 "$bin" dti --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/dti-$v/" --force
    done | tee "$OUT/dti.txt" | grep -oE "^dti [a-z]+|read [0-9]+ ms|devices [0-9]+ ms|fit [0-9]+ ms|host maps [0-9]+ ms|main [0-9]+ ms" | paste - - - - - -
    ;;
  l)
    # The header member inflated alone: the first refill (through `Read`, for the header) no
    # longer inflates a whole wave of voxel members, which the member tasks then only converted
    # after a barrier. `bench nifti --read-only` (best of 3), mid (part j's reader) and new
    # alternating, three rounds, on the tensor and the issue-7 DWI.
    # Found: tensor 0.099-0.127 -> 0.081-0.108 s, DWI 0.180-0.185 -> 0.149-0.154 s: kept.
    MID=$PWD/dist/neuroport-mid
    issue7_volume
    fim_phantom
    for rep in 1 2 3; do for f in "$W/d/dti_tensor.nii.gz" "$D/dwi.nii.gz"; do for v in mid new; do
      bin=$B; [ $v = mid ] && bin=$MID
      echo "## $v ($rep) $(basename "$(dirname "$f")")/$(basename "$f")"; timeout 60 "$bin" bench nifti --read-only --input "$f" 2>&1 | tail -1
    done; done; done | tee "$OUT/read.txt" | paste - - | awk '{print $2, $3, $4, $6}'
    ;;
esac
