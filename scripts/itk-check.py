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
import argparse, os, subprocess, sys, tempfile
import numpy as np
import nibabel as nib
import itk

F = np.diag([-1.0, -1.0, 1.0, 1.0])  # RAS <-> LPS
U = 2.0 ** -24


def rot(ax, ay, az):
    c, s = np.cos, np.sin
    rx = np.array([[1, 0, 0], [0, c(ax), -s(ax)], [0, s(ax), c(ax)]])
    ry = np.array([[c(ay), 0, s(ay)], [0, 1, 0], [-s(ay), 0, c(ay)]])
    rz = np.array([[c(az), -s(az), 0], [s(az), c(az), 0], [0, 0, 1]])
    return rz @ rx @ ry


def grid(dims, vox, angles, centre):
    """An oblique voxel-to-RAS affine, as float32 (what the NIfTI sform holds)."""
    a = np.eye(4)
    a[:3, :3] = rot(*np.radians(angles)) @ np.diag(vox)
    a[:3, 3] = np.asarray(centre) - a[:3, :3] @ ((np.asarray(dims) - 1) / 2)
    return a.astype(np.float32).astype(np.float64)


def write_nifti(path, data, aff):
    img = nib.Nifti1Image(data.astype(np.float32), aff)
    img.header.set_sform(aff, code=1)
    img.header.set_qform(aff, code=0)
    nib.save(img, path)


def itk_image(data, aff):
    """An ITK image on the grid of `aff` (RAS), in ITK's LPS physical space."""
    img = itk.image_from_array(np.ascontiguousarray(data.astype(np.float32).transpose(2, 1, 0)))
    lps = F @ aff
    sp = np.linalg.norm(lps[:3, :3], axis=0)
    img.SetSpacing(sp.tolist())
    img.SetOrigin(lps[:3, 3].tolist())
    img.SetDirection(itk.matrix_from_array(np.ascontiguousarray(lps[:3, :3] / sp)))
    return img


def transforms():
    a = itk.AffineTransform[itk.D, 3].New()
    m = rot(*np.radians([9.0, -6.0, 14.0])) @ np.array([[1.06, 0.04, 0.0], [0.0, 0.95, -0.03], [0.02, 0.0, 1.02]])
    a.SetMatrix(itk.matrix_from_array(m))
    a.SetCenter([10.0, -20.0, 15.0])
    a.SetTranslation([3.5, -4.25, 5.0])
    yield "affine", a
    for zyx in (False, True):
        e = itk.Euler3DTransform[itk.D].New()
        e.SetComputeZYX(zyx)
        e.SetRotation(0.12, -0.21, 0.3)
        e.SetCenter([-5.0, 8.0, 2.0])
        e.SetTranslation([-2.0, 6.5, -3.0])
        yield "euler-zyx" if zyx else "euler", e
    axis, angle = [0.3, -0.5, 0.8], 0.35
    v = itk.VersorRigid3DTransform[itk.D].New()
    v.SetRotation(axis, angle)
    v.SetCenter([4.0, -3.0, 12.0])
    v.SetTranslation([1.5, 2.5, -6.0])
    yield "versor", v
    s = itk.Similarity3DTransform[itk.D].New()
    s.SetRotation(axis, -angle)
    s.SetScale(1.08)
    s.SetCenter([-7.0, 5.0, 0.0])
    s.SetTranslation([-3.0, 1.0, 4.0])
    yield "similarity", s
    # A composite applies the transform added last first: T(x) = a(e(s(x))).
    c = itk.CompositeTransform[itk.D, 3].New()
    for t in (a, e, s):
        c.AddTransform(t)
    yield "composite", c


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


