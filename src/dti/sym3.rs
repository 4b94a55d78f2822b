//! Symmetric 3x3 tensors in FSL order (xx, xy, xz, yy, yz, zz): the CPU twin of
//! `cl/common/sym3.h`, in f64, following the same cyclic-Jacobi arithmetic.

pub const SWEEPS: usize = 6;

fn rotate(a: &mut [f64; 9], v: &mut [f64; 9], p: usize, q: usize) {
    let apq = a[3 * p + q];
    if apq.abs() < 1e-300 {
        return;
    }
    let (app, aqq) = (a[3 * p + p], a[3 * q + q]);
    let theta = 0.5 * (aqq - app) / apq;
    let mut t = 1.0 / (theta.abs() + (theta * theta + 1.0).sqrt());
    if theta < 0.0 {
        t = -t;
    }
    let c = 1.0 / (t * t + 1.0).sqrt();
    let s = t * c;
    for k in 0..3 {
        let (akp, akq) = (a[3 * k + p], a[3 * k + q]);
        a[3 * k + p] = c * akp - s * akq;
        a[3 * k + q] = s * akp + c * akq;
    }
    for k in 0..3 {
        let (apk, aqk) = (a[3 * p + k], a[3 * q + k]);
        a[3 * p + k] = c * apk - s * aqk;
        a[3 * q + k] = s * apk + c * aqk;
    }
    for k in 0..3 {
        let (vkp, vkq) = (v[3 * k + p], v[3 * k + q]);
        v[3 * k + p] = c * vkp - s * vkq;
        v[3 * k + q] = s * vkp + c * vkq;
    }
}

/// Eigenvalues (descending) and eigenvectors (column i of the row-major `vec`).
pub fn eigen(t: &[f64; 6]) -> ([f64; 3], [f64; 9]) {
    let mut a = [t[0], t[1], t[2], t[1], t[3], t[4], t[2], t[4], t[5]];
    let mut v = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0];
    for _ in 0..SWEEPS {
        rotate(&mut a, &mut v, 0, 1);
        rotate(&mut a, &mut v, 0, 2);
        rotate(&mut a, &mut v, 1, 2);
    }
    sorted([a[0], a[4], a[8]], v)
}

/// The diagonal's eigenvalues in descending order, their vectors' columns with them.
pub(super) fn sorted(mut lam: [f64; 3], mut v: [f64; 9]) -> ([f64; 3], [f64; 9]) {
    for i in 0..2 {
        for j in 0..2 - i {
            if lam[j] < lam[j + 1] {
                lam.swap(j, j + 1);
                for r in 0..3 {
                    v.swap(3 * r + j, 3 * r + j + 1);
                }
            }
        }
    }
    (lam, v)
}

/// True when the tensor is positive definite with smallest eigenvalue >= `floor`, shown without
/// an eigen-decomposition: leading minors positive (Sylvester) and lambda_min >= det / (lambda_1
/// lambda_2) >= 4 det / trace^2. False means "decompose and see", not "below".
pub fn surely_above(t: &[f64; 6], floor: f64) -> bool {
    let m2 = t[0] * t[3] - t[1] * t[1];
    let det = t[0] * (t[3] * t[5] - t[4] * t[4]) - t[1] * (t[1] * t[5] - t[4] * t[2]) + t[2] * (t[1] * t[4] - t[3] * t[2]);
    let tr = t[0] + t[3] + t[5];
    t[0] > 0.0 && m2 > 0.0 && det > 0.0 && 4.0 * det >= floor * tr * tr
}

/// Principal eigenvector (column 0).
pub fn v1(vec: &[f64; 9]) -> [f64; 3] {
    [vec[0], vec[3], vec[6]]
}

pub fn compose(f: [f64; 3], vec: &[f64; 9]) -> [f64; 6] {
    const RC: [(usize, usize); 6] = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)];
    RC.map(|(r, c)| (0..3).map(|i| f[i] * vec[3 * r + i] * vec[3 * c + i]).sum())
}

pub fn inverse(t: &[f64; 6]) -> [f64; 6] {
    let c00 = t[3] * t[5] - t[4] * t[4];
    let c01 = t[2] * t[4] - t[1] * t[5];
    let c02 = t[1] * t[4] - t[2] * t[3];
    let c11 = t[0] * t[5] - t[2] * t[2];
    let c12 = t[1] * t[2] - t[0] * t[4];
    let c22 = t[0] * t[3] - t[1] * t[1];
    let inv = 1.0 / (t[0] * c00 + t[1] * c01 + t[2] * c02);
    [c00 * inv, c01 * inv, c02 * inv, c11 * inv, c12 * inv, c22 * inv]
}

pub fn fractional_anisotropy(lam: &[f64; 3]) -> f64 {
    let md = (lam[0] + lam[1] + lam[2]) / 3.0;
    let num: f64 = lam.iter().map(|l| (l - md) * (l - md)).sum();
    let den: f64 = lam.iter().map(|l| l * l).sum();
    if den > 0.0 { (1.5 * num / den).sqrt() } else { 0.0 }
}

/// The tensor from eigenvalues along given axes (for phantoms and tests).
pub fn from_eigen(lam: [f64; 3], e1: [f64; 3], e2: [f64; 3]) -> [f64; 6] {
    let e3 = [e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2], e1[0] * e2[1] - e1[1] * e2[0]];
    let vec = [e1[0], e2[0], e3[0], e1[1], e2[1], e3[1], e1[2], e2[2], e3[2]];
    compose(lam, &vec)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn eigen_reconstructs_and_sorts() {
        let t = [1.3, 0.2, -0.1, 0.9, 0.05, 0.4];
        let (lam, vec) = eigen(&t);
        assert!(lam[0] >= lam[1] && lam[1] >= lam[2]);
        let r = compose(lam, &vec);
        for i in 0..6 {
            assert!((r[i] - t[i]).abs() < 1e-12, "{r:?} vs {t:?}");
        }
        let inv = inverse(&t);
        // T * T^-1 = I, checked on the (0,0) and (0,1) entries
        let m = |t: &[f64; 6], r: usize, c: usize| {
            let idx = [[0, 1, 2], [1, 3, 4], [2, 4, 5]];
            t[idx[r][c]]
        };
        let e00: f64 = (0..3).map(|k| m(&t, 0, k) * m(&inv, k, 0)).sum();
        let e01: f64 = (0..3).map(|k| m(&t, 0, k) * m(&inv, k, 1)).sum();
        assert!((e00 - 1.0).abs() < 1e-12 && e01.abs() < 1e-12);
    }
}
