//! NIfTI at disk speed, checked for correctness: the parallel writer's multi-member .nii.gz is
//! read back exactly by our reader, by `gzip -d` and by nibabel; the one-pass reader decodes
//! every integer type, byte order and scl_slope/scl_inter like the nifti crate did; the output
//! type follows FSLOUTPUTTYPE.

mod common;
use common::*;
use neuroport::volume::{member_size, read_nifti, split_reads, write_gz, write_gz_blocks, write_nifti, Geometry, OutputType, Outputs};
use std::path::Path;

/// A volume larger than two compression blocks, with values that do not compress to nothing.
fn big_volume() -> (Geometry, usize, Vec<f32>) {
    let g = Geometry::synthetic([64, 64, 40], [1.5, 1.5, 2.0]);
    let nvol = 10; // 6.5 MB of float32: several data members
    let data: Vec<f32> = (0..g.nvox() * nvol).map(|i| ((i as f32) * 0.618).sin() * 100.0).collect();
    (g, nvol, data)
}

/// Number of gzip members: walk the stream by decoding member after member.
fn members(bytes: &[u8]) -> usize {
    use std::io::Read;
    let mut n = 0;
    let mut rest = bytes;
    while !rest.is_empty() {
        let mut d = flate2::bufread::GzDecoder::new(rest);
        let mut sink = Vec::new();
        d.read_to_end(&mut sink).expect("a valid member");
        rest = d.into_inner();
        n += 1;
    }
    n
}

#[test]
fn parallel_gzip_is_multi_member_and_reads_back_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let (g, nvol, data) = big_volume();
    let p = tmp.path().join("v.nii.gz");
    write_nifti(&p, &g, nvol, &data).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    // header member + data members of member_size(header + data) bytes: the reader must follow
    // them all
    let raw = 352 + 4 * data.len();
    assert!(member_size(raw) < 4 * data.len());
    assert_eq!(members(&bytes), 1 + (4 * data.len()).div_ceil(member_size(raw)));
    let v = read_nifti(&p).unwrap();
    assert_eq!(v.nvol(), nvol);
    assert_eq!(v.as_flat(), &data[..]);
    // gzip itself reads it as one stream, byte for byte the .nii
    let nii = tmp.path().join("v.nii");
    write_nifti(&nii, &g, nvol, &data).unwrap();
    let out = std::process::Command::new("gzip").arg("-dc").arg(&p).output();
    if let Ok(o) = out {
        assert!(o.status.success());
        assert_eq!(o.stdout, std::fs::read(&nii).unwrap());
    }
}

#[test]
fn write_gz_output_does_not_depend_on_the_thread_count() {
    let raw: Vec<u8> = (0..9_000_000u32).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
    let with = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let mut out = Vec::new();
        pool.install(|| write_gz(&mut out, &[&raw[..100], &raw[100..]])).unwrap();
        out
    };
    let one = with(1);
    assert_eq!(one, with(2));
    assert_eq!(one, with(5));
}

