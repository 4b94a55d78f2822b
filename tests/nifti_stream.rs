//! The masked reader (`NiftiStream`, what bedpost reads a DWI with) gathers what the whole read
//! gives at its voxels, on one core or several: every datatype, byte order and scl_slope/scl_inter, every file layout
//! (plain, a pair, one gzip stream, our members splitting voxels), and the same error naming the
//! file where the whole read fails.

mod common;
use common::*;
use neuroport::volume::{read_nifti, write_gz_blocks, NiftiStream};
use std::io::Write;
use std::path::Path;

/// Every voxel of `path` in every volume, as the stream gathers them.
fn streamed(path: &Path) -> anyhow::Result<Vec<f32>> {
    let s = NiftiStream::open(path)?;
    let [x, y, z, _] = s.dims();
    let all: Vec<usize> = (0..x * y * z).collect();
    s.gather(&all, false)
}

/// `voxels` of `path` in every volume (volumes x voxels), gathered on a pool of `threads`.
fn gathered(path: &Path, voxels: &[usize], threads: usize) -> Vec<f32> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    pool.install(|| NiftiStream::open(path).and_then(|s| s.gather(voxels, false))).unwrap_or_else(|e| panic!("{}: {e:#}", path.display()))
}

/// What the whole read's `flat` (`per` voxels a volume) holds at `voxels`, volume by volume.
fn picked(flat: &[f32], per: usize, voxels: &[usize]) -> Vec<f32> {
    flat.chunks(per).flat_map(|v| voxels.iter().map(|&i| v[i])).collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `nii` (a whole single file) as a one-member gzip, as other tools write it.
fn one_stream(nii: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    e.write_all(nii).unwrap();
    e.finish().unwrap()
}

#[test]
fn streamed_volumes_are_the_whole_read() {
    let tmp = tempfile::tempdir().unwrap();
    let dims = [37u16, 29, 11, 5];
    let n: usize = dims.iter().map(|&d| d as usize).product();
    let vals: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 20011 - 10000).collect();
    // (name, datatype, bitpix, bytes, slope, inter, big-endian)
    let cases: Vec<(&str, i16, i16, Vec<u8>, f32, f32, bool)> = vec![
        ("u8", 2, 8, vals.iter().map(|&v| v as u8).collect(), 0.0, 5.0, false),
        ("i8", 256, 8, vals.iter().map(|&v| v as i8 as u8).collect(), 0.5, 10.0, false),
        ("i16be", 4, 16, vals.iter().flat_map(|&v| (v as i16).to_be_bytes()).collect(), 2.0, -1.0, true),
        ("u16", 512, 16, vals.iter().flat_map(|&v| (v as u16).to_le_bytes()).collect(), 1.0, 0.0, false),
        ("i32", 8, 32, vals.iter().flat_map(|&v| (v as i32 * 3).to_le_bytes()).collect(), 0.25, 3.0, false),
        ("u32be", 768, 32, vals.iter().flat_map(|&v| (v as u32).to_be_bytes()).collect(), 1e-3, 0.0, true),
        ("i64", 1024, 64, vals.iter().flat_map(|&v| (v * 1_000_003).to_le_bytes()).collect(), 1e-6, 0.0, false),
        ("u64be", 1280, 64, vals.iter().flat_map(|&v| (v as u64).to_be_bytes()).collect(), 0.0, 0.0, true),
        ("f32", 16, 32, vals.iter().flat_map(|&v| (v as f32 * 0.37).sin().to_le_bytes()).collect(), 1.0, 0.0, false),
        ("f32be", 16, 32, vals.iter().flat_map(|&v| (v as f32 * 0.11).to_be_bytes()).collect(), 3.0, 0.5, true),
        ("f64", 64, 64, vals.iter().flat_map(|&v| (v as f64 * 0.25).to_le_bytes()).collect(), 2.0, -7.0, false),
    ];
    for (name, dt, bp, bytes, slope, inter, big) in cases {
        let plain = typed_dims(tmp.path(), &format!("{name}.nii"), &dims, dt, bp, &bytes, slope, inter, big);
        let nii = std::fs::read(&plain).unwrap();
        let want = read_nifti(&plain).unwrap();
        assert!(want.as_flat().iter().any(|&x| x != 0.0), "{name}: an all-zero volume tests little");
        let mut layouts = vec![("plain", plain.clone())];
        let one = tmp.path().join(format!("{name}-one.nii.gz"));
        std::fs::write(&one, one_stream(&nii)).unwrap();
        layouts.push(("one gzip stream", one));
        // Members of odd sizes split voxels between them; in one, the header and the first voxels.
        for (k, (parts, block)) in [(vec![&nii[..352], &nii[352..]], 5usize), (vec![&nii[..352], &nii[352..]], 65_537), (vec![&nii[..]], 1_001)].into_iter().enumerate() {
            let mut gz = Vec::new();
            write_gz_blocks(&mut gz, &parts, block).unwrap();
            let p = tmp.path().join(format!("{name}-members{k}.nii.gz"));
            std::fs::write(&p, gz).unwrap();
            layouts.push(("members", p));
        }
        // A pair: the header in .hdr (magic ni1), the voxels in .img.
        let mut hdr = nii[..348].to_vec();
        hdr[344..348].copy_from_slice(b"ni1\0");
        let off = if big { 0.0f32.to_be_bytes() } else { 0.0f32.to_le_bytes() };
        hdr[108..112].copy_from_slice(&off);
        std::fs::write(tmp.path().join(format!("{name}-pair.hdr")), hdr).unwrap();
        std::fs::write(tmp.path().join(format!("{name}-pair.img")), &nii[352..]).unwrap();
        layouts.push(("pair", tmp.path().join(format!("{name}-pair.hdr"))));
        let per = n / dims[3] as usize;
        // Every voxel; runs of a mask's rows, some across the grid's rows; scattered voxels;
        // none.
        let masks: [Vec<usize>; 4] = [(0..per).collect(), (0..per).filter(|i| (i / 7) % 3 == 1 || i % 37 > 30).collect(), (0..per).filter(|i| i % 11 == 4).collect(), Vec::new()];
        for (what, p) in layouts {
            assert_eq!(bits(&read_nifti(&p).unwrap().into_flat()), bits(want.as_flat()), "{name}, {what}: whole read");
            let got = streamed(&p).unwrap_or_else(|e| panic!("{name}, {what}: {e:#}"));
            assert_eq!(bits(&got), bits(want.as_flat()), "{name}, {what}: streamed");
            for (k, voxels) in masks.iter().enumerate() {
                for threads in [1, 3] {
                    assert_eq!(bits(&gathered(&p, voxels, threads)), bits(&picked(want.as_flat(), per, voxels)), "{name}, {what}: mask {k}, {threads} threads");
                }
            }
        }
    }
}

