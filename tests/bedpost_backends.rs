//! The OpenCL kernels (PoCL in CI) against the CPU reference, statistically: chains from
//! *different* seeds on both backends are independent draws from the same posterior, so their
//! posterior means must agree within Monte-Carlo error. And determinism: the same seed gives
//! the same bits, whatever the chunking or the CPU thread count.

use neuroport::bedpost::{self, Config, Variant, BedpostResult, D, F1, F2, NPARAM, S0};
use neuroport::dti;
use neuroport::runtime::{BackendSpec, Device, Inventory};
use neuroport::synth::gradient_table;
use neuroport::bedpost::sim;

mod common;
use common::opencl;

fn cpu(threads: Option<usize>) -> Device {
    Inventory::discover(threads).select_one(&BackendSpec::Cpu).unwrap()
}

fn sample(dev: &Device, variant: Option<Variant>, n: usize, cfg: &Config) -> BedpostResult {
    let g = gradient_table(4, 64, 1000.0);
    let (vol, mask) = sim::row(&sim::white_matter(n, 21), &g, 30.0, 22);
    let mut dk = dti::kernels(dev).unwrap();
    let mut bk = bedpost::kernels(dev, variant).unwrap();
    bedpost::run(dk.as_mut(), bk.as_mut(), &vol, &g, &mask, cfg).unwrap()
}

/// Effective sample size of one chain by Geyer's initial positive sequence: the autocorrelation
/// time tau = -1 + 2 sum of the pair sums rho(2m) + rho(2m+1) while they stay positive; n / tau,
/// between 1 and n.
fn ess(x: &[f64]) -> f64 {
    let n = x.len();
    let m = x.iter().sum::<f64>() / n as f64;
    let c0 = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n as f64;
    if c0 == 0.0 {
        return n as f64;
    }
    let rho = |k: usize| (0..n - k).map(|i| (x[i] - m) * (x[i + k] - m)).sum::<f64>() / n as f64 / c0;
    let mut tau = -1.0;
    let mut k = 0;
    while k + 1 < n {
        let pair = rho(k) + rho(k + 1);
        if pair <= 0.0 {
            break;
        }
        tau += 2.0 * pair;
        k += 2;
    }
    (n as f64 / tau.max(1.0)).clamp(1.0, n as f64)
}

/// Per voxel and quantity (f1 + f2, d, S0): posterior mean and its squared Monte-Carlo standard
/// error (variance / effective sample size of that chain).
fn moments(r: &BedpostResult) -> Vec<[(f64, f64); 3]> {
    let (n, ns) = (r.voxels.len(), r.nsamp);
    let at = |k: usize, s: usize, v: usize| r.samples[(k * ns + s) * n + v] as f64;
    (0..n)
        .map(|v| {
            let q = |f: &dyn Fn(usize) -> f64| {
                let x: Vec<f64> = (0..ns).map(f).collect();
                let m = x.iter().sum::<f64>() / ns as f64;
                let var = x.iter().map(|s| (s - m).powi(2)).sum::<f64>() / (ns - 1) as f64;
                (m, var / ess(&x))
            };
            [q(&|s| at(F1, s, v) + at(F2, s, v)), q(&|s| at(D, s, v)), q(&|s| at(S0, s, v))]
        })
        .collect()
}

/// Two-sided z beyond which a voxel counts as an outlier: P(|Z| > 3.29) = 0.1 % for two
/// independent chains of one posterior, so nearly every outlier is a real disagreement.
const Z: f64 = 3.29;
/// Share of outlier voxels allowed per quantity. Estimating the effective sample size from 50
/// autocorrelated samples is itself noisy (its relative error is ~1/sqrt(ess) ~ 30 %, which
/// turns a 3.29 threshold into ~2.5 for some voxels: ~1 % tail each); 4 % of 128 voxels is 5,
/// against the ~1.3 such noise predicts, and the CPU-vs-CPU yardstick is held to it too.
const MAX_SHARE: f64 = 0.04;

/// Share of voxels whose posterior means differ by more than Z combined standard errors, per
/// quantity.
fn outliers(a: &[[(f64, f64); 3]], b: &[[(f64, f64); 3]]) -> [f64; 3] {
    std::array::from_fn(|q| a.iter().zip(b).filter(|(x, y)| (x[q].0 - y[q].0).abs() > Z * (x[q].1 + y[q].1).sqrt() + 1e-12).count() as f64 / a.len() as f64)
}

