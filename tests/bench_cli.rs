//! `neuroport bench` options that ask for a grid the benchmark cannot be built on: one `error:`
//! line naming the option, never a panic or an allocation abort.

mod common;
use common::run;

/// `bench fim --example 1 --n 0` panicked (index out of bounds in fim::repro::constant, with a
/// backtrace), `--example 3 --dims 0,0,0` likewise, and `--n 100000` aborted on a 1 PB allocation.
#[test]
fn bench_fim_refuses_empty_and_huge_grids() {
    for (args, want) in [
        (&["--example", "1", "--n", "0"][..], "error: --n 0: every axis needs at least 1 voxel"),
        (&["--example", "2", "--n", "0"][..], "error: --n 0: every axis needs at least 1 voxel"),
        (&["--example", "3", "--dims", "0,4,4"][..], "error: --dims 0,4,4: every axis needs at least 1 voxel"),
        (&["--example", "1", "--n", "100000"][..], "error: --n 100000: too large a grid"),
        (&["--example", "3", "--dims", "100000,100000,100000"][..], "error: --dims 100000,100000,100000: too large a grid"),
    ] {
        let mut a = vec!["bench", "fim", "--backend", "cpu", "--repeats", "1"];
        a.extend_from_slice(args);
        let (code, _, err) = run(&a, &[("RUST_BACKTRACE", "1")]);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.starts_with(want) && err.trim_end().lines().count() == 1, "{args:?}: {err}");
    }
    // The smallest grids still run.
    let (code, out, err) = run(&["bench", "fim", "--backend", "cpu", "--repeats", "1", "--example", "1", "--n", "1"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("example 1: 1^3 constant"), "{out}");
    // The header names the options' values as they are typed (it printed "solver Fim, validity
    // Index, local solver Exact", names --solver and the others refuse).
    assert!(out.contains("solver fim, validity index, local solver exact"), "{out}");
}

/// `bench dti --voxels 100000000000000`, `bench geodesic --dims 100000,100000,100000` and
/// `bench register --dims 100000,100000,1000` aborted with 'memory allocation of ... bytes failed'
/// and a backtrace (exit 134); each is now one error line naming the option, exit 1.
#[test]
fn bench_sizes_beyond_memory_are_errors_not_aborts() {
    for (args, want) in [
        (&["dti", "--voxels", "100000000000000"][..], "error: --voxels 100000000000000: too large"),
        (&["geodesic", "--fibres", "16", "--cpu-fibres", "16", "--dims", "100000,100000,100000"][..], "error: --dims 100000,100000,100000: too large"),
        (&["register", "--dims", "100000,100000,1000"][..], "error: --dims 100000,100000,1000: too large"),
    ] {
        let mut a = vec!["bench"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--backend", "cpu", "--repeats", "1"]);
        let (code, _, err) = run(&a, &[("RUST_BACKTRACE", "1")]);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.starts_with(want) && err.trim_end().lines().count() == 1, "{args:?}: {err}");
    }
}

/// `bench layer --bytes 100000000000000` printed its table's header, then the size error from
/// inside the device loop; the size is now refused before anything is printed.
#[test]
fn bench_layer_refuses_its_size_before_printing() {
    let (code, out, err) = run(&["bench", "layer", "--bytes", "100000000000000"], &[("RUST_BACKTRACE", "1")]);
    assert_eq!(code, 1, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.starts_with("error: --bytes 100000000000000: too large") && err.trim_end().lines().count() == 1, "{err}");
}

/// `bench probtrack --threshold 2` said '--curvature is a cosine' (probtrack's option, not this
/// command's), and `--step 1000` (voxels, as its help says) said '--step 2000 mm is longer than
/// the image'; both now name bench probtrack's own option in its own unit.
#[test]
fn bench_probtrack_names_its_own_options() {
    for (args, want) in [
        (&["--threshold", "2"][..], "error: --threshold is a cosine: between -1 and 1, not 2"),
        (&["--step", "0"][..], "error: --step must be a positive number of voxels, not 0"),
        (&["--step", "1000"][..], "error: --step 1000 voxels is longer than the stand-in grid (12x22x22 voxels)"),
    ] {
        let mut a = vec!["bench", "probtrack", "--backend", "cpu", "--quick", "--repeats", "1", "--cpu-every", "50"];
        a.extend_from_slice(args);
        let (code, _, err) = run(&a, &[]);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.starts_with(want) && err.trim_end().lines().count() == 1, "{args:?}: {err}");
    }
}

/// `bench fim --backend opencl --example 1 --n 8 --inner 100000000` ran for minutes on PoCL (each
/// active block looped 10^8 times a launch; past 2^31 the count wrapped as the kernels' int); any
/// --inner above 64 is now refused before the solve, on every device.
#[test]
fn bench_fim_refuses_an_inner_count_beyond_64() {
    let (code, _, err) = run(&["bench", "fim", "--backend", "cpu", "--example", "1", "--n", "8", "--repeats", "1", "--inner", "100000000"], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("error: --inner must be 0 (the device's choice) to 64 Jacobi updates per block, not 100000000") && err.trim_end().lines().count() == 1, "{err}");
    let (code, _, err) = run(&["bench", "fim", "--backend", "cpu", "--example", "1", "--n", "8", "--repeats", "1", "--inner", "64"], &[]);
    assert_eq!(code, 0, "{err}");
}

