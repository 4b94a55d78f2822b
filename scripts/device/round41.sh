#!/usr/bin/env bash
# Round 41 (one lent host). Binaries: dist/neuroport (new), dist/neuroport-prev (round 40's).
#   a. `check` on CUDA, NVIDIA OpenCL and PoCL (check's report and the inputs' rules changed).
#   b. every user command, round 40's binary against this one, files compared (the progress
#      lines and the summaries changed, not the outputs).
#   d. the README's main job (`reproduce all --scale quick`) with the GPUs present, for its
#      plots (new colours, legends, titles) with CUDA and OpenCL rows in them.
. "$(dirname "$0")/common.sh"
round_start
if [[ $PART == *a* ]]; then
  gpu_setup
  B=$NEW
  checks 470 cuda "$OCL" "$POCL"
fi
if [[ $PART == *b* ]]; then
  gpu_setup
  B=$NEW
  user_commands "$OLD" "$NEW" same-users.txt
  summary users.txt "main"
fi
if [[ $PART == *d* ]]; then
  gpu_setup
  stamp "reproduce all --scale quick"
  step 300 "$NEW" reproduce all --scale quick --out "$OUT/repro-quick" 2>&1 | tail -5
  stamp "done"
fi
