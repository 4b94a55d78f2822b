"""What scripts/itk-check.py and scripts/elastix-check.py share: the oblique test images, ITK's
view of them, the transforms, the rounding bound B (itk-check.py's docstring derives it) and the
run of `neuroport resample` compared with the reference tool's image within B."""
import subprocess
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


def scene():
    """The moving image and both grids: dims, affines (RAS) and the moving image's values."""
    rng = np.random.default_rng(3)
    mdims, rdims = (40, 44, 36), (48, 42, 40)
    mov_aff = grid(mdims, [2.0, 2.2, 2.5], [12.0, -8.0, 20.0], [1.0, -3.0, 4.0])
    ref_aff = grid(rdims, [1.8, 1.9, 2.1], [-5.0, 10.0, -15.0], [-2.0, 1.0, 0.0])
    x, y, z = np.meshgrid(*[np.linspace(-1, 1, d) for d in mdims], indexing="ij")
    mov = 1000 * np.exp(-3 * ((x - 0.2) ** 2 + (y + 0.1) ** 2 + 2 * z ** 2)) + 200 * np.sin(5 * x + 3 * y * z) + 20 * rng.standard_normal(mdims)
    return mdims, rdims, mov_aff, ref_aff, mov.astype(np.float32)


def resample(binary, ref_p, mov_p, transform, out, cwd=None, check=False):
    """`neuroport resample --affine transform`: (the image written, "") or (None, its stderr)."""
    r = subprocess.run([binary, "resample", "--ref", ref_p, "--moving", mov_p, "--affine", transform, "--out", out], capture_output=True, text=True, cwd=cwd, check=check)
    if r.returncode != 0:
        return None, r.stderr.strip()
    return np.asarray(nib.load(out).dataobj, dtype=np.float64), ""


def compared(got, want, inside, b):
    """The largest |got - want| strictly inside the moving box, and the largest |diff| / B there."""
    diff = np.abs(got - want)
    return diff[inside].max(), (diff[inside] / b[inside]).max()


def control(what, got, want, inside, b):
    """1 when `got`, made wrong on purpose, stays within B (the check could not see it), else 0."""
    ratio = compared(got, want, inside, b)[1]
    print(f"{'ok  ' if ratio > 1.0 else 'FAIL'} control ({what}): max |diff| / bound {ratio:.3g}, must be > 1")
    return int(ratio <= 1.0)
