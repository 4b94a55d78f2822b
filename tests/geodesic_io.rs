//! Tractogram round trips: .tck exactly; .trk through its voxmm space (half-voxel offset, voxel
//! size, vox_to_ras from an oblique, anisotropic, translated affine) to within float32 rounding.

use neuroport::io::{tck, trk};
use neuroport::volume::Geometry;

fn lines() -> Vec<Vec<[f32; 3]>> {
    vec![vec![[1.0, 2.0, 3.0], [1.5, 2.5, 3.5], [-4.0, 0.25, 9.0]], vec![[0.0, 0.0, 0.0]], vec![[10.0, -20.0, 30.5], [11.0, -21.0, 31.5]]]
}

#[test]
fn tck_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.tck");
    let l = lines();
    tck::write_tck(&p, l.iter()).unwrap();
    let bytes = std::fs::read(&p).unwrap();
    let head = String::from_utf8_lossy(&bytes[..bytes.windows(4).position(|w| w == b"END\n").unwrap() + 4]).to_string();
    assert!(head.starts_with("mrtrix tracks\n") && head.contains("datatype: Float32LE\n") && head.contains("count: 3\n"), "{head}");
    let off: usize = head.lines().find_map(|l| l.strip_prefix("file: . ")).unwrap().parse().unwrap();
    assert_eq!(off, head.len(), "data must start right after END");
    // 6 points + 3 separators + end marker
    assert_eq!(bytes.len(), off + 10 * 12);
    assert!(f32::from_le_bytes(bytes[bytes.len() - 4..].try_into().unwrap()).is_infinite());
    assert_eq!(tck::read_tck(&p).unwrap(), l);
    std::fs::write(&p, &bytes[..bytes.len() - 12]).unwrap();
    assert!(tck::read_tck(&p).is_err(), "a file without its end marker is truncated");
}

#[test]
fn trk_round_trip_with_an_oblique_affine() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.trk");
    let mut g = Geometry::synthetic([40, 30, 20], [1.5, 2.0, 3.0]);
    let (c, s) = (0.3f64.cos(), 0.3f64.sin());
    // rotation about z, x axis reversed (LAS-like), translated
    g.affine = [[-1.5 * c, -2.0 * s, 0.0, 30.0], [-1.5 * s, 2.0 * c, 0.0, -12.0], [0.0, 0.0, 3.0, 7.5], [0.0, 0.0, 0.0, 1.0]];
    let space = trk::TrkSpace::of(&g);
    assert_eq!(space.voxel_order(), "LAS");
    let l = lines();
    trk::write_trk(&p, &space, l.iter()).unwrap();
    let b = std::fs::read(&p).unwrap();
    assert_eq!(&b[..6], b"TRACK\0");
    assert_eq!(i32::from_le_bytes(b[996..1000].try_into().unwrap()), 1000);
    assert_eq!(i32::from_le_bytes(b[992..996].try_into().unwrap()), 2);
    assert_eq!(i32::from_le_bytes(b[988..992].try_into().unwrap()), 3);
    assert_eq!(&b[948..951], b"LAS");
    let (back_space, back) = trk::read_trk(&p).unwrap();
    assert_eq!(back_space.dims, [40, 30, 20]);
    assert_eq!(back_space.voxel_size, [1.5, 2.0, 3.0]);
    assert_eq!(back.len(), l.len());
    for (a, b) in l.iter().zip(&back) {
        assert_eq!(a.len(), b.len());
        for (pa, pb) in a.iter().zip(b) {
            for k in 0..3 {
                assert!((pa[k] - pb[k]).abs() < 1e-4 * (1.0 + pa[k].abs()), "{pa:?} vs {pb:?}");
            }
        }
    }
}

#[test]
fn trk_stores_voxel_centres_half_a_voxel_in() {
    // The centre of voxel (0, 0, 0) is at world origin + 0 here; TrackVis voxmm puts it at vs / 2.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.trk");
    let g = Geometry::synthetic([4, 4, 4], [2.0, 3.0, 4.0]);
    let space = trk::TrkSpace::of(&g);
    let centre = g.voxel_to_world([0.0, 0.0, 0.0]).map(|c| c as f32);
    let other = g.voxel_to_world([1.0, 2.0, 3.0]).map(|c| c as f32);
    trk::write_trk(&p, &space, [vec![centre, other]].iter()).unwrap();
    let b = std::fs::read(&p).unwrap();
    let f = |o: usize| f32::from_le_bytes(b[o..o + 4].try_into().unwrap());
    assert_eq!(i32::from_le_bytes(b[1000..1004].try_into().unwrap()), 2);
    assert_eq!([f(1004), f(1008), f(1012)], [1.0, 1.5, 2.0]);
    assert_eq!([f(1016), f(1020), f(1024)], [3.0, 7.5, 14.0]);
}