/// `bench nifti --cores 0` printed a row for "0 cores" (rayon's default pool: every core) and
/// `--repeats 0` measured once anyway; both are now refused.
#[test]
fn bench_nifti_refuses_zero_cores_and_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("v.nii");
    std::fs::write(&input, common::raw_nifti(&[4, 4, 4], 16, 32, &[0u8; 256])).unwrap();
    for (args, want) in [(&["--cores", "1,0"][..], "error: --cores takes core counts from 1 to 1024, not 0"), (&["--repeats", "0"][..], "error: --repeats must be positive")] {
        let mut a = vec!["bench", "nifti", "--input", common::s(&input)];
        a.extend_from_slice(args);
        let (code, out, err) = run(&a, &[]);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(err.starts_with(want) && out.is_empty(), "{args:?}: {out}{err}");
    }
}

/// `bench layer --backend cpu` printed the table's header and footer with no row between and
/// exited 0 (the CPU backend has no GPU layer to time); it is now one error line, exit 1.
#[test]
fn bench_layer_refuses_the_cpu_backend() {
    let (code, out, err) = run(&["bench", "layer", "--backend", "cpu", "--launches", "10", "--bytes", "4"], &[("RUST_BACKTRACE", "1")]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.starts_with("error: bench layer times the GPU host layer, which --backend cpu does not have") && err.trim_end().lines().count() == 1, "{err}");
}

/// `bench nifti --cores 2,1` labelled the second row's speed-up "x one core" though it was taken
/// against the first row, 2 cores; the label now names the first row's count.
#[test]
fn bench_nifti_speedup_names_the_first_core_count() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("v.nii");
    std::fs::write(&input, common::raw_nifti(&[4, 4, 4], 16, 32, &[0u8; 256])).unwrap();
    let scratch = dir.path().to_str().unwrap();
    let (code, out, err) = run(&["bench", "nifti", "--input", common::s(&input), "--scratch", scratch, "--repeats", "1", "--cores", "2,1"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    let row = out.lines().find(|l| l.starts_with("write .nii.gz   1 cores")).unwrap_or_else(|| panic!("{out}"));
    assert!(row.ends_with("x 2 cores") && !out.contains("one core"), "{out}");
    let (code, out, err) = run(&["bench", "nifti", "--input", common::s(&input), "--scratch", scratch, "--repeats", "1", "--cores", "1,2"], &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.lines().any(|l| l.starts_with("write .nii.gz   2 cores") && l.ends_with("x one core")), "{out}");
}

/// `bench nifti --scratch DIR/missing/deeper` created both folders, ran, and left them behind; a
/// scratch folder that does not exist is now refused, and nothing is created.
#[test]
fn bench_nifti_refuses_a_missing_scratch_folder() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("v.nii");
    std::fs::write(&input, common::raw_nifti(&[4, 4, 4], 16, 32, &[0u8; 256])).unwrap();
    let scratch = dir.path().join("missing").join("deeper");
    let (code, out, err) = run(&["bench", "nifti", "--input", common::s(&input), "--scratch", common::s(&scratch), "--repeats", "1"], &[("RUST_BACKTRACE", "1")]);
    assert_eq!(code, 1, "{out}{err}");
    let want = format!("error: --scratch {}: no such folder", scratch.display());
    assert!(err.starts_with(&want) && err.trim_end().lines().count() == 1, "{err}");
    assert!(out.is_empty() && !dir.path().join("missing").exists(), "{out}");
}

/// `bench layer`'s last two columns were headed "pin up" and "pin down" with no unit, though every
/// other rate column names its own; they are GB/s like "up GB/s" and now say so.
#[test]
fn bench_layer_names_the_pinned_columns_unit() {
    let (code, out, err) = run(&["bench", "layer", "--backend", "opencl", "--launches", "10", "--bytes", "4"], &[]);
    if code == 1 && err.contains("no OpenCL") {
        assert!(std::env::var("NEUROPORT_REQUIRE_OPENCL").map_or(true, |v| v != "1"), "no OpenCL device but NEUROPORT_REQUIRE_OPENCL=1: {err}");
        eprintln!("skipped: no OpenCL device");
        return;
    }
    assert_eq!(code, 0, "{out}{err}");
    let header = out.lines().next().unwrap_or_default();
    assert!(header.ends_with("   pin up GB/s  pin down GB/s"), "{out}");
}

/// `bench split --workloads geodesic,geodesic` ran geodesic twice and printed two rows alike, and
/// `bench register --costs sad,sad` likewise; every bench list of things to time (--workloads,
/// --costs, --variant, --compaction, --cores) now refuses a repeated value before any run.
#[test]
fn bench_lists_refuse_a_value_given_twice() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("v.nii");
    std::fs::write(&input, common::raw_nifti(&[4, 4, 4], 16, 32, &[0u8; 256])).unwrap();
    for (args, want) in [
        (&["split", "--backend", "cpu", "--scale", "quick", "--repeats", "1", "--workloads", "geodesic,probtrack,geodesic"][..], "error: --workloads lists geodesic twice: give each value once"),
        (&["register", "--backend", "cpu", "--dims", "8,8,8", "--evals", "1", "--repeats", "1", "--costs", "sad,ncc,sad"][..], "error: --costs lists sad twice: give each value once"),
        (&["bedpost", "--backend", "cpu", "--voxels", "8", "--loops", "1", "--repeats", "1", "--variant", "warp,warp,warp"][..], "error: --variant lists warp 3 times: give each value once"),
        (&["probtrack", "--backend", "cpu", "--quick", "--repeats", "1", "--compaction", "host,host"][..], "error: --compaction lists host twice: give each value once"),
        (&["nifti", "--input", common::s(&input), "--repeats", "1", "--cores", "1,1"][..], "error: --cores lists 1 twice: give each value once"),
    ] {
        let mut a = vec!["bench"];
        a.extend_from_slice(args);
        let (code, out, err) = run(&a, &[("RUST_BACKTRACE", "1")]);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(out.is_empty() && err.starts_with(want) && err.trim_end().lines().count() == 1, "{args:?}: {out}{err}");
    }
}
