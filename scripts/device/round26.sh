#!/usr/bin/env bash
# Round 26 on the lent GPU (docs/performance.md, the GPU host layer's "Round 26"; results in
# docs/results/h200-2026-11-27-round26/{a,b,c} (an H200 came) and h100-2026-11-27-round26/{d,e}).
# Binaries: dist/neuroport (new, the commit of each part), dist/neuroport-prev (round 25's final
# build).
#   PART=a (~6 min): the whole command's wall beyond its work. The command now ends by _exit,
#     leaving the devices to the kernel, instead of joining the CUDA context's release (60-80
#     ms) and running the drivers' handlers at exit (~80 ms after main in round 25's stages).
#     `fim --target` (402 K-voxel phantom, CUDA, exact), `register` 12 dof NCC (two 1 mm
#     brains, CUDA) and `dti` (the phantom's 256x256x100 DWI, CUDA), each with prev, new,
#     new with NEUROPORT_EXIT=release (as before), new with glibc's huge pages for its large
#     allocations (GLIBC_TUNABLES=glibc.malloc.hugetlb=1) and new with discovery on first use
#     (NEUROPORT_DISCOVERY=late: does the discovery thread slow the reading?), three rounds
#     alternating; outputs compared byte for byte; `bench nifti --read-only` on the T1 and the
#     tensor with new, huge pages and late discovery, two rounds.
#     Found (an H200 came): no gain from _exit: main ended ~70 ms sooner, the process ~40 ms
#     later (fim --target 0.82-0.85 s prev, 0.87-0.90 new, 0.83-0.89 new with the release);
#     huge pages within the noise; reading 20-25 % faster without discovery beside it, the
#     command ~0.15 s slower. `dti` on the 256x256x100 DWI: 1.5-1.8 s of process wall for 0.7 ms
#     of kernel, 0.6-0.9 s of it the host's maps (V2, V3, L2, L3, MO, RGB; rows transposed on
#     one core). _exit reverted.
#   PART=b (~6 min): the dti command's host maps written plane by plane in parallel (no rows,
#     no transposes): `dti` on the phantom's 256x256x100 DWI, prev / new alternating, three
#     rounds, outputs compared byte for byte; then every user command with its stages on the
#     issue-7 volume (96x112x72, 134 volumes; CUDA, new): dti, bedpost, probtrack on its
#     samples, track geodesic, to find the next host stage.
#     Found: dti 1.46-1.61 -> 0.91-1.12 s of process wall (host maps 671-849 -> 222-239 ms), the
#     same bytes. Issue-7 volume: bedpost's write 961 ms beside 586 ms of kernel (its 1.2 s
#     "sampler init" was NVRTC, the PTX cache cold); probtrack 0.96 s of main for 0.31 s of its
#     own wall, unstaged; track geodesic's 3.2 s is its 305 M-step .tck written.
#   PART=c (~6 min): bedpost's files compressed side by side (a stick's five, then the twelve
#     maps) instead of one after another; probtrack's reading, seeds, tracking and writing
#     staged. Issue-7 volume, CUDA, the PTX cache warmed first: bedpost prev / new alternating,
#     two rounds, outputs compared; probtrack (100 samples a seed) prev / new on new's samples,
#     two rounds, outputs compared.
#     Found: the same bytes; bedpost's write 1160-1167 -> 1115-1122 ms (its files ~0.3 s a
#     stick, so ~0.5 s is the host's preparing); probtrack's reading 597-648 ms beside 82-85 ms
#     of tracking.
#   PART=d (~6 min): as c, with bedpost's summaries read a tile of voxels at a time along the
#     samples' rows (a voxel's walk down its samples strided a cache line a value), the preparing
#     staged (merged samples, summaries), and probtrack's records made once for all-zero sticks
#     (outside bedpost's mask), its reading and records staged.
#     Found (H100): the same bytes; bedpost's write 1151-1249 -> 1038-1119 ms (summaries 235-251
#     ms, each stick's merged samples 54-77 ms); probtrack's main 790 (prev, warm) -> 697-754 ms,
#     its reading 226-269 ms and records 209-242 ms.
#   PART=e (~7 min): the final build: probtrack's records a run of 4096 at a time (50 sample
#     volumes had left cores idle in the last round). `dti` on the 256x256x100 DWI and bedpost
#     and probtrack on the issue-7 volume, prev / new alternating, outputs compared (parts b
#     and d again).
#     Found: dti 1.21-1.37 -> 0.90-0.95 s (host maps 583-633 -> 224-250 ms); bedpost 2.14-2.18
#     -> 2.03-2.11 s (write 1012-1014 -> 857-920 ms); probtrack 0.83 -> 0.71-0.72 s (records
#     184-191 ms); the same bytes (bedpost 21 files, probtrack 3).
#   PART=f (~6 min): the final build: the mask's voxels by one shared scan (volume::masks::inside)
#     for FIM, bedpost and probtrack, and track geodesic --downsample. `fim --target` maps prev
#     against new byte for byte (CUDA, NVIDIA OpenCL, both local solvers); `check` at seed 360
#     on CUDA, NVIDIA OpenCL and PoCL 5.0; track geodesic --dirs 8 on the issue-7 volume with
#     every point and with --downsample 5 (process wall, file sizes); the driver's persistence
#     mode (CUDA's start in every command).
#     Found: maps the same bytes (all 16); check 49 / 48 / 47 rows pass; .tck 3.67 -> 0.74 GB,
#     trace and write 4.9-5.3 -> 1.4-1.6 s, process wall 5.6-6.9 -> 2.0-2.5 s; persistence on.
#   PART=g (~8 min): the round's final build. bedpost's mean_th/mean_ph from the samples a tile
#     of voxels at a time (as summarise) instead of down the merged volumes' strided columns
#     (slower here, on the small README phantom: is it faster at the issue-7 volume's size?):
#     bedpost, part e's build (dist/neuroport-e) / new alternating, two rounds, outputs compared;
#     then the README's commands with prev and new on CUDA, NVIDIA OpenCL and PoCL 5.0, every
#     output compared byte for byte.
#     Found: the tiled means slower on the H100 host too (merged samples 101-159 ms against 60-89
#     ms for part e's build; the same bytes): reverted. The README's commands: 42 files the same
#     bytes as prev on each of CUDA, NVIDIA OpenCL and PoCL 5.0.
#   PART=h (~6 min): huge pages again (part a: perhaps faster for dti, three runs): the final
#     build with and without GLIBC_TUNABLES=glibc.malloc.hugetlb=1, alternating, three rounds:
#     `dti` on the 256x256x100 DWI, bedpost and probtrack on the issue-7 volume (process wall).
#     Found: with huge pages dti 1.16-1.26 -> 1.08-1.12 s, bedpost 2.70-3.01 -> 2.44-2.65,
#     probtrack 0.90-0.95 (1.41 once) -> 0.72-0.83.
#   PART=i (~7 min): the command's allocator advises huge pages itself (src/cli/huge_pages.rs),
#     against NEUROPORT_HUGE_PAGES=0, alternating, three rounds: dti, bedpost, probtrack as in h,
#     and `fim --target` and `register` (CUDA); every output compared between the two.
#     Found: every output the same bytes; bedpost 2.31-2.36 -> 2.09-2.23 s, probtrack 0.79-0.83
#     -> 0.66-0.69, fim --target 0.81-0.86 -> 0.76-0.80, dti and register within their spread.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
OLD=$PWD/dist/neuroport-prev
# u FILE LABEL BINARY [ENV...] -- ARGS...: one command with its stages and the process's wall
# appended to $OUT/FILE.
u() {
  local f=$1 label=$2 bin=$3 env=() err; shift 3
  while [ "$1" != "--" ]; do env+=("$1"); shift; done; shift
  err=$(mktemp)
  stamp "$f $label"
  env "${env[@]}" NEUROPORT_STAGES=1 /usr/bin/time -f "process wall %e s, max RSS %M KB" timeout 120 "$bin" "$@" > /dev/null 2> "$err"
  { echo "## $label"; grep -vE '^\s*$|^level' "$err" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } >> "$OUT/$f"
  rm -f "$err"
}
VARIANTS=("prev|$OLD|" "new|$B|" "release|$B|NEUROPORT_EXIT=release" "thp|$B|GLIBC_TUNABLES=glibc.malloc.hugetlb=1" "late|$B|NEUROPORT_DISCOVERY=late")
case "$PART" in
  a)
    { uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; ldd --version | head -1; nproc; grep -i huge /proc/meminfo; } > "$OUT/host.txt" 2>&1
    fim_phantom
    t1_pair "$W/b"
    for rep in 1 2 3; do for v in "${VARIANTS[@]}"; do
      IFS='|' read -r label bin env <<< "$v"
      u fim.txt "$label ($rep)" "$bin" $env -- fim --backend cuda --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" --out "$W/f-$label" --force
      u register.txt "$label ($rep)" "$bin" $env -- register --backend cuda --fixed "$W/a/t1.nii.gz" --moving "$W/b/t1.nii.gz" --dof 12 --cost ncc --out "$W/r-$label" --force
      u dti.txt "$label ($rep)" "$bin" $env -- dti --backend cuda --dwi "$W/b/dwi.nii.gz" --bvals "$W/b/bvals" --bvecs "$W/b/bvecs" --mask "$W/b/mask.nii.gz" --out "$W/t-$label/" --force
    done; done
    for label in new release thp late; do
      for m in cost1 cost2 total pathway; do cmp -s "$W/f-prev_$m.nii.gz" "$W/f-${label}_$m.nii.gz" && echo "$label fim $m: same bytes" || echo "$label fim $m: DIFFER"; done
      for m in _warped.nii.gz _affine.txt .mat; do cmp -s "$W/r-prev$m" "$W/r-$label$m" && echo "$label register $m: same bytes" || echo "$label register $m: DIFFER"; done
      (cd "$W/t-prev" && for f in *; do cmp -s "$f" "$W/t-$label/$f" || echo "$label dti $f: DIFFER"; done; echo "$label dti: $(ls | wc -l) files compared")
    done | tee "$OUT/same.txt"
    for rep in 1 2; do for v in "${VARIANTS[@]:1}"; do
      IFS='|' read -r label bin env <<< "$v"
      [ "$label" = release ] && continue
      for f in "$W/a/t1.nii.gz" "$W/d/dti_tensor.nii.gz"; do
        { echo "## $label ($rep) $(basename "$f")"; env $env timeout 60 "$bin" bench nifti --input "$f" --read-only 2>&1 | tail -1; } >> "$OUT/read.txt"
      done
    done; done
    echo "=== summary"
    for f in fim register dti; do echo "== $f"; grep -E "^##|process wall|^stages" "$OUT/$f.txt" | sed -E 's/^stages: (.*)$/    \1/' | grep -oE "^## .*|process wall [0-9.]+ s|read[a-z ]* [0-9]+ ms|devices [0-9]+ ms|release [0-9]+ ms|main [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'; done
    cat "$OUT/read.txt" | paste - -
    ;;
  b|e)
    fim_phantom
    for rep in 1 2 3; do for v in "${VARIANTS[@]:0:2}"; do
      IFS='|' read -r label bin env <<< "$v"
      u dti.txt "$label ($rep)" "$bin" -- dti --backend cuda --dwi "$W/b/dwi.nii.gz" --bvals "$W/b/bvals" --bvecs "$W/b/bvecs" --mask "$W/b/mask.nii.gz" --out "$W/t-$label/" --force
    done; done
    (cd "$W/t-prev" && for f in *; do cmp -s "$f" "$W/t-new/$f" || echo "dti $f: DIFFER"; done; echo "dti: $(ls | wc -l) files compared") | tee "$OUT/same.txt"
    rm -rf "$W/b" "$W/d" "$W"/t-*
    if [ "$PART" = e ]; then
      grep -E "^##|process wall|^stages" "$OUT/dti.txt" | grep -oE "^## .*|process wall [0-9.]+ s|host maps [0-9]+ ms|main [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'
      PART=d NP_NO_PACK=1 bash "$0"
      exit
    fi
    issue7_volume
    u users.txt "dti" "$B" -- dti --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/i7/" --force
    u users.txt "bedpost" "$B" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp" --force
    u users.txt "probtrack" "$B" -- probtrack --backend cuda --bedpost "$W/bp" --seeds "$D/wm.nii.gz" --nsamples 100 --out "$W/ptx" --force
    u users.txt "track geodesic" "$B" -- track geodesic --backend cuda --tensor "$W/i7/dti_tensor.nii.gz" --seeds "$D/wm.nii.gz" --dirs 8 --out "$W/fibres.tck" --force
    echo "=== summary"
    grep -E "^##|process wall|^stages" "$OUT/dti.txt" | grep -oE "^## .*|process wall [0-9.]+ s|host maps [0-9]+ ms|main [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'
    cat "$OUT/users.txt"
    ;;
  f)
    nvidia-smi -q 2>/dev/null | grep -iE "persistence|driver version" | tee "$OUT/persistence.txt"
    checks 360 cuda "$OCL" "$POCL"
    fim_maps_same prev "$OLD"
    issue7_volume
    "$B" dti --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/i7/" > /dev/null 2>&1
    for rep in 1 2; do for ds in 1 5; do
      u track.txt "downsample $ds ($rep)" "$B" -- track geodesic --backend cuda --tensor "$W/i7/dti_tensor.nii.gz" --seeds "$D/wm.nii.gz" --dirs 8 --downsample $ds --out "$W/fibres-$ds.tck" --force
      ls -l "$W/fibres-$ds.tck" | awk '{print "    tck bytes", $5}' >> "$OUT/track.txt"
    done; done
    echo "=== summary"
    grep -E "^##|process wall|^stages|tck bytes" "$OUT/track.txt" | grep -oE "^## .*|process wall [0-9.]+ s|trace and write [0-9]+ ms|tck bytes [0-9]+" | paste -sd' ' | sed 's/ ## /\n## /g'
    ;;
  i)
    fim_phantom
    t1_pair "$W/b"
    V=("on|" "off|NEUROPORT_HUGE_PAGES=0")
    for rep in 1 2 3; do for v in "${V[@]}"; do
      IFS='|' read -r label env <<< "$v"
      u dti.txt "$label ($rep)" "$B" $env -- dti --backend cuda --dwi "$W/b/dwi.nii.gz" --bvals "$W/b/bvals" --bvecs "$W/b/bvecs" --mask "$W/b/mask.nii.gz" --out "$W/t-$label/" --force
      u fim.txt "$label ($rep)" "$B" $env -- fim --backend cuda --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" --out "$W/f-$label" --force
      u register.txt "$label ($rep)" "$B" $env -- register --backend cuda --fixed "$W/a/t1.nii.gz" --moving "$W/b/t1.nii.gz" --dof 12 --cost ncc --out "$W/r-$label" --force
    done; done
    { (cd "$W/t-on" && for f in *; do cmp -s "$f" "$W/t-off/$f" || echo "dti $f: DIFFER"; done; echo "dti: $(ls | wc -l) files compared")
      for m in cost1 cost2 total pathway; do cmp -s "$W/f-on_$m.nii.gz" "$W/f-off_$m.nii.gz" || echo "fim $m: DIFFER"; done; echo "fim: 4 maps compared"
      for m in _warped.nii.gz _affine.txt .mat; do cmp -s "$W/r-on$m" "$W/r-off$m" || echo "register $m: DIFFER"; done; echo "register: 3 files compared"; } | tee "$OUT/same.txt"
    rm -rf "$W/b" "$W/d" "$W/a" "$W"/t-* "$W"/f-* "$W"/r-*
    issue7_volume
    u bedpost.txt "warm-up" "$B" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp" --force
    for rep in 1 2 3; do for v in "${V[@]}"; do
      IFS='|' read -r label env <<< "$v"
      u bedpost.txt "$label ($rep)" "$B" $env -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp-$label" --force
      u probtrack.txt "$label ($rep)" "$B" $env -- probtrack --backend cuda --bedpost "$W/bp" --seeds "$D/wm.nii.gz" --nsamples 100 --out "$W/ptx-$label" --force
    done; done
    { for d in bp ptx; do (cd "$W/$d-on" && for f in *; do cmp -s "$f" "$W/$d-off/$f" || echo "$d $f: DIFFER"; done; echo "$d: $(ls | wc -l) files compared"); done; } | tee -a "$OUT/same.txt"
    echo "=== summary"
    for f in dti fim register bedpost probtrack; do echo "== $f"; grep -E "^##|process wall" "$OUT/$f.txt" | paste - - | sed -E 's/, max RSS/ RSS/'; done
    ;;
  h)
    fim_phantom
    for rep in 1 2 3; do for v in "plain|" "thp|GLIBC_TUNABLES=glibc.malloc.hugetlb=1"; do
      IFS='|' read -r label env <<< "$v"
      u dti.txt "$label ($rep)" "$B" $env -- dti --backend cuda --dwi "$W/b/dwi.nii.gz" --bvals "$W/b/bvals" --bvecs "$W/b/bvecs" --mask "$W/b/mask.nii.gz" --out "$W/t-$label/" --force
    done; done
    rm -rf "$W/b" "$W/d" "$W"/t-*
    issue7_volume
    u bedpost.txt "warm-up" "$B" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp" --force
    for rep in 1 2 3; do for v in "plain|" "thp|GLIBC_TUNABLES=glibc.malloc.hugetlb=1"; do
      IFS='|' read -r label env <<< "$v"
      u bedpost.txt "$label ($rep)" "$B" $env -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp-$label" --force
      u probtrack.txt "$label ($rep)" "$B" $env -- probtrack --backend cuda --bedpost "$W/bp" --seeds "$D/wm.nii.gz" --nsamples 100 --out "$W/ptx-$label" --force
    done; done
    echo "=== summary"
    for f in dti bedpost probtrack; do echo "== $f"; grep -E "^##|process wall" "$OUT/$f.txt" | paste - - | sed -E 's/, max RSS.*//'; done
    ;;
  g)
    issue7_volume
    u bedpost.txt "warm-up" "$B" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp-w" --force
    for rep in 1 2; do for v in "e|$PWD/dist/neuroport-e" "new|$B"; do
      IFS='|' read -r label bin <<< "$v"
      u bedpost.txt "$label ($rep)" "$bin" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp-$label" --force
    done; done
    (cd "$W/bp-e" && for f in *; do cmp -s "$f" "$W/bp-new/$f" || echo "bp $f: DIFFER"; done; echo "bp: $(ls | wc -l) files compared") | tee "$OUT/same-bedpost.txt"
    grep -E "^##|^stages" "$OUT/bedpost.txt" | grep -oE "^## .*|(merged samples|summaries|write) [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'
    rm -rf "$W/bp-"*
    readme_compare "$OLD"
    ;;
  c|d)
    issue7_volume
    u bedpost.txt "warm-up" "$B" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp-w" --force
    for rep in 1 2; do for v in "${VARIANTS[@]:0:2}"; do
      IFS='|' read -r label bin env <<< "$v"
      u bedpost.txt "$label ($rep)" "$bin" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp-$label" --force
    done; done
    for rep in 1 2; do for v in "${VARIANTS[@]:0:2}"; do
      IFS='|' read -r label bin env <<< "$v"
      u probtrack.txt "$label ($rep)" "$bin" -- probtrack --backend cuda --bedpost "$W/bp-new" --seeds "$D/wm.nii.gz" --nsamples 100 --out "$W/ptx-$label" --force
    done; done
    for d in bp ptx; do (cd "$W/$d-prev" && for f in *; do cmp -s "$f" "$W/$d-new/$f" || echo "$d $f: DIFFER"; done; echo "$d: $(ls | wc -l) files compared"); done | tee "$OUT/same.txt"
    echo "=== summary"
    for f in bedpost probtrack; do grep -E "^##|process wall|^stages" "$OUT/$f.txt" | grep -oE "^## .*|process wall [0-9.]+ s|(read|read samples|records|write|track|seeds|fit and sample|merged samples|summaries|release) [0-9]+ ms|main [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'; done
    ;;
esac
