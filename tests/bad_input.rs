//! Each bad input of issue 2 item 4 through `neuroport dti --backend cpu`: a non-zero exit, ONE
//! line on stderr starting with "error:" that names the file and the problem (no panic message,
//! no backtrace even with RUST_BACKTRACE=1), and no file left in the output folder.

mod common;
use common::*;
use neuroport::volume::{read_nifti, write_nifti, Geometry};
use std::path::{Path, PathBuf};

struct Case {
    name: &'static str,
    dwi: PathBuf,
    bvals: PathBuf,
    bvecs: PathBuf,
    mask: Option<PathBuf>,
    /// The file the message must name.
    names: PathBuf,
    /// Words the message must contain (lower case).
    says: &'static [&'static str],
}

fn expect_clean_failure(c: &Case, outdir: &Path) {
    std::fs::create_dir_all(outdir).unwrap();
    let prefix = outdir.join("dti");
    let mut args = vec!["dti", "--dwi", s(&c.dwi), "--bvals", s(&c.bvals), "--bvecs", s(&c.bvecs), "--out", s(&prefix), "--backend", "cpu"];
    if let Some(m) = &c.mask {
        args.extend(["--mask", s(m)]);
    }
    let (code, stdout, stderr) = run(&args, &[("RUST_BACKTRACE", "1")]);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_ne!(code, 0, "{}: exit code 0; stderr: {stderr}", c.name);
    assert_eq!(lines.len(), 1, "{}: want one line on stderr, got:\n{stderr}", c.name);
    let line = lines[0];
    assert!(line.starts_with("error: "), "{}: {line}", c.name);
    for bad in ["panicked", "backtrace", "stack backtrace", "RUST_BACKTRACE"] {
        assert!(!stderr.contains(bad), "{}: {stderr}", c.name);
    }
    assert!(line.contains(s(&c.names)), "{}: the message does not name {}: {line}", c.name, c.names.display());
    let low = line.to_lowercase();
    for w in c.says {
        assert!(low.contains(w), "{}: the message lacks '{w}': {line}", c.name);
    }
    assert!(stdout.trim().is_empty(), "{}: printed on stdout: {stdout}", c.name);
    eprintln!("{:<28} {line}", c.name);
    assert_eq!(entries(outdir), Vec::<String>::new(), "{}: files left in the output folder", c.name);
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn every_bad_input_is_one_clean_error_and_leaves_no_file() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("data");
    std::fs::create_dir_all(&d).unwrap();
    small_dataset(&d, [8, 8, 5], 30.0, 3);
    let dwi = d.join("dwi.nii.gz");
    let (bvals, bvecs, mask) = (d.join("bvals"), d.join("bvecs"), d.join("mask.nii.gz"));
    let good = read_nifti(&dwi).unwrap();
    let nvol = good.nvol();
    let raw = std::fs::read(&dwi).unwrap();

    // An uncompressed copy, for the .nii cases.
    let nii = d.join("dwi.nii");
    write_nifti(&nii, &good.geom, nvol, good.as_flat()).unwrap();
    let nii_bytes = std::fs::read(&nii).unwrap();
    assert_eq!(nii_bytes.len(), 352 + 4 * good.as_flat().len());

    // Unsupported voxel types, headers written by hand: complex64 (8 bytes a voxel), RGB24 (3).
    let dims4 = [8u16, 8, 5, nvol as u16];
    let nvals: usize = dims4.iter().map(|&x| x as usize).product();
    let complex = write(&d, "complex.nii", &raw_nifti(&dims4, 32, 64, &vec![0u8; 8 * nvals]));
    let rgb = write(&d, "rgb.nii.gz", &gz(&raw_nifti(&dims4, 128, 24, &vec![7u8; 3 * nvals])));
    let f128 = write(&d, "float128.nii", &raw_nifti(&dims4, 1536, 128, &vec![0u8; 16 * nvals]));
    let unknown = write(&d, "unknown_type.nii", &raw_nifti(&dims4, 99, 32, &vec![0u8; 4 * nvals]));
    let bitpix = write(&d, "bitpix.nii", &raw_nifti(&dims4, 16, 8, &vec![0u8; nvals]));
    // A 4-D header of one volume (as DIPY's S0_10slices.nii.gz): "this is 3-D" misread it.
    let one_vol = write(&d, "one_volume.nii", &raw_nifti(&[8, 8, 5, 1], 16, 32, &vec![0u8; 4 * 8 * 8 * 5]));
    let five_d = write(&d, "five_d.nii", &raw_nifti(&[8, 8, 5, nvol as u16, 2], 16, 32, &vec![0u8; 8 * nvals]));
    let text = write(&d, "text.nii.gz", b"this is not a NIfTI file\n");
    let zeros = write(&d, "zeros.nii", &[0u8; 400]);
    // Short files that are not NIfTI at all (a bvals file given as the DWI, an MRtrix .mif
    // header whose voxels lie in a .dat beside it): they used to be called "truncated".
    let bvals_as_dwi = write(&d, "bvals_as_dwi.nii", b"0 1000 1000 1000 1000\n");
    let mif = write(&d, "dwi.mif", b"mrtrix image\ndim: 8,8,5,23\nvox: 2,2,2,nan\nlayout: +0,+1,+2,+3\ndatatype: Float32LE\nfile: dwi.dat\nEND\n");

    // Truncations: inside the data, inside the header, and of the compressed stream.
    let trunc_gz = write(&d, "trunc.nii.gz", &raw[..raw.len() / 2]);
    let trunc_gz_hdr = write(&d, "trunc_hdr.nii.gz", &raw[..30]);
    let trunc_nii = write(&d, "trunc.nii", &nii_bytes[..nii_bytes.len() - 100]);
    let trunc_nii_hdr = write(&d, "trunc_hdr.nii", &nii_bytes[..200]);
    let empty = write(&d, "empty.nii.gz", b"");
    // A corrupt header promising 30000^3 x nvol float32 voxels (~1e14 bytes) in a small file:
    // allocating that aborted the process ("memory allocation failed", a backtrace).
    let huge_dims = [30000u16, 30000, 30000, nvol as u16];
    let huge_nii = write(&d, "huge.nii", &raw_nifti(&huge_dims, 16, 32, &nii_bytes[352..]));
    let huge_gz = write(&d, "huge.nii.gz", &gz(&raw_nifti(&huge_dims, 16, 32, &nii_bytes[352..])));

    // Gradient files: counts and contents.
    let bvals_text = std::fs::read_to_string(&bvals).unwrap();
    let short_vals: Vec<&str> = bvals_text.split_whitespace().skip(1).collect();
    let bvals_short = write(&d, "bvals_short", short_vals.join(" ").as_bytes());
    let bvecs_rows: Vec<Vec<&str>> = std::fs::read_to_string(&bvecs).unwrap().leak().lines().map(|l| l.split_whitespace().collect()).collect();
    let short_vecs: Vec<String> = bvecs_rows.iter().map(|r| r[1..].join(" ")).collect();
    let bvecs_short = write(&d, "bvecs_short", short_vecs.join("\n").as_bytes());
    let bvals_words = write(&d, "bvals_words", format!("{} abc\n", short_vals.join(" ")).as_bytes());
    // the last volume is diffusion-weighted: a NaN direction there stays an error
    let mut bad_vec: Vec<Vec<&str>> = bvecs_rows.clone();
    *bad_vec[1].last_mut().unwrap() = "nan";
    let bvecs_nan = write(&d, "bvecs_nan", bad_vec.iter().map(|r| r.join(" ")).collect::<Vec<_>>().join("\n").as_bytes());
    let bvecs_two_rows = write(&d, "bvecs_two_rows", bvecs_rows[..2].iter().map(|r| r.join(" ")).collect::<Vec<_>>().join("\n").as_bytes());
    let bvals_empty = write(&d, "bvals_empty", b"\n\n");
    let bvals_negative = write(&d, "bvals_negative", format!("-5 {}\n", short_vals.join(" ")).as_bytes());
    // all directions along x: the table cannot determine a tensor
    let n = nvol;
    let collinear = write(&d, "bvecs_collinear", format!("{}\n{}\n{}\n", vec!["1"; n].join(" "), vec!["0"; n].join(" "), vec!["0"; n].join(" ")).as_bytes());
    // b = 0 everywhere
    let all_b0 = write(&d, "bvals_all_zero", vec!["0"; n].join(" ").as_bytes());

    // Masks: another grid, and a 4-D one.
    let other = d.join("mask_other_grid.nii.gz");
    write_nifti(&other, &Geometry::synthetic([8, 8, 6], [2.0; 3]), 1, &vec![1.0; 8 * 8 * 6]).unwrap();

    let missing = d.join("missing.nii.gz");
    let case = |name, dwi: &PathBuf, names: &PathBuf, says| Case {
        name,
        dwi: dwi.clone(),
        bvals: bvals.clone(),
        bvecs: bvecs.clone(),
        mask: None,
        names: names.clone(),
        says,
    };
    let mut cases = vec![
        case("missing DWI", &missing, &missing, &["no such file"]),
        case("complex64", &complex, &complex, &["unsupported data type", "complex64"]),
        case("RGB24", &rgb, &rgb, &["unsupported data type", "rgb24"]),
        case("float128", &f128, &f128, &["unsupported data type"]),
        case("unknown type code", &unknown, &unknown, &["unknown data type"]),
        case("bitpix inconsistent", &bitpix, &bitpix, &["bitpix"]),
        case("5-D", &five_d, &five_d, &["5-d", "not supported"]),
        case("not a NIfTI (gz of text)", &text, &text, &["gzip"]),
        case("not a NIfTI (zeros)", &zeros, &zeros, &["not a nifti-1 file"]),
        case("not a NIfTI (short text)", &bvals_as_dwi, &bvals_as_dwi, &["not a nifti-1 file"]),
        case("not a NIfTI (.mif header)", &mif, &mif, &["not a nifti-1 file"]),
        case("truncated .nii.gz", &trunc_gz, &trunc_gz, &["truncated"]),
        case("truncated .nii.gz header", &trunc_gz_hdr, &trunc_gz_hdr, &["truncated"]),
        case("truncated .nii", &trunc_nii, &trunc_nii, &["truncated"]),
        case("truncated .nii header", &trunc_nii_hdr, &trunc_nii_hdr, &["truncated"]),
        case("empty file", &empty, &empty, &["truncated"]),
        case("header promising terabytes (.nii)", &huge_nii, &huge_nii, &["truncated"]),
        case("header promising terabytes (.nii.gz)", &huge_gz, &huge_gz, &["truncated"]),
        // NaN/Inf voxels are skipped with a warning, not refused: tests/input_policy.rs.
        case("3-D where 4-D is needed", &mask, &mask, &["4-d", "3-d"]),
        case("one volume where a series is needed", &one_vol, &one_vol, &["4-d", "has 1 volume"]),
    ];
    let grad = |name, bv: &PathBuf, bc: &PathBuf, names: &PathBuf, says| Case {
        name,
        dwi: dwi.clone(),
        bvals: bv.clone(),
        bvecs: bc.clone(),
        mask: None,
        names: names.clone(),
        says,
    };
    let missing_bvals = d.join("no_bvals");
    cases.extend([
        grad("missing bvals", &missing_bvals, &bvecs, &missing_bvals, &["no such file"]),
        grad("bvals count", &bvals_short, &bvecs, &bvals_short, &["b-values for", "volumes"]),
        grad("bvecs count", &bvals, &bvecs_short, &bvecs_short, &["expected 3 rows"]),
        grad("bvals unparsable", &bvals_words, &bvecs, &bvals_words, &["not a list of numbers"]),
        grad("bvecs nan on a b > 0 volume", &bvals, &bvecs_nan, &bvecs_nan, &["not finite", "volume"]),
        grad("bvecs two rows", &bvals, &bvecs_two_rows, &bvecs_two_rows, &["expected 3 rows"]),
        grad("bvals empty", &bvals_empty, &bvecs, &bvals_empty, &["no numbers"]),
        grad("bvals negative", &bvals_negative, &bvecs, &bvals_negative, &["negative b-value"]),
        grad("collinear bvecs", &bvals, &collinear, &collinear, &["cannot determine a tensor"]),
        grad("all b = 0", &all_b0, &bvecs, &all_b0, &["cannot determine a tensor"]),
    ]);
    let with_mask = |name, m: &PathBuf, says| Case { mask: Some(m.clone()), ..case(name, &dwi, m, says) };
    cases.extend([
        with_mask("mask of another grid", &other, &["does not match", "dwi.nii.gz"]),
        with_mask("4-D mask", &dwi, &["must be 3-d"]),
        with_mask("missing mask", &missing, &["no such file"]),
        with_mask("truncated mask", &trunc_gz, &["truncated"]),
    ]);
    for (i, c) in cases.iter().enumerate() {
        expect_clean_failure(c, &tmp.path().join(format!("out{i}")));
    }

    // The same folder and prefix with good inputs does produce the files (the cases above
    // failed for their input, not for the output path).
    let out = tmp.path().join("ok");
    let (code, _, err) = run(
        &["dti", "--dwi", s(&dwi), "--bvals", s(&bvals), "--bvecs", s(&bvecs), "--mask", s(&mask), "--out", s(&out.join("dti")), "--backend", "cpu"],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert!(entries(&out).contains(&"dti_FA.nii.gz".to_string()), "{:?}", entries(&out));
    // ...and the .nii copy reads like the .nii.gz original.
    assert_eq!(read_nifti(&nii).unwrap().as_flat(), good.as_flat());
}

#[test]
fn a_failure_while_writing_leaves_no_partial_output() {
    // The output prefix points into a path whose parent is a file: creating the folder fails
    // before anything is written, and nothing is left behind next to it.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("data");
    std::fs::create_dir_all(&d).unwrap();
    small_dataset(&d, [6, 6, 4], 30.0, 1);
    let blocker = tmp.path().join("out");
    std::fs::write(&blocker, b"a file where a folder is wanted").unwrap();
    let (code, _, err) = run(
        &[
            "dti", "--dwi", s(&d.join("dwi.nii.gz")), "--bvals", s(&d.join("bvals")), "--bvecs", s(&d.join("bvecs")),
            "--out", s(&blocker.join("sub").join("dti")), "--backend", "cpu",
        ],
        &[("RUST_BACKTRACE", "1")],
    );
    assert_ne!(code, 0);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("error: ") && err.contains("out/sub"), "{err}");
    assert_eq!(entries(tmp.path()), vec!["data".to_string(), "out".to_string()]);

    // Library level: an Outputs set dropped after a failed step removes what it had written.
    let outdir = tmp.path().join("lib");
    std::fs::create_dir_all(&outdir).unwrap();
    let g = Geometry::synthetic([4, 4, 4], [1.0; 3]);
    let r: anyhow::Result<()> = (|| {
        let mut o = neuroport::volume::Outputs::new();
        o.nifti(&outdir.join("a.nii.gz"), &g, 1, &[1.0; 64])?;
        // On Linux the temporary has no name at all (O_TMPFILE): nothing to find or leave.
        let visible = if cfg!(target_os = "linux") { 0 } else { 1 };
        assert_eq!(entries(&outdir).len(), visible, "temporaries visible while the set is open");
        o.nifti(&outdir.join("b.nii.gz"), &g, 2, &[1.0; 64])?; // wrong size: fails
        o.commit()?;
        Ok(())
    })();
    assert!(r.is_err());
    assert_eq!(entries(&outdir), Vec::<String>::new());
}