#[test]
fn nibabel_reads_what_we_write() {
    let Some(path) = std::env::var_os("NEUROPORT_NIBABEL") else {
        if std::env::var_os("NEUROPORT_REQUIRE_NIBABEL").is_some() {
            panic!("NEUROPORT_REQUIRE_NIBABEL is set but nibabel is not installed (. scripts/setup.sh installs it)");
        }
        eprintln!("SKIPPED: nibabel not installed (. scripts/setup.sh installs it and sets NEUROPORT_NIBABEL)");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (mut g, nvol, data) = big_volume();
    // an oblique, x-flipped affine, so a reader mixing up sform or the axis order shows it
    g.header.srow_x = [-1.5, 0.1, 0.0, 90.0];
    g.header.srow_y = [0.0, 1.5, 0.2, -126.0];
    g.header.srow_z = [0.05, 0.0, 2.0, -72.0];
    g.header.qform_code = 0;
    let p = tmp.path().join("v.nii.gz");
    write_nifti(&p, &g, nvol, &data).unwrap();
    let raw = tmp.path().join("v.f32");
    std::fs::write(&raw, bytemuck::cast_slice::<f32, u8>(&data)).unwrap();
    let script = r#"
import sys, nibabel as nib, numpy as np
img = nib.load(sys.argv[1])
a = np.asanyarray(img.dataobj)
want = np.fromfile(sys.argv[2], dtype='<f4').reshape(a.shape, order='F')
assert a.dtype == np.float32, a.dtype
assert np.array_equal(a, want), 'voxels differ'
s = img.header.get_sform()
assert np.allclose(s[0], [-1.5, 0.1, 0.0, 90.0]) and np.allclose(s[2], [0.05, 0.0, 2.0, -72.0]), s
print('nibabel', nib.__version__, a.shape)
"#;
    let o = std::process::Command::new(std::env::var("PYTHON").unwrap_or("python3".into()))
        .env("PYTHONPATH", &path)
        .args(["-c", script, s(&p), s(&raw)])
        .output()
        .expect("python runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "nibabel could not read our .nii.gz: {err}");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("(64, 64, 40, 10)"), "{out}");
}

/// A hand-made 2x2x1 NIfTI of `datatype` with scaling, optionally big-endian.
fn typed(dir: &Path, name: &str, datatype: i16, bitpix: i16, bytes: &[u8], slope: f32, inter: f32, big: bool) -> std::path::PathBuf {
    typed_dims(dir, name, &[2, 2, 1], datatype, bitpix, bytes, slope, inter, big)
}


#[test]
fn every_integer_type_byte_order_and_scaling_decodes() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let vals = [-3i64, 0, 7, 100];
    let cases: Vec<(&str, i16, i16, Vec<u8>, Vec<u8>)> = vec![
        ("i16", 4, 16, vals.iter().flat_map(|&v| (v as i16).to_le_bytes()).collect(), vals.iter().flat_map(|&v| (v as i16).to_be_bytes()).collect()),
        ("i32", 8, 32, vals.iter().flat_map(|&v| (v as i32).to_le_bytes()).collect(), vals.iter().flat_map(|&v| (v as i32).to_be_bytes()).collect()),
        ("i8", 256, 8, vals.iter().map(|&v| v as i8 as u8).collect(), vals.iter().map(|&v| v as i8 as u8).collect()),
        ("f64", 64, 64, vals.iter().flat_map(|&v| (v as f64).to_le_bytes()).collect(), vals.iter().flat_map(|&v| (v as f64).to_be_bytes()).collect()),
        ("i64", 1024, 64, vals.iter().flat_map(|&v| v.to_le_bytes()).collect(), vals.iter().flat_map(|&v| v.to_be_bytes()).collect()),
    ];
    for (name, dt, bp, le, be) in cases {
        for (big, bytes) in [(false, &le), (true, &be)] {
            let p = typed(d, &format!("{name}-{big}.nii"), dt, bp, bytes, 0.5, 10.0, big);
            let v = read_nifti(&p).unwrap_or_else(|e| panic!("{name} big={big}: {e:#}"));
            let want: Vec<f32> = vals.iter().map(|&x| x as f32 * 0.5 + 10.0).collect();
            assert_eq!(v.as_flat(), &want[..], "{name} big-endian={big}");
        }
    }
    // uint8 with slope 0: no scaling (the NIfTI rule)
    let p = typed(d, "u8.nii", 2, 8, &[1, 2, 3, 255], 0.0, 5.0, false);
    assert_eq!(read_nifti(&p).unwrap().as_flat(), &[1.0, 2.0, 3.0, 255.0]);
}

/// A volume of several read buffers (4 MiB) and conversion pieces (64 KiB), neither size a
/// divisor of it: every voxel decoded and scaled in place, whichever core converted its piece.
#[test]
fn a_volume_of_many_read_buffers_decodes_every_voxel() {
    let tmp = tempfile::tempdir().unwrap();
    let dims = [517u16, 613, 9];
    let n = dims.iter().map(|&d| d as usize).product::<usize>();
    let vals: Vec<i16> = (0..n).map(|i| (i.wrapping_mul(7919) % 65536) as u16 as i16).collect();
    let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_be_bytes()).collect();
    let p = typed_dims(tmp.path(), "big.nii", &dims, 4, 16, &bytes, 0.5, 10.0, true);
    let v = read_nifti(&p).unwrap();
    let differ = v.as_flat().iter().zip(&vals).filter(|(&got, &x)| got != x as f32 * 0.5 + 10.0).count();
    assert_eq!(differ, 0, "{differ} of {n} voxels decoded wrong");
}

