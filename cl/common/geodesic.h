/* geodesic.h: geodesic ray-tracing (paper 001, eq. 2-4) shared by cl/geodesic.cl and cu/geodesic.cu.
 *
 * Frame: continuous voxel coordinates, voxel centres at integer indices. The 24 field components
 * per voxel are D = g^ij (6, FSL order xx,xy,xz,yy,yz,zz), then dG/dx, dG/dy, dG/dz (6 each) with
 * G = D^-1 = g_ij, all in voxel units (src/dti metric preparation). They are stored as six float4
 * groups, group k holding components 4k..4k+3 (`f4[k * nvox + v]`): one 16-byte load per group and
 * corner keeps a trilinear gather on few cache lines, and it is the texel layout of the six RGBA
 * images of the texture variant.
 *
 * Direction scaling: the direction is rescaled to unit Euclidean length (voxel units) after every
 * step. A geodesic's path does not depend on its parametrisation (eq. 2 is quadratic in the
 * velocity), so this only fixes the step: every step advances h voxels to first order, as the
 * paper's "0.05 = twenty steps per cell" reads.
 *
 * One thread per fibre runs the loop NP_GEO_TRACE: the entry point samples the fields where
 * np_geo_query says (in-kernel trilinear from global memory, or texture hardware), then
 * np_geo_feed takes one step. Both methods sample once per step: RK2 is a Strang-split midpoint
 * rule (np_geo_feed), Euler is eq. 4. */
#ifndef NP_GEODESIC_H
#define NP_GEODESIC_H

#define NP_GEO_NCOMP 24
#define NP_GEO_GROUPS 6

/* Why a fibre ended (also the CSV's `stop` column). */
#define NP_GEO_RUNNING 0
#define NP_GEO_LEFT_VOLUME 1
#define NP_GEO_LEFT_MASK 2
#define NP_GEO_MAX_STEPS 3
#define NP_GEO_CURVATURE 4
#define NP_GEO_NUMERIC 5

#define NP_GEO_RK2 0
#define NP_GEO_EULER 1

/* Label bits per voxel: inside the tracking mask, inside the target region. */
#define NP_GEO_IN_MASK 1
#define NP_GEO_IN_TARGET 2

/* Passed by value; mirrored by `GeoParams` in src/geodesic/mod.rs (only 4-byte fields). */
typedef struct {
    int nx, ny, nz;
    int n;          /* fibres in this launch */
    int max_steps;
    int method;     /* NP_GEO_RK2 or NP_GEO_EULER */
    int record;     /* write every point (0: summaries only, for benchmarks) */
    int ngroups;    /* float4 groups read per sample (6; fewer only for the read-volume experiment) */
    float h;        /* step, voxels */
    float min_cos;  /* curvature stop: cosine of the largest turn per step (-2: off) */
    float vsx, vsy, vsz; /* voxel size, mm */
} np_geo_params;

typedef struct {
    float x[3], v[3];   /* last accepted point and unit direction */
    float xp[3], vp[3]; /* proposed next point and direction, awaiting its label (`pending`) */
    float dp[6];        /* D where the proposed step's fields were sampled (its Riemannian length) */
    float le, lg;       /* Euclidean (mm) and Riemannian length so far */
    float le_t, lg_t;   /* the same at the first point inside the target */
    int step, pending, status, target_step;
} np_geo_state;

/* Index of (i, j) among the six unique elements of a symmetric 3x3 tensor (FSL order). */
NP_FN int np_geo_sym(int i, int j)
{
    int a = i < j ? i : j, b = i < j ? j : i;
    return a * 3 - (a * (a - 1)) / 2 + b - a;
}

/* Twice the 18 unique Christoffel symbols of the first kind (eq. 3 before raising the index),
 * first[6 * sigma + pair(alpha, beta)] = 2 Gamma_{sigma, alpha beta}, from dG (d/dx_k g_ij at
 * f[6 + 6k + e]); the factor 1/2 is applied once per acceleration instead of 18 times. */
