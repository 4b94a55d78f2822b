# Sourced by the device scripts: repo root, the binary ($NEUROPORT, else ./dist/neuroport), the
# output folder ($OUT), NVRTC on the library path, and the step helpers (each step under its
# own time limit, so one slow step cannot take the others' time).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ -z "${NEUROPORT:-}" ]; then
  # dist/ is what the device tool carries; a binary beside the repo or a local build otherwise.
  for NEUROPORT in "$PWD/dist/neuroport" "$PWD/neuroport" "$PWD/target/release/neuroport"; do
    [ -x "$NEUROPORT" ] && break
  done
fi
export NEUROPORT
B=$NEUROPORT
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda-13.0/lib64; do
  [ -e "$d/libnvrtc.so.13" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
t0=$SECONDS
stamp() { echo "=== $1 ($((SECONDS - t0)) s)"; }
step() { local lim=$1; shift; timeout "$lim" "$@" || echo "(step ended with status $?)"; }
# The device tool brings back only a few files: at exit everything under $OUT goes into one
# archive, volumes and tracts left out (NP_NO_PACK=1 keeps the files as they are, for local runs).
pack() {
  [ "${NP_NO_PACK:-0}" = 1 ] && return
  local a; a=$(mktemp /tmp/np-out-XXXXXX.tgz)
  tar czf "$a" --exclude="*.nii" --exclude="*.nii.gz" --exclude="*.tck" --exclude="*.trk" -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv "$a" "$OUT/results.tgz"
}
trap pack EXIT
# wall LABEL LIMIT CMD...: the command's wall time and the last line it printed to stderr (its
# run summary); with NEUROPORT_STAGES=1 the command's stages line follows, indented.
wall() {
  local label=$1 lim=$2; shift 2
  local s=$(date +%s.%N) err=$(mktemp)
  timeout "$lim" "$@" > /dev/null 2> "$err"; local rc=$?
  local stages=$(grep '^stages: ' "$err" | tail -1)
  printf '%-40s exit %d  %6.2f s wall  | %s\n' "$label" "$rc" "$(awk "BEGIN { print $(date +%s.%N) - $s }")" "$(grep -v -e '^\s*$' -e '^stages: ' "$err" | tail -1)"
  [ -n "$stages" ] && echo "    $stages"
  rm -f "$err"
  return 0
}
# issue7_volume [DIMS]: a scratch folder $W (removed on exit before $OUT is packed; PTX cache inside) holding the
# issue-7 volume in $D: sticks phantom, 96x112x72 (or DIMS) at 1.8 mm, 6 b0 + 64 directions on
# shells 1000 and 2000 (358,600 mask voxels, 134 volumes).
issue7_volume() {
  W=$(mktemp -d)
  trap 'rm -rf "$W"; pack' EXIT
  export NEUROPORT_PTX_CACHE="$W/ptx"
  D="$W/d"
  stamp "synth the issue-7 volume"
  step 60 $B synth --model sticks --dims "${1:-96,112,72}" --voxel 1.8,1.8,1.8 --b0 6 --dirs 64 --shells 1000,2000 --out "$D" > /dev/null
}
# gpu_setup: the devices listed to $OUT/devices.txt, $OCL the NVIDIA OpenCL device's spec, $POCL
# the other OpenCL device's (PoCL on the host's CPU), $W a
# scratch folder removed at exit (after packing), the PTX cache in it (cold, as a user's first run).
gpu_setup() {
  "$B" devices | tee "$OUT/devices.txt"
  OCL=$(grep -i opencl "$OUT/devices.txt" | grep -i nvidia | grep -oE 'opencl:[0-9]+:[0-9]+' | head -1)
  # PoCL lists its device by the CPU's name: the OpenCL device that is not NVIDIA's.
  POCL=$(grep '^opencl' "$OUT/devices.txt" | grep -vi nvidia | grep -oE 'opencl:[0-9]+:[0-9]+' | head -1)
  W=$(mktemp -d)
  trap 'rm -rf "$W"; pack' EXIT
  export NEUROPORT_PTX_CACHE="$W/ptx"
}
# t1_pair MOVING_DIR: two 1 mm T1 brains, the airwc pair (b): subject 0 in $W/a, and subject 1
# moved by the harness's placement in MOVING_DIR.
t1_pair() {
  stamp "synth two 1 mm brains"
  step 60 "$B" synth t1 --out "$W/a" > /dev/null 2>&1
  step 60 "$B" synth t1 --subject 1 --seed 2 --move -5,8,6,-7,5,-9,4,-3,5,2,-2,1 --out "$1" > /dev/null 2>&1
}
# register_brains FILE: two 1 mm T1 brains written into $W (t1_pair), then `neuroport register` 12 dof NCC on them, 3 runs on
# CUDA and on NVIDIA OpenCL ($OCL, from gpu_setup), each run's lines appended to FILE; the
# per-level and summary lines shown at the end.
register_brains() {
  local f=$1 rep be
  t1_pair "$W/b"
  for rep in 1 2 3; do for be in cuda "$OCL"; do
    stamp "register 12 dof NCC on $be ($rep)"
    { echo "## $be run $rep"; /usr/bin/time -f "process wall %e s, max RSS %M KB" "$B" register --backend "$be" --fixed "$W/a/t1.nii.gz" --moving "$W/b/t1.nii.gz" --dof 12 --cost ncc --out "$W/r-${be%%:*}-$rep" 2>&1 | grep -vE "^/|^$"; } >> "$f"
  done; done
  echo "=== register (user command)"; grep -E "^##|level|registration|process wall" "$f"
}
# checks SEED BACKEND...: `check --seed SEED` on each backend into $OUT/check-<spec>.txt (the
# spec's colons as dashes: cuda, opencl-1-0); shown:
# failures, the rows matching $CHECK_ROWS (a grep -E pattern; default the FIM and registration
# rows) with their notes (the indented lines below a row) and the summary line.
checks() {
  local seed=$1 be f; shift
  for be in "$@"; do
    stamp "check --backend $be"
    f="$OUT/check-${be//:/-}.txt"
    step 150 "$B" check --backend "$be" --seed "$seed" > "$f" 2>&1
    grep -E "FAIL|error" "$f" | head; awk -v re="${CHECK_ROWS:-fim_|register}" '/^[^ ]/ { show = $0 ~ re } show' "$f"; tail -n 1 "$f"
  done
}
# fim LABEL BINARY BACKEND LOCAL [ENV...]: `bench fim --example 3` (median of 3, stages on) with
# that binary, local solver and environment; its last two lines appended to $F under "## LABEL".
fim() {
  local label=$1 bin=$2 be=$3 loc=$4; shift 4
  stamp "bench fim $label $be $loc"
  { echo "## $label $be $loc"; env "$@" NEUROPORT_STAGES=1 timeout 120 "$bin" bench fim --example 3 --backend "$be" --local "$loc" --repeats 3 2>&1 | tail -2 | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$F"
}
# alternate OLD_LABEL NEW_LABEL: `fim` with $OLD and $B alternating, two rounds, on CUDA and
# NVIDIA OpenCL ($OCL), both local solvers (labels get " (round)").
alternate() {
  local rep be loc
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in paper exact; do
    fim "$1 ($rep)" "$OLD" "$be" $loc; fim "$2 ($rep)" "$B" "$be" $loc
  done; done; done
}
# cpu_fim LOCAL [BINARY [TAG]]: node FIM on every core, example 3 (one cold run), appended to
# $F under "## node FIM all cores LOCAL [TAG]".
cpu_fim() {
  local bin=${2:-$B}
  stamp "node FIM, all cores, $1${3:+, $3}"
  { echo "## node FIM all cores $1${3:+ $3}"; timeout 120 "$bin" bench fim --example 3 --backend cpu --solver fim --local "$1" --repeats 1 2>&1 | tail -1; } | tee -a "$F"
}
# sweeping: Godunov fast sweeping on one thread, example 3, to convergence (at most 200 sweeps),
# appended to $F.
sweeping() {
  stamp "fast sweeping Godunov, 1 thread"
  { echo "## fast sweeping Godunov 1 thread exact"; timeout 400 "$B" bench fim --example 3 --backend cpu --threads 1 --solver sweep --max-sweeps 200 --repeats 0 2>&1 | tail -1; } | tee -a "$F"
}
# fim_phantom: the user's `fim --target` inputs in $W: a 256x256x100 1 mm tensor phantom (synth,
# 7 volumes, no noise; tensors fitted on CUDA into $W/d) with its white matter ($W/b/wm.nii.gz)
# and two 3-voxel spheres at the ends of the white matter ($W/src.nii.gz, $W/tgt.nii.gz).
fim_phantom() {
  stamp "synth 256x256x100 at 1 mm"
  step 120 "$B" synth --out "$W/b" --dims 256,256,100 --voxel 1,1,1 --dirs 6 --b0 1 --snr inf > /dev/null
  stamp "dti on CUDA"
  step 120 "$B" dti --backend cuda --dwi "$W/b/dwi.nii.gz" --bvals "$W/b/bvals" --bvecs "$W/b/bvecs" --mask "$W/b/mask.nii.gz" --out "$W/d/" > /dev/null
  step 120 python3 scripts/device/fim_regions.py "$W/b/wm.nii.gz" "$W/src.nii.gz" "$W/tgt.nii.gz"
}
# fim_target LABEL BINARY BACKEND PREFIX [ENV...]: `neuroport fim --target` on fim_phantom's
# inputs; its summary, stages and the process's wall and peak memory appended to $OUT/user.txt.
fim_target() {
  local label=$1 bin=$2 be=$3 prefix=$4 err; shift 4; err=$(mktemp)
  stamp "fim --target $label $be"
  env "$@" NEUROPORT_STAGES=1 /usr/bin/time -f "process wall %e s, max RSS %M KB" timeout 120 "$bin" fim --backend "$be" \
    --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" \
    --out "$prefix" --force > /dev/null 2> "$err"
  { echo "## $label $be"; grep -vE '^\s*$' "$err" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$OUT/user.txt"
  rm -f "$err"
}
# fim_target_pairs A_LABEL A_BINARY A_ENV B_LABEL B_BINARY B_ENV: fim_target with A, then B
# (ENV: one VAR=value, or empty), alternating, two rounds, on CUDA and NVIDIA OpenCL ($OCL),
# into $W/old-<api> and $W/new-<api>; then the four maps of A and B compared byte for byte,
# per API, into $OUT/same.txt.
fim_target_pairs() {
  local rep be m
  for rep in 1 2; do for be in cuda "$OCL"; do
    fim_target "$1 ($rep)" "$2" "$be" "$W/old-${be%%:*}" ${3:+"$3"}
    fim_target "$4 ($rep)" "$5" "$be" "$W/new-${be%%:*}" ${6:+"$6"}
  done; done
  for be in cuda opencl; do for m in cost1 cost2 total pathway; do
    cmp -s "$W/old-${be}_$m.nii.gz" "$W/new-${be}_$m.nii.gz" && echo "$be $m: same bytes" || echo "$be $m: DIFFER"
  done; done | tee "$OUT/same.txt"
}
# checks_at SEED...: `checks` at each seed on CUDA and NVIDIA OpenCL (the FIM rows shown), each
# seed's files in $OUT/check-SEED.
checks_at() {
  local seed
  for seed in "$@"; do (OUT="$OUT/check-$seed"; mkdir -p "$OUT"; CHECK_ROWS=fim checks "$seed" cuda "$OCL"); done
}
# readme BINARY BACKEND FOLDER: the README's commands (dti, track geodesic, bedpost, probtrack, fim,
# register) on readme_inputs' data into FOLDER, each timed (wall) into $OUT/readme.txt.
readme() {
  local b=$1 be=$2 o=$3; mkdir -p "$o"
  { echo "## $(basename "$b") $be";
    NEUROPORT_STAGES=1 wall "dti" 60 "$b" dti --backend "$be" --dwi "$W/demo/dwi.nii.gz" --bvals "$W/demo/bvals" --bvecs "$W/demo/bvecs" --mask "$W/demo/mask.nii.gz" --out "$o/dti"
    NEUROPORT_STAGES=1 wall "track geodesic" 60 "$b" track geodesic --backend "$be" --tensor "$W/demo/dti_tensor.nii.gz" --seeds "$W/demo/wm.nii.gz" --dirs 32 --step 0.1 --max-steps 2000 --out "$o/fibres.tck"
    NEUROPORT_STAGES=1 wall "bedpost" 60 "$b" bedpost --backend "$be" --dwi "$W/sticks/dwi.nii.gz" --bvals "$W/sticks/bvals" --bvecs "$W/sticks/bvecs" --mask "$W/sticks/mask.nii.gz" --samples 50 --burnin 500 --thin 2 --out "$o/bedpost"
    NEUROPORT_STAGES=1 wall "probtrack" 60 "$b" probtrack --backend "$be" --bedpost "$W/sticks/bedpost" --seeds "$W/sticks/wm.nii.gz" --nsamples 50 --out "$o/ptx"
    NEUROPORT_STAGES=1 wall "fim" 60 "$b" fim --backend "$be" --tensor "$W/demo/dti_tensor.nii.gz" --mask "$W/demo/wm.nii.gz" --source "$W/demo/roi1.nii.gz" --out "$o/fim"
    NEUROPORT_STAGES=1 wall "register" 60 "$b" register --backend "$be" --fixed "$W/a/t1.nii.gz" --moving "$W/bb/t1.nii.gz" --dof 12 --cost ncc --out "$o/reg"
  } | tee -a "$OUT/readme.txt"
}
# readme_compare OLD_BINARY: the README's commands (readme) with OLD_BINARY and $B on CUDA,
# NVIDIA OpenCL ($OCL) and PoCL ($POCL), every output compared byte for byte per backend
# ($OUT/same-readme.txt), and the commands that did not exit 0.
readme_compare() {
  local old=$1 be
  readme_inputs
  for be in cuda "$OCL" "$POCL"; do
    stamp "README commands $be"
    readme "$old" "$be" "$W/r-old-${be//:/-}"; readme "$B" "$be" "$W/r-new-${be//:/-}"
  done
  for be in cuda "$OCL" "$POCL"; do
    (cd "$W/r-old-${be//:/-}" && find . -type f | sort | while read -r f; do cmp -s "$f" "$W/r-new-${be//:/-}/$f" || echo "$be: $f DIFFERS"; done; echo "$be: $(find . -type f | wc -l) files compared")
  done | tee "$OUT/same-readme.txt"
  grep -E "^##|exit [^0]" "$OUT/readme.txt"
}
# readme_inputs: the README commands' inputs in $W: synth's demo phantom with its tensor fitted on
# the CPU ($W/demo), the sticks phantom with bedpost's samples from CUDA ($W/sticks), and two 1 mm
# T1 brains ($W/a, $W/bb: the airwc pair (b)).
readme_inputs() {
  stamp "README inputs"
  step 60 "$B" synth --out "$W/demo" > /dev/null 2>&1
  step 60 "$B" dti --backend cpu --dwi "$W/demo/dwi.nii.gz" --bvals "$W/demo/bvals" --bvecs "$W/demo/bvecs" --mask "$W/demo/mask.nii.gz" --out "$W/demo/dti" > /dev/null 2>&1
  step 60 "$B" synth --model sticks --out "$W/sticks" > /dev/null 2>&1
  step 120 "$B" bedpost --backend cuda --dwi "$W/sticks/dwi.nii.gz" --bvals "$W/sticks/bvals" --bvecs "$W/sticks/bvecs" --mask "$W/sticks/mask.nii.gz" --samples 50 --burnin 500 --thin 2 --out "$W/sticks/bedpost" > /dev/null 2>&1
  t1_pair "$W/bb"
}
# reg LABEL BINARY BACKEND PREFIX [ENV...]: `neuroport register` 12 dof NCC on the 1 mm pair in
# $W/a and $W/b (the airwc pair (b)); its level lines, summary, stages and the process's wall and
# peak memory appended to $REG_LOG (default $OUT/register.txt).
reg() {
  local label=$1 bin=$2 be=$3 prefix=$4 err; shift 4; err=$(mktemp)
  stamp "register $label $be"
  env "$@" NEUROPORT_STAGES=1 /usr/bin/time -f "process wall %e s, max RSS %M KB" timeout 120 "$bin" register --backend "$be" \
    --fixed "$W/a/t1.nii.gz" --moving "$W/b/t1.nii.gz" --dof 12 --cost ncc --out "$prefix" > /dev/null 2> "$err"
  { echo "## $label $be"; grep -vE '^\s*$' "$err" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "${REG_LOG:-$OUT/register.txt}"
  rm -f "$err"
}
# reg_pairs ROUNDS A_LABEL A_BINARY A_ENV B_LABEL B_BINARY B_ENV: `reg` with A, then B (ENV: one
# VAR=value, or empty), alternating, ROUNDS rounds, on CUDA and NVIDIA OpenCL ($OCL), into
# $W/reg-a-<api>-<round> and $W/reg-b-...; then round 1's outputs of A and B compared byte for
# byte, per API, into $OUT/same-register.txt. Needs t1_pair "$W/b" first.
reg_pairs() {
  local rep be f
  for rep in $(seq 1 "$1"); do for be in cuda "$OCL"; do
    reg "$2" "$3" "$be" "$W/reg-a-${be%%:*}-$rep" ${4:+"$4"}
    reg "$5" "$6" "$be" "$W/reg-b-${be%%:*}-$rep" ${7:+"$7"}
  done; done
  for be in cuda opencl; do for f in _warped.nii.gz _affine.txt .mat; do
    cmp -s "$W/reg-a-$be-1$f" "$W/reg-b-$be-1$f" && echo "$be $f same" || echo "$be $f DIFFERS"
  done; done | tee "$OUT/same-register.txt"
}
# register_against_prev: `bench register` with $OLD and $NEW alternating on CUDA and $OCL, two
# rounds; then `register` on two 1 mm brains with both, files compared (reg_pairs). B ends $NEW.
register_against_prev() {
  local rep v
  for rep in 1 2; do for v in prev new; do
    B=$NEW; [ $v = prev ] && B=$OLD
    breg "$v ($rep)" cuda; breg "$v ($rep)" "$OCL"
  done; done
  B=$NEW
  t1_pair "$W/b"
  reg_pairs 2 prev "$OLD" "" new "$NEW" ""
}
# breg LABEL BACKEND [ENV...]: `bench register` (${BREG_COSTS:-sad,ncc}) into $OUT/bench.txt.
breg() {
  local label=$1 be=$2; shift 2
  stamp "bench register $label $be"
  { echo "## $label $be"; env "$@" timeout 150 "$B" bench register --backend "$be" --costs "${BREG_COSTS:-sad,ncc}" --repeats 5 ${BENCH_ARGS:-} 2>&1 | grep "ms/eval" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$OUT/bench.txt"
}
# ncu_fim_run TAG BINARY LOCAL [ENV...]: ncu's time, warp instructions and registers per FIM
# kernel over one solve of example 3 on CUDA with that binary, local solver and environment,
# into $OUT/ncu-TAG.csv, summed per kernel.
ncu_fim_run() {
  local tag=$1 bin=$2 loc=$3; shift 3
  local NCU; NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
  stamp "ncu per kernel $tag $*"
  env "$@" timeout 200 "$NCU" --metrics gpu__time_duration.sum,smsp__inst_executed.sum,launch__registers_per_thread -k "regex:^fim_" --csv "$bin" bench fim --example 3 --backend cuda --local "$loc" --repeats 0 > "$OUT/ncu-$tag.csv" 2> "$OUT/ncu-$tag.err" || echo "(ncu ended with status $?)"
  python3 - "$OUT/ncu-$tag.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; k = h.index("Kernel Name"); m = h.index("Metric Name"); val = h.index("Metric Value"); i = h.index("ID")
t = collections.defaultdict(float); n = collections.defaultdict(set); ins = collections.defaultdict(float); reg = collections.defaultdict(float)
for r in rows[1:]:
    v = float(r[val].replace(",", ""))
    n[r[k]].add(r[i])
    if r[m] == "gpu__time_duration.sum": t[r[k]] += v
    if r[m] == "smsp__inst_executed.sum": ins[r[k]] += v
    if r[m] == "launch__registers_per_thread": reg[r[k]] = max(reg[r[k]], v)
for name in sorted(t):
    print(f"{name:16s} launches {len(n[name]):5d}  time {t[name]/1e6:8.3f} ms  warp instructions {ins[name]/1e9:7.3f} G  registers {reg[name]:.0f}")
PY
}
# fimi LABEL BINARY BACKEND LOCAL INNER [ENV...]: `bench fim --example 3 --inner INNER` (median
# of 3, stages on), its last two lines appended to $F under "## LABEL".
fimi() {
  local label=$1 bin=$2 be=$3 loc=$4 inner=$5; shift 5
  stamp "bench fim $label $be $loc inner $inner"
  { echo "## $label $be $loc inner $inner"; env "$@" NEUROPORT_STAGES=1 timeout 120 "$bin" bench fim --example 3 --backend "$be" --local "$loc" --inner "$inner" --repeats 3 2>&1 | tail -2 | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$F"
}
# fim_rounds LOCALS "LABEL BINARY [VAR=value]"...: `fimi` (inner 0) with each labelled binary in
# turn, two rounds, on CUDA and NVIDIA OpenCL ($OCL), for each local solver in LOCALS ("paper",
# "paper exact"); labels get " (round)".
fim_rounds() {
  local locs=$1 rep be loc run label bin env; shift
  for rep in 1 2; do for be in cuda "$OCL"; do for loc in $locs; do for run in "$@"; do
    read -r label bin env <<< "$run"
    fimi "$label ($rep)" "$bin" "$be" "$loc" 0 ${env:+"$env"}
  done; done; done; done
}
# fim_against LABEL BINARY SEED [exact]: `check` (FIM rows) at SEED on CUDA, NVIDIA OpenCL and PoCL
# 5.0; `bench fim --example 3` with BINARY (as LABEL) and new alternating, 004's solver, two
# rounds, CUDA and NVIDIA OpenCL (with `exact`, the exact solver once too); ncu per kernel (new).
fim_against() {
  local label=$1 old=$2 seed=$3 rep be
  CHECK_ROWS=fim_ checks "$seed" cuda "$OCL" "$POCL"
  F="$OUT/fim.txt"
  for rep in 1 2; do for be in cuda "$OCL"; do
    fimi "$label ($rep)" "$old" $be paper 0
    fimi "new ($rep)" "$B" $be paper 0
  done; done > /dev/null
  if [ "${4:-}" = exact ]; then
    for be in cuda "$OCL"; do fimi "$label" "$old" $be exact 0; fimi "new" "$B" $be exact 0; done > /dev/null
  fi
  fim_summary
  ncu_fim_run paper "$B" paper
}
# target_same: `fim --target` (exact) on fim_phantom's inputs with prev ($PREV) and new alternating, two
# rounds on CUDA, its iterations stage; the four maps compared byte for byte ($OUT/same.txt).
target_same() {
  local rep m
  fim_phantom
  for rep in 1 2; do
    fim_target "prev ($rep)" "$PREV" cuda "$W/old-cuda"
    fim_target "new ($rep)" "$B" cuda "$W/new-cuda"
  done > /dev/null
  grep -E "^##|stages" "$OUT/user.txt" | sed -E 's/stages:.*(fim iterations [0-9]+ ms).*/\1/' | paste - -
  for m in cost1 cost2 total pathway; do cmp -s "$W/old-cuda_$m.nii.gz" "$W/new-cuda_$m.nii.gz" && echo "cuda $m: same bytes" || echo "cuda $m: DIFFER"; done | tee "$OUT/same.txt"
}
fim_summary() { echo "=== summary"; grep -E "^##|wall" "$F" | sed -e 's/ host syncs.*//' -e 's/active blocks per iteration/active/' | paste - -; }
# maps_against LABEL BINARY: `fim --target` on fim_phantom's inputs with BINARY and new, both local
# solvers, CUDA and NVIDIA OpenCL; the four maps compared byte for byte and u1 by value
# (fim_compare.py, BINARY's as the reference), into $OUT/maps-LABEL.txt.
maps_against() {
  local label=$1 old=$2 be loc v bin m
  for be in cuda "$OCL"; do for loc in exact paper; do
    for v in "$label" new; do
      bin=$B; [ "$v" = "$label" ] && bin=$old
      { echo "## $v $be $loc"; timeout 120 "$bin" fim --backend "$be" --local $loc --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" \
        --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" --out "$W/$v-${be%%:*}-$loc" --force 2>&1 >/dev/null | grep -E "gamma" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } >> "$OUT/maps-$label.txt"
    done
    for m in cost1 cost2 total pathway; do cmp -s "$W/$label-${be%%:*}-${loc}_$m.nii.gz" "$W/new-${be%%:*}-${loc}_$m.nii.gz" && echo "$be $loc $m: same bytes" || echo "$be $loc $m: differ"; done
    python3 scripts/device/fim_compare.py "$W/$label-${be%%:*}-${loc}_cost1.nii.gz" "$W/new-${be%%:*}-${loc}_cost1.nii.gz" | sed "s|$W/||"
  done; done | tee -a "$OUT/maps-$label.txt"
  grep -E "gamma" "$OUT/maps-$label.txt" | cut -c1-160
}
# fim_maps_same LABEL BINARY: fim_phantom's inputs made, then maps_against.
fim_maps_same() {
  fim_phantom
  maps_against "$@"
}
# same_files A B: "N of M" files of folder A that have the same bytes in folder B.
same_files() {
  local same=0 f
  for f in "$1"/*; do cmp -s "$f" "$2/$(basename "$f")" && same=$((same + 1)); done
  echo "$same of $(ls "$1" | wc -l)"
}
# u FILE LABEL BIN -- ARGS...: (rounds 31 on) one command with stages on; its summary, stages, process wall and
# peak memory appended to $OUT/FILE.
u() {
  local f=$1 label=$2 bin=$3 err; shift 4; err=$(mktemp)
  stamp "$label"
  NEUROPORT_STAGES=1 /usr/bin/time -f "process wall %e s, max RSS %M KB" timeout 120 "$bin" "$@" > /dev/null 2> "$err"
  { echo "## $label"; grep -vE '^\s*$' "$err" | sed 's/ (NVIDIA H100 80GB HBM3)//' | tail -3; } >> "$OUT/$f"
  rm -f "$err"
}
# same_inflated A B: "N of M" files of folder A whose contents (inflated where .gz) equal B's.
same_inflated() {
  local same=0 f b
  for f in "$1"/*; do
    b="$2/$(basename "$f")"
    if [[ $f == *.gz ]]; then cmp -s <(gzip -dc "$f") <(gzip -dc "$b"); else cmp -s "$f" "$b"; fi && same=$((same + 1)) && continue
    [[ $f == *.nii.gz ]] && python3 scripts/device/nii_diff.py "$f" "$b" >&2
  done
  echo "$same of $(ls "$1" | wc -l)"
}
# user_commands OLD NEW SAME_FILE: (rounds 31 on) every user command on user-sized inputs, OLD's
# binary and NEW's alternating, two rounds, each into $OUT/users.txt (`u`): `dti` on the
# 256x256x100 DWI, `bedpost`, `probtrack` (on each binary's own samples), `track geodesic --dirs 8
# --downsample 5` on the issue-7 volume, `fim --target` on the 402 K-voxel phantom, `register` 12
# dof NCC on two 1 mm brains (CUDA); the outputs compared inflated into $OUT/SAME_FILE.
user_commands() {
  local OLD=$1 NEW=$2 rep v bin d
  issue7_volume
  fim_phantom
  t1_pair "$W/b2"
  "$B" dti --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/i7/" > /dev/null 2>&1
  for rep in 1 2; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    u users.txt "dti 256x256x100 $v ($rep)" "$bin" -- dti --backend cuda --dwi "$W/b/dwi.nii.gz" --bvals "$W/b/bvals" --bvecs "$W/b/bvecs" --mask "$W/b/mask.nii.gz" --out "$W/ub-dti-$v/" --force
    u users.txt "bedpost $v ($rep)" "$bin" -- bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/ub-bp-$v" --force
    u users.txt "probtrack $v ($rep)" "$bin" -- probtrack --backend cuda --bedpost "$W/ub-bp-$v" --seeds "$D/wm.nii.gz" --nsamples 100 --out "$W/ub-ptx-$v" --force
    mkdir -p "$W/ub-trk-$v" "$W/ub-fim-$v" "$W/ub-reg-$v"
    u users.txt "track geodesic $v ($rep)" "$bin" -- track geodesic --backend cuda --tensor "$W/i7/dti_tensor.nii.gz" --seeds "$D/wm.nii.gz" --dirs 8 --downsample 5 --out "$W/ub-trk-$v/fibres.tck" --force
    u users.txt "fim --target $v ($rep)" "$bin" -- fim --backend cuda --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" --out "$W/ub-fim-$v/f" --force
    u users.txt "register $v ($rep)" "$bin" -- register --backend cuda --fixed "$W/a/t1.nii.gz" --moving "$W/b2/t1.nii.gz" --dof 12 --cost ncc --out "$W/ub-reg-$v/r" --force
  done; done
  for d in dti bp ptx trk fim reg; do echo "$d: $(same_inflated "$W/ub-$d-prev" "$W/ub-$d-new")"; done | tee "$OUT/$3"
}
# summary FILE STAGES: each run that `u` recorded in $OUT/FILE on a line of its own: its label,
# process wall (and peak memory), and the figures of the stages named by STAGES (an ERE
# alternation, e.g. "write|release").
summary() {
  grep -E "^##|process wall|^stages" "$OUT/$1" | grep -oE "^## .*|process wall [0-9.]+ s(, max RSS [0-9]+ KB)?|($2) [0-9]+ ms" | paste -sd' ' | sed 's/ ## /\n## /g'
}
# round_start: (rounds 30 on) the script's output also into $OUT/log.txt, NEW and OLD the new and
# the previous round's binaries in dist/, PART (default a), and the GPU and CPU named in the log.
round_start() {
  exec > >(tee -a "$OUT/log.txt") 2>&1
  NEW=$PWD/dist/neuroport
  OLD=$PWD/dist/neuroport-prev
  PART=${PART:-a}
  nvidia-smi -L
  lscpu | grep -E "^(CPU\(s\)|Thread|Core|Socket|Model name)"
}
# cpu_reg LABEL BINARY FIXED MOVING PREFIX [ARGS...]: `register --backend cpu` 12 dof NCC, its
# level lines, summary and process wall appended to $OUT/register-cpu.txt.
cpu_reg() {
  local label=$1 bin=$2 f=$3 m=$4 prefix=$5; shift 5
  stamp "register cpu $label"
  { echo "## $label"; /usr/bin/time -f "process wall %e s" timeout 120 "$bin" register --backend cpu --fixed "$f" --moving "$m" --dof 12 --cost ncc --out "$prefix" --force "$@" 2>&1 | grep -vE "^/|^$"; } | tee -a "$OUT/register-cpu.txt"
}
# cpu_registrations: `register --backend cpu` on the 5 mm airwc pair (three times), the 1 mm
# pair with --samples 20000 (twice) and at every voxel, $OLD and $NEW alternating, then `bench
# register --backend cpu` at three sizes; files compared (round 38 part c, round 40 part c).
cpu_registrations() {
  t1_pair "$W/b"
  stamp "synth the 5 mm airwc pair"
  step 60 "$B" synth t1 --out "$W/q0" --dims 48,52,36 --voxel 5,5,5 --seed 2011 > /dev/null 2>&1
  step 60 "$B" synth t1 --out "$W/q1" --dims 48,52,36 --voxel 5,5,5 --subject 1 --move -5,8,6,-7,5,-9,4,-3,5,2,-2,1 --seed 2012 > /dev/null 2>&1
  for rep in 1 2 3; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    cpu_reg "5 mm $v ($rep)" "$bin" "$W/q0/t1.nii.gz" "$W/q1/t1.nii.gz" "$W/cq-$v/"
  done; done
  for rep in 1 2; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    cpu_reg "1 mm --samples 20000 $v ($rep)" "$bin" "$W/a/t1.nii.gz" "$W/b/t1.nii.gz" "$W/cs-$v/" --samples 20000
  done; done
  for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    cpu_reg "1 mm every voxel $v" "$bin" "$W/a/t1.nii.gz" "$W/b/t1.nii.gz" "$W/cf-$v/"
  done
  for v in prev new; do for d in 24,26,18 48,52,36 240,256,176; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    stamp "bench register cpu $v $d"
    { echo "## $v $d"; timeout 120 "$bin" bench register --backend cpu --dims "$d" --costs ncc --evals 400 --repeats 3 2>&1 | grep "ms/eval"; } | tee -a "$OUT/bench-cpu.txt"
  done; done
  echo "5 mm cpu: $(same_inflated "$W/cq-prev" "$W/cq-new")  1 mm sampled cpu: $(same_inflated "$W/cs-prev" "$W/cs-new")  1 mm every voxel cpu: $(same_inflated "$W/cf-prev" "$W/cf-new")" | tee "$OUT/same-register-cpu.txt"
  grep -E "^##|registration|process wall" "$OUT/register-cpu.txt" | paste - - - | sed 's/cpu (16 threads[^)]*)//'
}
