#!/usr/bin/env bash
# Installs what the tests need on a Debian or Ubuntu machine: a C linker for cargo, PoCL (an
# OpenCL runtime on the CPU) with the ICD loader libOpenCL.so.1, and NVRTC 13.0.x from PyPI (to
# compile the CUDA kernels to PTX; no GPU or driver needed). Idempotent. Source it to get
# LD_LIBRARY_PATH set:  . scripts/setup.sh
set -u
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
APT_UPDATED=""
apt_install() {
  command -v apt-get >/dev/null 2>&1 || return 1
  if [ -z "$APT_UPDATED" ]; then $SUDO apt-get update -qq >/dev/null && APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}
if ! command -v cc >/dev/null 2>&1; then
  apt_install gcc libc6-dev || echo "setup: no C compiler/linker (cc) and could not install gcc; cargo cannot link" >&2
fi
have_loader() { ldconfig -p 2>/dev/null | grep -q 'libOpenCL\.so\.1'; }
have_pocl() { [ -e /etc/OpenCL/vendors/pocl.icd ] || ldconfig -p 2>/dev/null | grep -q libpocl; }
if ! have_loader || ! have_pocl; then
  apt_install pocl-opencl-icd ocl-icd-libopencl1 || echo "setup: could not install PoCL; OpenCL tests will fail" >&2
fi

# NVRTC: wherever Python already has it, else pip-installed into a private folder (--target
# works beside Debian's externally managed system Python).
PY=${PYTHON:-python3}
NVRTC_HOME=${NEUROPORT_NVRTC_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/neuroport/nvrtc}
nvrtc_dir() {
  local d
  for d in "$NVRTC_HOME/nvidia/cu13/lib" $($PY - <<'PY' 2>/dev/null
import importlib.util, os
s = importlib.util.find_spec("nvidia")
if s and s.submodule_search_locations:
    for p in s.submodule_search_locations:
        print(os.path.join(p, "cu13", "lib"))
PY
); do
    if [ -e "$d/libnvrtc.so.13" ]; then echo "$d"; return; fi
  done
}
NVRTC_DIR=$(nvrtc_dir)
if [ -z "$NVRTC_DIR" ]; then
  command -v "$PY" >/dev/null 2>&1 || apt_install python3 || true
  "$PY" -m pip --version >/dev/null 2>&1 || apt_install python3-pip || true
  # 13.0.x only: PTX from a newer NVRTC does not load on the GPU machines' 580 driver.
  "$PY" -m pip install -q --no-deps --target "$NVRTC_HOME" nvidia-cuda-nvrtc==13.0.88 >/dev/null 2>&1 \
    || echo "setup: could not install NVRTC (pip install nvidia-cuda-nvrtc==13.0.88); CUDA compile tests will fail" >&2
  NVRTC_DIR=$(nvrtc_dir)
fi
if [ -n "$NVRTC_DIR" ]; then
  export LD_LIBRARY_PATH="$NVRTC_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

# nibabel (with numpy), to check in tests that what neuroport writes (multi-member .nii.gz) is
# read by the Python ecosystem: pip-installed into a private folder named by NEUROPORT_NIBABEL.
NIBABEL_HOME=${NEUROPORT_NIBABEL_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/neuroport/nibabel}
if ! PYTHONPATH="$NIBABEL_HOME" "$PY" -c 'import nibabel' >/dev/null 2>&1; then
  command -v "$PY" >/dev/null 2>&1 || apt_install python3 || true
  "$PY" -m pip --version >/dev/null 2>&1 || apt_install python3-pip || true
  "$PY" -m pip install -q --target "$NIBABEL_HOME" nibabel >/dev/null 2>&1 \
    || echo "setup: could not install nibabel (pip install nibabel); the nibabel read-back test will be skipped" >&2
fi
if PYTHONPATH="$NIBABEL_HOME" "$PY" -c 'import nibabel' >/dev/null 2>&1; then
  export NEUROPORT_NIBABEL="$NIBABEL_HOME"
fi
