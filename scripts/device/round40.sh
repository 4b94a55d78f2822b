#!/usr/bin/env bash
# Round 40 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 39's).
#   a. `check` on CUDA, NVIDIA OpenCL and PoCL (the CPU reference's sampler changed).
#   b. every user command, round 39's binary against this one, files compared.
#   c. the CPU's registration cost sampling a padded copy of the moving image: the 5 mm airwc
#      pair, the 1 mm pair with --samples 20000 and at every voxel, and `bench register` at
#      three sizes, round 39's binary against this one alternating, files compared.
. "$(dirname "$0")/common.sh"
round_start
# cpu_reg LABEL BINARY FIXED MOVING PREFIX [ARGS...]: `register --backend cpu` 12 dof NCC, its
# level lines, summary and process wall appended to $OUT/register-cpu.txt.
cpu_reg() {
  local label=$1 bin=$2 f=$3 m=$4 prefix=$5; shift 5
  stamp "register cpu $label"
  { echo "## $label"; /usr/bin/time -f "process wall %e s" timeout 120 "$bin" register --backend cpu --fixed "$f" --moving "$m" --dof 12 --cost ncc --out "$prefix" --force "$@" 2>&1 | grep -vE "^/|^$"; } | tee -a "$OUT/register-cpu.txt"
}
if [[ $PART == *a* ]]; then
  gpu_setup
  B=$NEW
  checks 460 cuda "$OCL" "$POCL"
fi
if [[ $PART == *c* ]]; then
  gpu_setup
  B=$NEW
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
fi
if [[ $PART == *b* ]]; then
  gpu_setup
  B=$NEW
  user_commands "$OLD" "$NEW" same-users.txt
  summary users.txt "main"
fi