/// A 3-D file is one volume.
#[test]
fn a_3d_file_streams_as_one_volume() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes: Vec<u8> = (0..60u16).flat_map(|v| v.to_le_bytes()).collect();
    let p = typed_dims(tmp.path(), "v.nii", &[5, 4, 3], 512, 16, &bytes, 0.5, 1.0, false);
    assert_eq!(streamed(&p).unwrap(), read_nifti(&p).unwrap().into_flat());
}

/// Where the whole read fails, the stream fails with the same message naming the file: a file
/// cut inside its voxels (plain, one stream, our members), a one-stream file whose CRC-32 does
/// not match, a member damaged inside, a header that promises more than the file holds.
#[test]
fn a_broken_file_fails_as_the_whole_read_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let dims = [30u16, 20, 10, 4];
    let n: usize = dims.iter().map(|&d| d as usize).product();
    let data: Vec<u8> = (0..n).flat_map(|i| ((i as f32) * 0.37).sin().to_le_bytes()).collect();
    let nii = raw_nifti(&dims, 16, 32, &data);
    let one = one_stream(&nii);
    let mut members = Vec::new();
    write_gz_blocks(&mut members, &[&nii[..352], &nii[352..]], 10_007).unwrap();
    let mut bad_crc = one.clone();
    let k = bad_crc.len() - 8;
    bad_crc[k] ^= 1;
    let mut bad_member = members.clone();
    let k = bad_member.len() / 2;
    bad_member[k] ^= 0x5a;
    let mut promises = nii.clone();
    promises[48..50].copy_from_slice(&40i16.to_le_bytes()); // dim[4]: 40 volumes, 4 written
    let cases: [(&str, Vec<u8>); 6] = [
        ("cut.nii", nii[..nii.len() - 1000].to_vec()),
        ("cut-one.nii.gz", one[..one.len() / 2].to_vec()),
        ("cut-members.nii.gz", members[..members.len() * 2 / 3].to_vec()),
        ("crc.nii.gz", bad_crc),
        ("damaged.nii.gz", bad_member),
        ("promises.nii", promises),
    ];
    let one_core = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    for (name, bytes) in cases {
        let p = tmp.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        // One core, so the whole read of a one-stream file is not split (nor is the stream).
        let whole = format!("{:#}", one_core.install(|| read_nifti(&p)).map(|_| ()).unwrap_err());
        let stream = format!("{:#}", one_core.install(|| streamed(&p)).map(|_| ()).unwrap_err());
        assert!(whole.contains(name), "{name}: {whole}");
        assert_eq!(stream, whole, "{name}");
    }
}
