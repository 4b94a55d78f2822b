#!/usr/bin/env python3
"""Checks what FSL, MRtrix3, DIPY and nibabel will see in neuroport's outputs (docs/conventions.md,
"Checking outputs with other tools"). Not part of the test suite; needs nibabel, and dipy for the
DTI comparison (pip install nibabel dipy).

    python3 scripts/interop-check.py OUT [OUT ...] [--ref REF.nii.gz] [--dwi D --bvals B --bvecs V --mask M]

Each OUT (a folder, searched recursively, or a file) is checked:
- every .nii/.nii.gz neuroport wrote (descrip "neuroport"; others are skipped) loads; float32, scl_slope 1 (or 0) and scl_inter 0, no intent, dim[0] as the
  data, pixdim[4] > 0 on 4-D files, and sform/qform codes and matrices equal to the reference's
  (--ref, else a dwi.nii.gz or nodif_brain_mask beside the files) on files of its grid;
- every .tck: MRtrix header (Float32LE, count <= total_count, file offset, END), count = streamlines read, the
  (Inf, Inf, Inf) trailer, points inside the reference's world bounding box;
- bvecs/bvals: FSL's layout (one row of N, 3 rows of N), unit directions where b > 10;
- PREFIX_tensor with PREFIX_FA/MD/V1/L3 and a DWI (--dwi..., else dwi.nii.gz, bvals, bvecs and
  mask.nii.gz beside it): FA, MD and V1 against DIPY's WLS fit, leaving out voxels whose smallest
  eigenvalue neuroport raised to 1e-6 mm^2/s (its repair rule; DIPY clips elsewhere);
- a bedpost folder: dyads1 is the principal direction of merged_th1/ph1samples.
Prints one line per check; exit status 1 if any fails.
"""
import argparse, glob, gzip, os, sys
import numpy as np
import nibabel as nib

failed = 0


def report(ok, what):
    global failed
    failed += not ok
    print(("ok    " if ok else "FAIL  ") + what)


