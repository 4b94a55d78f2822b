#!/usr/bin/env python3
"""`neuroport resample --affine TransformParameters.N.txt` beside transformix.

Not part of the tests (itk-elastix is a large download): run it by hand,

    python3 -m venv /tmp/elx && /tmp/elx/bin/pip install itk-elastix nibabel
    /tmp/elx/bin/python scripts/elastix-check.py [--bin target/release/neuroport]

The oblique moving image and reference grid of scripts/itk-check.py (scripts/resample_check.py
holds what the two share). The fixed image is the moving one resampled by ITK through a known affine onto the
reference grid, and elastix registers the pair (few iterations: the result need not be good,
only real): Euler ("rigid"), Similarity, and translation -> rigid -> affine in one run, which
writes TransformParameters.0-2.txt, each naming the one before in
InitialTransformParameterFileName relative to the working directory (elastix writes the output
folder as it was given). That chain is also read from elsewhere after renaming the links to
bare file names (found beside the file naming them). Parameter files written here add Euler
with ComputeZYX "true", a chain combined by HowToCombineTransforms "Add", and (Transform "File")
naming an ITK transform file, alone and under an Euler.

Each file is given, as it is on disk, to transformix (itk.TransformixFilter reading the file,
so elastix itself follows its chain) with its ResampleInterpolator set to linear, and to
neuroport. The transform's LPS 4x4 for the bound is fitted to transformix's own deformation
field (exact for an affine up to float32), independent of neuroport. They differ by rounding
only: the bound B of itk-check.py (float32 voxel map and blend in neuroport, one rounding in
elastix's double resampler); every voxel strictly inside the moving box must be within B.
Controls, which must exceed B: the chain's last file with "Add" where elastix composes, and
with the chain cut (its initial transform dropped). Exit status 1 on failure.
"""
import argparse, os, re, shutil, sys, tempfile
import numpy as np
import itk
import resample_check as ic

IMG = itk.Image[itk.F, 3]


def transformix(mov_img, path, work):
    """transformix's image and the LPS 4x4 fitted to its deformation field."""
    os.makedirs(work, exist_ok=True)
    tf = itk.TransformixFilter[IMG].New()
    tf.SetMovingImage(mov_img)
    tf.SetTransformParameterFileName(path)
    tf.SetComputeDeformationField(True)
    tf.SetOutputDirectory(work)
    tf.SetLogToConsole(False)
    tf.Update()
    img = tf.GetOutput()
    field = itk.array_from_image(tf.GetOutputDeformationField()).astype(np.float64)  # [z, y, x, 3]
    idx = np.stack(np.meshgrid(*[np.arange(n) for n in field.shape[2::-1]], indexing="ij"), -1).reshape(-1, 3)
    sp, org = np.array(img.GetSpacing()), np.array(img.GetOrigin())
    d = np.array(img.GetDirection())
    pts = org + (idx * sp) @ d.T
    moved = pts + field.transpose(2, 1, 0, 3).reshape(-1, 3)
    a = np.hstack([pts, np.ones((len(pts), 1))])
    fit = np.linalg.lstsq(a, moved, rcond=None)[0].T
    mt = np.eye(4)
    mt[:3, :] = fit
    return itk.array_from_image(img).transpose(2, 1, 0).astype(np.float64), mt


def linear(path):
    """The file with transformix's interpolator set to linear (as neuroport's)."""
    t = open(path).read()
    t = re.sub(r'\(ResampleInterpolator "[^"]*"\)', '(ResampleInterpolator "FinalLinearInterpolator")', t)
    open(path, "w").write(t)


def grid_entries(ref_img):
    """The output grid's entries of a parameter file (Direction column by column)."""
    d = np.array(ref_img.GetDirection())
    num = lambda v: " ".join(repr(float(x)) for x in v)
    size = " ".join(str(int(n)) for n in ref_img.GetLargestPossibleRegion().GetSize())
    return (f"(Size {size})\n(Index 0 0 0)\n(Spacing {num(ref_img.GetSpacing())})\n"
            f"(Origin {num(ref_img.GetOrigin())})\n(Direction {num(d.flatten(order='F'))})\n(UseDirectionCosines \"true\")\n"
            "(ResampleInterpolator \"FinalLinearInterpolator\")\n(Resampler \"DefaultResampler\")\n(DefaultPixelValue 0)\n"
            "(ResultImagePixelType \"float\")\n(FixedImageDimension 3)\n(MovingImageDimension 3)\n"
            "(FixedInternalImagePixelType \"float\")\n(MovingInternalImagePixelType \"float\")\n")


def written(d, ref_img):
    """Parameter files written here: Euler ZYX, and an affine on it combined by Add."""
    g = grid_entries(ref_img)
    euler = os.path.join(d, "written", "euler-zyx.txt")
    os.makedirs(os.path.dirname(euler))
    open(euler, "w").write(f'(Transform "EulerTransform")\n(NumberOfParameters 6)\n(TransformParameters 0.1 -0.15 0.2 2.5 -3 1.5)\n'
                           f'(CenterOfRotationPoint 5 -10 8)\n(ComputeZYX "true")\n(InitialTransformParameterFileName "NoInitialTransform")\n'
                           f'(HowToCombineTransforms "Compose")\n{g}')
    add = os.path.join(d, "written", "affine-add.txt")
    open(add, "w").write(f'(Transform "AffineTransform")\n(NumberOfParameters 12)\n(TransformParameters 1.04 0.05 -0.02 -0.03 0.97 0.04 0.02 -0.01 1.01 -1.5 2 0.5)\n'
                         f'(CenterOfRotationPoint -4 6 2)\n(InitialTransformParameterFileName "euler-zyx.txt")\n'
                         f'(HowToCombineTransforms "Add")\n{g}')
    # (Transform "File"): an ITK transform file beside, with an elastix Euler composed on it.
    itk.transformwrite([next(ic.transforms())[1]], os.path.join(d, "written", "itk-affine.tfm"))
    ext = os.path.join(d, "written", "file.txt")
    open(ext, "w").write(f'(Transform "File")\n(TransformFileName "itk-affine.tfm")\n(InitialTransformParameterFileName "NoInitialTransform")\n{g}')
    top = os.path.join(d, "written", "euler-on-file.txt")
    open(top, "w").write(open(euler).read().replace('"NoInitialTransform"', '"file.txt"'))
    return [euler, add, ext, top]