/// Our multi-member .nii.gz with members of odd sizes, which split voxels between them (5 bytes:
/// an 8-byte voxel over three members; 8-byte
/// float64, 2-byte int16, big-endian, scaled): every voxel read back; and a file cut at a member
/// boundary is truncated, not short.
#[test]
fn members_that_split_voxels_decode_every_voxel() {
    let tmp = tempfile::tempdir().unwrap();
    let dims = [61u16, 47, 23];
    let n = dims.iter().map(|&d| d as usize).product::<usize>();
    let vals: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 20011 - 10000).collect();
    for (name, dt, bp, bytes) in [
        ("f64", 64i16, 64i16, vals.iter().flat_map(|&v| (v as f64 * 0.25).to_be_bytes()).collect::<Vec<u8>>()),
        ("i16", 4, 16, vals.iter().flat_map(|&v| (v as i16).to_be_bytes()).collect()),
    ] {
        let plain = typed_dims(tmp.path(), &format!("{name}.nii"), &dims, dt, bp, &bytes, 2.0, -1.0, true);
        let nii = std::fs::read(&plain).unwrap();
        let want = read_nifti(&plain).unwrap();
        assert_eq!(want.as_flat()[1], (vals[1] as f32 * if dt == 64 { 0.25 } else { 1.0 }) * 2.0 - 1.0);
        for block in [5usize, 1_001, 65_537, 300_007] {
            let mut gz = Vec::new();
            write_gz_blocks(&mut gz, &[&nii[..352], &nii[352..]], block).unwrap();
            let p = tmp.path().join(format!("{name}-{block}.nii.gz"));
            std::fs::write(&p, &gz).unwrap();
            let got = read_nifti(&p).unwrap_or_else(|e| panic!("{name}, members of {block}: {e:#}"));
            assert_eq!(got.as_flat(), want.as_flat(), "{name}, members of {block} bytes");
            // The header and the first voxels in one member: voxels the header's read already
            // inflated come first.
            let mut gz = Vec::new();
            write_gz_blocks(&mut gz, &[&nii[..]], block).unwrap();
            std::fs::write(&p, &gz).unwrap();
            let got = read_nifti(&p).unwrap_or_else(|e| panic!("{name}, header and voxels in members of {block}: {e:#}"));
            assert_eq!(got.as_flat(), want.as_flat(), "{name}, header and voxels in members of {block} bytes");
        }
        // Cut after the header member and two data members: truncated.
        let mut gz = Vec::new();
        write_gz_blocks(&mut gz, &[&nii[..352], &nii[352..]], 65_537).unwrap();
        let mut at = 0;
        for _ in 0..3 {
            at += member_len(&gz[at..]);
        }
        let p = tmp.path().join(format!("{name}-cut.nii.gz"));
        std::fs::write(&p, &gz[..at]).unwrap();
        let e = format!("{:#}", read_nifti(&p).unwrap_err());
        assert!(e.contains("truncated"), "{e}");
        // A byte flipped inside the fourth data member's deflate stream: corrupt, named so.
        let mut bad = gz.clone();
        bad[at + member_len(&gz[at..]) / 2] ^= 0x5a;
        let p = tmp.path().join(format!("{name}-bad.nii.gz"));
        std::fs::write(&p, &bad).unwrap();
        let e = format!("{:#}", read_nifti(&p).unwrap_err());
        assert!(e.contains("corrupt"), "{e}");
    }
}

