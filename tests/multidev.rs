//! One run split across several devices (`--backend cpu,cpu`, `cpu,opencl`; src/runtime/split.rs).
//!
//! Every item (voxel, fibre, streamline) is computed by exactly one device, keyed by its own
//! index, so: several devices of one kind give the bytes one gives (compared file by file
//! through the CLI); across kinds, each voxel's tensor and chain and each fibre equal, bit for
//! bit, what one of the two devices gives alone (stronger than the cross-backend tolerances,
//! and a misplaced chunk fails it); probtrack's OpenCL steps equal the CPU's exactly
//! (tests/probtrack_backends.rs), so its split equals the CPU run. A device made to fail after k
//! chunks (the NEUROPORT_SPLIT_FAIL hook) leaves the output unchanged, with a warning.

mod common;
use common::{run, s};
use neuroport::bedpost::{self, sim, Config as BpConfig};
use neuroport::geodesic::{self, seeding, Seed, TraceParams};
use neuroport::probtrack::{self, phantom, Config as PtConfig};
use neuroport::runtime::split::Split;
use neuroport::synth::gradient_table;
use neuroport::{dti, BackendSpec, Device, Inventory};
use std::path::Path;
use std::sync::Mutex;

/// PoCL's first initialisation is not thread-safe and tests run in parallel: discover serially.
static DISCOVER: Mutex<()> = Mutex::new(());

fn devices(spec: &str) -> Vec<Device> {
    let _g = DISCOVER.lock().unwrap_or_else(|e| e.into_inner());
    Inventory::discover(Some(2)).select_split(&spec.parse::<BackendSpec>().unwrap()).unwrap()
}

/// The CPU and the OpenCL device (PoCL here), or None where there is none (a failure under
/// NEUROPORT_REQUIRE_OPENCL=1).
fn cpu_and_opencl() -> Option<(Device, Device)> {
    let cl = {
        let _g = DISCOVER.lock().unwrap_or_else(|e| e.into_inner());
        common::opencl()?
    };
    Some((devices("cpu").remove(0), cl))
}

/// Item i of a component-major array (`ncomp` x n).
fn item<T: Copy>(v: &[T], ncomp: usize, n: usize, i: usize) -> Vec<T> {
    (0..ncomp).map(|c| v[c * n + i]).collect()
}

/// Every item of `mixed` equals, bit for bit, that item of one of the `runs`.
fn each_from_one<T: PartialEq + Copy + std::fmt::Debug>(mixed: &[T], runs: &[&[T]], ncomp: usize, what: &str) {
    let n = runs[0].len() / ncomp;
    assert_eq!(mixed.len(), runs[0].len(), "{what}");
    for i in 0..n {
        let m = item(mixed, ncomp, n, i);
        assert!(runs.iter().any(|r| item(r, ncomp, n, i) == m), "{what}: item {i} is {m:?}, none of {:?}", runs.iter().map(|r| item(r, ncomp, n, i)).collect::<Vec<_>>());
    }
}

