#!/usr/bin/env python3
"""nii_diff.py A B: for two float32 NIfTI files (.nii or .nii.gz) on one grid, how many values
differ, the largest absolute difference, and the first few differing values (index, A, B).
Standard library only (the device hosts have no numpy)."""
import array
import gzip
import struct
import sys


def load(path):
    raw = (gzip.open if path.endswith(".gz") else open)(path, "rb").read()
    if struct.unpack("<h", raw[70:72])[0] != 16:
        sys.exit(f"{path}: not float32")
    off = int(struct.unpack("<f", raw[108:112])[0])
    a = array.array("f")
    a.frombytes(raw[off:])
    return a


if __name__ == "__main__":
    a, b = load(sys.argv[1]), load(sys.argv[2])
    if len(a) != len(b):
        sys.exit(f"{len(a)} against {len(b)} values")
    diff = [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y and not (x != x and y != y)]
    big = max((abs(x - y) for _, x, y in diff), default=0.0)
    print(f"{sys.argv[2]}: {len(diff)} of {len(a)} values differ, largest difference {big:.3g}")
    for i, x, y in diff[:5]:
        print(f"  value {i}: {x!r} against {y!r}")