/// The length of the gzip member at the start of `b`.
fn member_len(b: &[u8]) -> usize {
    let mut d = flate2::bufread::GzDecoder::new(b);
    std::io::Read::read_to_end(&mut d, &mut Vec::new()).expect("a valid member");
    b.len() - d.into_inner().len()
}

#[test]
fn output_type_follows_fsloutputtype() {
    // The env is read per Outputs set; this test owns the variables in its own process.
    let tmp = tempfile::tempdir().unwrap();
    let g = Geometry::synthetic([3, 3, 3], [1.0; 3]);
    std::env::set_var("FSLOUTPUTTYPE", "NIFTI");
    let mut o = Outputs::new();
    o.nifti(&tmp.path().join("a.nii.gz"), &g, 1, &[2.0; 27]).unwrap();
    assert_eq!(o.commit().unwrap(), vec![tmp.path().join("a.nii")]);
    std::env::set_var("NEUROPORT_OUTPUT_TYPE", "NIFTI_GZ");
    let mut o = Outputs::new();
    o.nifti(&tmp.path().join("b.nii.gz"), &g, 1, &[2.0; 27]).unwrap();
    assert_eq!(o.commit().unwrap(), vec![tmp.path().join("b.nii.gz")]);
    std::env::remove_var("NEUROPORT_OUTPUT_TYPE");
    std::env::remove_var("FSLOUTPUTTYPE");
    assert_eq!(std::fs::metadata(tmp.path().join("a.nii")).unwrap().len(), 352 + 27 * 4);
    assert_eq!(read_nifti(&tmp.path().join("b.nii.gz")).unwrap().as_flat(), &[2.0; 27]);
    assert_eq!(OutputType::Nifti.apply(Path::new("x/y_FA.nii.gz")), Path::new("x/y_FA.nii"));
}

#[test]
fn cli_writes_uncompressed_with_fsloutputtype_nifti() {
    let tmp = tempfile::tempdir().unwrap();
    let (code, out, err) = run(&["synth", "--out", s(&tmp.path().join("d")), "--dims", "8,8,4"], &[("FSLOUTPUTTYPE", "NIFTI")]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("dwi.nii\n") && !out.contains(".nii.gz"), "{out}");
}

/// Another tool's .nii.gz (one gzip stream) read on one core is read to the stream's end, where
/// gzip keeps its CRC-32: a file whose CRC does not match its data (a flipped bit can inflate to
/// the right length with wrong voxels) is an error naming the file, not a volume; the same file
/// with its CRC intact reads.
#[test]
fn one_stream_with_a_wrong_crc_is_refused_on_one_core() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let dims = [20u16, 18, 12, 2];
    let n: usize = dims.iter().map(|&d| d as usize).product();
    let data: Vec<u8> = (0..n).flat_map(|i| ((i as f32) * 0.37).sin().to_le_bytes()).collect();
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    e.write_all(&raw_nifti(&dims, 16, 32, &data)).unwrap();
    let mut file = e.finish().unwrap();
    let p = tmp.path().join("other.nii.gz");
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    std::fs::write(&p, &file).unwrap();
    assert!(one.install(|| read_nifti(&p)).is_ok());
    let k = file.len() - 8;
    file[k] ^= 1;
    std::fs::write(&p, &file).unwrap();
    let e = one.install(|| read_nifti(&p)).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("other.nii.gz") && e.contains("gzip"), "{e}");
}

