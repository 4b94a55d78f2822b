//! A field read from a bedpost folder holds the records of the box its tracking mask and seeds
//! can reach (grown by the voxel a step may read beside its own), not the whole grid: 5.9 GB
//! on an HCP folder whatever the mask. Tracking through it gives the very outputs of a
//! whole-grid field, on the CPU and on OpenCL, read side by side (neuroport's files) or one
//! file at a time (another writer's).

mod common;
use common::opencl;
use neuroport::probtrack::{self, cpu::trace_points, field::INSIDE, field::RECORD, phantom, Config, Field, Tracks};
use neuroport::runtime::{BackendSpec, Device, Inventory};
use neuroport::volume::write_nifti;
use std::io::Write;
use std::path::Path;

fn track(dev: &Device, f: &Field, seeds: &[u32], c: &Config) -> Tracks {
    let mut k = probtrack::kernels(dev).unwrap();
    probtrack::run(k.as_mut(), f, seeds, c).unwrap()
}

fn same(r: &Tracks, want: &Tracks, what: &str) {
    assert_eq!((r.finished, r.total_steps, r.longest, r.waytotal), (want.finished, want.total_steps, want.longest, want.waytotal), "{what}");
    assert_eq!(r.kept, want.kept, "{what}");
    assert_eq!(r.lengths, want.lengths, "{what}");
    assert_eq!(r.seed_targets, want.seed_targets, "{what}");
    assert_eq!(r.visits, want.visits, "{what}");
}

/// The same folder with each sample file as one gzip member (another writer's: read whole).
fn one_member_copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let raw = neuroport::volume::read_nifti(&p).unwrap();
        let plain = to.join("plain.nii");
        write_nifti(&plain, &raw.geom, raw.nvol(), raw.as_flat()).unwrap();
        let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(to.join(p.file_name().unwrap())).unwrap(), flate2::Compression::fast());
        gz.write_all(&std::fs::read(&plain).unwrap()).unwrap();
        gz.finish().unwrap();
        std::fs::remove_file(plain).unwrap();
    }
}

