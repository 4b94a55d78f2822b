//! Registration of real T1 brain images (tests/data, see its README: the MNI ICBM152 2009a
//! symmetric template at 1 mm and the MNI avg152T1 brain at 2 mm, both averages of real
//! scans, skull-stripped), not only phantoms.
//!
//! (a) Same brain: the ICBM template (halved twice, to 4 mm, to keep CI's 2-core run short) against a copy
//! resampled trilinearly through a known 12-parameter affine; the mean displacement over the
//! brain must stay below the 0.5 mm. (b) Two different brains: avg152T1 (another
//! population, linear average, on an x-reversed 2 mm grid) moved by a known affine B and
//! registered to the ICBM template at 12 dof (both at 4 mm); both templates are in MNI space, so the right
//! answer is B up to the templates' own difference in shape, and the error must stay below
//! one 4 mm voxel (a sanity bound: a lost registration is off by centimetres).

use neuroport::register::affine::{self, Mat4};
use neuroport::register::{self, mean_displacement, params, pyramid, warp, CostKind, Dof, Options};
use neuroport::runtime::cpu::Cpu;
use neuroport::runtime::Device;
use neuroport::volume::{read_nifti, Volume};
use std::path::PathBuf;
use std::sync::Arc;

fn data(name: &str) -> Volume {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name);
    read_nifti(&p).unwrap_or_else(|e| panic!("{}: {e:#}", p.display()))
}

fn icbm_4mm() -> Volume {
    pyramid::halve(&pyramid::halve(&data("mni_icbm152_t1_tal_nlin_sym_09a_converted.nii.gz")))
}

fn brain(v: &Volume) -> Vec<u8> {
    let hi = v.as_flat().iter().fold(0.0f32, |a, &b| a.max(b));
    v.as_flat().iter().map(|&x| (x > 0.1 * hi) as u8).collect()
}

fn run(fixed: &Volume, moving: &Volume, dof: Dof, cost: CostKind) -> Mat4 {
    let mut k = register::kernels(&Device::Cpu(Arc::new(Cpu::new(None).unwrap()))).unwrap();
    let r = register::register(k.as_mut(), fixed, moving, &Options::new(dof, cost, 2), &mut |_| {}).unwrap();
    eprintln!("{dof:?} {cost:?}: {} evaluations, {:.2} ms each, cost {:.5}", r.evals, r.ms_per_eval(), r.cost);
    r.transform
}

#[test]
fn real_t1_against_a_known_affine_copy_of_itself() {
    let f = icbm_4mm();
    let truth = params::matrix(&[8.0, -6.0, 5.0, 7.0, -5.0, 9.0, 5.0, -4.0, 3.0, 2.0, -2.0, 1.0], [0.0; 3]);
    let moving = Volume::from_flat(f.geom.clone(), 1, warp(&f, &f.geom, &affine::inverse(&truth)));
    let t = run(&f, &moving, Dof::Affine, CostKind::Ncc);
    let e = mean_displacement(&t, &truth, &f.geom, &brain(&f));
    eprintln!("same brain, 12 dof NCC: {e:.3} mm");
    assert!(e < 0.5, "mean displacement {e:.3} mm");
}

#[test]
fn two_real_brains_at_12_dof() {
    let f = icbm_4mm();
    let mut m = pyramid::halve(&data("avg152T1_brain.nii.gz"));
    let b = params::matrix(&[-6.0, 9.0, 4.0, -6.0, 8.0, -5.0, 4.0, -3.0, 2.0, 0.0, 0.0, 0.0], [0.0; 3]);
    m.geom.affine = affine::mul(&b, &m.geom.affine);
    let t = run(&f, &m, Dof::Affine, CostKind::Ncc);
    let e = mean_displacement(&t, &b, &f.geom, &brain(&f));
    eprintln!("two brains, 12 dof NCC: {e:.3} mm from the placement");
    assert!(e < 4.0, "mean displacement {e:.3} mm from the placement");
}
