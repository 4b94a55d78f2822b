/* sym3.h: symmetric 3x3 tensors stored as their six unique elements in FSL dtifit order
 * (xx, xy, xz, yy, yz, zz). Eigen-decomposition by cyclic Jacobi with a fixed sweep count:
 * branch-light, robust for near-degenerate (isotropic) tensors where the closed-form
 * trigonometric solution loses its eigenvectors, and written identically in src/dti/sym3.rs
 * so the CPU reference follows the same arithmetic. */
#ifndef NP_SYM3_H
#define NP_SYM3_H

#define NP_JACOBI_SWEEPS 6

/* One Jacobi rotation zeroing a[p][q]; a is row-major 3x3, v accumulates eigenvectors (columns). */
NP_FN void np_jacobi_rotate(float a[9], float v[9], int p, int q)
{
    float apq = a[3 * p + q];
    if (np_fabs(apq) < 1e-30f) return;
    float app = a[3 * p + p], aqq = a[3 * q + q];
    float theta = 0.5f * (aqq - app) / apq;
    float t = 1.0f / (np_fabs(theta) + np_sqrt(theta * theta + 1.0f));
    if (theta < 0.0f) t = -t;
    float c = np_rsqrt(t * t + 1.0f);
    float s = t * c;
    for (int k = 0; k < 3; ++k) {
        float akp = a[3 * k + p], akq = a[3 * k + q];
        a[3 * k + p] = c * akp - s * akq;
        a[3 * k + q] = s * akp + c * akq;
    }
    for (int k = 0; k < 3; ++k) {
        float apk = a[3 * p + k], aqk = a[3 * q + k];
        a[3 * p + k] = c * apk - s * aqk;
        a[3 * q + k] = s * apk + c * aqk;
    }
    for (int k = 0; k < 3; ++k) {
        float vkp = v[3 * k + p], vkq = v[3 * k + q];
        v[3 * k + p] = c * vkp - s * vkq;
        v[3 * k + q] = s * vkp + c * vkq;
    }
}

/* Eigenvalues in descending order; eigenvector i is column i of vec (vec[3*row+i]). */
NP_FN void np_sym3_eigen(const float t[6], float lam[3], float vec[9])
{
    float a[9] = { t[0], t[1], t[2], t[1], t[3], t[4], t[2], t[4], t[5] };
    for (int k = 0; k < 9; ++k) vec[k] = (k % 4 == 0) ? 1.0f : 0.0f;
    for (int sweep = 0; sweep < NP_JACOBI_SWEEPS; ++sweep) {
        np_jacobi_rotate(a, vec, 0, 1);
        np_jacobi_rotate(a, vec, 0, 2);
        np_jacobi_rotate(a, vec, 1, 2);
    }
    lam[0] = a[0]; lam[1] = a[4]; lam[2] = a[8];
    /* sort descending, swapping eigenvector columns along */
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2 - i; ++j)
            if (lam[j] < lam[j + 1]) {
                float tl = lam[j]; lam[j] = lam[j + 1]; lam[j + 1] = tl;
                for (int r = 0; r < 3; ++r) {
                    float tv = vec[3 * r + j]; vec[3 * r + j] = vec[3 * r + j + 1]; vec[3 * r + j + 1] = tv;
                }
            }
}

/* t = sum_i f_i v_i v_i^T */
NP_FN void np_sym3_compose(const float f[3], const float vec[9], float t[6])
{
    const int rr[6] = { 0, 0, 0, 1, 1, 2 };
    const int cc[6] = { 0, 1, 2, 1, 2, 2 };
    for (int e = 0; e < 6; ++e) {
        int r = rr[e], c = cc[e];
        t[e] = f[0] * vec[3 * r] * vec[3 * c] + f[1] * vec[3 * r + 1] * vec[3 * c + 1]
             + f[2] * vec[3 * r + 2] * vec[3 * c + 2];
    }
}

NP_FN float np_sym3_det(const float t[6])
{
    return t[0] * (t[3] * t[5] - t[4] * t[4]) - t[1] * (t[1] * t[5] - t[4] * t[2])
         + t[2] * (t[1] * t[4] - t[3] * t[2]);
}

/* Inverse by cofactors; the caller guarantees positive definiteness. */
NP_FN void np_sym3_inverse(const float t[6], float o[6])
{
    float c00 = t[3] * t[5] - t[4] * t[4];
    float c01 = t[2] * t[4] - t[1] * t[5];
    float c02 = t[1] * t[4] - t[2] * t[3];
    float c11 = t[0] * t[5] - t[2] * t[2];
    float c12 = t[1] * t[2] - t[0] * t[4];
    float c22 = t[0] * t[3] - t[1] * t[1];
    float inv = 1.0f / (t[0] * c00 + t[1] * c01 + t[2] * c02);
    o[0] = c00 * inv; o[1] = c01 * inv; o[2] = c02 * inv;
    o[3] = c11 * inv; o[4] = c12 * inv; o[5] = c22 * inv;
}

/* True when positive definite with smallest eigenvalue >= floor, shown without decomposing:
 * Sylvester's leading minors and lambda_min >= det / (lambda_1 lambda_2) >= 4 det / trace^2. */
NP_FN int np_sym3_surely_above(const float t[6], float floor)
{
    float m2 = t[0] * t[3] - t[1] * t[1];
    float det = np_sym3_det(t);
    float tr = t[0] + t[3] + t[5];
    return t[0] > 0.0f && m2 > 0.0f && det > 0.0f && 4.0f * det >= floor * tr * tr;
}

NP_FN float np_fractional_anisotropy(const float lam[3])
{
    float md = (lam[0] + lam[1] + lam[2]) / 3.0f;
    float num = (lam[0] - md) * (lam[0] - md) + (lam[1] - md) * (lam[1] - md) + (lam[2] - md) * (lam[2] - md);
    float den = lam[0] * lam[0] + lam[1] * lam[1] + lam[2] * lam[2];
    return den > 0.0f ? np_sqrt(1.5f * num / den) : 0.0f;
}

#endif