#[test]
fn a_field_read_for_a_small_mask_holds_its_box_and_tracks_as_the_whole_grid() {
    let t = phantom::crossing();
    let g = &t.geom;
    // A wide spread so paths turn, stop on curvature and leave the mask: every rule is hit.
    let a = t.angles(6, 20.0, 3);
    let dir = tempfile::tempdir().unwrap();
    let (ours, other) = (dir.path().join("ours"), dir.path().join("other"));
    std::fs::create_dir_all(&ours).unwrap();
    t.write_bedpost(&a, &ours).unwrap();
    one_member_copy(&ours, &other);
    // The mask: the bundles within x 5..17, y 4..16, z 2..6. The seeds: the x bundle's voxels at
    // x 15..19, the last two outside the mask (a long step takes x = 17 into it).
    let pick = |lo: [usize; 3], hi: [usize; 3]| -> Vec<u8> {
        (0..g.nvox()).map(|v| {
            let [x, y, z] = [v % 24, (v / 24) % 20, v / 480];
            (t.sticks[v].f[0] > 0.0 && (0..3).all(|c| [x, y, z][c] >= lo[c] && [x, y, z][c] < hi[c])) as u8
        }).collect()
    };
    let mask = pick([5, 4, 2], [17, 16, 6]);
    let seed_mask = pick([15, 8, 3], [19, 11, 5]);
    let (mask_path, seeds_path) = (dir.path().join("mask.nii.gz"), dir.path().join("seeds.nii.gz"));
    write_nifti(&mask_path, g, 1, &mask.iter().map(|&m| m as f32).collect::<Vec<_>>()).unwrap();
    write_nifti(&seeds_path, g, 1, &seed_mask.iter().map(|&m| m as f32).collect::<Vec<_>>()).unwrap();

    let mut whole = Field::from_angles(g.clone(), a.nsamp, std::array::from_fn(|c| a.vols[c].as_slice()));
    whole.roi = mask.iter().map(|&m| if m != 0 { INSIDE } else { 0 }).collect();
    let cpu = Inventory::discover(None).select_one(&BackendSpec::Cpu).unwrap();
    for d in [&ours, &other] {
        let f = Field::from_bedpost(d, Some(&mask_path), Some(&seeds_path)).unwrap();
        // Mask and seeds span x 5..19, y 4..16, z 2..6; one voxel more each way, clipped.
        assert_eq!((f.crop.origin, f.crop.dims), ([4, 3, 1], [16, 14, 6]), "{}", d.display());
        assert!(f.samples.len() <= a.nsamp * 16 * 14 * 6 * RECORD, "{}: the field holds more than its box", d.display());
        assert!(f.samples.len() * 2 < whole.samples.len());
        assert_eq!(f.roi, whole.roi);
        for s in 0..a.nsamp {
            for b in 0..f.crop.nvox() {
                let v = f.crop.grid_voxel(g.dims, b);
                let (got, want) = (&f.samples[(s * f.crop.nvox() + b) * RECORD..][..RECORD], &whole.samples[(s * g.nvox() + v) * RECORD..][..RECORD]);
                assert!(got.iter().zip(want).all(|(x, y)| x.to_bits() == y.to_bits()), "{}: sample {s} voxel {v}", d.display());
            }
        }
        let seeds = f.seeds(&seeds_path).unwrap();
        assert_eq!(seeds.len(), 4 * 3 * 2);
        for (jitter, step_mm) in [(true, 0.5), (false, 0.5), (true, 1.7), (false, 1.7)] {
            let c = Config { nsamples: 9, max_steps: 200, step_mm, jitter, seed: 5, ..Config::default() };
            let want = track(&cpu, &whole, &seeds, &c);
            assert!(want.total_steps > 1000, "{}", want.total_steps);
            let what = format!("{} jitter {jitter} step {step_mm}", d.display());
            same(&track(&cpu, &f, &seeds, &c), &want, &what);
            if let Some(dev) = opencl() {
                same(&track(&dev, &f, &seeds, &c), &want, &format!("opencl {what}"));
            }
            let p = c.params(&f, seeds.len(), true);
            let pw = c.params(&whole, seeds.len(), true);
            let moved = (0..200u32).filter(|&k| {
                let pts = trace_points(&f, &seeds, &p, k);
                assert_eq!(pts, trace_points(&whole, &seeds, &pw, k), "{what}: streamline {k}");
                pts.len() > 1
            });
            let moved = moved.count();
            assert!(moved > 60, "{what}: {moved} streamlines moved");
        }
    }
    // Read without the seed mask, the box is the tracking mask's: seeds beyond it are refused,
    // not read past the samples.
    let f = Field::from_bedpost(&ours, Some(&mask_path), None).unwrap();
    assert_eq!((f.crop.origin, f.crop.dims), ([4, 3, 1], [14, 14, 6]));
    let seeds = f.seeds(&seeds_path).unwrap();
    let err = track_err(&cpu, &f, &seeds);
    assert!(err.contains("not among the voxels of samples read"), "{err}");
}

fn track_err(dev: &Device, f: &Field, seeds: &[u32]) -> String {
    let mut k = probtrack::kernels(dev).unwrap();
    format!("{:#}", probtrack::run(k.as_mut(), f, seeds, &Config { nsamples: 2, ..Config::default() }).expect_err("seeds beyond the box were tracked"))
}