NP_FN void np_geo_christoffel(const float f[NP_GEO_NCOMP], float first[18])
{
    const int pa[6] = { 0, 0, 0, 1, 1, 2 };
    const int pb[6] = { 0, 1, 2, 1, 2, 2 };
    for (int s = 0; s < 3; ++s)
        for (int p = 0; p < 6; ++p) {
            int a = pa[p], b = pb[p];
            first[6 * s + p] = f[6 + 6 * a + np_geo_sym(b, s)] + f[6 + 6 * b + np_geo_sym(a, s)]
                             - f[6 + 6 * s + np_geo_sym(a, b)];
        }
}

/* Acceleration of eq. 2: a^gamma = -Gamma^gamma_{alpha beta} u^alpha u^beta
 * = -D^{gamma sigma} (Gamma_{sigma, alpha beta} u^alpha u^beta). Raising the index after the
 * contraction (9 FMA) instead of forming the 18 symbols of the second kind (54) is cheaper for the
 * two contractions a step needs; f[0..5] = D, first from np_geo_christoffel. */
NP_FN void np_geo_accel(const float f[NP_GEO_NCOMP], const float first[18], const float u[3], float a[3])
{
    float uu[6] = { u[0] * u[0], 2.0f * u[0] * u[1], 2.0f * u[0] * u[2],
                    u[1] * u[1], 2.0f * u[1] * u[2], u[2] * u[2] };
    float w[3];
    for (int s = 0; s < 3; ++s) {
        /* two partial sums: a shorter dependency chain */
        float s0 = first[6 * s] * uu[0] + first[6 * s + 1] * uu[1] + first[6 * s + 2] * uu[2];
        float s1 = first[6 * s + 3] * uu[3] + first[6 * s + 4] * uu[4] + first[6 * s + 5] * uu[5];
        w[s] = s0 + s1;
    }
    for (int g = 0; g < 3; ++g)
        a[g] = -0.5f * (f[np_geo_sym(g, 0)] * w[0] + f[np_geo_sym(g, 1)] * w[1] + f[np_geo_sym(g, 2)] * w[2]);
}

NP_FN int np_geo_clampi(int a, int n)
{
    return a < 0 ? 0 : (a > n - 1 ? n - 1 : a);
}

/* Nearest voxel of a point already known to lie inside the grid. */
NP_FN int np_geo_voxel(const np_geo_params *p, const float x[3])
{
    int i = np_geo_clampi((int)np_floor(x[0] + 0.5f), p->nx);
    int j = np_geo_clampi((int)np_floor(x[1] + 0.5f), p->ny);
    int k = np_geo_clampi((int)np_floor(x[2] + 0.5f), p->nz);
    return i + p->nx * (j + p->ny * k);
}

/* Inside the grid's voxel boxes: [-0.5, n - 0.5) per axis. */
NP_FN int np_geo_inside(const np_geo_params *p, const float x[3])
{
    return x[0] >= -0.5f && x[1] >= -0.5f && x[2] >= -0.5f
        && x[0] < (float)p->nx - 0.5f && x[1] < (float)p->ny - 0.5f && x[2] < (float)p->nz - 0.5f;
}

/* In-kernel trilinear interpolation from global memory (001 Sec. 4.4), edges clamped as the
 * texture variant's CLAMP_TO_EDGE does. Groups at or beyond p->ngroups read as zero. */
#define NP_GEO_CORNER(IDX, WT) \
    { float4 c = g[IDX]; s0 += (WT) * c.x; s1 += (WT) * c.y; s2 += (WT) * c.z; s3 += (WT) * c.w; }

