/* dti.h: per-voxel diffusion-tensor work shared by the OpenCL and CUDA entry points.
 * Volumes are component-major: element c of voxel v lives at [c * nvox + v], which is both
 * the NIfTI 4-D layout and the coalesced one (neighbouring work-items read neighbouring words). */
#ifndef NP_DTI_H
#define NP_DTI_H

#define NP_DTI_MAXG 512
/* The design matrix uses b in ms/um^2 (b/1000) so its normal matrix is well conditioned in
 * float32; fitted tensors come out in um^2/ms and are scaled by 1e-3 to mm^2/s. */
#define NP_DTI_UNIT 1.0e-3f

/* Flag values written per voxel. */
#define NP_DTI_BACKGROUND 0
#define NP_DTI_FITTED 1
#define NP_DTI_REPAIRED 2

/* Repair rule: eigenvalues below lam_floor are raised to lam_floor, eigenvectors kept. */
NP_FN int np_dti_repair(float t[6], float lam_floor)
{
    if (np_sym3_surely_above(t, lam_floor)) return 0;
    float lam[3], vec[9];
    np_sym3_eigen(t, lam, vec);
    if (lam[2] >= lam_floor) return 0;
    for (int i = 0; i < 3; ++i) lam[i] = np_fmax(lam[i], lam_floor);
    np_sym3_compose(lam, vec, t);
    return 1;
}

/* Solves L L^T x = x in place with the packed lower-triangular Cholesky factor L (7 x 7). */
NP_FN void np_chol7_solve(const float L[28], float x[7])
{
    for (int p = 0; p < 7; ++p) {            /* forward: L z = x */
        int rp = p * (p + 1) / 2;
        float s = x[p];
        for (int k = 0; k < p; ++k) s -= L[rp + k] * x[k];
        x[p] = s / L[rp + p];
    }
    for (int p = 6; p >= 0; --p) {           /* backward: L^T x = z */
        float s = x[p];
        for (int k = p + 1; k < 7; ++k) s -= L[k * (k + 1) / 2 + p] * x[k];
        x[p] = s / L[p * (p + 1) / 2 + p];
    }
}

/* Weighted linear least squares (one OLS pass supplies the weights, as in FSL dtifit --wls and
 * DIPY's WLS): y = log S, beta = (ln S0, Dxx, Dxy, Dxz, Dyy, Dyz, Dzz), B the n x 7 design,
 * P = pinv(B) (7 x n) precomputed on the host. Returns the voxel flag.
 * float32 care: y is taken relative to ln(max S), so ln S0 (~7) does not ride in every term, and
 * the weighted system is solved for the correction to the OLS solution, A d = B^T W (y - B beta),
 * whose right-hand side is made of small residuals: forming B^T W B in float32 loses about
 * cond(B)^2 x eps, which now scales |d| instead of |beta|. Noiseless data come back to ~5e-5. */
