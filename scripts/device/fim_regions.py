#!/usr/bin/env python3
"""Two small regions for `neuroport fim --source/--target` inside a white-matter mask (standard
library only, for the device machine): spheres of radius 3 voxels around the white-matter voxels
at the 2nd and 98th percentile along x, written on the mask's grid (its header reused) as
SRC.nii.gz and TGT.nii.gz.  Usage: fim_regions.py WM.nii.gz SRC.nii.gz TGT.nii.gz"""
import array, gzip, sys
from nifti_gz import CODES as codes, read

wm_path, src_path, tgt_path = sys.argv[1:4]
raw, (nx, ny, nz), datatype, off, vals = read(wm_path)
n = nx * ny * nz
wm = [i for i in range(n) if vals[i]]
by_x = sorted(wm, key=lambda i: i % nx)
pos = lambda i: (i % nx, (i // nx) % ny, i // (nx * ny))

def sphere(centre, path, r=3):
    out = array.array(codes[datatype], bytes(n * array.array(codes[datatype]).itemsize))
    cx, cy, cz = centre
    k = 0
    for z in range(max(0, cz - r), min(nz, cz + r + 1)):
        for y in range(max(0, cy - r), min(ny, cy + r + 1)):
            for x in range(max(0, cx - r), min(nx, cx + r + 1)):
                i = x + nx * (y + ny * z)
                if vals[i] and (x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2 <= r * r:
                    out[i] = 1
                    k += 1
    with gzip.open(path, 'wb', compresslevel=1) as f:
        f.write(raw[:off] + out.tobytes())
    print(f'{path}: {k} voxels around {centre}')

sphere(pos(by_x[len(by_x) // 50]), src_path)
sphere(pos(by_x[-len(by_x) // 50]), tgt_path)