/// Mean over voxels of b - a per quantity, in units of its standard error (the voxels' chains
/// are independent: the squared errors add).
fn shifts(a: &[[(f64, f64); 3]], b: &[[(f64, f64); 3]]) -> [f64; 3] {
    std::array::from_fn(|q| {
        let d: f64 = a.iter().zip(b).map(|(x, y)| y[q].0 - x[q].0).sum();
        let se: f64 = a.iter().zip(b).map(|(x, y)| x[q].1 + y[q].1).sum::<f64>().sqrt();
        d / se
    })
}

/// Chains long enough for their autocorrelation to be estimated: 200 samples 5 loops apart
/// (bedpost's default 50 x 2 are too few for Geyer's estimate: it truncates early on noise and
/// overstates the effective sample size).
fn long() -> Config {
    Config { samples: 200, thin: 5, ..Config::default() }
}

#[test]
fn opencl_posterior_means_agree_with_the_cpu_within_monte_carlo_error() {
    let Some(cl) = opencl() else { return };
    let n = 128;
    let a = moments(&sample(&cpu(None), None, n, &Config { seed: 1, ..long() }));
    let control = moments(&sample(&cpu(None), None, n, &Config { seed: 3, ..long() }));
    // The yardstick: two CPU chains from different seeds must pass the same statistic, or the
    // statistic (not the device) is wrong.
    let (c, cs) = (outliers(&a, &control), shifts(&a, &control));
    eprintln!("CPU seed vs CPU seed: outlier shares (f1+f2, d, S0) {c:?}, mean shifts in standard errors {cs:?}");
    assert!(c.iter().all(|&x| x <= MAX_SHARE) && cs.iter().all(|s| s.abs() < 4.0), "CPU vs CPU: {c:?} {cs:?}");
    for v in [Variant::default_for(cl.info()), Variant::Warp] {
        let raw = sample(&cl, Some(v), n, &Config { seed: 2, ..long() });
        assert!(raw.samples.iter().all(|x| x.is_finite()), "{}: non-finite samples", v.name());
        let b = moments(&raw);
        let (o, s) = (outliers(&a, &b), shifts(&a, &b));
        eprintln!("{}: outlier shares (f1+f2, d, S0) {o:?}, mean shifts in standard errors {s:?}", v.name());
        assert!(o.iter().all(|&x| x <= MAX_SHARE), "{}: posterior means disagree beyond Monte-Carlo error in {o:?} of voxels (CPU vs CPU: {c:?})", v.name());
        // no systematic shift of f1 + f2, d or S0: the mean over 128 voxels within 4 standard
        // errors (P = 6e-5 by chance)
        assert!(s.iter().all(|x| x.abs() < 4.0), "{}: mean shifts of (f1+f2, d, S0) {s:?} standard errors", v.name());
    }
}

#[test]
fn same_seed_same_bits_whatever_the_chunks_and_threads() {
    let cfg = Config { samples: 10, burnin: 40, thin: 2, seed: 5, ..Config::default() };
    let n = 61;
    let one = sample(&cpu(Some(1)), None, n, &cfg);
    let two = sample(&cpu(Some(2)), None, n, &cfg);
    assert_eq!(one.samples, two.samples, "CPU thread count changed the chains");
    assert_eq!(one.state, two.state);
    let other = sample(&cpu(None), None, n, &Config { seed: 6, ..cfg.clone() });
    assert_ne!(one.samples, other.samples, "another seed gave the same chains");
    assert!(one.samples.len() == NPARAM * 10 * n && one.samples.iter().all(|x| x.is_finite()));

    let Some(cl) = opencl() else { return };
    let whole = sample(&cl, None, n, &cfg);
    let again = sample(&cl, None, n, &cfg);
    let chunked = sample(&cl, None, n, &Config { max_chunk: Some(16), ..cfg.clone() });
    assert_eq!(whole.samples, again.samples, "same seed, different samples");
    assert_eq!(whole.samples, chunked.samples, "chunking changed the chains");
    assert_eq!(whole.acceptance, chunked.acceptance);
}
