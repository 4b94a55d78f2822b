#!/usr/bin/env bash
# Round 43 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 42's).
#   a. `check` on CUDA, NVIDIA OpenCL and PoCL (lints mended in register's and fim's host code;
#      dti's fit and fim's GPU loop now move a progress bar).
#   b. every user command, round 42's binary against this one, files compared (none should
#      change: the near-identity rounding of register's warp does not touch a 12-dof result).
#   c. the progress lines a log now holds: dti on the CPU (16 cores) and CUDA, fim's block FIM
#      on CUDA and NVIDIA OpenCL, fim --solver sweep; resample through an ITK text transform
#      (PART c's first run; moved to d after a parsing slip in the script's own Python).
#   d. resample through an ITK text transform and the equivalent world matrix (the same bytes
#      expected), timed.
. "$(dirname "$0")/common.sh"
round_start
if [[ $PART == *a* ]]; then
  gpu_setup
  B=$NEW
  checks 481 cuda "$OCL" "$POCL"
fi
if [[ $PART == *b* ]]; then
  gpu_setup
  B=$NEW
  user_commands "$OLD" "$NEW" same-users.txt
  summary users.txt "main"
fi
if [[ $PART == *c* ]]; then
  gpu_setup
  B=$NEW
  [ -e "$W/d/dti_tensor.nii.gz" ] || fim_phantom
  [ -e "$W/b/dwi.nii.gz" ] || fim_phantom
  for be in cpu cuda; do
    stamp "dti --backend $be, stderr to a file"
    /usr/bin/time -f "process wall %e s" timeout 120 "$NEW" dti --backend $be --dwi "$W/b/dwi.nii.gz" --bvals "$W/b/bvals" --bvecs "$W/b/bvecs" --mask "$W/b/mask.nii.gz" --out "$W/dti-$be/" --force > /dev/null 2> "$OUT/dti-$be-log.txt"
    cat "$OUT/dti-$be-log.txt"
  done
  echo "dti cpu against cuda: $(same_inflated "$W/dti-cpu" "$W/dti-cuda")"
  for be in cuda "$OCL"; do
    stamp "fim --backend $be, stderr to a file"
    /usr/bin/time -f "process wall %e s" timeout 120 "$NEW" fim --backend "$be" --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --target "$W/tgt.nii.gz" --out "$W/fim-$be/f" --force > /dev/null 2> "$OUT/fim-log.txt"
    cat "$OUT/fim-log.txt"
  done
  stamp "fim --solver sweep, stderr to a file"
  /usr/bin/time -f "process wall %e s" timeout 200 "$NEW" fim --backend cpu --solver sweep --tensor "$W/d/dti_tensor.nii.gz" --mask "$W/b/wm.nii.gz" --source "$W/src.nii.gz" --out "$W/fim-sweep/f" --force > /dev/null 2> "$OUT/fim-sweep-log.txt"
  cat "$OUT/fim-sweep-log.txt"
fi
if [[ $PART == *d* ]]; then
  gpu_setup
  B=$NEW
  stamp "resample through an ITK transform"
  t1_pair "$W/b2"
  printf '#Insight Transform File V1.0\n#Transform 0\nTransform: AffineTransform_double_3_3\nParameters: 0.99 -0.1 0.02 0.1 0.99 0.01 -0.02 0.0 1.01 3.5 -2.25 1.5\nFixedParameters: 4 -6 10\n' > "$W/itk.txt"
  for rep in 1 2; do
    wall "resample --affine ITK .txt ($rep)" 60 "$NEW" resample --ref "$W/a/t1.nii.gz" --moving "$W/b2/t1.nii.gz" --affine "$W/itk.txt" --out "$W/rs-itk.nii.gz" --force
  done
  python3 - "$W/itk.txt" "$W/itk-world.txt" <<'PY'
import sys
vals = {}
for line in open(sys.argv[1]):
    k, _, v = line.partition(':')
    if k.strip() in ('Parameters', 'FixedParameters'):
        vals[k.strip()] = [float(x) for x in v.split()]
p, c = vals['Parameters'], vals['FixedParameters']
M = [p[0:3], p[3:6], p[6:9]]; t = p[9:12]
o = [t[i] + c[i] - sum(M[i][j] * c[j] for j in range(3)) for i in range(3)]
F = [-1, -1, 1, 1]
A = [M[i] + [o[i]] for i in range(3)] + [[0, 0, 0, 1]]
with open(sys.argv[2], 'w') as f:
    for r in range(4):
        f.write(' '.join(repr(F[r] * A[r][k] * F[k]) for k in range(4)) + '\n')
PY
  "$NEW" resample --ref "$W/a/t1.nii.gz" --moving "$W/b2/t1.nii.gz" --affine "$W/itk-world.txt" --out "$W/rs-world.nii.gz" --force > /dev/null 2>&1
  cmp <(gzip -dc "$W/rs-itk.nii.gz") <(gzip -dc "$W/rs-world.nii.gz") && echo "resample through the ITK transform = through its world matrix, byte for byte"
fi
