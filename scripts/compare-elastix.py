#!/usr/bin/env python3
"""elastix's affine registration beside `neuroport register --backend cpu` on the airwc pair.

Issue 10 item 6: "on the CPU (all cores) faster than elastix's affine registration of the same
pair at no worse accuracy". Not part of CI (itk-elastix is a large download): run it by hand,

    python3 -m venv /tmp/elx && /tmp/elx/bin/pip install itk-elastix nibabel
    /tmp/elx/bin/python scripts/compare-elastix.py [--scale quick|medium] [--bin target/release/neuroport]

The pair is `reproduce airwc`'s case (b), written by `neuroport synth t1`: subject 0 (fixed)
and subject 1 moved by the harness's placement (moving), with truth_affine.txt the transform
that registers them (exact for the heads' outlines; their folding and ventricles differ). Both
programs get the same files and all cores; wall time of each registration (neuroport: the whole
process, reading and writing included; elastix: the registration call, the images already
read); error: mean distance over subject 0's brain between where each result and the truth send
each brain voxel (mm).

elastix: its default affine parameter map (AdvancedMattesMutualInformation, 4-level Gaussian
pyramid, adaptive stochastic gradient descent, 256 iterations per level, 2048 random samples),
or `--metric ncc` (AdvancedNormalizedCorrelation, what neuroport's case (b) uses), centres of
mass aligned first (AutomaticTransformInitialization, as neuroport does). ITK's physical space
is LPS: its transform is turned into NIfTI's RAS world before comparison.
"""
import argparse, os, subprocess, sys, tempfile, time
import numpy as np
import nibabel as nib
import itk

PLACE_B = "-5,8,6,-7,5,-9,4,-3,5,2,-2,1"  # src/register/repro.rs PLACE_B
SCALES = {"quick": ("48,52,36", "5,5,5"), "medium": ("120,128,88", "2,2,2"), "paper": ("240,256,176", "1,1,1")}
LPS = np.diag([-1.0, -1.0, 1.0, 1.0])


def sh(args):
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"error: {' '.join(args)}: {r.stderr.strip()}")
    return r


def mean_displacement(a, b, img, mask):
    ijk = np.argwhere(mask > 0.5)
    w = nib.affines.apply_affine(img.affine, ijk)
    return float(np.linalg.norm(nib.affines.apply_affine(a, w) - nib.affines.apply_affine(b, w), axis=1).mean())


def elastix_affine(fixed_path, moving_path, metric, threads):
    fixed = itk.imread(fixed_path, itk.F)
    moving = itk.imread(moving_path, itk.F)
    po = itk.ParameterObject.New()
    pm = po.GetDefaultParameterMap("affine", 4)
    pm["AutomaticTransformInitialization"] = ["true"]
    pm["AutomaticTransformInitializationMethod"] = ["CenterOfGravity"]
    if metric == "ncc":
        pm["Metric"] = ["AdvancedNormalizedCorrelation"]
    pm["WriteResultImage"] = ["false"]
    po.AddParameterMap(pm)
    t0 = time.perf_counter()
    _, tp = itk.elastix_registration_method(fixed, moving, parameter_object=po, number_of_threads=threads, log_to_console=False)
    wall = time.perf_counter() - t0
    p = [float(v) for v in tp.GetParameter(0, "TransformParameters")]
    c = [float(v) for v in tp.GetParameter(0, "CenterOfRotationPoint")]
    a, t, c = np.array(p[:9]).reshape(3, 3), np.array(p[9:12]), np.array(c)
    m = np.eye(4)
    m[:3, :3] = a
    m[:3, 3] = t + c - a @ c  # x -> A (x - c) + t + c, fixed LPS point -> moving LPS point
    return LPS @ m @ LPS, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", choices=SCALES, default="quick")
    ap.add_argument("--bin", default="target/release/neuroport")
    ap.add_argument("--metric", choices=["mi", "ncc"], default="mi")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--samples", type=int, default=0, help="neuroport register --samples (0: every voxel, 002's cost)")
    a = ap.parse_args()
    dims, vox = SCALES[a.scale]
    with tempfile.TemporaryDirectory() as d:
        fx, mv = os.path.join(d, "a"), os.path.join(d, "b")
        sh([a.bin, "synth", "t1", "--out", fx, "--dims", dims, "--voxel", vox, "--seed", "2011"])
        sh([a.bin, "synth", "t1", "--out", mv, "--dims", dims, "--voxel", vox, "--subject", "1", "--move", PLACE_B, "--seed", "2012"])
        truth = np.loadtxt(os.path.join(mv, "truth_affine.txt"))
        img = nib.load(os.path.join(fx, "t1.nii.gz"))
        mask = np.asanyarray(nib.load(os.path.join(fx, "brain.nii.gz")).dataobj)
        f, m = os.path.join(fx, "t1.nii.gz"), os.path.join(mv, "t1.nii.gz")
        rows = []
        t0 = time.perf_counter()
        r = sh([a.bin, "register", "--backend", "cpu", "--threads", str(a.threads), "--fixed", f, "--moving", m, "--dof", "12", "--cost", "ncc", "--samples", str(a.samples), "--out", os.path.join(d, "np") + "/"])
        wall = time.perf_counter() - t0
        ours = np.loadtxt(os.path.join(d, "np", "register_affine.txt"))
        rows.append((f"neuroport register (12 dof, NCC, 3 levels{f', --samples {a.samples}' if a.samples else ''})", wall, mean_displacement(ours, truth, img, mask)))
        ex, wall = elastix_affine(f, m, a.metric, a.threads)
        rows.append((f"elastix affine ({'AdvancedNormalizedCorrelation' if a.metric == 'ncc' else 'AdvancedMattesMutualInformation'}, 4 levels)", wall, mean_displacement(ex, truth, img, mask)))
        print(f"airwc pair (b), {dims} voxels of {vox} mm, {a.threads} threads, {os.cpu_count()} cores")
        print("| program | wall s | mean displacement over the brain, mm |")
        print("|---|---|---|")
        for name, w, e in rows:
            print(f"| {name} | {w:.2f} | {e:.3f} |")
        print(r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "")


if __name__ == "__main__":
    main()