def register(d, fix_img, mov_img, name, maps):
    """elastix's files for `maps` (each a default map's name, or "similarity"), run from `d`."""
    po = itk.ParameterObject.New()
    for m in maps:
        p = po.GetDefaultParameterMap("rigid" if m == "similarity" else m, 2)
        if m == "similarity":
            p["Transform"] = ["SimilarityTransform"]
        p["MaximumNumberOfIterations"] = ["60"]
        po.AddParameterMap(p)
    cwd = os.getcwd()
    os.chdir(d)
    try:
        os.makedirs(name)
        itk.elastix_registration_method(fix_img, mov_img, parameter_object=po, output_directory=name, log_to_console=False)
    finally:
        os.chdir(cwd)
    files = [os.path.join(d, name, f"TransformParameters.{k}.txt") for k in range(len(maps))]
    for f in files:
        linear(f)
    return files


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="target/release/neuroport")
    a = ap.parse_args()
    binary = os.path.abspath(a.bin)
    mdims, rdims, mov_aff, ref_aff, mov = ic.scene()
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        ref_p, mov_p = os.path.join(d, "ref.nii.gz"), os.path.join(d, "mov.nii.gz")
        ic.write_nifti(ref_p, np.zeros(rdims), ref_aff)
        ic.write_nifti(mov_p, mov, mov_aff)
        ref_img, mov_img = ic.itk_image(np.zeros(rdims), ref_aff), ic.itk_image(mov, mov_aff)
        known = next(ic.transforms())[1]
        fix_img = itk.resample_image_filter(mov_img, transform=known, use_reference_image=True, reference_image=ref_img, default_pixel_value=0.0)
        chain = register(d, fix_img, mov_img, "chain", ["translation", "rigid", "affine"])
        cases = [("euler", register(d, fix_img, mov_img, "euler", ["rigid"])[0], d), ("similarity", register(d, fix_img, mov_img, "similarity", ["similarity"])[0], d)]
        cases += [(f"chain.{k}", f, d) for k, f in enumerate(chain)]
        # The chain copied and its links made bare names: found beside each file, from elsewhere.
        moved = os.path.join(d, "moved")
        shutil.copytree(os.path.join(d, "chain"), moved)
        for f in (f for f in os.listdir(moved) if f.startswith("TransformParameters")):
            p = os.path.join(moved, f)
            t = open(p).read()
            open(p, "w").write(re.sub(r'"chain/(TransformParameters\.\d\.txt)"', r'"\1"', t))
        elsewhere = os.path.join(d, "elsewhere")
        os.makedirs(elsewhere)
        cases.append(("chain.2 (links beside)", os.path.join(moved, "TransformParameters.2.txt"), elsewhere))
        # Run from their folder: itk-elastix's transformix takes TransformFileName from there.
        cases += [(os.path.basename(f), f, os.path.dirname(f)) for f in written(d, ref_img)]
        last = chain[-1]
        for k, (name, path, cwd) in enumerate(cases):
            print(f"     {name}: {[l for l in open(path).read().splitlines() if l.startswith(('(Transform ', '(InitialTransformParameter', '(HowTo'))]}")
            cur = os.getcwd()
            os.chdir(cwd)
            try:
                want, mt = transformix(mov_img, path, os.path.join(d, f"tx{k}"))
            finally:
                os.chdir(cur)
            inside, b = ic.bound(mt, ref_aff, mov_aff, mov, rdims)
            got, err = ic.resample(binary, ref_p, mov_p, path, os.path.join(d, f"o{k}.nii.gz"), cwd=cwd)
            if got is None:
                print(f"FAIL {name}: {err}")
                failed += 1
                continue
            worst, ratio = ic.compared(got, want, inside, b)
            ok = ratio <= 1.0 and inside.sum() > 0.3 * inside.size
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}: {inside.sum()} voxels inside, max |neuroport - transformix| {worst:.3g} (values up to {np.abs(mov).max():.0f}), max |diff| / bound {ratio:.3f}")
            if path == last:
                # Controls: the same file read as Add, or without its chain, must fail the bound.
                for what, sub in (("Add for Compose", ('"Compose"', '"Add"')), ("chain cut", ('"chain/TransformParameters.1.txt"', '"NoInitialTransform"'))):
                    bad, out = os.path.join(d, "chain", f"control-{len(what)}.txt"), os.path.join(d, f"control-{len(what)}.nii.gz")
                    open(bad, "w").write(open(path).read().replace(*sub))
                    got, err = ic.resample(binary, ref_p, mov_p, bad, out, cwd=cwd)
                    if got is None:
                        print(f"FAIL control ({what}): {err}")
                        failed += 1
                        continue
                    failed += ic.control(what, got, want, inside, b)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
