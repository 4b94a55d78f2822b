#!/usr/bin/env bash
# Round 38 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 37's).
#   a. register's searches in lockstep on one thread (state machines, no thread per search) and,
#      on the CPU, the whole search on a pool thread: `check` on CUDA, NVIDIA OpenCL and PoCL;
#      `register` 12 dof NCC on two 1 mm brains alternating with round 37's binary on CUDA and
#      NVIDIA OpenCL (files compared), and on the CPU's 16 cores: the 5 mm airwc pair and the
#      1 mm pair with --samples 20000. probtrack on a single-stick bedpost folder (the issue-7
#      volume's bedpost with the *2samples removed) on CUDA, NVIDIA OpenCL and the CPU, files
#      compared across devices and against the folder whose f2 samples are all 0.
#   b. every user command, round 37's binary against this one, files compared.
. "$(dirname "$0")/common.sh"
round_start
if [[ $PART == *a* ]]; then
  gpu_setup
  B=$NEW
  checks 440 cuda "$OCL" "$POCL"
  t1_pair "$W/b"
  reg_pairs 2 prev "$OLD" "" new "$NEW" ""
  issue7_volume
  stamp "bedpost on CUDA"
  step 120 "$B" bedpost --backend cuda --dwi "$D/dwi.nii.gz" --bvals "$D/bvals" --bvecs "$D/bvecs" --mask "$D/mask.nii.gz" --out "$W/bp" > /dev/null 2>&1
  mkdir -p "$W/one" "$W/zero"
  for f in "$W"/bp/*; do n=$(basename "$f"); [[ $n == *2samples* ]] || cp "$f" "$W/one/"; cp "$f" "$W/zero/"; done
  python3 - "$W/bp/merged_f2samples.nii.gz" "$W/zero/merged_f2samples.nii.gz" <<'PY'
import gzip, struct, sys
raw = gzip.open(sys.argv[1]).read()
off = int(struct.unpack('<f', raw[108:112])[0])
open(sys.argv[2][:-3], 'wb').write(raw[:off] + bytes(len(raw) - off))
PY
  rm "$W/zero/merged_f2samples.nii.gz"
  ls "$W/one" "$W/zero" | tr '\n' ' '; echo
  for be in cuda "$OCL" cpu; do
    u users.txt "probtrack single-stick $be" "$B" -- probtrack --backend "$be" --bedpost "$W/one" --seeds "$D/wm.nii.gz" --nsamples 20 --seed 5 --out "$W/pt-one-${be%%:*}"
  done
  u users.txt "probtrack f2 = 0 cuda" "$B" -- probtrack --backend cuda --bedpost "$W/zero" --seeds "$D/wm.nii.gz" --nsamples 20 --seed 5 --out "$W/pt-zero-cuda"
  { echo "single-stick cuda vs opencl: $(same_inflated "$W/pt-one-cuda" "$W/pt-one-opencl")"
    echo "single-stick cuda vs cpu: $(same_inflated "$W/pt-one-cuda" "$W/pt-one-cpu")"
    echo "single-stick vs f2 = 0 (cuda): $(same_inflated "$W/pt-one-cuda" "$W/pt-zero-cuda")"; } | tee "$OUT/same-single-stick.txt"
  grep -E "^##|waytotal|process wall|warning|error" "$OUT/users.txt" | cut -c1-220
fi
#   c. part a's CPU registrations again, each repeated (part a's repeats met the first run's
#      files: --force was missing).
if [[ $PART == *c* ]]; then
  gpu_setup
  B=$NEW
  cpu_registrations
fi
if [[ $PART == *b* ]]; then
  gpu_setup
  B=$NEW
  user_commands "$OLD" "$NEW" same-users.txt
  summary users.txt "main"
fi