#[test]
fn cpu_and_opencl_split_takes_each_voxel_and_fibre_from_one_of_them() {
    let Some((cpu, cl)) = cpu_and_opencl() else { return };
    let mixed = Split::new(vec![cpu.clone(), cl.clone()]).with_chunk(7);
    let g = gradient_table(3, 30, 1000.0);
    let (vol, mask) = sim::row(&sim::white_matter(60, 4), &g, 30.0, 5);
    let n = vol.nvox();

    // Tensor fit and scalar maps, per voxel.
    let fit = |s: &Split| dti::run_split(s, &vol, &g, &mask, false).unwrap().0;
    let (a, b, m) = (fit(&Split::one(cpu.clone())), fit(&Split::one(cl.clone())), fit(&mixed));
    each_from_one(&m.fit.tensor, &[&a.fit.tensor, &b.fit.tensor], 6, "tensor");
    each_from_one(&m.scalars, &[&a.scalars, &b.scalars], dti::NSCALARS, "scalars");
    assert_eq!(m.fit.flags, a.fit.flags);

    // Chains, per voxel: all 8 x nsamp samples of a voxel from one device, started from the
    // tensor fit of one device (the fit is split too): one of the four pairings run alone.
    let cfg = BpConfig { samples: 4, burnin: 30, thin: 2, seed: 3, ..BpConfig::default() };
    let pair = |fit: &Device, chain: &Device| {
        let (mut dk, mut bk) = (dti::kernels(fit).unwrap(), bedpost::kernels(chain, None).unwrap());
        bedpost::run(dk.as_mut(), bk.as_mut(), &vol, &g, &mask, &cfg).unwrap().samples
    };
    let pairs = [pair(&cpu, &cpu), pair(&cpu, &cl), pair(&cl, &cpu), pair(&cl, &cl)];
    let (m, shares) = bedpost::run_split(&mixed, None, &vol, &g, &mask, &cfg).unwrap();
    assert_eq!(shares.devices.iter().map(|s| s.chunks).sum::<usize>(), n.div_ceil(7));
    eprintln!("bedpost split: {shares}");
    each_from_one(&m.samples, &pairs.iter().map(|p| p.as_slice()).collect::<Vec<_>>(), bedpost::NPARAM * cfg.samples, "bedpost samples");
    assert_eq!(bedpost::run_split(&Split::one(cpu.clone()), None, &vol, &g, &mask, &cfg).unwrap().0.samples, pairs[0], "split of one = run");

    // Fibres through a synthetic tensor field, per fibre (points and summaries).
    let ds = neuroport::synth::dataset::build(&neuroport::synth::dataset::Spec::new([10, 10, 6], neuroport::synth::dataset::Model::Tensor)).unwrap();
    let dwi = neuroport::volume::Volume::from_flat(ds.geom.clone(), ds.table.len(), ds.dwi.clone());
    let tensor = dti::run_split(&Split::one(cpu.clone()), &dwi, &ds.table, &ds.mask, false).unwrap().0.fit.tensor;
    let (fields, _) = geodesic::prepare(&cpu, &tensor, &ds.geom, &ds.mask, None).unwrap();
    let mut r = neuroport::synth::rng(2);
    let pts = seeding::roi_points(&ds.mask, ds.geom.dims, Some(90), &mut r).unwrap();
    let seeds: Vec<Seed> = seeding::seeds_at(&pts, 1, seeding::Directions::Sphere, &ds.geom, &tensor, &mut r).unwrap();
    let p = TraceParams { step: 0.2, max_steps: 200, ..TraceParams::default() };
    let tr = |s: &Split| geodesic::trace_split(s, &fields, &seeds, &p, None, false).unwrap().0;
    let (a, b, m) = (tr(&Split::one(cpu.clone())), tr(&Split::one(cl.clone())), tr(&mixed));
    assert_eq!(m.len(), seeds.len());
    for i in 0..seeds.len() {
        let same = |x: &geodesic::FibreBatch| x.ends[i] == m.ends[i] && x.fibre(i) == m.fibre(i);
        assert!(same(&a) || same(&b), "fibre {i} is neither the CPU's nor the OpenCL device's");
    }

    // Streamlines: OpenCL's equal the CPU's exactly, so the split's totals do too.
    let t = phantom::crossing();
    let f = t.field(&t.angles(5, 20.0, 9));
    let pseeds: Vec<u32> = (0..t.geom.nvox() as u32).filter(|&v| t.sticks[v as usize].f[0] > 0.0 && v % 5 == 0).collect();
    let pc = PtConfig { nsamples: 6, max_steps: 300, seed: 4, ..PtConfig::default() };
    let pt = |s: &Split| probtrack::run_split(s, &f, &pseeds, &pc).unwrap().0;
    let (a, m) = (pt(&Split::one(cpu.clone())), pt(&Split::new(vec![cpu, cl]).with_chunk(97)));
    assert!(a.total_steps > 1000);
    assert_eq!((m.finished, m.total_steps, &m.kept, &m.lengths, &m.seed_targets, &m.visits), (a.finished, a.total_steps, &a.kept, &a.lengths, &a.seed_targets, &a.visits));
}