/// The held voxels are compacted (an index over the box picks each one's record): with a mask
/// that is a cross with a hole at its middle, the box holds voxels that are not held (the
/// corners, the hole's middle) among those that are. Every held record is the whole grid's at
/// its voxel, and tracking (jitter reading beside the mask's edge, seeds in the hole and off the
/// mask, a target and an exclusion mask) gives the outputs of a whole-grid field on the CPU and
/// on OpenCL: an index off by one voxel or one row would read another voxel's sticks.
#[test]
fn a_field_compacted_to_a_mask_with_holes_tracks_as_the_whole_grid() {
    let t = phantom::crossing();
    let g = &t.geom;
    let a = t.angles(5, 20.0, 11);
    let dir = tempfile::tempdir().unwrap();
    let (ours, other) = (dir.path().join("ours"), dir.path().join("other"));
    std::fs::create_dir_all(&ours).unwrap();
    t.write_bedpost(&a, &ours).unwrap();
    one_member_copy(&ours, &other);
    let at = |v: usize| [v % 24, (v / 24) % 20, v / 480];
    // The bundles less x 10..15, y 8..13 (the crossing's middle): a hole whose middle (3 x 3)
    // no step can read.
    let hole = |v: usize| (10..15).contains(&at(v)[0]) && (8..13).contains(&at(v)[1]);
    let mask: Vec<u8> = (0..g.nvox()).map(|v| (t.sticks[v].f[0] > 0.0 && !hole(v)) as u8).collect();
    // Seeds along the x bundle, x 4..10 (in the mask), at the hole's middle and in a corner.
    let seed_mask: Vec<u8> = (0..g.nvox()).map(|v| {
        let [x, y, z] = at(v);
        ((4..10).contains(&x) && (9..11).contains(&y) && (2..5).contains(&z) || [x, y] == [12, 10] && z == 3 || [x, y, z] == [2, 2, 3]) as u8
    }).collect();
    let (mask_path, seeds_path) = (dir.path().join("mask.nii.gz"), dir.path().join("seeds.nii.gz"));
    write_nifti(&mask_path, g, 1, &mask.iter().map(|&m| m as f32).collect::<Vec<_>>()).unwrap();
    write_nifti(&seeds_path, g, 1, &seed_mask.iter().map(|&m| m as f32).collect::<Vec<_>>()).unwrap();
    // The y bundle's far end a target, a slab of the x bundle's far end an exclusion mask.
    let target: Vec<u8> = (0..g.nvox()).map(|v| (t.sticks[v].f[0] > 0.0 && at(v)[1] >= 16) as u8).collect();
    let exclusion: Vec<u8> = (0..g.nvox()).map(|v| (at(v)[0] == 20) as u8).collect();

    let mut whole = Field::from_angles(g.clone(), a.nsamp, std::array::from_fn(|c| a.vols[c].as_slice()));
    whole.roi = mask.iter().map(|&m| if m != 0 { INSIDE } else { 0 }).collect();
    let cpu = Inventory::discover(None).select_one(&BackendSpec::Cpu).unwrap();
    let near = |v: usize, w: usize| (0..3).all(|c| at(v)[c].abs_diff(at(w)[c]) <= 1);
    let given: Vec<usize> = (0..g.nvox()).filter(|&v| mask[v] != 0 || seed_mask[v] != 0).collect();
    let held: Vec<usize> = (0..g.nvox()).filter(|&v| given.iter().any(|&w| near(v, w))).collect();
    for d in [&ours, &other] {
        let mut f = Field::from_bedpost(d, Some(&mask_path), Some(&seeds_path)).unwrap();
        assert_eq!((f.crop.origin, f.crop.dims), ([0, 0, 0], [24, 20, 8]), "{}", d.display());
        assert_eq!(f.crop.nvox(), held.len(), "{}", d.display());
        // The hole's middle away from the seed in it, and a corner, lie in the box, not held.
        assert!(!f.crop.holds(g.dims, 12 + 24 * 10 + 480 * 6) && !f.crop.holds(g.dims, 0));
        for s in 0..a.nsamp {
            for (b, &v) in held.iter().enumerate() {
                assert_eq!(f.crop.grid_voxel(g.dims, b), v);
                let (got, want) = (&f.samples[(s * held.len() + b) * RECORD..][..RECORD], &whole.samples[(s * g.nvox() + v) * RECORD..][..RECORD]);
                assert!(got.iter().zip(want).all(|(x, y)| x.to_bits() == y.to_bits()), "{}: sample {s} voxel {v}", d.display());
            }
        }
        let seeds = f.seeds(&seeds_path).unwrap();
        assert_eq!(seeds.len(), 6 * 2 * 3 + 2);
        let mut w = Field::from_angles(g.clone(), a.nsamp, std::array::from_fn(|c| a.vols[c].as_slice()));
        w.roi = whole.roi.clone();
        for (rois, jitter, step_mm) in [(false, true, 0.5), (false, false, 0.5), (true, true, 1.7), (true, false, 1.7)] {
            if rois && f.targets.is_empty() {
                for x in [&mut f, &mut w] {
                    x.exclude_voxels(&exclusion).unwrap();
                    x.add_target_voxels(&target, "far").unwrap();
                }
            }
            let c = Config { nsamples: 10, max_steps: 200, step_mm, jitter, seed: 3, ..Config::default() };
            let want = track(&cpu, &w, &seeds, &c);
            assert!(want.total_steps > 1000, "{}", want.total_steps);
            let what = format!("{} rois {rois} jitter {jitter} step {step_mm}", d.display());
            same(&track(&cpu, &f, &seeds, &c), &want, &what);
            if let Some(dev) = opencl() {
                same(&track(&dev, &f, &seeds, &c), &want, &format!("opencl {what}"));
            }
        }
    }
}

