#!/usr/bin/env bash
# Round 14 on the lent H100 (docs/performance.md, registration and FIM "Round 14"; results in
# docs/results/h100-2026-11-26-round14/). Binaries: dist/neuroport (new), dist/neuroport-old
# (commit a7ff859, round 13's last).
#   PART=a (~6 min): the device released on a thread of its own while the outputs are made and
#     written (`register`, `fim`). The whole `register` on two 1 mm T1 brains (the airwc pair
#     (b): 12 dof, NCC) and the whole `fim --target` on the 256x256x100 phantom, old and new
#     alternating, two rounds, CUDA and NVIDIA OpenCL, stages, outputs compared byte for byte;
#     then `check` on PoCL (16 cores: kernels enqueued on one queue at a time), CUDA and NVIDIA
#     OpenCL at seed 171. ROUNDS=N sets the rounds of `register` (default 2).
#   PART=c (~4 min): PoCL 5.0 (this host's OpenCL on the CPU) and the registration kernels:
#     `check` on PoCL with the old binary (seed 171) and the new one (seeds 171-175; the item's
#     tile position through a volatile copy of its id, cl/register.cl), the new one on CUDA and
#     NVIDIA OpenCL; `bench register` (SAD, NCC; every sampling) old / new alternating, two
#     rounds, both APIs: what the volatile costs on a GPU.
#   PART=d (~2 min): `bench fim --example 3` now builds its kernels once per device, as fim-t1
#     does (the repeats no longer include a new queue and its page-locked staging each): the
#     binary before (dist/neuroport-prev) and after alternating, two rounds, both APIs and local
#     solvers.
#   PART=e (~3 min): what the process's exit costs after a command: `register` (the 1 mm pair)
#     and `fim --target` (fim_phantom), NEUROPORT_FAST_EXIT=1 (output flushed, then _exit: no
#     atexit handlers, the drivers' included) against a normal exit, alternating, three rounds
#     of register and two of fim, CUDA and NVIDIA OpenCL; outputs compared. (The switch was
#     temporary, in src/main.rs, and is gone: it saved nothing, docs/performance.md.)
#   PART=f (~5 min): the README's commands (common.sh `readme`) with round 13's binary and this
#     one on PoCL 5.0, CUDA and NVIDIA OpenCL: every command's exit and wall, every output
#     compared byte for byte per backend; `register` on the CPU beside them, and the affines
#     and final costs of each, so PoCL 5.0's old registration can be seen against the others.
#   PART=g (~4 min): `dti`, `bedpost` and `probtrack` release their devices on a thread of their
#     own while they write (as `register` and `fim`): the README's commands with the binary
#     before (dist/neuroport-prev) and after, alternating, two rounds, CUDA and NVIDIA OpenCL,
#     each command's wall and `main`, every output compared byte for byte.
#   PART=b (~3 min): where fim_update's time goes, by instruction: ncu (--set full, clocks
#     locked) on one update launch mid-run of example 3 on CUDA, 004's and the exact local solver;
#     the SASS with its stall samples (CSV) and the 40 instructions with the most samples.
. "$(dirname "$0")/common.sh"
gpu_setup
PART=${PART:-a}
OLD="$PWD/dist/neuroport-old"
if [ "$PART" = a ]; then
  t1_pair "$W/b"
  reg_pairs "${ROUNDS:-2}" old "$OLD" "" new "$B" ""
  fim_phantom
  fim_target_pairs old "$OLD" "" new "$B" ""
  echo "=== summary"; grep -E "^##|registration|stages|process wall" "$OUT/register.txt" "$OUT/user.txt"
  stamp "check on PoCL ($POCL)"
  step 400 "$B" check --backend "$POCL" --seed 171 > "$OUT/check-pocl.txt" 2>&1
  grep -E "FAIL|error" "$OUT/check-pocl.txt" | head; tail -n 1 "$OUT/check-pocl.txt"
  CHECK_ROWS=XXX checks 171 cuda "$OCL"
fi
if [ "$PART" = b ]; then
  NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || echo ncu)
  for loc in paper exact; do
    stamp "ncu fim_update $loc"
    step 240 "$NCU" --kernel-name regex:fim_update --launch-skip 150 --launch-count 1 --set full -f -o "$OUT/fim_update-$loc" \
      "$B" bench fim --example 3 --backend cuda --local $loc --repeats 1 > "$OUT/ncu-$loc.log" 2>&1
    tail -3 "$OUT/ncu-$loc.log"
    step 120 "$NCU" --import "$OUT/fim_update-$loc.ncu-rep" --page source --csv --print-source sass > "$OUT/sass-$loc.csv" 2> "$OUT/sass-$loc.err"
    step 60 "$NCU" --import "$OUT/fim_update-$loc.ncu-rep" --page details > "$OUT/details-$loc.txt" 2>&1
    grep -E "Duration|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Executed Ipc A|Issue Slots Busy|Block Limit Reg" "$OUT/details-$loc.txt" | head -12
    step 60 python3 - "$OUT/sass-$loc.csv" <<'EOF' | tee "$OUT/sass-top-$loc.txt"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline='')))
head = next((i for i, r in enumerate(rows) if any('Source' == c.strip() for c in r)), None)
if head is None:
    print("no header found; first rows:", rows[:3]); sys.exit()
h = [c.strip() for c in rows[head]]
print("columns:", h)
def col(name):
    return next((i for i, c in enumerate(h) if c.startswith(name)), None)
src, st, ex = col('Source'), col('Warp Stall Sampling (All'), col('Instructions Executed')
def num(r, i):
    try:
        return float(r[i].replace(',', '')) if i is not None and i < len(r) else 0.0
    except ValueError:
        return 0.0