#[test]
fn two_opencl_workers_give_the_bytes_of_one() {
    // The same PoCL device listed twice (allowed for CPU-type devices: two contexts).
    let Some((_, cl)) = cpu_and_opencl() else { return };
    let two = Split::new(devices("opencl,opencl")).with_chunk(9);
    let g = gradient_table(3, 30, 1000.0);
    let (vol, mask) = sim::row(&sim::white_matter(40, 8), &g, 30.0, 9);
    let cfg = BpConfig { samples: 3, burnin: 20, thin: 2, seed: 1, ..BpConfig::default() };
    let one = bedpost::run_split(&Split::one(cl), None, &vol, &g, &mask, &cfg).unwrap().0;
    let (r, shares) = bedpost::run_split(&two, None, &vol, &g, &mask, &cfg).unwrap();
    assert_eq!(shares.devices.len(), 2);
    assert_eq!((r.samples, r.state), (one.samples, one.state));

    // Streamlines: each worker uploads only the sample volumes its ranges read (the rest NaN).
    // 11 streamlines per seed over 9 sample volumes, so ranges wrap past the last volume; chunks
    // of 97 and 1000 streamlines start and end inside volumes.
    let t = phantom::crossing();
    let f = t.field(&t.angles(9, 20.0, 9));
    let pseeds: Vec<u32> = (0..t.geom.nvox() as u32).filter(|&v| t.sticks[v as usize].f[0] > 0.0 && v % 7 == 0).collect();
    let pc = PtConfig { nsamples: 11, max_steps: 300, seed: 6, ..PtConfig::default() };
    let one = probtrack::run_split(&Split::one(devices("opencl").remove(0)), &f, &pseeds, &pc).unwrap().0;
    assert!(one.total_steps > 1000 && pseeds.len() * pc.nsamples > 2000, "{} steps, {} seeds", one.total_steps, pseeds.len());
    for chunk in [97, 1000] {
        let (m, shares) = probtrack::run_split(&Split::new(devices("opencl,opencl")).with_chunk(chunk), &f, &pseeds, &pc).unwrap();
        // Which worker takes which chunk is the threads' race (on a loaded runner one may take
        // all); either way each chunk's volumes must be on its device when it traces.
        assert_eq!(shares.devices.iter().map(|s| s.chunks).sum::<usize>(), (pseeds.len() * pc.nsamples).div_ceil(chunk), "{shares}");
        assert_eq!((m.finished, m.total_steps, &m.kept, &m.lengths, &m.seed_targets, &m.visits), (one.finished, one.total_steps, &one.kept, &one.lengths, &one.seed_targets, &one.visits), "chunk {chunk}");
    }
}

/// The four splitting commands on a small sticks phantom, with `backend` and extra environment;
/// returns every output file's name and bytes, and stderr.
fn pipeline(tmp: &Path, tag: &str, backend: &str, env: &[(&str, &str)]) -> (Vec<(String, Vec<u8>)>, String) {
    let d = tmp.join("data");
    if !d.exists() {
        let (code, _, err) = run(&["synth", "--model", "sticks", "--dims", "8,8,4", "--b0", "2", "--dirs", "12", "--out", s(&d)], &[]);
        assert_eq!(code, 0, "{err}");
    }
    let o = tmp.join(tag);
    let f = |n: &str| s(&d.join(n)).to_string();
    let out = |n: &str| s(&o.join(n)).to_string();
    let dwi = ["--dwi".to_string(), f("dwi.nii.gz"), "--bvals".into(), f("bvals"), "--bvecs".into(), f("bvecs")];
    let mut stderr = String::new();
    let mut go = |args: Vec<String>| {
        let mut a: Vec<&str> = vec!["--backend", backend, "--threads", "2"];
        a.extend(args.iter().map(|x| x.as_str()));
        let (code, _, err) = run(&a, env);
        assert_eq!(code, 0, "{backend} {args:?}: {err}");
        stderr += &err;
    };
    let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    go([v(&["dti"]), dwi.to_vec(), v(&["--mask", &f("mask.nii.gz"), "--out", &out("dti/")])].concat());
    go([v(&["bedpost"]), dwi.to_vec(), v(&["--mask", &f("mask.nii.gz"), "--burnin", "40", "--samples", "4", "--thin", "1", "--out", &out("bp")])].concat());
    go([v(&["track", "geodesic"]), dwi.to_vec(), v(&["--seeds", &f("mask.nii.gz"), "--dirs", "2", "--max-steps", "300", "--out", &out("fibres.tck")])].concat());
    go(v(&["probtrack", "--bedpost", &out("bp"), "--seeds", &f("mask.nii.gz"), "--nsamples", "12", "--out", &out("pt")]));
    let mut files = Vec::new();
    for sub in ["dti", "bp", "pt", ""] {
        let dir = o.join(sub);
        for n in common::entries(&dir) {
            let p = dir.join(&n);
            if p.is_file() {
                files.push((format!("{sub}/{n}"), std::fs::read(p).unwrap()));
            }
        }
    }
    (files, stderr)
}