NP_FN int np_dti_fit_voxel(NP_CONST_PTR float *dwi, int nvox, int v, int ngrad,
                           NP_CONST_PTR float *design, NP_CONST_PTR float *pinv,
                           float lam_floor, float t[6], float *s0)
{
    float smax = 0.0f;
    for (int i = 0; i < ngrad; ++i) smax = np_fmax(smax, dwi[i * nvox + v]);
    for (int e = 0; e < 6; ++e) t[e] = 0.0f;
    *s0 = 0.0f;
    if (!(smax > 0.0f)) return NP_DTI_BACKGROUND;
    float sfloor = 1.0e-4f * smax;
    float lsmax = np_log(smax);

    float beta[7];
    for (int k = 0; k < 7; ++k) beta[k] = 0.0f;
    for (int i = 0; i < ngrad; ++i) {
        float y = np_log(np_fmax(dwi[i * nvox + v], sfloor)) - lsmax;
        for (int k = 0; k < 7; ++k) beta[k] += pinv[k * ngrad + i] * y;
    }

    /* normal equations A d = r with weights w = (predicted S / S0)^2, r from the OLS residuals */
    float A[28], r[7];
    for (int k = 0; k < 28; ++k) A[k] = 0.0f;
    for (int k = 0; k < 7; ++k) r[k] = 0.0f;
    for (int i = 0; i < ngrad; ++i) {
        float b[7];
        float pred = 0.0f;
        for (int k = 0; k < 7; ++k) { b[k] = design[i * 7 + k]; pred += b[k] * beta[k]; }
        float w = np_exp(2.0f * (pred - beta[0]));
        float res = np_log(np_fmax(dwi[i * nvox + v], sfloor)) - lsmax - pred;
        int idx = 0;
        for (int p = 0; p < 7; ++p) {
            float wbp = w * b[p];
            r[p] += wbp * res;
            for (int q = 0; q <= p; ++q) A[idx++] += wbp * b[q];
        }
    }
    /* Cholesky of the packed lower triangle, in place */
    for (int p = 0; p < 7; ++p) {
        int rp = p * (p + 1) / 2;
        for (int q = 0; q <= p; ++q) {
            int rq = q * (q + 1) / 2;
            float s = A[rp + q];
            for (int k = 0; k < q; ++k) s -= A[rp + k] * A[rq + k];
            if (p == q) {
                if (!(s > 0.0f)) return NP_DTI_BACKGROUND;
                A[rp + p] = np_sqrt(s);
            } else {
                A[rp + q] = s / A[rq + q];
            }
        }
    }
    np_chol7_solve(A, r);
    for (int k = 0; k < 7; ++k) r[k] += beta[k];

    for (int e = 0; e < 6; ++e) t[e] = r[e + 1] * NP_DTI_UNIT;
    *s0 = np_exp(r[0] + lsmax);
    int flag = NP_DTI_FITTED;
    if (np_dti_repair(t, lam_floor)) flag = NP_DTI_REPAIRED;
    for (int e = 0; e < 6; ++e)
        if (!np_isfinite(t[e])) return NP_DTI_BACKGROUND;
    return flag;
}

/* Tensor in the frame the trackers integrate in: image voxel axes (x negated where the
 * affine's determinant is positive, undoing FSL's bvec convention) and voxel units. */
NP_FN void np_voxel_frame(const float t[6], int flipx, float ivx, float ivy, float ivz, float o[6])
{
    float sx = flipx ? -ivx : ivx;
    o[0] = t[0] * sx * sx;  o[1] = t[1] * sx * ivy;  o[2] = t[2] * sx * ivz;
    o[3] = t[3] * ivy * ivy; o[4] = t[4] * ivy * ivz; o[5] = t[5] * ivz * ivz;
}

/* Sharpened metric of Fu et al. (FIM paper, eq. 3): M = |D|^(-1/3) (D / |D|^(1/3))^(-alpha). */
NP_FN void np_sharpen(const float t[6], float alpha, float lam_floor, float o[6])
{
    float lam[3], vec[9], f[3];
    np_sym3_eigen(t, lam, vec);
    for (int i = 0; i < 3; ++i) lam[i] = np_fmax(lam[i], lam_floor);
    float cr = np_cbrt(lam[0] * lam[1] * lam[2]);
    for (int i = 0; i < 3; ++i) f[i] = np_pow(lam[i] / cr, -alpha) / cr;
    np_sym3_compose(f, vec, o);
}

/* Per-voxel bodies of the entry points in cl/dti.cl and cu/dti.cu. */