body = [r for r in rows[head + 1:] if len(r) > max(x for x in (src, st, ex) if x is not None)]
tot = sum(num(r, st) for r in body) or 1.0
print(f"{len(body)} SASS instructions, {tot:.0f} stall samples")
for i, r in sorted(enumerate(body), key=lambda x: -num(x[1], st))[:40]:
    print(f"{i:6d} {100 * num(r, st) / tot:5.1f}% exec {num(r, ex):10.0f}  {r[src].strip()}")
EOF
  done
fi
if [ "$PART" = c ]; then
  stamp "check on PoCL ($POCL), old binary"
  step 200 "$OLD" check --backend "$POCL" --seed 171 > "$OUT/check-pocl-old.txt" 2>&1
  grep -cE "FAIL" "$OUT/check-pocl-old.txt"; tail -n 1 "$OUT/check-pocl-old.txt"
  for seed in 171 172 173 174 175; do
    stamp "check on PoCL ($POCL), seed $seed"
    step 200 "$B" check --backend "$POCL" --seed $seed > "$OUT/check-pocl-$seed.txt" 2>&1
    grep -E "FAIL|error" "$OUT/check-pocl-$seed.txt" | head; tail -n 1 "$OUT/check-pocl-$seed.txt"
  done
  CHECK_ROWS=XXX checks 171 cuda "$OCL"
  for rep in 1 2; do for be in cuda "$OCL"; do for bin in "$OLD" "$B"; do
    stamp "bench register $bin $be"
    { echo "## $([ "$bin" = "$B" ] && echo new || echo old) ($rep) $be"; timeout 100 "$bin" bench register --backend "$be" --costs sad,ncc --repeats 5 2>&1 | grep -v "bench register:" | sed 's/ (NVIDIA H100 80GB HBM3)//'; } | tee -a "$OUT/bench-register.txt"
  done; done; done
fi
if [ "$PART" = d ]; then
  F="$OUT/fim.txt" OLD="$PWD/dist/neuroport-prev"
  alternate before after
  echo "=== summary"; grep -E "^##|wall" "$F" | sed 's/ host syncs.*//' | paste - -
fi
if [ "$PART" = e ]; then
  stamp "synth two 1 mm brains"
  step 60 "$B" synth t1 --out "$W/a" > /dev/null 2>&1
  step 60 "$B" synth t1 --subject 1 --seed 2 --move -5,8,6,-7,5,-9,4,-3,5,2,-2,1 --out "$W/b" > /dev/null 2>&1
  for rep in 1 2 3; do for be in cuda "$OCL"; do
    reg exit "$B" "$be" "$W/rold-${be%%:*}-$rep"
    reg _exit "$B" "$be" "$W/rnew-${be%%:*}-$rep" NEUROPORT_FAST_EXIT=1
  done; done
  for be in cuda opencl; do for f in _warped.nii.gz _affine.txt .mat; do
    cmp -s "$W/rold-$be-1$f" "$W/rnew-$be-1$f" && echo "$be $f same" || echo "$be $f DIFFERS"
  done; done | tee "$OUT/same-register.txt"
  fim_phantom
  fim_target_pairs exit "$B" "" _exit "$B" NEUROPORT_FAST_EXIT=1
  echo "=== summary"; grep -E "^##|process wall" "$OUT/register.txt" "$OUT/user.txt" | paste - -
fi
if [ "$PART" = f ]; then
  readme_inputs
  for be in "$POCL" cuda "$OCL"; do
    stamp "README commands $be"
    readme "$OLD" "$be" "$W/r-old-${be//:/-}"; readme "$B" "$be" "$W/r-new-${be//:/-}"
  done
  for be in "$POCL" cuda "$OCL"; do
    (cd "$W/r-old-${be//:/-}" && find . -type f | sort | while read -r f; do cmp -s "$f" "$W/r-new-${be//:/-}/$f" || echo "$be: $f DIFFERS"; done; echo "$be: $(find . -type f | wc -l) files compared")
  done | tee "$OUT/same-readme.txt"
  stamp "register on the CPU"
  { echo "## $(basename "$B") cpu"; wall "register" 120 "$B" register --backend cpu --fixed "$W/a/t1.nii.gz" --moving "$W/bb/t1.nii.gz" --dof 12 --cost ncc --out "$W/reg-cpu"; } | tee -a "$OUT/readme.txt"
  { for f in "$W"/r-*/reg_affine.txt "$W/reg-cpu_affine.txt"; do echo "== $f"; cat "$f"; done; } | sed "s|$W/||" | tee "$OUT/affines.txt"
  awk '/^## /{h=$0} /^register/{match($0,/final cost [0-9.]+/); print h " | " substr($0,RSTART,RLENGTH)}' "$OUT/readme.txt" | tee "$OUT/costs.txt"
fi
if [ "$PART" = g ]; then
  readme_inputs
  PREV="$PWD/dist/neuroport-prev"
  for rep in 1 2; do for be in cuda "$OCL"; do
    stamp "README commands $be ($rep)"
    readme "$PREV" "$be" "$W/p-old-${be%%:*}-$rep"; readme "$B" "$be" "$W/p-new-${be%%:*}-$rep"
  done; done
  for be in cuda opencl; do
    (cd "$W/p-old-$be-1" && find . -type f | sort | while read -r f; do cmp -s "$f" "$W/p-new-$be-1/$f" || echo "$be: $f DIFFERS"; done; echo "$be: $(find . -type f | wc -l) files compared")
  done | tee "$OUT/same-readme.txt"
  echo "=== main per command"
  awk '/^## /{h=$0} /^[a-z]/{c=$1} /stages:/{match($0,/; main [0-9]+ ms/); print h, c, substr($0,RSTART+2,RLENGTH-2)}' "$OUT/readme.txt" | grep -E " (dti|bedpost|probtrack) "
fi