def raw_header(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        return nib.Nifti1Header.from_fileobj(f)


def find_ref(paths, given):
    if given:
        return given
    for p in paths:
        d = os.path.dirname(p)
        for name in ("dwi.nii.gz", "dwi.nii", "nodif_brain_mask.nii.gz", "nodif_brain_mask.nii"):
            for c in (os.path.join(d, name), os.path.join(d, "..", name)):
                if os.path.exists(c):
                    return c
    return paths[0] if paths else None


def check_nifti(p, ref, is_ref):
    h, img = raw_header(p), nib.load(p)
    problems = []
    if is_ref:
        pass  # an input (the DWI): any type and scaling
    elif h.get_data_dtype() != np.float32:
        problems.append(f"datatype {h.get_data_dtype()}")
    if not is_ref and not (h["scl_slope"] in (0.0, 1.0) and h["scl_inter"] == 0.0):
        problems.append(f"scl_slope {h['scl_slope']} scl_inter {h['scl_inter']}")
    if int(h["intent_code"]) != 0 or h["intent_name"].tobytes().strip(b"\0"):
        problems.append(f"intent {int(h['intent_code'])} {h['intent_name']}")
    if int(h["dim"][0]) != img.ndim:
        problems.append(f"dim[0] {h['dim'][0]} for {img.ndim}-D data")
    if img.ndim == 4 and not h["pixdim"][4] > 0:
        problems.append(f"pixdim[4] {h['pixdim'][4]}")
    if ref is not None and img.shape[:3] == ref.shape[:3]:
        rh = ref.header
        for code in ("sform_code", "qform_code"):
            if int(h[code]) != int(rh[code]):
                problems.append(f"{code} {int(h[code])} (reference {int(rh[code])})")
        if not np.allclose(img.get_sform(), ref.get_sform(), atol=1e-5) or not np.allclose(img.get_qform(), ref.get_qform(), atol=1e-5):
            problems.append("sform/qform differ from the reference")
        if h.get_xyzt_units() != rh.get_xyzt_units():
            problems.append(f"xyzt_units {h.get_xyzt_units()} (reference {rh.get_xyzt_units()})")
    grid = "" if ref is None or img.shape[:3] == ref.shape[:3] else " (another grid: affine not compared)"
    report(not problems, f"{p}: {img.shape}, {nib.aff2axcodes(img.affine)}{grid}" + ("; " + "; ".join(problems) if problems else ""))


def check_tck(p, ref):
    raw = open(p, "rb").read()
    end = raw.find(b"\nEND\n")
    fields = dict(l.split(": ", 1) for l in raw[:end].decode().split("\n")[1:] if ": " in l)
    offset = int(fields.get("file", ". 0").split()[1])
    t = nib.streamlines.load(p)
    pts = t.streamlines.get_data()
    trailer = np.frombuffer(raw[-12:], "<f4")
    problems = []
    if not raw.startswith(b"mrtrix tracks\n") or end < 0 or offset < end + 5:
        problems.append("header")
    if fields.get("datatype") != "Float32LE":
        problems.append(f"datatype {fields.get('datatype')}")
    if int(fields.get("count", -1)) != len(t.streamlines):
        problems.append(f"count {fields.get('count')} for {len(t.streamlines)} streamlines")
    if int(fields.get("total_count", fields.get("count", -1))) < int(fields.get("count", -1)):
        problems.append(f"total_count {fields.get('total_count')} below count {fields.get('count')}")
    if not np.isinf(trailer).all():
        problems.append("no (Inf, Inf, Inf) trailer")
    if ref is not None and len(pts):
        corners = np.array([[i, j, k] for i in (-0.5, ref.shape[0] - 0.5) for j in (-0.5, ref.shape[1] - 0.5) for k in (-0.5, ref.shape[2] - 0.5)])
        w = nib.affines.apply_affine(ref.affine, corners)
        out = ((pts < w.min(0) - 1e-3) | (pts > w.max(0) + 1e-3)).any(1).sum()
        if out:
            problems.append(f"{out} of {len(pts)} points outside the reference's world box")
    report(not problems, f"{p}: {len(t.streamlines)} streamlines, {len(pts)} points" + ("; " + "; ".join(problems) if problems else ""))


def check_gradients(bvals, bvecs):
    b = np.loadtxt(bvals, ndmin=2)
    v = np.loadtxt(bvecs, ndmin=2)
    ok = b.shape[0] == 1 and v.shape == (3, b.shape[1])
    norms = np.linalg.norm(v, axis=0)[b[0] > 10] if ok else np.array([0.0])
    ok = ok and np.abs(norms - 1).max() < 1e-4
    report(ok, f"{bvals} {b.shape}, {bvecs} {v.shape}: FSL layout, |g| - 1 at most {np.abs(norms - 1).max():.1e}")


def check_dti(prefix, ext, a):
    d = os.path.dirname(prefix)
    dwi, bvals, bvecs, mask = (a.dwi or os.path.join(d, "dwi.nii.gz"), a.bvals or os.path.join(d, "bvals"), a.bvecs or os.path.join(d, "bvecs"), a.mask or os.path.join(d, "mask.nii.gz"))
    if not all(os.path.exists(f) for f in (dwi, bvals, bvecs, mask)):
        print(f"skip  {prefix}_*: no dwi/bvals/bvecs/mask beside it (--dwi, --bvals, --bvecs, --mask)")
        return
    try:
        from dipy.core.gradients import gradient_table
        from dipy.io.gradients import read_bvals_bvecs
        from dipy.reconst.dti import TensorModel
    except ImportError:
        print(f"skip  {prefix}_*: dipy is not installed")
        return
    m = nib.load(mask).get_fdata() > 0
    bv, bvec = read_bvals_bvecs(bvals, bvecs)
    fit = TensorModel(gradient_table(bv, bvecs=bvec, b0_threshold=10), fit_method="WLS").fit(nib.load(dwi).get_fdata(), mask=m)
    get = lambda n: nib.load(f"{prefix}_{n}{ext}").get_fdata()
    keep = m & (get("L3") > 1.001e-6)
    fa, md, v1 = get("FA")[keep], get("MD")[keep], get("V1")[keep]
    dfa = np.abs(fa - fit.fa[keep]).max()
    dmd = (np.abs(md - fit.md[keep]) / np.abs(fit.md[keep])).max()
    aniso = fit.fa[keep] > 0.2
    dv1 = (1 - np.abs((v1 * fit.evecs[..., 0][keep]).sum(-1)))[aniso].max(initial=0.0)
    # float32 outputs of a float64 fit: 1e-4 is ~1000 ulps of FA and MD.
    report(dfa < 1e-4 and dmd < 1e-4 and dv1 < 1e-4, f"{prefix}_* vs DIPY WLS on {keep.sum()} voxels ({(m & ~keep).sum()} repaired left out): |dFA| {dfa:.1e}, MD rel {dmd:.1e}, V1 1-|cos| {dv1:.1e} (FA > 0.2)")


def check_bedpost(folder, ext):
    th = nib.load(os.path.join(folder, f"merged_th1samples{ext}")).get_fdata()
    ph = nib.load(os.path.join(folder, f"merged_ph1samples{ext}")).get_fdata()
    dy = nib.load(os.path.join(folder, f"dyads1{ext}")).get_fdata()
    mask = nib.load(os.path.join(folder, f"nodif_brain_mask{ext}")).get_fdata() > 0
    s = np.stack([np.sin(th) * np.cos(ph), np.sin(th) * np.sin(ph), np.cos(th)], -1)[mask]
    _, vec = np.linalg.eigh(np.einsum("nsi,nsj->nij", s, s))
    c = np.abs((vec[..., 2] * dy[mask]).sum(-1)).min()
    report(c > 1 - 1e-4, f"{folder}: dyads1 against merged_th1/ph1samples, smallest |cos| {c:.6f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", nargs="+")
    for o in ("ref", "dwi", "bvals", "bvecs", "mask"):
        ap.add_argument("--" + o)
    a = ap.parse_args()
    files = []
    for o in a.out:
        files += sorted(glob.glob(os.path.join(o, "**", "*"), recursive=True)) if os.path.isdir(o) else [o]
    niftis = [f for f in files if f.endswith((".nii", ".nii.gz"))]
    refp = find_ref(niftis + files, a.ref)
    ref = nib.load(refp) if refp and refp.endswith((".nii", ".nii.gz")) else None
    print(f"reference grid: {refp}")
    for p in niftis:
        if raw_header(p)["descrip"].tobytes().rstrip(b"\0") != b"neuroport":
            print(f"skip  {p}: not written by neuroport")
        else:
            check_nifti(p, ref, refp is not None and os.path.samefile(p, refp))
    for p in (f for f in files if f.endswith(".tck")):
        check_tck(p, ref)
    for p in (f for f in files if os.path.basename(f) == "bvecs"):
        if os.path.exists(os.path.join(os.path.dirname(p), "bvals")):
            check_gradients(os.path.join(os.path.dirname(p), "bvals"), p)
    for p in niftis:
        for ext in (".nii.gz", ".nii"):
            if p.endswith("_tensor" + ext) and os.path.exists(p[: -len("tensor" + ext)] + "FA" + ext):
                check_dti(p[: -len("_tensor" + ext)], ext, a)
            if os.path.basename(p) == "dyads1" + ext and os.path.exists(os.path.join(os.path.dirname(p), "merged_th1samples" + ext)):
                check_bedpost(os.path.dirname(p), ext)
    print(f"{failed} check(s) failed" if failed else "all checks passed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