def bound(mt, ref_aff, mov_aff, mov, dims):
    """Per reference voxel: the strictly-inside mask and the bound B of the docstring, for the
    transform whose LPS 4x4 is `mt`."""
    vm = np.linalg.inv(mov_aff) @ F @ mt @ F @ ref_aff  # reference voxel -> moving voxel
    ijk = np.stack(np.meshgrid(*[np.arange(d) for d in dims], indexing="ij"), -1).reshape(-1, 3).astype(float)
    p = ijk @ vm[:3, :3].T + vm[:3, 3]
    s = np.abs(ijk[:, None, :] * vm[None, :3, :3]).sum(-1) + np.abs(vm[:3, 3])
    n = np.array(mov.shape)
    inside = np.all((p > 1e-3) & (p < n - 1 - 1e-3), axis=1)
    k = np.clip(np.floor(p).astype(int), 0, n - 2)
    corners = np.stack([mov[k[:, 0] + dx, k[:, 1] + dy, k[:, 2] + dz] for dz in (0, 1) for dy in (0, 1) for dx in (0, 1)], -1)
    c = corners.reshape(-1, 2, 2, 2)  # [voxel, z, y, x]
    g = np.stack([np.abs(np.diff(c, axis=ax)).reshape(len(c), -1).max(1) for ax in (3, 2, 1)], -1)
    b = (6 * U * s * g).sum(1) + 17 * U * np.abs(corners).max(1)
    return inside.reshape(dims), b.reshape(dims)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/neuroport")
    a = ap.parse_args()
    rng = np.random.default_rng(3)
    mdims, rdims = (40, 44, 36), (48, 42, 40)
    mov_aff = grid(mdims, [2.0, 2.2, 2.5], [12.0, -8.0, 20.0], [1.0, -3.0, 4.0])
    ref_aff = grid(rdims, [1.8, 1.9, 2.1], [-5.0, 10.0, -15.0], [-2.0, 1.0, 0.0])
    x, y, z = np.meshgrid(*[np.linspace(-1, 1, d) for d in mdims], indexing="ij")
    mov = 1000 * np.exp(-3 * ((x - 0.2) ** 2 + (y + 0.1) ** 2 + 2 * z ** 2)) + 200 * np.sin(5 * x + 3 * y * z) + 20 * rng.standard_normal(mdims)
    mov = mov.astype(np.float32)
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
                r = subprocess.run([a.bin, "resample", "--ref", ref_p, "--moving", mov_p, "--affine", tp, "--out", out], capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"FAIL {name}.{ext}: {r.stderr.strip()}")
                    failed += 1
                    continue
                got = np.asarray(nib.load(out).dataobj, dtype=np.float32)
                diff = np.abs(got.astype(np.float64) - want)
                worst, ratio = diff[inside].max(), (diff[inside] / b[inside]).max()
                # Outside the strict box neuroport writes 0 and ITK its half-voxel rim: never
                # a value where ITK has none.
                stray = int(np.count_nonzero((got != 0) & (want == 0) & ~inside))
                ok = ratio <= 1.0 and stray == 0 and inside.sum() > 0.3 * inside.size
                failed += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {name}.{ext}: {inside.sum()} voxels inside, max |neuroport - ITK| {worst:.3g} (values up to {np.abs(mov).max():.0f}), max |diff| / bound {ratio:.3f}, {stray} stray voxels")
            if name == "affine":
                # The control: the same transform as a 4x4 left in LPS (the conversion
                # forgotten) must fail the bound by far, or the check could not see one.
                mt = lps_matrix(t)
                raw, out = os.path.join(d, "lps.txt"), os.path.join(d, "lps.nii.gz")
                np.savetxt(raw, mt, fmt="%.17g")
                subprocess.run([a.bin, "resample", "--ref", ref_p, "--moving", mov_p, "--affine", raw, "--out", out], capture_output=True, check=True)
                got = np.asarray(nib.load(out).dataobj, dtype=np.float64)
                ratio = (np.abs(got - want)[inside] / b[inside]).max()
                failed += ratio <= 1.0
                print(f"{'ok  ' if ratio > 1.0 else 'FAIL'} control (LPS matrix as RAS): max |diff| / bound {ratio:.3g}, must be > 1")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
