#!/usr/bin/env python3
"""`neuroport resample --affine T` through ITK transform files, beside ITK's own resampler.

Not part of the tests (itk is a large download): run it by hand,

    python3 -m venv /tmp/itkv && /tmp/itkv/bin/pip install itk nibabel numpy
    /tmp/itkv/bin/python scripts/itk-check.py [--bin target/release/neuroport]

An oblique moving image and an oblique reference grid (different rotations and voxel sizes)
are written as NIfTI (sform) and built as ITK images on the same grids (ITK's LPS: origin and
direction x and y negated). For each transform (an AffineTransform with rotation, scales,
shear, translation and a centre; Euler3D in both angle orders, VersorRigid3D, Similarity3D, a
CompositeTransform of three of them), itk.transformwrite writes it as .txt and as ANTs' binary
.mat (the composite as .txt only: ANTs' .mat holds one transform); neuroport resamples through
each file and ITK's ResampleImageFilter (linear) through the transform itself.

The two differ only by rounding: neuroport maps reference voxels to moving voxels in float32
(`m0 x + m1 y + m2 z + m3`, the entries rounded to float32: a position error per axis of at
most 6 u S, u = 2^-24 and S = sum |m_j x_j| + |m_3|) and blends in float32 (seven lerps, at
most 16 u max|corner|); ITK computes in double and rounds once to float (u max|corner|). So
per voxel |neuroport - ITK| <= sum_axes 6 u S_a G_a + 17 u max|corner| =: B, G_a the largest
change along axis a across the sample's cell. The check passes when every voxel strictly
inside the moving box (ITK also samples the outer half voxel, neuroport does not) is within B,
and prints the largest |difference| and the largest |difference| / B; a control (the affine's
LPS matrix given as if it were RAS) must exceed B. Exit status 1 on failure.
"""
import argparse, os, sys, tempfile
import numpy as np
import itk
from resample_check import bound, control, compared, itk_image, resample, scene, transforms, write_nifti


def lps_matrix(t):
    """The 4x4 (LPS) of an affine-like ITK transform, a composite too, from the points it maps."""
    o = np.array(t.TransformPoint([0.0, 0.0, 0.0]))
    mt = np.eye(4)
    for j in range(3):
        e = [0.0, 0.0, 0.0]
        e[j] = 1.0
        mt[:3, j] = np.array(t.TransformPoint(e)) - o
    mt[:3, 3] = o
    return mt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/neuroport")
    a = ap.parse_args()
    mdims, rdims, mov_aff, ref_aff, mov = scene()
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        ref_p, mov_p = os.path.join(d, "ref.nii.gz"), os.path.join(d, "mov.nii.gz")
        write_nifti(ref_p, np.zeros(rdims), ref_aff)
        write_nifti(mov_p, mov, mov_aff)
        ref_img, mov_img = itk_image(np.zeros(rdims), ref_aff), itk_image(mov, mov_aff)
        interp = itk.LinearInterpolateImageFunction[type(mov_img), itk.D].New()
        for name, t in transforms():
            want = itk.resample_image_filter(mov_img, transform=t, interpolator=interp, use_reference_image=True, reference_image=ref_img, default_pixel_value=0.0)
            want = itk.array_from_image(want).transpose(2, 1, 0)
            inside, b = bound(lps_matrix(t), ref_aff, mov_aff, mov, rdims)
            for ext in ("txt",) if name == "composite" else ("txt", "mat"):
                tp, out = os.path.join(d, f"{name}.{ext}"), os.path.join(d, f"{name}_{ext}.nii.gz")
                itk.transformwrite([t], tp)
                got, err = resample(a.bin, ref_p, mov_p, tp, out)
                if got is None:
                    print(f"FAIL {name}.{ext}: {err}")
                    failed += 1
                    continue
                worst, ratio = compared(got, want, inside, b)
                # Outside the strict box neuroport writes 0 and ITK its half-voxel rim: never
                # a value where ITK has none.
                stray = int(np.count_nonzero((got != 0) & (want == 0) & ~inside))
                ok = ratio <= 1.0 and stray == 0 and inside.sum() > 0.3 * inside.size
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name}.{ext}: {inside.sum()} voxels inside, max |neuroport - ITK| {worst:.3g} (values up to {np.abs(mov).max():.0f}), max |diff| / bound {ratio:.3f}, {stray} stray voxels")
            if name == "affine":
                # The control: the same transform as a 4x4 left in LPS (the conversion
                # forgotten) must fail the bound by far, or the check could not see one.
                raw, out = os.path.join(d, "lps.txt"), os.path.join(d, "lps.nii.gz")
                np.savetxt(raw, lps_matrix(t), fmt="%.17g")
                failed += control("LPS matrix as RAS", resample(a.bin, ref_p, mov_p, raw, out, check=True)[0], want, inside, b)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
