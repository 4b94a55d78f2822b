#!/usr/bin/env python3
"""How far FIM maps are from a reference map (standard library only, for the device machine):
for each float32 NIfTI after the first, over the voxels the reference reached, the largest and
median relative difference |u - ref| / ref, the largest difference relative to the largest
ref, and how many voxels lie above the reference (FIM values only decrease towards the fixed
point, so "above" is "less converged").  Usage: fim_compare.py REF.nii.gz MAP.nii.gz..."""
import math, sys
from nifti_gz import read


def load(path):
    _, _, datatype, _, values = read(path)
    if datatype != 16:
        sys.exit(f'{path}: not float32')
    return values


ref = load(sys.argv[1])
reached = [i for i, y in enumerate(ref) if not math.isnan(y) and y > 0]
top = max(ref[i] for i in reached)
for path in sys.argv[2:]:
    u = load(path)
    rel = sorted(abs(u[i] - ref[i]) / ref[i] for i in reached)
    worst = max(abs(u[i] - ref[i]) for i in reached)
    above = sum(1 for i in reached if u[i] > ref[i])
    print(f'{path}: max {rel[-1]:.2e}, median {rel[len(rel) // 2]:.2e} of u; max {worst / top:.2e} of the largest u; '
          f'{above} of {len(reached)} voxels above the reference')
