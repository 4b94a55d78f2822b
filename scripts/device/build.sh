#!/usr/bin/env bash
# Builds the release binary that travels to the GPU machine (dist/ is git-ignored and carried).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --locked
mkdir -p dist
cp target/release/neuroport dist/neuroport
ls -l dist/neuroport
