#!/usr/bin/env bash
# The test command: installs PoCL and NVRTC if missing, then runs every test with both required.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
export NEUROPORT_REQUIRE_OPENCL=1 NEUROPORT_REQUIRE_NVRTC=1
cargo test --release --locked "$@"