NP_FN void np_geo_sample_global(NP_CONST_PTR float4 *f4, const np_geo_params *p, const float q[3],
                                float f[NP_GEO_NCOMP])
{
    float fx = np_floor(q[0]), fy = np_floor(q[1]), fz = np_floor(q[2]);
    float wx = q[0] - fx, wy = q[1] - fy, wz = q[2] - fz;
    int x0 = np_geo_clampi((int)fx, p->nx), x1 = np_geo_clampi((int)fx + 1, p->nx);
    int y0 = np_geo_clampi((int)fy, p->ny), y1 = np_geo_clampi((int)fy + 1, p->ny);
    int z0 = np_geo_clampi((int)fz, p->nz), z1 = np_geo_clampi((int)fz + 1, p->nz);
    int r00 = p->nx * (y0 + p->ny * z0), r10 = p->nx * (y1 + p->ny * z0);
    int r01 = p->nx * (y0 + p->ny * z1), r11 = p->nx * (y1 + p->ny * z1);
    float ux = 1.0f - wx, uy = 1.0f - wy, uz = 1.0f - wz;
    int nvox = p->nx * p->ny * p->nz;
    for (int k = 0; k < NP_GEO_GROUPS; ++k) {
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        if (k < p->ngroups) {
            NP_CONST_PTR float4 *g = f4 + k * nvox;
            NP_GEO_CORNER(r00 + x0, ux * uy * uz)
            NP_GEO_CORNER(r00 + x1, wx * uy * uz)
            NP_GEO_CORNER(r10 + x0, ux * wy * uz)
            NP_GEO_CORNER(r10 + x1, wx * wy * uz)
            NP_GEO_CORNER(r01 + x0, ux * uy * wz)
            NP_GEO_CORNER(r01 + x1, wx * uy * wz)
            NP_GEO_CORNER(r11 + x0, ux * wy * wz)
            NP_GEO_CORNER(r11 + x1, wx * wy * wz)
        }
        f[4 * k] = s0; f[4 * k + 1] = s1; f[4 * k + 2] = s2; f[4 * k + 3] = s3;
    }
}

NP_FN void np_geo_record(const np_geo_state *st, int i, const np_geo_params *p, NP_GLOBAL float *points)
{
    if (!p->record) return;
    for (int c = 0; c < 3; ++c) points[((np_ulong)st->step * 3 + c) * (np_ulong)p->n + i] = st->x[c];
}

NP_FN void np_geo_visit(np_geo_state *st, unsigned char lab)
{
    if ((lab & NP_GEO_IN_TARGET) && st->target_step < 0) {
        st->target_step = st->step;
        st->le_t = st->le;
        st->lg_t = st->lg;
    }
}

/* Loads fibre i's seed (component-major x, y, z, dx, dy, dz) and records it as point 0.
 * Returns 0 for threads past the last fibre. */
NP_FN int np_geo_begin(np_geo_state *st, int i, const np_geo_params *p, NP_CONST_PTR float *seeds,
                       NP_CONST_PTR unsigned char *labels, NP_GLOBAL float *points)
{
    if (i >= p->n) return 0;
    float nrm = 0.0f;
    for (int c = 0; c < 3; ++c) {
        st->x[c] = seeds[c * p->n + i];
        st->v[c] = seeds[(3 + c) * p->n + i];
        nrm += st->v[c] * st->v[c];
    }
    st->le = st->lg = st->le_t = st->lg_t = 0.0f;
    st->step = 0;
    st->pending = 0;
    st->target_step = -1;
    st->status = NP_GEO_RUNNING;
    float inv = np_rsqrt(nrm);
    for (int c = 0; c < 3; ++c) {
        st->v[c] *= inv;
        st->xp[c] = st->x[c];
        st->vp[c] = st->v[c];
    }
    np_geo_record(st, i, p, points);
    if (!(nrm > 0.0f) || !np_isfinite(inv) || !np_isfinite(st->x[0] + st->x[1] + st->x[2])) {
        st->status = NP_GEO_NUMERIC;
    } else if (!np_geo_inside(p, st->x)) {
        st->status = NP_GEO_LEFT_VOLUME;
    } else {
        unsigned char lab = labels[np_geo_voxel(p, st->x)];
        np_geo_visit(st, lab);
        if (!(lab & NP_GEO_IN_MASK)) st->status = NP_GEO_LEFT_MASK;
        else if (p->max_steps <= 0) st->status = NP_GEO_MAX_STEPS;
    }
    return 1;
}

