//! The tensor fit against known truth on the CPU and on OpenCL (PoCL in CI): noiseless recovery
//! to 1e-4, sensible FA/V1 at SNR 30, the FSL bvecs convention end to end, the repair rule, and
//! CPU-vs-OpenCL parity of every DTI kernel through `check::run_all`.

mod common;
use neuroport::runtime::columns::Columns;
use common::*;
use neuroport::check::{max_rel_err, run_all};
use neuroport::dti::{self, sym3, Design, FITTED, LAMBDA_FLOOR, REPAIRED};
use neuroport::runtime::{BackendSpec, Device, Inventory};
use neuroport::synth::{self, dataset};
use neuroport::volume::{geometry_of, read_nifti, write_nifti, GradientTable, Geometry};

/// CI sets NEUROPORT_REQUIRE_OPENCL=1 so a missing OpenCL device fails there instead of skipping.
fn opencl_required() -> bool {
    std::env::var("NEUROPORT_REQUIRE_OPENCL").map(|v| v == "1").unwrap_or(false)
}

/// The CPU and every OpenCL device present.
fn devices() -> Vec<Device> {
    let inv = Inventory::discover(Some(2));
    let mut v = vec![inv.open_cpu().unwrap()];
    if inv.opencl.is_empty() {
        assert!(!opencl_required(), "no OpenCL device but NEUROPORT_REQUIRE_OPENCL=1 ({:?})", inv.notes);
        eprintln!("no OpenCL device: OpenCL cases skipped");
    } else {
        v.extend(inv.select(&BackendSpec::All, true).unwrap().into_iter().filter(|d| matches!(d, Device::OpenCl(_))));
    }
    v
}

fn tensor_at(t: &[f32], nvox: usize, v: usize) -> [f64; 6] {
    std::array::from_fn(|e| t[e * nvox + v] as f64)
}

#[test]
fn noiseless_fit_recovers_known_tensors_to_1e4() {
    let nvox = 3000;
    // one shell with b=0 volumes, and two shells: both determine the tensor
    let tables = [synth::gradient_table(3, 30, 1000.0), synth::two_shell_table(1, 20), synth::gradient_table(1, 12, 2000.0)];
    for dev in devices() {
        for (seed, g) in [11u64, 12, 13].into_iter().zip(&tables) {
            let truth = synth::random_tensor_field(nvox, seed);
            let dwi = synth::simulate_dwi(&truth, 800.0, g, f64::INFINITY, 0);
            let mut k = dti::kernels(&dev).unwrap();
            let d = Design::new(g).unwrap();
            let fit = k.fit(Columns::whole(&dwi, d.ngrad), &vec![1u8; nvox], &d).unwrap();
            assert_eq!(fit.count(FITTED), nvox, "{}: every voxel fitted", dev.label());
            let err = max_rel_err(&fit.tensor, &truth);
            let s0_err = max_rel_err(&fit.s0, &vec![800.0; nvox]);
            eprintln!("{} ({} volumes): tensor max rel err {err:.2e}, S0 {s0_err:.2e}", dev.label(), g.len());
            assert!(err <= 1e-4, "{}: tensor error {err:e}", dev.label());
            assert!(s0_err <= 1e-4, "{}: S0 error {s0_err:e}", dev.label());
        }
    }
}

