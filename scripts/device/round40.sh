#!/usr/bin/env bash
# Round 40 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 39's).
#   a. `check` on CUDA, NVIDIA OpenCL and PoCL (the CPU reference's sampler changed).
#   b. every user command, round 39's binary against this one, files compared.
#   c. the CPU's registration cost sampling a padded copy of the moving image: the 5 mm airwc
#      pair, the 1 mm pair with --samples 20000 and at every voxel, and `bench register` at
#      three sizes, round 39's binary against this one alternating, files compared.
. "$(dirname "$0")/common.sh"
round_start
if [[ $PART == *a* ]]; then
  gpu_setup
  B=$NEW
  checks 460 cuda "$OCL" "$POCL"
fi
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
