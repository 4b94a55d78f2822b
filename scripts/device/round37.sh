#!/usr/bin/env bash
# Round 37 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 36's).
#   a. register's kernels get a 32-byte spec again (round 36 had added a field they never read,
#      a suspect for NVIDIA OpenCL's texture SAD being 1-2 % slower), and check's texture rows
#      now run on a holed moving image too: `check` on CUDA, NVIDIA OpenCL and PoCL at two
#      seeds; `bench register` alternating with round 36's binary, two rounds; `register` 12 dof
#      NCC on two 1 mm brains, alternating, files compared.
#   b. the merged binary (voxel-coordinate helper, the tensor warning's wording, the helper's
#      bug fixes, --max-steps' limit and sparse tally chunks) against round 36's: `check` on
#      the three backends; every user command on user-sized inputs, files compared.
. "$(dirname "$0")/common.sh"
round_start
if [[ $PART == *a* ]]; then
  gpu_setup
  B=$NEW
  checks 437 cuda "$OCL" "$POCL"
  CHECK_ROWS="register .* texture" checks 438 cuda "$OCL"
  for rep in 1 2; do for v in prev new; do
    B=$NEW; [ $v = prev ] && B=$OLD
    breg "$v ($rep)" cuda; breg "$v ($rep)" "$OCL"
  done; done
  B=$NEW
  t1_pair "$W/b"
  reg_pairs 2 prev "$OLD" "" new "$NEW" ""
fi
if [[ $PART == *b* ]]; then
  gpu_setup
  B=$NEW
  checks 439 cuda "$OCL" "$POCL"
  user_commands "$OLD" "$NEW" same-users.txt
  summary users.txt "main"
fi
