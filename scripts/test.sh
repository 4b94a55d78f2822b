#!/usr/bin/env bash
# The test command: installs PoCL and NVRTC if missing, then runs every test with both required.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo >/dev/null 2>&1; then
  [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "test: cargo not found. Install Rust first: curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh" >&2
  exit 1
fi
. scripts/setup.sh
export NEUROPORT_REQUIRE_OPENCL=1 NEUROPORT_REQUIRE_NVRTC=1 NEUROPORT_REQUIRE_NIBABEL=1
cargo test --release --locked "$@"
# The lints, after the tests (Cargo.toml's [lints.clippy] says which are allowed and why).
if [ $# -eq 0 ]; then
  if cargo clippy --version >/dev/null 2>&1; then
    cargo clippy --release --locked --all-targets -- -D warnings
  else
    echo "test: cargo clippy is not installed; lints not checked" >&2
  fi
fi