#[test]
fn two_cpu_pools_write_the_bytes_of_one_cpu_and_survive_a_failing_pool() {
    let tmp = tempfile::tempdir().unwrap();
    let (one, _) = pipeline(tmp.path(), "one", "cpu", &[]);
    assert!(one.len() > 12 + 2 + 3 && one.iter().any(|f| f.0 == "pt/fdt_paths.nii.gz") && one.iter().any(|f| f.0 == "/fibres.tck"), "{:?}", one.iter().map(|f| &f.0).collect::<Vec<_>>());
    let chunk = [("NEUROPORT_SPLIT_CHUNK", "29")];
    let (two, err) = pipeline(tmp.path(), "two", "cpu,cpu", &chunk);
    assert_eq!(one.len(), two.len());
    for (a, b) in one.iter().zip(&two) {
        assert!(a == b, "{} differs between cpu and cpu,cpu", a.0);
    }
    // Each command's summary names both pools with their chunks and busy time.
    assert_eq!(err.lines().filter(|l| l.starts_with("split: ") && l.contains(" s; #0 cpu (1 thread") && !l.contains("1 threads")).count(), 4, "{err}");
    assert!(err.lines().filter(|l| l.starts_with("split:")).all(|l| l.contains("#1 cpu (1 thread") && !l.contains("1 threads") && l.contains("chunks, busy")), "{err}");

    // Pool 1 fails after one chunk: its chunk and the rest go to pool 0, same bytes, a warning.
    let (failed, err) = pipeline(tmp.path(), "failed", "cpu,cpu", &[chunk[0], ("NEUROPORT_SPLIT_FAIL", "1:1")]);
    assert!(one == failed, "a failed device changed the output");
    assert!(err.contains("warning: #1 cpu") && err.contains("its work goes to the other devices"), "{err}");
    assert!(err.contains("(failed, its work re-run on the others: stopped on purpose after 1 chunks"), "{err}");
    assert!(!err.contains("panicked"));
}

#[test]
fn a_run_whose_every_device_fails_is_an_error_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("data");
    let (code, _, err) = run(&["synth", "--dims", "6,6,4", "--dirs", "8", "--out", s(&d)], &[]);
    assert_eq!(code, 0, "{err}");
    let o = tmp.path().join("out");
    let f = |n: &str| s(&d.join(n)).to_string();
    // Alone, the one device that fails is the run's error; beside another, the other covers it.
    for (backend, env) in [("cpu", vec![("NEUROPORT_SPLIT_FAIL", "0:0")]), ("cpu,cpu", vec![("NEUROPORT_SPLIT_FAIL", "0:0"), ("NEUROPORT_SPLIT_CHUNK", "10")])] {
        let dir = o.join(backend);
        let (code, _, err) = run(&["--backend", backend, "dti", "--dwi", &f("dwi.nii.gz"), "--bvals", &f("bvals"), "--bvecs", &f("bvecs"), "--out", s(&dir.join("x"))], &env);
        if backend == "cpu" {
            assert_eq!(code, 1, "{err}");
            assert!(err.starts_with("error: tensor fit of") && err.contains("NEUROPORT_SPLIT_FAIL") && err.lines().count() == 1, "{err}");
            assert!(common::entries(&dir).is_empty(), "files left behind");
        } else {
            assert_eq!(code, 0, "{err}");
            assert!(err.contains("warning: #0 cpu"), "{err}");
        }
    }
}

