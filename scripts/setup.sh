#!/usr/bin/env bash
# Installs what the tests need on a Debian machine: PoCL (an OpenCL runtime on the CPU) and
# NVRTC 13.0.x from PyPI (to compile the CUDA kernels to PTX). Idempotent. Source it to get
# LD_LIBRARY_PATH set:  . scripts/setup.sh
set -u
if ! ldconfig -p 2>/dev/null | grep -q libpocl && [ ! -e /etc/OpenCL/vendors/pocl.icd ]; then
  SUDO=""; [ "$(id -u)" != 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq pocl-opencl-icd ocl-icd-libopencl1 >/dev/null \
    || echo "setup: could not install PoCL; OpenCL tests will fail" >&2
fi
PY=${PYTHON:-python3}
nvrtc_dir() { $PY - <<'PY' 2>/dev/null
import importlib.util, os
s = importlib.util.find_spec("nvidia")
if s and s.submodule_search_locations:
    for p in s.submodule_search_locations:
        d = os.path.join(p, "cu13", "lib")
        if os.path.exists(os.path.join(d, "libnvrtc.so.13")):
            print(d); break
PY
}
NVRTC_DIR=$(nvrtc_dir)
if [ -z "$NVRTC_DIR" ]; then
  # 13.0.x only: PTX from a newer NVRTC does not load on the GPU machines' 580 driver.
  $PY -m pip install -q --no-deps nvidia-cuda-nvrtc==13.0.88 >/dev/null 2>&1 \
    || $PY -m pip install -q --user --no-deps nvidia-cuda-nvrtc==13.0.88 >/dev/null 2>&1 \
    || echo "setup: could not install NVRTC; CUDA compile tests will fail" >&2
  NVRTC_DIR=$(nvrtc_dir)
fi
if [ -n "$NVRTC_DIR" ]; then
  export LD_LIBRARY_PATH="$NVRTC_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