/// The samples held grow with the mask's voxels (and those beside them), not its box's: two
/// small blocks at opposite corners span the whole grid, and the field holds their records
/// alone.
#[test]
fn the_held_samples_scale_with_the_masks_voxels_not_its_box() {
    let t = phantom::crossing();
    let g = &t.geom;
    let a = t.angles(4, 20.0, 2);
    let dir = tempfile::tempdir().unwrap();
    t.write_bedpost(&a, dir.path()).unwrap();
    let at = |v: usize| [v % 24, (v / 24) % 20, v / 480];
    let block = |lo: [usize; 3]| move |v: usize| (0..3).all(|c| at(v)[c] >= lo[c] && at(v)[c] < lo[c] + 2);
    let (b1, b2) = (block([1, 1, 1]), block([20, 16, 4]));
    let mask: Vec<f32> = (0..g.nvox()).map(|v| (b1(v) || b2(v)) as u8 as f32).collect();
    let mask_path = dir.path().join("blocks.nii.gz");
    write_nifti(&mask_path, g, 1, &mask).unwrap();
    let f = Field::from_bedpost(dir.path(), Some(&mask_path), None).unwrap();
    // Each 2 x 2 x 2 block grown by a voxel: 4 x 4 x 4, within the grid.
    let held = 2 * 4 * 4 * 4;
    assert_eq!(f.crop.box_nvox(), 23 * 19 * 7, "the blocks' box, grown");
    assert_eq!(f.crop.nvox(), held);
    assert_eq!(std::mem::size_of_val(&f.samples[..]), a.nsamp * held * RECORD * 4, "the field holds more than the mask's voxels");
}

/// `from_bedpost` reads the seed mask once: `seeds` gives the voxels it read (the file removed
/// since shows it is not read again), and reads a mask of another path.
#[test]
fn the_seed_mask_is_read_once() {
    let t = phantom::crossing();
    let g = &t.geom;
    let a = t.angles(2, 20.0, 1);
    let dir = tempfile::tempdir().unwrap();
    t.write_bedpost(&a, dir.path()).unwrap();
    let seeds: Vec<f32> = (0..g.nvox()).map(|v| (v % 97 == 3 && t.sticks[v].f[0] > 0.0) as u8 as f32).collect();
    let p = dir.path().join("seeds.nii.gz");
    write_nifti(&p, g, 1, &seeds).unwrap();
    let f = Field::from_bedpost(dir.path(), None, Some(&p)).unwrap();
    std::fs::remove_file(&p).unwrap();
    let want: Vec<u32> = (0..g.nvox() as u32).filter(|&v| seeds[v as usize] != 0.0).collect();
    assert!(!want.is_empty());
    assert_eq!(f.seeds(&p).unwrap(), want);
    assert!(f.seeds(&dir.path().join("other.nii.gz")).is_err());
}