/// A one-member .nii.gz (as dcm2niix, FSL and nibabel write) read in pieces on 8 threads gives
/// the same volume as on one core; one whose blocks give no starts to find (zlib-rs's level 1:
/// fixed-Huffman blocks) and one damaged in its middle fall back to one core: the same volume,
/// or the one-core read's error naming the file; two read side by side on 4 threads.
#[test]
fn one_member_gzip_reads_the_same_in_pieces() {
    use std::io::Write;
    let tmp = tempfile::tempdir().unwrap();
    let dims = [96u16, 96, 60, 6];
    let n: usize = dims.iter().map(|&d| d as usize).product();
    // A brain-like volume: zeros outside an ellipsoid, smooth values with noise inside.
    let mut r = neuroport::synth::rng(29);
    let data: Vec<u8> = (0..n)
        .flat_map(|i| {
            let (x, y, z) = ((i % 96) as f32 - 48.0, ((i / 96) % 96) as f32 - 48.0, ((i / 9216) % 60) as f32 - 30.0);
            let inside = (x / 44.0).powi(2) + (y / 40.0).powi(2) + (z / 28.0).powi(2) < 1.0;
            let v = if inside { 500.0 + 100.0 * (0.1 * x).sin() + rand::Rng::random_range(&mut r, 0.0..50.0f32) } else { 0.0 };
            v.to_le_bytes()
        })
        .collect();
    let nii = raw_nifti(&dims, 16, 32, &data);
    let level = |l: u32| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(l));
        e.write_all(&nii).unwrap();
        e.finish().unwrap()
    };
    let plain = tmp.path().join("v.nii");
    std::fs::write(&plain, &nii).unwrap();
    let want = read_nifti(&plain).unwrap();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(8).build().unwrap();
    for (l, split) in [(6u32, true), (9, true), (1, false)] {
        let p = tmp.path().join(format!("v{l}.nii.gz"));
        let bytes = level(l);
        assert!(bytes.len() > 4 << 20, "level {l}: {} bytes, too few to split", bytes.len());
        std::fs::write(&p, &bytes).unwrap();
        let before = split_reads();
        let got = pool.install(|| read_nifti(&p)).unwrap();
        assert_eq!(split_reads() - before, split as usize, "level {l}: read in pieces");
        assert!(got.as_flat() == want.as_flat() && got.geom.dims == want.geom.dims, "level {l}");
        if l == 6 {
            // Bytes past the voxels, more than a wave of pieces: the pieces are checked at the
            // member's end even when the voxels end waves before it (the read counts as in
            // pieces only once checked); with a wrong CRC there the file is read again on one
            // core, which reads to the end too and refuses it, naming the file.
            let mut longer = nii.clone();
            longer.extend((0..3 << 20).flat_map(|_| rand::Rng::random_range(&mut r, 0.0..50.0f32).to_le_bytes()));
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
            e.write_all(&longer).unwrap();
            let mut file = e.finish().unwrap();
            for wrong in [false, true] {
                let n = file.len();
                file[n - 8] ^= wrong as u8;
                std::fs::write(&p, &file).unwrap();
                let before = split_reads();
                let got = pool.install(|| read_nifti(&p));
                assert_eq!(split_reads() - before, !wrong as usize, "past the voxels, wrong CRC {wrong}: read in pieces");
                match got {
                    Ok(got) => assert!(!wrong && got.as_flat() == want.as_flat()),
                    Err(e) => assert!(wrong && e.to_string().contains("v6.nii.gz") && e.to_string().contains("gzip"), "{e}"),
                }
            }
            let mut bad = bytes.clone();
            bad[bytes.len() / 2] ^= 0x10;
            std::fs::write(&p, &bad).unwrap();
            let e = pool.install(|| read_nifti(&p)).map(|_| ()).unwrap_err().to_string();
            assert!(e.contains("v6.nii.gz") && e.contains("gzip"), "{e}");
        }
    }
    // Two read side by side, as `register` reads its pair (in a rayon::join), on a pool of 4:
    // each read's waves are made by a task on that pool while its reader waits for them. The
    // same volumes, every time, and no read left waiting.
    let a = tmp.path().join("w6.nii.gz");
    std::fs::write(&a, level(6)).unwrap();
    let b = tmp.path().join("v9.nii.gz");
    let four = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
    let before = split_reads();
    for _ in 0..4 {
        let (x, y) = four.install(|| rayon::join(|| read_nifti(&a), || read_nifti(&b)));
        assert!(x.unwrap().as_flat() == want.as_flat() && y.unwrap().as_flat() == want.as_flat());
    }
    assert_eq!(split_reads() - before, 8, "both read in pieces each time");
}