NP_FN void np_dti_fit(int gid, NP_CONST_PTR float *dwi, NP_CONST_PTR unsigned char *mask,
                      NP_CONST_PTR float *design, NP_CONST_PTR float *pinv,
                      int nvox, int ngrad, float lam_floor,
                      NP_GLOBAL float *tensor, NP_GLOBAL float *s0, NP_GLOBAL int *flags)
{
    int v = gid;
    if (v >= nvox) return;
    float t[6], s = 0.0f;
    int flag = NP_DTI_BACKGROUND;
    if (mask[v]) flag = np_dti_fit_voxel(dwi, nvox, v, ngrad, design, pinv, lam_floor, t, &s);
    if (flag == NP_DTI_BACKGROUND) { for (int e = 0; e < 6; ++e) t[e] = 0.0f; s = 0.0f; }
    for (int e = 0; e < 6; ++e) tensor[e * nvox + v] = t[e];
    s0[v] = s;
    flags[v] = flag;
}

NP_FN void np_dti_scalars(int gid, NP_CONST_PTR float *tensor, int nvox, NP_GLOBAL float *out)
{
    int v = gid;
    if (v >= nvox) return;
    float t[6], lam[3], vec[9];
    for (int e = 0; e < 6; ++e) t[e] = tensor[e * nvox + v];
    np_sym3_eigen(t, lam, vec);
    out[0 * nvox + v] = np_fractional_anisotropy(lam);
    out[1 * nvox + v] = (lam[0] + lam[1] + lam[2]) / 3.0f;
    for (int r = 0; r < 3; ++r) out[(2 + r) * nvox + v] = vec[3 * r];
    for (int i = 0; i < 3; ++i) out[(5 + i) * nvox + v] = lam[i];
}

NP_FN void np_metric_inverse(int gid, NP_CONST_PTR float *tensor, int nvox, int flipx,
                             float ivx, float ivy, float ivz, float d_iso,
                             NP_GLOBAL float *fields, NP_GLOBAL float *g)
{
    int v = gid;
    if (v >= nvox) return;
    float t[6], d[6], gi[6];
    for (int e = 0; e < 6; ++e) t[e] = tensor[e * nvox + v];
    if (!(t[0] + t[3] + t[5] > 0.0f)) { t[0] = t[3] = t[5] = d_iso; t[1] = t[2] = t[4] = 0.0f; }
    np_voxel_frame(t, flipx, ivx, ivy, ivz, d);
    np_sym3_inverse(d, gi);
    for (int e = 0; e < 6; ++e) { fields[e * nvox + v] = d[e]; g[e * nvox + v] = gi[e]; }
}

NP_FN void np_metric_derivs(int gid, NP_CONST_PTR float *g, int nx, int ny, int nz, NP_GLOBAL float *fields)
{
    int v = gid;
    int nvox = nx * ny * nz;
    if (v >= nvox) return;
    int x = v % nx, y = (v / nx) % ny, z = v / (nx * ny);
    int step[3] = { 1, nx, nx * ny };
    int pos[3] = { x, y, z };
    int len[3] = { nx, ny, nz };
    for (int a = 0; a < 3; ++a) {
        int lo = pos[a] > 0 ? v - step[a] : v;
        int hi = pos[a] < len[a] - 1 ? v + step[a] : v;
        float inv = (hi - lo) == 0 ? 0.0f : (float)step[a] / (float)(hi - lo);
        for (int e = 0; e < 6; ++e)
            fields[(6 + 6 * a + e) * nvox + v] = (g[e * nvox + hi] - g[e * nvox + lo]) * inv;
    }
}

NP_FN void np_metric_sharpen(int gid, NP_CONST_PTR float *tensor, int nvox, float alpha, float lam_floor,
                             NP_GLOBAL float *out)
{
    int v = gid;
    if (v >= nvox) return;
    float t[6], m[6];
    for (int e = 0; e < 6; ++e) t[e] = tensor[e * nvox + v];
    if (!(t[0] + t[3] + t[5] > 0.0f)) { for (int e = 0; e < 6; ++e) out[e * nvox + v] = 0.0f; return; }
    np_sharpen(t, alpha, lam_floor, m);
    for (int e = 0; e < 6; ++e) out[e * nvox + v] = m[e];
}

#endif
