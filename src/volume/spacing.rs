//! pixdim against the sform. Voxel sizes come from pixdim (Geometry::voxel_size: tracking steps
//! and fibre lengths in mm, FIM's grid spacing, dti's voxel frame, register's steps) and
//! positions from the sform (the affine: streamline coordinates, resampling), so a file whose
//! sform's columns are not pixdim long (a sform scaled or sheared by hand, a writer that left
//! pixdim behind) gets lengths and positions that disagree, silently. FSL reads its voxel sizes
//! from pixdim too and does not compare; nibabel does not compare when reading, and on saving
//! rewrites pixdim from the affine's column norms. Here the file is named, once.

use super::Geometry;
use std::collections::HashSet;
use std::sync::Mutex;

/// Relative disagreement allowed: both numbers are float32, and a writer's own float32
/// arithmetic (a rotation from a quaternion or direction cosines, times the voxel size) leaves
/// each column a few dozen roundings (u = 2^-24 each) from its length; 64 float32 epsilons
/// (2^-17, 7.6e-6) covers that and is far below anything that matters (7.6 nm in 1 mm).
pub const TOLERANCE: f64 = 64.0 * f32::EPSILON as f64;

/// Where the sform's column lengths and the voxel sizes used differ beyond [`TOLERANCE`]: a
/// phrase such as "pixdim 2 x 2 x 2 mm, the sform's voxel columns 2 x 2.5 x 2 mm long", or None
/// (also when the affine is not the sform: a qform's is built from pixdim).
pub fn disagreement(g: &Geometry) -> Option<String> {
    if g.header.sform_code <= 0 {
        return None;
    }
    let norms: [f64; 3] = std::array::from_fn(|a| (0..3).map(|r| g.affine[r][a] * g.affine[r][a]).sum::<f64>().sqrt());
    let off = (0..3).any(|a| {
        let (n, p) = (norms[a], g.voxel_size[a] as f64);
        (n - p).abs() > TOLERANCE * n.max(p)
    });
    let list = |v: [f64; 3]| v.map(|x| format!("{}", x as f32)).join(" x ");
    off.then(|| format!("pixdim {} mm, the sform's voxel columns {} mm long", list(g.voxel_size.map(|v| v as f64)), list(norms)))
}

/// Warns once per file (`shown`) whose pixdim and sform disagree.
pub fn warn(g: &Geometry, shown: &str) {
    static WARNED: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let Some(what) = disagreement(g) else { return };
    let mut w = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if w.get_or_insert_with(HashSet::new).insert(shown.to_string()) {
        eprintln!("warning: {shown}: {what}; positions follow the sform, voxel sizes (steps, lengths, spacing) pixdim. Fix the header (nibabel rewrites pixdim from the affine on saving) if they should agree");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sform_that_disagrees_with_pixdim_is_found_and_rounding_is_not() {
        let mut g = Geometry::synthetic([4, 4, 4], [2.0; 3]);
        assert_eq!(disagreement(&g), None);
        // A rotation whose entries are float32-rounded: within rounding.
        let (c, s) = ((0.3f32).cos(), (0.3f32).sin());
        for (r, v) in [[c * 2.0, -s * 2.0], [s * 2.0, c * 2.0]].iter().enumerate() {
            g.affine[r][0] = v[0] as f64;
            g.affine[r][1] = v[1] as f64;
        }
        assert_eq!(disagreement(&g), None);
        // One column 1 % long, or sheared: named.
        g.affine[2][2] = 2.02;
        assert_eq!(disagreement(&g).as_deref(), Some("pixdim 2 x 2 x 2 mm, the sform's voxel columns 2 x 2 x 2.02 mm long"));
        g.affine[2][2] = 2.0;
        g.affine[0][2] = 0.4;
        assert!(disagreement(&g).is_some());
        // Under a qform (sform_code 0) the affine is pixdim's own.
        g.header.sform_code = 0;
        assert_eq!(disagreement(&g), None);
    }
}