#[test]
fn bad_device_lists_are_one_line_errors() {
    // Parse errors (clap: exit 2, the message on the first line).
    for (spec, want) in [("cpu,", "holds an empty entry"), ("cpu,,opencl", "holds an empty entry"), ("auto,cpu", "holds 'auto'"), ("cpu,gpu", "unknown backend 'gpu'")] {
        let (code, _, err) = run(&["devices", "--backend", spec], &[]);
        assert_eq!(code, 2, "{spec}: {err}");
        assert!(err.lines().next().unwrap_or("").starts_with("error: invalid value") && err.contains(want), "{spec}: {err}");
        assert!(!err.contains("panicked"));
    }
    // Resolution errors (exit 1, exactly one line), on a machine without CUDA. Devices are
    // resolved once the input has been read (discovery overlaps the read), so the input is real.
    let tmp = tempfile::tempdir().unwrap();
    let x = s(&tmp.path().join("x")).to_string();
    let d = tmp.path().join("d");
    let (code, _, err) = run(&["synth", "--dims", "6,6,4", "--dirs", "6", "--out", s(&d)], &[]);
    assert_eq!(code, 0, "{err}");
    let (dwi, bvals, bvecs) = (s(&d.join("dwi.nii.gz")).to_string(), s(&d.join("bvals")).to_string(), s(&d.join("bvecs")).to_string());
    let dti = |spec: &str| run(&["--backend", spec, "dti", "--dwi", &dwi, "--bvals", &bvals, "--bvecs", &bvecs, "--out", &x], &[("CUDA_VISIBLE_DEVICES", "")]);
    for (spec, want) in [("cuda:0,cpu", "no CUDA device cuda:0"), ("cpu,opencl:7:7", "no OpenCL device opencl:7:7"), ("all", "--backend all is for check, bench and reproduce")] {
        let (code, _, err) = dti(spec);
        assert_eq!(code, 1, "{spec}: {err}");
        assert!(err.starts_with("error: ") && err.contains(want) && err.lines().count() == 1, "{spec}: {err}");
    }
    let no_gpu = {
        let _g = DISCOVER.lock().unwrap_or_else(|e| e.into_inner());
        !Inventory::discover(None).infos().iter().any(|i| i.is_gpu)
    };
    if no_gpu {
        let (code, _, err) = dti("gpus");
        assert_eq!(code, 1);
        assert!(err.starts_with("error: --backend gpus: no GPU found") && err.lines().count() == 1, "{err}");
    }
    let img = s(&d.join("mask.nii.gz")).to_string();
    let (code, _, err) = run(&["--backend", "cpu,cpu", "register", "--moving", &img, "--fixed", &img, "--out", &x], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error: this command runs on one device") && err.lines().count() == 1, "{err}");
}

#[test]
fn bench_split_reports_each_device_count() {
    // The scaling benchmark on two CPU pools, its cheapest workload at quick scale.
    let (code, out, err) = run(&["--backend", "cpu,cpu", "--threads", "2", "bench", "split", "--scale", "quick", "--workloads", "probtrack", "--repeats", "1"], &[]);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("probtrack")).collect();
    assert_eq!(rows.len(), 2, "{out}");
    assert!(rows[0].contains(" 1 ") && rows[0].contains("100 %") && rows[1].contains(" 2 "), "{out}");
    let (code, _, err) = run(&["--backend", "cpu", "bench", "split", "--workloads", "nope"], &[]);
    assert_eq!(code, 1);
    assert!(err.starts_with("error: unknown workload 'nope'") && err.lines().count() == 1, "{err}");
}