#[test]
fn snr30_phantom_gives_sensible_fa_and_v1() {
    let mut spec = dataset::Spec::new([32, 32, 12], dataset::Model::Tensor);
    spec.snr = 30.0;
    spec.seed = 4;
    let ds = dataset::build(&spec).unwrap();
    let nvox = ds.geom.nvox();
    let truth_t = &ds.truth.iter().find(|t| t.0 == "truth_tensor").unwrap().2;
    let truth_v1 = &ds.truth.iter().find(|t| t.0 == "truth_V1").unwrap().2;
    for dev in devices() {
        let mut k = dti::kernels(&dev).unwrap();
        let d = Design::new(&ds.table).unwrap();
        let fit = k.fit(Columns::whole(&ds.dwi, d.ngrad), &ds.mask, &d).unwrap();
        let sc = k.scalars(&fit.tensor).unwrap();
        let (mut fa_err, mut ang, mut md_err) = (Vec::new(), Vec::new(), Vec::new());
        for v in (0..nvox).filter(|&v| ds.mask[v] != 0) {
            let (lam, _) = sym3::eigen(&tensor_at(truth_t, nvox, v));
            md_err.push(((sc[nvox + v] as f64) - (lam[0] + lam[1] + lam[2]) / 3.0).abs() / ((lam[0] + lam[1] + lam[2]) / 3.0));
            if ds.wm[v] == 0 {
                continue;
            }
            fa_err.push((sc[v] as f64 - sym3::fractional_anisotropy(&lam)).abs());
            let a: [f64; 3] = std::array::from_fn(|c| sc[(2 + c) * nvox + v] as f64);
            let b: [f64; 3] = std::array::from_fn(|c| truth_v1[c * nvox + v] as f64);
            ang.push(synth::sticks::angle_deg(a, b));
        }
        let med = |x: &mut Vec<f64>| neuroport::runtime::timing::median(x);
        let (m_fa, m_ang, m_md) = (med(&mut fa_err), med(&mut ang), med(&mut md_err));
        let p90_ang = {
            ang.sort_by(f64::total_cmp);
            ang[ang.len() * 9 / 10]
        };
        eprintln!("{}: SNR 30, {} WM voxels: median |FA err| {m_fa:.3}, median V1 angle {m_ang:.2} deg (90th pct {p90_ang:.1}), median MD rel err {m_md:.3}", dev.label(), ang.len());
        assert!(fit.count(FITTED) + fit.count(REPAIRED) == ds.mask.iter().filter(|&&m| m != 0).count());
        assert!(m_fa < 0.05, "median FA error {m_fa}");
        assert!(m_ang < 5.0, "median V1 angle error {m_ang} deg");
        assert!(p90_ang < 12.0, "90th percentile V1 angle error {p90_ang} deg");
        assert!(m_md < 0.05, "median MD relative error {m_md}");
    }
}

/// One fibre along world direction `w` in an image with `affine` (3x3, voxel size included):
/// writes DWI + bvecs as a scanner would for that image (FSL convention written out by hand
/// here, not through the library), runs `neuroport dti`, and returns V1 in world axes through the
/// documented conversion `Geometry::bvecs_to_world`.
fn world_v1_through_cli(affine: [[f64; 3]; 3], w: [f64; 3], backend: &str, dir: &std::path::Path) -> ([f64; 3], [f64; 3]) {
    std::fs::create_dir_all(dir).unwrap();
    let mut h = Geometry::synthetic([3, 3, 3], [2.0; 3]).header;
    let row = |r: usize| [affine[r][0] as f32, affine[r][1] as f32, affine[r][2] as f32, 0.0];
    (h.srow_x, h.srow_y, h.srow_z) = (row(0), row(1), row(2));
    h.qform_code = 0;
    let geom = geometry_of(&h, [3, 3, 3]).unwrap();
    let det = geom.det();
    // rotation part R (columns normalised); image axes see world vectors as R^T x
    let len: [f64; 3] = std::array::from_fn(|c| (0..3).map(|r| affine[r][c] * affine[r][c]).sum::<f64>().sqrt());
    let rt = |x: [f64; 3]| -> [f64; 3] { std::array::from_fn(|c| (0..3).map(|r| affine[r][c] / len[c] * x[r]).sum()) };
    let world = synth::gradient_table(2, 24, 1000.0);
    // scanner bvecs: image axes, x negated when det > 0
    let bvecs: Vec<[f64; 3]> = world.bvecs.iter().map(|&g| rt(g)).map(|g| if det > 0.0 { [-g[0], g[1], g[2]] } else { g }).collect();
    // the tissue: a prolate tensor along w, in world axes; the signal does not depend on the frame
    let perp = { let p = [w[1], -w[0], 0.0]; let n = (p[0] * p[0] + p[1] * p[1]).sqrt(); p.map(|x| x / n) };
    let t = sym3::from_eigen([1.7e-3, 0.3e-3, 0.3e-3], w, perp);
    let nvox = 27;
    let mut dwi = vec![0.0f32; world.len() * nvox];
    for i in 0..world.len() {
        let s = synth::tensor_signal(&t, 1000.0, world.bvals[i], &world.bvecs[i]) as f32;
        dwi[i * nvox..(i + 1) * nvox].fill(s);
    }
    write_nifti(&dir.join("dwi.nii.gz"), &geom, world.len(), &dwi).unwrap();
    GradientTable::new(world.bvals.clone(), bvecs).unwrap().write_fsl(&dir.join("bvals"), &dir.join("bvecs")).unwrap();
    let (code, _, err) = run(
        &["dti", "--dwi", s(&dir.join("dwi.nii.gz")), "--bvals", s(&dir.join("bvals")), "--bvecs", s(&dir.join("bvecs")), "--out", s(&dir.join("dti")), "--backend", backend],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let v1 = read_nifti(&dir.join("dti_V1.nii.gz")).unwrap();
    assert_eq!(v1.geom.det().signum(), det.signum(), "outputs keep the input's affine");
    let raw: [f64; 3] = std::array::from_fn(|c| v1.frame(c)[13] as f64);
    (raw, v1.geom.bvecs_to_world(raw))
}

#[test]
fn fsl_bvecs_convention_gives_the_same_world_direction_for_either_determinant() {
    let tmp = tempfile::tempdir().unwrap();
    let w = { let v = [0.6, 0.64, 0.48f64]; let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt(); v.map(|x| x / n) };
    let (c, s30) = (30f64.to_radians().cos(), 30f64.to_radians().sin());
    // 2 mm voxels rotated 30 degrees about z; the second image stores x reversed (det < 0)
    let pos = [[2.0 * c, -2.0 * s30, 0.0], [2.0 * s30, 2.0 * c, 0.0], [0.0, 0.0, 2.0]];
    let neg = [[-2.0 * c, -2.0 * s30, 0.0], [-2.0 * s30, 2.0 * c, 0.0], [0.0, 0.0, 2.0]];
    let mut backends = vec!["cpu"];
    if devices().len() > 1 {
        backends.push("opencl");
    }
    for b in backends {
        let (raw_p, wp) = world_v1_through_cli(pos, w, b, &tmp.path().join(format!("pos_{b}")));
        let (raw_n, wn) = world_v1_through_cli(neg, w, b, &tmp.path().join(format!("neg_{b}")));
        let cos = |a: [f64; 3], b: [f64; 3]| (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]).abs();
        eprintln!("{b}: V1 as stored {raw_p:.4?} (det>0) {raw_n:.4?} (det<0); world {wp:.4?} {wn:.4?}; truth {w:.4?}");
        assert!(cos(wp, w) > 1.0 - 1e-5, "{b}: det > 0 image: world V1 {wp:?} vs {w:?}");
        assert!(cos(wn, w) > 1.0 - 1e-5, "{b}: det < 0 image: world V1 {wn:?} vs {w:?}");
        // FSL's frame is the radiological voxel frame: an image stored with x reversed has the
        // same stored V1, and the conversion (flip x when det > 0, then the rotation) maps both
        // to the truth. Skipping the flip would not:
        assert!(cos(raw_p, raw_n) > 1.0 - 1e-5, "{b}: stored V1 {raw_p:?} vs {raw_n:?}");
        let (cz, sz) = (30f64.to_radians().cos(), 30f64.to_radians().sin());
        let naive = [cz * raw_p[0] - sz * raw_p[1], sz * raw_p[0] + cz * raw_p[1], raw_p[2]];
        assert!(cos(naive, w) < 0.99, "{b}: the flip matters for this direction");
    }
}