/* Where the next field sample is wanted: the half-step point for RK2, the point itself for Euler. */
NP_FN void np_geo_query(const np_geo_state *st, const np_geo_params *p, float q[3])
{
    float a = p->method == NP_GEO_RK2 ? 0.5f * p->h : 0.0f;
    for (int c = 0; c < 3; ++c) q[c] = st->xp[c] + a * st->vp[c];
}

/* Accepts or rejects the proposed step given the label of its end point, loaded by the caller in
 * the same round trip as the next field sample (so a step costs one memory latency, not two).
 * Returns 1 when the fibre goes on and the sample just taken is to be fed. */
NP_FN int np_geo_accept(np_geo_state *st, int i, const np_geo_params *p, unsigned char lab, NP_GLOBAL float *points)
{
    if (!st->pending) return 1;
    st->pending = 0;
    if (!(lab & NP_GEO_IN_MASK)) {
        st->status = NP_GEO_LEFT_MASK;
        return 0;
    }
    /* Connectivity measure: Euclidean (mm) over Riemannian length, G = D^-1 taken where the
     * step's fields were sampled (the half-step point for RK2). Computed here, while the next
     * sample is in flight, rather than in np_geo_feed on the way to issuing it. */
    float d[3] = { st->xp[0] - st->x[0], st->xp[1] - st->x[1], st->xp[2] - st->x[2] };
    float gm[6];
    np_sym3_inverse(st->dp, gm);
    float qg = gm[0] * d[0] * d[0] + gm[3] * d[1] * d[1] + gm[5] * d[2] * d[2]
             + 2.0f * (gm[1] * d[0] * d[1] + gm[2] * d[0] * d[2] + gm[4] * d[1] * d[2]);
    float ex = p->vsx * d[0], ey = p->vsy * d[1], ez = p->vsz * d[2];
    st->le += np_sqrt(ex * ex + ey * ey + ez * ez);
    st->lg += np_sqrt(np_fmax(qg, 0.0f));
    for (int c = 0; c < 3; ++c) {
        st->x[c] = st->xp[c];
        st->v[c] = st->vp[c];
    }
    st->step += 1;
    np_geo_record(st, i, p, points);
    np_geo_visit(st, lab);
    if (st->step >= p->max_steps) {
        st->status = NP_GEO_MAX_STEPS;
        return 0;
    }
    return 1;
}

/* One step from (x, v) with the fields f sampled at np_geo_query's point; proposes (xp, vp).
 * RK2 is Strang splitting of eq. 2 into a drift (x' = v) and a kick (v' = a(x, v), x frozen):
 * drift h/2, kick h by the midpoint rule in v with the Christoffel symbols of the half-step point,
 * drift h/2. Each part is second order, so the step is; and since the kick holds x fixed it needs
 * one field sample per step, as Euler (eq. 4) does. A step whose new point leaves the volume, is not
 * finite or turns too sharply ends the fibre at x here; one leaving the mask ends it in
 * np_geo_accept. */
