#!/usr/bin/env python3
"""nii_rms.py A B: for two float32 NIfTI files (.nii or .nii.gz) on one grid, the mean absolute
and root-mean-square difference over the values that are not 0 in both (a mask's outside) and
finite in both, and how many. Standard library only (the device hosts have no numpy)."""
import math
import sys

from nii_diff import load

a, b = load(sys.argv[1]), load(sys.argv[2])
if len(a) != len(b):
    sys.exit(f"{len(a)} against {len(b)} values")
n, s1, s2 = 0, 0.0, 0.0
for x, y in zip(a, b):
    if (x == 0.0 and y == 0.0) or not (math.isfinite(x) and math.isfinite(y)):
        continue
    n += 1
    s1 += abs(x - y)
    s2 += (x - y) ** 2
print(f"{n} values: mean |difference| {s1 / max(n, 1):.4g}, rms {math.sqrt(s2 / max(n, 1)):.4g}")