#[test]
fn non_positive_definite_tensors_are_repaired_and_counted() {
    // Every other voxel: a tensor with a negative eigenvalue (what noise or artefacts give).
    let nvox = 400;
    let mut truth = synth::random_tensor_field(nvox, 5);
    let mut r = synth::rng(9);
    let mut bad = Vec::new();
    for v in (0..nvox).step_by(2) {
        let e1 = synth::unit_vector(&mut r);
        let h = if e1[0].abs() < 0.9 { [1.0, 0.0, 0.0] } else { [0.0, 1.0, 0.0] };
        let e2 = { let d = h[0] * e1[0] + h[1] * e1[1] + h[2] * e1[2]; let p: [f64; 3] = std::array::from_fn(|i| h[i] - d * e1[i]); let n = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt(); p.map(|x| x / n) };
        let t = sym3::from_eigen([1.5e-3, 0.4e-3, -0.3e-3], e1, e2);
        for e in 0..6 {
            truth[e * nvox + v] = t[e] as f32;
        }
        bad.push((v, e1));
    }
    let g = synth::gradient_table(3, 30, 1000.0);
    let dwi = synth::simulate_dwi(&truth, 1000.0, &g, f64::INFINITY, 0);
    for dev in devices() {
        let mut k = dti::kernels(&dev).unwrap();
        let d = Design::new(&g).unwrap();
        let fit = k.fit(Columns::whole(&dwi, d.ngrad), &vec![1u8; nvox], &d).unwrap();
        assert_eq!(fit.count(REPAIRED), nvox / 2, "{}", dev.label());
        assert_eq!(fit.count(FITTED), nvox / 2, "{}", dev.label());
        for &(v, e1) in &bad {
            assert_eq!(fit.flags[v], REPAIRED);
            let (lam, vec) = sym3::eigen(&tensor_at(&fit.tensor, nvox, v));
            // smallest eigenvalue raised to the floor, the others and the eigenvectors kept
            assert!((lam[2] - LAMBDA_FLOOR as f64).abs() < 2e-7, "{}: {lam:?}", dev.label());
            assert!((lam[0] - 1.5e-3).abs() < 2e-7 && (lam[1] - 0.4e-3).abs() < 2e-7, "{}: {lam:?}", dev.label());
            let v1 = sym3::v1(&vec);
            assert!(synth::sticks::angle_deg(v1, e1) < 0.01);
        }
    }

    // The command counts them in its summary.
    let tmp = tempfile::tempdir().unwrap();
    let geom = Geometry::synthetic([20, 20, 1], [2.0; 3]);
    write_nifti(&tmp.path().join("dwi.nii.gz"), &geom, g.len(), &dwi).unwrap();
    g.write_fsl(&tmp.path().join("bvals"), &tmp.path().join("bvecs")).unwrap();
    let p = |n: &str| tmp.path().join(n);
    let (code, _, err) = run(&["dti", "--dwi", s(&p("dwi.nii.gz")), "--bvals", s(&p("bvals")), "--bvecs", s(&p("bvecs")), "--out", s(&p("o")), "--backend", "cpu"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("400 fitted, 200 repaired"), "{err}");
}

#[test]
fn every_dti_kernel_matches_the_cpu_on_opencl() {
    let devs: Vec<Device> = devices().into_iter().filter(|d| !d.is_cpu()).collect();
    if devs.is_empty() {
        return;
    }
    let cpu = Inventory::discover(Some(2)).open_cpu().unwrap();
    for seed in [1u64, 20240611] {
        let rows = run_all(&devs, &cpu, seed);
        let names: Vec<&str> = rows.iter().map(|r| r.kernel.as_str()).collect();
        for k in ["dti_fit", "dti_scalars", "metric_inverse+metric_derivs", "metric_sharpen"] {
            assert!(names.contains(&k), "no check row for {k}: {names:?}");
        }
        for r in &rows {
            eprintln!("seed {seed} {} {}: max rel err {:.2e} (tol {:.0e}) {}", r.device, r.kernel, r.max_rel_err, r.tolerance, r.note);
            assert!(r.pass, "seed {seed}: {} on {} failed: {:e} > {:e} {}", r.kernel, r.device, r.max_rel_err, r.tolerance, r.note);
        }
    }
    // and on the CPU itself the registry checks the fit against ground truth
    let rows = run_all(std::slice::from_ref(&cpu), &cpu, 3);
    assert!(rows.iter().all(|r| r.pass), "{rows:?}");
}

/// Outside the mask every map is 0, as dtifit writes it and docs/conventions.md says: V1 read
/// (1, 0, 0) there (a zero tensor's eigenvectors are the identity's columns) while V2, V3 and
/// every scalar map read 0. Checked on the CPU and on OpenCL where present.
#[test]
fn every_map_is_zero_outside_the_mask() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    small_dataset(d, [12, 12, 6], 30.0, 2);
    let mask = read_nifti(&d.join("mask.nii.gz")).unwrap().into_flat();
    let outside = mask.iter().filter(|&&m| m == 0.0).count();
    assert!(outside > 0);
    let backends = if devices().iter().any(|d| !d.is_cpu()) { vec!["cpu", "opencl"] } else { vec!["cpu"] };
    for b in backends {
        let o = d.join(b);
        let (code, _, err) = run(&["dti", "--dwi", s(&d.join("dwi.nii.gz")), "--bvals", s(&d.join("bvals")), "--bvecs", s(&d.join("bvecs")), "--mask", s(&d.join("mask.nii.gz")), "--out", &format!("{}/", s(&o)), "--backend", b], &[]);
        assert_eq!(code, 0, "{b}: {err}");
        for m in ["tensor", "FA", "MD", "MO", "V1", "V2", "V3", "L1", "L2", "L3", "RGB", "S0"] {
            let v = read_nifti(&o.join(format!("dti_{m}.nii.gz"))).unwrap();
            let n = v.geom.nvox();
            let nvol = v.as_flat().len() / n;
            for c in 0..nvol {
                let bad = (0..n).filter(|&i| mask[i] == 0.0 && v.as_flat()[c * n + i] != 0.0).count();
                assert_eq!(bad, 0, "{b}: dti_{m} volume {c} is non-zero at {bad} of the {outside} voxels outside the mask");
            }
        }
        let v1 = read_nifti(&o.join("dti_V1.nii.gz")).unwrap().into_flat();
        let n = mask.len();
        let inside_unit = (0..n).filter(|&i| mask[i] != 0.0).all(|i| ((0..3).map(|c| v1[c * n + i].powi(2)).sum::<f32>() - 1.0).abs() < 1e-4);
        assert!(inside_unit, "{b}: V1 inside the mask is not unit length");
    }
}