NP_FN void np_geo_feed(np_geo_state *st, const np_geo_params *p, const float f[NP_GEO_NCOMP])
{
    float first[18], a[3], u[3], xn[3], vn[3];
    np_geo_christoffel(f, first);
    float h = p->h;
    np_geo_accel(f, first, st->v, a);
    int rk2 = p->method == NP_GEO_RK2;
    if (rk2) {
        for (int c = 0; c < 3; ++c) u[c] = st->v[c] + 0.5f * h * a[c];
        np_geo_accel(f, first, u, a);
    }
    float nrm = 0.0f, cosv = 0.0f;
    for (int c = 0; c < 3; ++c) {
        vn[c] = st->v[c] + h * a[c];
        nrm += vn[c] * vn[c];
    }
    float inv = np_rsqrt(nrm);
    for (int c = 0; c < 3; ++c) {
        vn[c] *= inv;
        cosv += vn[c] * st->v[c];
        /* RK2: x + h/2 v + h/2 vn; Euler: x + h v */
        xn[c] = rk2 ? st->x[c] + 0.5f * h * (st->v[c] + vn[c]) : st->x[c] + h * st->v[c];
    }
    if (!(nrm > 0.0f) || !np_isfinite(inv) || !np_isfinite(xn[0] + xn[1] + xn[2])) {
        st->status = NP_GEO_NUMERIC;
        return;
    }
    if (!np_geo_inside(p, xn)) {
        st->status = NP_GEO_LEFT_VOLUME;
        return;
    }
    if (cosv < p->min_cos) {
        st->status = NP_GEO_CURVATURE;
        return;
    }
    for (int c = 0; c < 6; ++c) st->dp[c] = f[c];
    for (int c = 0; c < 3; ++c) {
        st->xp[c] = xn[c];
        st->vp[c] = vn[c];
    }
    st->pending = 1;
}

/* Summaries, component-major: ints (steps, stop, target step), floats (le, lg, le_t, lg_t). */
NP_FN void np_geo_finish(const np_geo_state *st, int i, const np_geo_params *p, NP_GLOBAL int *sum_i,
                         NP_GLOBAL float *sum_f)
{
    int n = p->n;
    sum_i[i] = st->step;
    sum_i[n + i] = st->status;
    sum_i[2 * n + i] = st->target_step;
    sum_f[i] = st->le;
    sum_f[n + i] = st->lg;
    sum_f[2 * n + i] = st->le_t;
    sum_f[3 * n + i] = st->lg_t;
}

/* The per-fibre loop of every trace entry point: SAMPLE is a statement filling `f` at `q`
 * (global-memory or texture interpolation), so the loop is written once for both dialects. The
 * label of the proposed point and the next field sample do not depend on each other, so both are
 * in flight together; when the label rejects the step the sample is discarded. */
#define NP_GEO_TRACE(i, p, seeds, labels, points, sum_i, sum_f, SAMPLE)            \
    {                                                                               \
        np_geo_state st;                                                            \
        float f[NP_GEO_NCOMP], q[3];                                                \
        if (np_geo_begin(&st, (i), &(p), (seeds), (labels), (points))) {            \
            while (st.status == NP_GEO_RUNNING) {                                   \
                unsigned char lab = (labels)[np_geo_voxel(&(p), st.xp)];            \
                np_geo_query(&st, &(p), q);                                         \
                SAMPLE;                                                             \
                if (np_geo_accept(&st, (i), &(p), lab, (points)))                   \
                    np_geo_feed(&st, &(p), f);                                      \
            }                                                                       \
            np_geo_finish(&st, (i), &(p), (sum_i), (sum_f));                        \
        }                                                                           \
    }

/* Copies fibre i's points from the step-major scratch into a packed xyz list at offset[i] (in
 * points), so only the fibres' true lengths cross the bus. */
NP_FN void np_geo_pack(int i, int n, int every, NP_CONST_PTR float *points, NP_CONST_PTR int *steps,
                       NP_CONST_PTR np_ulong *offset, NP_GLOBAL float *packed)
{
    if (i >= n) return;
    np_ulong o = offset[i];
    np_ulong last = steps[i] > 0 ? (np_ulong)steps[i] : 0; /* as FibreEnd::from_summaries */
    /* Points 0, every, 2 every, ... and the last (TraceParams::every): the rest never leave
       the device. 64-bit steps: s + every cannot wrap. */
    for (np_ulong s = 0;; s += (np_ulong)every) {
        if (s > last) s = last;
        for (int c = 0; c < 3; ++c)
            packed[o * 3 + c] = points[(s * 3 + c) * (np_ulong)n + i];
        ++o;
        if (s == last) break;
    }
}

#endif