/// A text input that is missing or a folder (an --init matrix, a --seed-file, a result CSV for
/// `compare`, bvals) is named with the problem in plain words, as a missing image is: these said
/// "cannot read (No such file or directory (os error 2))".
#[test]
fn missing_text_inputs_are_said_plainly() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("d");
    small_dataset(&d, [8, 8, 5], 30.0, 3);
    let j = |n: &str| d.join(n).to_str().unwrap().to_string();
    let (mask, tensor, dwi, bvecs) = (j("mask.nii.gz"), j("truth_tensor.nii.gz"), j("dwi.nii.gz"), j("bvecs"));
    let missing = tmp.path().join("missing.txt");
    let folder = tmp.path().join("folder");
    std::fs::create_dir_all(&folder).unwrap();
    for (bad, says) in [(&missing, "no such file"), (&folder, "is a folder")] {
        let b = s(bad);
        let cases: Vec<Vec<&str>> = vec![
            vec!["register", "--backend", "cpu", "--fixed", &mask, "--moving", &mask, "--init", b],
            vec!["track", "geodesic", "--backend", "cpu", "--tensor", &tensor, "--seed-file", b],
            vec!["compare", b],
            vec!["dti", "--backend", "cpu", "--dwi", &dwi, "--bvals", b, "--bvecs", &bvecs],
        ];
        for mut args in cases {
            let out = tmp.path().join("o").join("x");
            let out_s = if args[0] == "track" { format!("{}.tck", s(&out)) } else { s(&out).to_string() };
            args.extend(["--out", &out_s]);
            let (code, _, err) = run(&args, &[("RUST_BACKTRACE", "1")]);
            assert_eq!(code, 1, "{args:?}: {err}");
            assert!(err.trim().lines().count() == 1 && err.starts_with(&format!("error: {b}: {says}")) && !err.contains("os error"), "{args:?}: {err}");
            assert!(!tmp.path().join("o").exists());
        }
    }
}
