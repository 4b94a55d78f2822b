#!/usr/bin/env bash
# Round 39 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 38's).
#   a. register's simplex evaluating ahead on GPUs' small levels, and a call of more than 8 maps
#      waited for once: `check` on CUDA, NVIDIA OpenCL and PoCL; `register` 12 dof NCC on two
#      1 mm brains alternating with round 38's binary on CUDA and NVIDIA OpenCL (files
#      compared); the new binary with evaluating ahead off (NEUROPORT_REG_AHEAD=0) against on at
#      every level (=1); the 5 mm airwc pair on both GPUs, prev against new.
#   b. every user command, round 38's binary against this one, files compared.
. "$(dirname "$0")/common.sh"
round_start
# gpu_reg LABEL BINARY BACKEND FIXED MOVING PREFIX [ENV...]: `register` 12 dof NCC, its level
# lines, summary and process wall appended to $OUT/register-5mm.txt.
gpu_reg() {
  local label=$1 bin=$2 be=$3 f=$4 m=$5 prefix=$6; shift 6
  stamp "register 5 mm $label $be"
  { echo "## $label $be"; env "$@" /usr/bin/time -f "process wall %e s" timeout 120 "$bin" register --backend "$be" --fixed "$f" --moving "$m" --dof 12 --cost ncc --out "$prefix" --force 2>&1 | grep -vE "^/|^$"; } | tee -a "$OUT/register-5mm.txt"
}
if [[ $PART == *a* ]]; then
  gpu_setup
  B=$NEW
  checks 450 cuda "$OCL" "$POCL"
  t1_pair "$W/b"
  reg_pairs 2 prev "$OLD" "" new "$NEW" ""
  cp "$OUT/same-register.txt" "$OUT/same-register-prev.txt"
  rm -f "$W"/reg-*
  REG_LOG=$OUT/register-ahead.txt reg_pairs 2 ahead-off "$NEW" NEUROPORT_REG_AHEAD=0 ahead-all "$NEW" NEUROPORT_REG_AHEAD=1
  cp "$OUT/same-register.txt" "$OUT/same-register-ahead.txt"
  cp "$OUT/same-register-prev.txt" "$OUT/same-register.txt"
  stamp "synth the 5 mm airwc pair"
  step 60 "$B" synth t1 --out "$W/q0" --dims 48,52,36 --voxel 5,5,5 --seed 2011 > /dev/null 2>&1
  step 60 "$B" synth t1 --out "$W/q1" --dims 48,52,36 --voxel 5,5,5 --subject 1 --move -5,8,6,-7,5,-9,4,-3,5,2,-2,1 --seed 2012 > /dev/null 2>&1
  for rep in 1 2; do for be in cuda "$OCL"; do for v in prev new; do
    bin=$NEW; [ $v = prev ] && bin=$OLD
    gpu_reg "$v ($rep)" "$bin" "$be" "$W/q0/t1.nii.gz" "$W/q1/t1.nii.gz" "$W/g5-$v-${be%%:*}/"
  done; done; done
  { echo "5 mm cuda: $(same_inflated "$W/g5-prev-cuda" "$W/g5-new-cuda")"; echo "5 mm opencl: $(same_inflated "$W/g5-prev-opencl" "$W/g5-new-opencl")"; } | tee "$OUT/same-register-5mm.txt"
  echo "=== 1 mm, register stage"; summary register.txt "register"
  echo "=== 1 mm, ahead off / all"; summary register-ahead.txt "register"
  grep -E "^##|level 1/" "$OUT/register.txt" | paste - - | cut -c1-200 | head -4
  echo "=== 5 mm"; grep -E "^##|registration|process wall" "$OUT/register-5mm.txt" | paste - - - | sed 's/([^)]*NVIDIA[^)]*)//'
fi
if [[ $PART == *b* ]]; then
  gpu_setup
  B=$NEW
  user_commands "$OLD" "$NEW" same-users.txt
  summary users.txt "main"
fi
