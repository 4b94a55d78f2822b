# Sourced by the device scripts: repo root, the binary ($NEUROPORT, else ./dist/neuroport), the
# output folder ($OUT), NVRTC on the library path, and the step helpers (each step under its
# own time limit, so one slow step cannot take the others' time).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ -z "${NEUROPORT:-}" ]; then
  # dist/ is what the device tool carries; a binary beside the repo or a local build otherwise.
  for NEUROPORT in "$PWD/dist/neuroport" "$PWD/neuroport" "$PWD/target/release/neuroport"; do
    [ -x "$NEUROPORT" ] && break
  done
fi
export NEUROPORT
B=$NEUROPORT
OUT=${OUT:-$PWD/device-out}
mkdir -p "$OUT"
for d in /usr/local/cuda/lib64 /usr/local/cuda-13.0/lib64; do
  [ -e "$d/libnvrtc.so.13" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
t0=$SECONDS
stamp() { echo "=== $1 ($((SECONDS - t0)) s)"; }
step() { local lim=$1; shift; timeout "$lim" "$@" || echo "(step ended with status $?)"; }
# The device tool brings back only a few files: at exit everything under $OUT goes into one
# archive (NP_NO_PACK=1 keeps the files as they are, for local runs).
pack() {
  [ "${NP_NO_PACK:-0}" = 1 ] && return
  local a; a=$(mktemp /tmp/np-out-XXXXXX.tgz)
  tar czf "$a" -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv "$a" "$OUT/results.tgz"
}
trap pack EXIT
