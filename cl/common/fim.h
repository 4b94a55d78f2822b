/* fim.h: the local solver g(U_x) of paper 004 (Godunov Hamiltonian, eq. 6) and the block
 * update of the GPU FIM (Algorithm 5.1), written once for OpenCL and CUDA over portable.h.
 * The arithmetic follows src/fim/godunov.rs step by step (the CPU reference). */
#ifndef NP_FIM_H
#define NP_FIM_H

#if defined(NP_CUDA)
  #define NP_FIM_INF __int_as_float(0x7f800000)
#else
  #define NP_FIM_INF INFINITY
#endif
#define NP_FIM_B 4          /* block edge (004: 4^3 blocks) */
#define NP_FIM_BV 64        /* voxels per block */
/* Work-items per voxel in fim_update: lane j solves combinations j, j + LANES, ... of eq. 6.
 * One item per voxel left a launch with ~450 active blocks at 5 % occupancy, each warp as long
 * as its lanes' 26 combinations in a row; the host may set it (NEUROPORT_FIM_LANES). */
#ifndef NP_FIM_LANES
#define NP_FIM_LANES 4
#endif

/* S in FSL order a b c d e f = xx xy xz yy yz zz. */
NP_FN float np_fim_s(const float *m, int i, int j)
{
    int k = i == j ? (i == 0 ? 0 : (i == 1 ? 3 : 5)) : (i + j == 1 ? 1 : (i + j == 2 ? 2 : 4));
    return m[k];
}

/* g^T S g by S's symmetry: six products instead of nine (H_G's evaluations form it up to ~140
 * times each). */
NP_FN float np_fim_quad(const float *m, const float *g)
{
    return np_fim_s(m, 0, 0) * g[0] * g[0] + np_fim_s(m, 1, 1) * g[1] * g[1] + np_fim_s(m, 2, 2) * g[2] * g[2] +
           2.0f * (np_fim_s(m, 0, 1) * g[0] * g[1] + np_fim_s(m, 0, 2) * g[0] * g[2] + np_fim_s(m, 1, 2) * g[1] * g[2]);
}

/* The p minimising H on axis k with the other two components held (rd: 1 / S's diagonal). */
NP_FN float np_fim_critical(const float *m, const float *rd, const float *g, int k)
{
    int i = (k + 1) % 3, j = (k + 2) % 3;
    return -(np_fim_s(m, k, i) * g[i] + np_fim_s(m, k, j) * g[j]) * rd[k];
}

/* 1 / S's diagonal, once per voxel: eq. 6's combinations divide by it up to five times each. */
NP_FN void np_fim_recip_diag(const float *m, float *rd)
{
    for (int k = 0; k < 3; ++k) rd[k] = 1.0f / np_fim_s(m, k, k);
}

/* The paper's "left side index" (Sec. 4.2). */
NP_FN int np_fim_side(float pm, float pp, float ps)
{
    if (pm < ps && ps < pp) return 0;
    if ((pm + pp) * 0.5f < ps) return 1;
    return -1;
}

/* src/fim/godunov.rs: tsai_tol (4 roundings of the differences, FLT_EPSILON = 2^-23). */
NP_FN float np_fim_tsai_tol(const float *m, const float *ih, float u)
{
    float a = 0.0f;
    for (int k = 0; k < 3; ++k) a = np_fmax(a, ih[k] * np_sqrt(np_fim_s(m, k, k)));
    return 4.0f * 1.1920929e-7f * (1.0f + np_fabs(u) * a);
}

NP_FN float np_fim_tsai_select(float pm, float pp, float ps)
{
    float a = pm - ps > 0.0f ? pm - ps : 0.0f;
    float b = pp - ps < 0.0f ? pp - ps : 0.0f;
    return a >= -b ? ps + a : ps + b;
}

/* One combination of eq. 6, combo = 9 (side_z + 1) + 3 (side_y + 1) + side_x + 1 with side_k in
 * {-1 backward, 0 critical, +1 forward}: its solution (INF if none), *valid set by the validity
 * test where the solution is below `below` (the caller's smallest valid one so far: above it,
 * validity cannot change the minimum; -INF where no test is wanted), else 0. nb[2k] / nb[2k+1]:
 * backward / forward neighbour on axis k (INF if unusable). Every array
 * index here is a constant once the axis loops unroll, and the choices are selects or branches
 * on the combination (the same for a whole warp in fim_update): before round 11 the sides
 * picked neighbours, critical axes and matrix entries by run-time index, which put nb, S, v and
 * w on the stack and every step of this, the update's main path, behind a local-memory load. */
NP_FN float np_fim_combo(const float *m, const float *rd, const float *ih, const float *nb, int combo, int tsai, float below, int *valid)
{
    /* combo / 3 and combo / 9 for 0 <= combo < 27 by multiply and shift (the signed divisions'
     * corrections cost a dozen instructions a combination). */
    int q3 = (combo * 11) >> 5, q9 = (combo * 57) >> 9;
    int side[3] = {combo - 3 * q3 - 1, q3 - 3 * q9 - 1, q9 - 1};
    *valid = 0;
    /* n0, the largest neighbour used, is INF exactly where one used is unusable: one test
     * instead of an early return per axis (each a reconvergence point on a GPU). */
    float used[3], n0 = -NP_FIM_INF;
    for (int k = 0; k < 3; ++k) {
        used[k] = side[k] > 0 ? nb[2 * k + 1] : nb[2 * k];
        n0 = side[k] != 0 && used[k] > n0 ? used[k] : n0;
    }
    if (!(n0 < NP_FIM_INF)) return NP_FIM_INF;
    float v[3], w[3];
    int nc = 0;
    for (int k = 0; k < 3; ++k) {
        float sg = side[k] < 0 ? ih[k] : -ih[k];
        v[k] = side[k] != 0 ? sg : 0.0f;
        w[k] = side[k] != 0 ? -sg * (used[k] - n0) : 0.0f;
        nc += side[k] == 0;
    }
    if (nc == 1) {
        for (int c = 0; c < 3; ++c) {
            if (side[c] == 0) {
                v[c] = np_fim_critical(m, rd, v, c);
                w[c] = np_fim_critical(m, rd, w, c);
            }
        }
    } else if (nc == 2) {
        for (int k = 0; k < 3; ++k) {
            if (side[k] != 0) { /* the one axis used; c0 < c1 the critical ones */
                int c0 = k == 0 ? 1 : 0, c1 = k == 2 ? 1 : 2;
                float a = np_fim_s(m, c0, c0), b = np_fim_s(m, c0, c1), d = np_fim_s(m, c1, c1);
                float rdet = 1.0f / (a * d - b * b);
                float r0 = np_fim_s(m, c0, k), r1 = np_fim_s(m, c1, k);
                float f0 = -(d * r0 - b * r1) * rdet;
                float f1 = -(a * r1 - b * r0) * rdet;
                v[c0] = f0 * v[k];
                v[c1] = f1 * v[k];
                w[c0] = f0 * w[k];
                w[c1] = f1 * w[k];
            }
        }
    }
    /* S v and S w once: the quadratic's coefficients are v.Sv, 2 v.Sw, w.Sw - 1, and the
     * gradient's S g = t Sv + Sw gives each axis's critical point g_k - (S g)_k / S_kk (eq. 6's
     * p_sigma with the other two held) without forming the products again. */
    float sv[3], sw[3];
    for (int i = 0; i < 3; ++i) {
        sv[i] = np_fim_s(m, i, 0) * v[0] + np_fim_s(m, i, 1) * v[1] + np_fim_s(m, i, 2) * v[2];
        sw[i] = np_fim_s(m, i, 0) * w[0] + np_fim_s(m, i, 1) * w[1] + np_fim_s(m, i, 2) * w[2];
    }
    float qa = v[0] * sv[0] + v[1] * sv[1] + v[2] * sv[2];
    float qb = 2.0f * (v[0] * sw[0] + v[1] * sw[1] + v[2] * sw[2]);
    float qc = w[0] * sw[0] + w[1] * sw[1] + w[2] * sw[2] - 1.0f;
    float disc = qb * qb - 4.0f * qa * qc;
    if (!(disc >= 0.0f) || !(qa > 0.0f)) return NP_FIM_INF;
    float t = (-qb + np_sqrt(disc)) / (2.0f * qa);
    float u = n0 + t;
    if (!(u < below)) return u;
    float g[3];
    for (int k = 0; k < 3; ++k) g[k] = t * v[k] + w[k];
    int ok = 1;
    for (int k = 0; k < 3; ++k) {
        float pm = (u - nb[2 * k]) * ih[k], pp = (nb[2 * k + 1] - u) * ih[k];
        float ps = g[k] - (t * sv[k] + sw[k]) * rd[k];
        if (tsai) {
            float gk[3] = {g[0], g[1], g[2]};
            gk[k] = np_fim_tsai_select(pm, pp, ps);
            if (!(np_fabs(np_sqrt(np_fim_quad(m, gk)) - 1.0f) < np_fim_tsai_tol(m, ih, u))) ok = 0;
        } else if (np_fim_side(pm, pp, ps) != side[k]) {
            ok = 0;
        }
    }
    *valid = ok;
    return u;
}

/* The exact Godunov H_G^2 of eq. 6 at intervals iv[2k] = p-, iv[2k+1] = p+ (src/fim/hg.rs);
 * rd: 1 / S's diagonal (np_fim_recip_diag). */
NP_FN float np_fim_clamp(float x, float a, float b) { return x < a ? a : (x > b ? b : x); }

NP_FN float np_fim_ext_r(const float *m, const float *rd, const float *iv, float p, float q)
{
    float a = iv[4], b = iv[5];
    float rs = -(np_fim_s(m, 2, 0) * p + np_fim_s(m, 2, 1) * q) * rd[2];
    float r = a <= b ? np_fim_clamp(rs, a, b) : (np_fabs(a - rs) >= np_fabs(b - rs) ? a : b);
    float g[3] = {p, q, r};
    return np_fim_quad(m, g);
}

NP_FN float np_fim_ext_qr(const float *m, const float *rd, const float *iv, float p)
{
    float a = iv[2], b = iv[3];
    if (a > b) {
        float fa = np_fim_ext_r(m, rd, iv, p, a), fb = np_fim_ext_r(m, rd, iv, p, b);
        return fa > fb ? fa : fb;
    }
    float c = iv[4], d = iv[5];
    float cand[5];
    cand[0] = a;
    cand[1] = b;
    cand[2] = -(np_fim_s(m, 1, 0) * p + np_fim_s(m, 1, 2) * c) * rd[1];
    cand[3] = -(np_fim_s(m, 1, 0) * p + np_fim_s(m, 1, 2) * d) * rd[1];
    cand[4] = NP_FIM_INF;
    if (c <= d) {
        float det = np_fim_s(m, 1, 1) * np_fim_s(m, 2, 2) - np_fim_s(m, 1, 2) * np_fim_s(m, 1, 2);
        cand[4] = -p * (np_fim_s(m, 2, 2) * np_fim_s(m, 1, 0) - np_fim_s(m, 1, 2) * np_fim_s(m, 2, 0)) / det;
    } else if (np_fim_s(m, 2, 1) != 0.0f) {
        cand[4] = (-np_fim_s(m, 2, 2) * (c + d) * 0.5f - np_fim_s(m, 2, 0) * p) / np_fim_s(m, 2, 1);
    }
    float best = NP_FIM_INF;
    for (int i = 0; i < 5; ++i) {
        if (np_isfinite(cand[i])) {
            float f = np_fim_ext_r(m, rd, iv, p, np_fim_clamp(cand[i], a, b));
            if (f < best) best = f;
        }
    }
    return best;
}

/* A piece of ext_r at fixed q as a quadratic in p (src/fim/hg.rs: piece): r held at r
 * (rfree = 0) or at its minimiser r_sigma(p, q) (rfree = 1); c[0] p^2 + c[1] p + c[2]. */
NP_FN void np_fim_piece(const float *m, const float *rd, float q, float r, int rfree, float *c)
{
    if (!rfree) {
        c[0] = np_fim_s(m, 0, 0);
        c[1] = 2.0f * (np_fim_s(m, 0, 1) * q + np_fim_s(m, 0, 2) * r);
        c[2] = np_fim_s(m, 1, 1) * q * q + np_fim_s(m, 2, 2) * r * r + 2.0f * np_fim_s(m, 1, 2) * q * r;
    } else {
        float k = rd[2];
        c[0] = np_fim_s(m, 0, 0) - np_fim_s(m, 0, 2) * np_fim_s(m, 0, 2) * k;
        c[1] = 2.0f * (np_fim_s(m, 0, 1) - np_fim_s(m, 0, 2) * np_fim_s(m, 1, 2) * k) * q;
        c[2] = (np_fim_s(m, 1, 1) - np_fim_s(m, 1, 2) * np_fim_s(m, 1, 2) * k) * q * q;
    }
}

/* The exact H_G^2 of eq. 6 (src/fim/hg.rs: hg2): the minimum of ext_qr over the candidate p
 * (clamped into [a, b]; non-finite ones skipped), or for a > b the larger end. The candidates
 * are gathered first and ext_qr called from one place: calling it at every candidate's site
 * inlined it ~30 times (4x the PTX, 20 s of NVRTC). This item's part: candidates first,
 * first + stride, ...; the parts' minimum (maximum for a > b: np_fim_hg2_join) is H_G^2 in any
 * order, so the lanes of a voxel can share one evaluation. */
NP_FN float np_fim_hg2_part(const float *m, const float *rd, const float *iv, int first, int stride)
{
    float a = iv[0], b = iv[1];
    float pts[28];
    int np = 0, pmax = a > b;
    pts[np++] = a;
    pts[np++] = b;
    if (!pmax) {
        float qe[2] = {iv[2], iv[3]}, c = iv[4], d = iv[5];
        int rmax = c > d, nr = rmax ? 2 : 3;
        float rv[3] = {c, d, 0.0f};
        float mid = -np_fim_s(m, 2, 2) * (c + d) * 0.5f;
        float pc[2][3][3]; /* pieces per q end and r choice, for the crossings */
        for (int j = 0; j < 2; ++j) {
            for (int k = 0; k < nr; ++k) {
                np_fim_piece(m, rd, qe[j], rv[k], k == 2, pc[j][k]);
                pts[np++] = -pc[j][k][1] / (2.0f * pc[j][k][0]);
            }
            if (rmax) pts[np++] = (mid - np_fim_s(m, 2, 1) * qe[j]) / np_fim_s(m, 2, 0);
        }
        if (qe[0] > qe[1]) {
            for (int k1 = 0; k1 < nr; ++k1) {
                for (int k2 = 0; k2 < nr; ++k2) {
                    float al = pc[0][k1][0] - pc[1][k2][0], be = pc[0][k1][1] - pc[1][k2][1], ga = pc[0][k1][2] - pc[1][k2][2];
                    if (al == 0.0f) {
                        pts[np++] = -ga / be;
                        continue;
                    }
                    float disc = be * be - 4.0f * al * ga;
                    if (disc >= 0.0f) {
                        float sq = np_sqrt(disc);
                        pts[np++] = (-be + sq) / (2.0f * al);
                        pts[np++] = (-be - sq) / (2.0f * al);
                    }
                }
            }
        } else {
            float det = np_fim_s(m, 0, 0) * np_fim_s(m, 1, 1) - np_fim_s(m, 0, 1) * np_fim_s(m, 0, 1);
            float kq = -(np_fim_s(m, 1, 1) * np_fim_s(m, 0, 2) - np_fim_s(m, 0, 1) * np_fim_s(m, 1, 2)) / det;
            pts[np++] = kq * c;
            pts[np++] = kq * d;
            pts[np++] = 0.0f;
            if (rmax) {
                float srp = np_fim_s(m, 2, 0), srq = np_fim_s(m, 2, 1);
                if (srq != 0.0f) {
                    float q0 = mid / srq, q1 = -srp / srq;
                    float al = np_fim_s(m, 0, 0) + 2.0f * np_fim_s(m, 0, 1) * q1 + np_fim_s(m, 1, 1) * q1 * q1;
                    float be = 2.0f * (np_fim_s(m, 0, 1) * q0 + np_fim_s(m, 1, 1) * q0 * q1 + np_fim_s(m, 0, 2) * c + np_fim_s(m, 1, 2) * c * q1);
                    pts[np++] = -be / (2.0f * al);
                } else {
                    pts[np++] = mid / srp;
                }
            }
        }
    }
    float best = pmax ? -NP_FIM_INF : NP_FIM_INF;
    for (int i = first; i < np; i += stride) {
        if (!np_isfinite(pts[i])) continue;
        float f = np_fim_ext_qr(m, rd, iv, pmax ? pts[i] : np_fim_clamp(pts[i], a, b));
        if (pmax ? f > best : f < best) best = f;
    }
    return best;
}

/* H_G(u)^2 over part of the candidates (above); one copy, called from one place. */
NP_FN_CALLED float np_fim_f_part(const float *m, const float *rd, const float *ih, const float *nb, float u, int first, int stride)
{
    float iv[6];
    for (int k = 0; k < 3; ++k) {
        iv[2 * k] = (u - nb[2 * k]) * ih[k];
        iv[2 * k + 1] = (nb[2 * k + 1] - u) * ih[k];
    }
    return np_fim_hg2_part(m, rd, iv, first, stride);
}

/* Two parts of H_G(u)^2 joined: the larger where the p interval is empty (a > b), else the
 * smaller. */
NP_FN float np_fim_hg2_join(const float *ih, const float *nb, float u, float x, float y)
{
    int pmax = (u - nb[0]) * ih[0] > (nb[1] - u) * ih[0];
    return pmax ? (x > y ? x : y) : (x < y ? x : y);
}

/* The root of H_G(U) = 1 to within 4 eps |U| (src/fim/hg.rs: root, step for step), written as a
 * sequence of evaluations so that the lanes of a voxel share each one (fim_update): _start and
 * _take return 1 while H_G is wanted at r->x, 0 once r->x is the root. Steps: the guess (the
 * smallest valid solution) and the point just below it; bisection over the combinations'
 * solutions (sorted, in local memory: `c[k * stride]`, k < nc) inside the bracket, by
 * interpolation once it has an upper end, and the point just below a bracketing solution where
 * the secant puts the root that close; doubling steps while the bracket has no upper end;
 * Illinois regula falsi. */
#define NP_FIM_RS_GUESS 0
#define NP_FIM_RS_GUESS_BELOW 1
#define NP_FIM_RS_BISECT 2
#define NP_FIM_RS_CAND_BELOW 3
#define NP_FIM_RS_GROW 4
#define NP_FIM_RS_RF 5
typedef struct {
    float lo, hi, fl, fh, step, x, g;
    int phase, i, j, k, from_cand, last, n;
} np_fim_rs;

NP_FN float np_fim_rs_width(float u) { return 4.0f * 1.1920929e-7f * np_fabs(u); }

/* Where the secant through (lo, fl) and (hi, fh) crosses zero (src/fim/hg.rs: secant). */
NP_FN float np_fim_secant(float lo, float fl, float hi, float fh) { return hi - fh * (hi - lo) / (fh - fl); }

/* The first k in [i, j) with !(c[k] < at), or j - 1 if none (hg.rs: first_at_least). */
NP_FN int np_fim_first_at_least(NP_LOCAL_PTR const float *c, int stride, int i, int j, float at)
{
    int hi = j - 1;
    while (i < hi) {
        int k = i + (hi - i) / 2;
        if (c[k * stride] < at) i = k + 1;
        else hi = k;
    }
    return i;
}

/* The next evaluation from the top of the bisection (interpolation search once the bracket has
 * an upper end), the doubling, or regula falsi. */
NP_FN int np_fim_rs_next(np_fim_rs *r, NP_LOCAL_PTR const float *c, int stride)
{
    if (r->phase <= NP_FIM_RS_BISECT) {
        if (r->i < r->j) {
            r->k = r->hi < NP_FIM_INF ? np_fim_first_at_least(c, stride, r->i, r->j, np_fim_secant(r->lo, r->fl, r->hi, r->fh)) : r->i + (r->j - r->i) / 2;
            r->x = c[r->k * stride];
            r->phase = NP_FIM_RS_BISECT;
            return 1;
        }
        if (r->from_cand) {
            float below = r->hi - np_fim_rs_width(r->hi);
            if (below > r->lo && !(np_fim_secant(r->lo, r->fl, r->hi, r->fh) < below)) {
                r->x = below;
                r->phase = NP_FIM_RS_CAND_BELOW;
                return 1;
            }
        }
        r->phase = NP_FIM_RS_GROW;
        r->n = 0;
    }
    if (r->phase == NP_FIM_RS_GROW || r->phase == NP_FIM_RS_CAND_BELOW) {
        if (!(r->hi < NP_FIM_INF) && r->n < 64) {
            r->x = r->lo + r->step;
            r->phase = NP_FIM_RS_GROW;
            ++r->n;
            return 1;
        }
        if (!(r->hi < NP_FIM_INF)) {
            r->x = NP_FIM_INF; /* H_G never reached 1: S not positive definite */
            return 0;
        }
        r->phase = NP_FIM_RS_RF;
        r->n = 0;
        r->last = 0;
    }
    if (r->n >= 200 || r->hi - r->lo <= np_fim_rs_width(r->hi)) {
        r->x = r->hi;
        return 0;
    }
    float x = np_fim_secant(r->lo, r->fl, r->hi, r->fh);
    if (!(x > r->lo && x < r->hi)) x = r->lo + (r->hi - r->lo) * 0.5f;
    r->x = x;
    ++r->n;
    return 1;
}

/* The bisection's index range: the sorted solutions strictly inside (lo, hi). */
NP_FN int np_fim_rs_bisect(np_fim_rs *r, NP_LOCAL_PTR const float *c, int stride, int nc)
{
    r->i = 0;
    r->j = nc;
    r->from_cand = 0;
    while (r->i < r->j && !(c[r->i * stride] > r->lo)) ++r->i;
    while (r->j > r->i && !(c[(r->j - 1) * stride] < r->hi)) --r->j;
    r->phase = NP_FIM_RS_BISECT;
    return np_fim_rs_next(r, c, stride);
}

/* The lowest of the six neighbours (INF where none is finite). */
NP_FN float np_fim_nb_min(const float *nb)
{
    float lo = NP_FIM_INF;
    for (int k = 0; k < 6; ++k) lo = np_fmin(lo, nb[k]);
    return lo;
}

/* A search's start: the lowest neighbour (H_G = 0 there, the bracket's low end) and the
 * doubling steps' first length. */
NP_FN void np_fim_rs_floor(const float *m, const float *ih, const float *nb, float *lo, float *step)
{
    *lo = np_fim_nb_min(nb);
    *step = 0.0f;
    for (int k = 0; k < 3; ++k) {
        /* one step along axis k alone costs h_k / sqrt(S_kk) at most */
        float d = 1.0f / (ih[k] * np_sqrt(np_fim_s(m, k, k)));
        *step = d > *step ? d : *step;
    }
}

/* Sorts the nc solutions in place and starts from `guess`. */
NP_FN int np_fim_rs_start(np_fim_rs *r, const float *m, const float *ih, const float *nb, float guess, NP_LOCAL_PTR float *c, int stride, int nc)
{
    np_fim_rs_floor(m, ih, nb, &r->lo, &r->step);
    r->x = NP_FIM_INF;
    if (!(r->lo < NP_FIM_INF)) return 0;
    for (int i = 1; i < nc; ++i) {
        float v = c[i * stride];
        int j = i;
        while (j > 0 && v < c[(j - 1) * stride]) { c[j * stride] = c[(j - 1) * stride]; --j; }
        c[j * stride] = v;
    }
    r->fl = -1.0f;
    r->hi = NP_FIM_INF;
    r->fh = 0.0f;
    if (guess < NP_FIM_INF && guess > r->lo) {
        r->g = guess;
        r->x = guess;
        r->phase = NP_FIM_RS_GUESS;
        return 1;
    }
    return np_fim_rs_bisect(r, c, stride, nc);
}

/* Takes f = H_G(r->x)^2 - 1 and moves on. */
NP_FN int np_fim_rs_take(np_fim_rs *r, float f, NP_LOCAL_PTR const float *c, int stride, int nc)
{
    float x = r->x;
    switch (r->phase) {
    case NP_FIM_RS_GUESS:
        if (f >= 0.0f) {
            r->x = x - np_fim_rs_width(x);
            r->phase = NP_FIM_RS_GUESS_BELOW;
            return 1;
        }
        r->lo = x;
        r->fl = f;
        return np_fim_rs_bisect(r, c, stride, nc);
    case NP_FIM_RS_GUESS_BELOW:
        if (f < 0.0f) {
            r->x = r->g;
            return 0;
        }
        r->hi = x;
        r->fh = f;
        return np_fim_rs_bisect(r, c, stride, nc);
    case NP_FIM_RS_BISECT:
        if (f >= 0.0f) { r->hi = x; r->fh = f; r->j = r->k; r->from_cand = 1; }
        else { r->lo = x; r->fl = f; r->i = r->k + 1; }
        return np_fim_rs_next(r, c, stride);
    case NP_FIM_RS_CAND_BELOW:
        if (f < 0.0f) {
            r->x = r->hi;
            return 0;
        }
        r->hi = x;
        r->fh = f;
        return np_fim_rs_next(r, c, stride);
    case NP_FIM_RS_GROW:
        if (f >= 0.0f) { r->hi = x; r->fh = f; }
        else { r->lo = x; r->fl = f; r->step += r->step; }
        return np_fim_rs_next(r, c, stride);
    default: /* NP_FIM_RS_RF, Illinois */
        if (f >= 0.0f) {
            r->hi = x; r->fh = f;
            if (r->last > 0) r->fl *= 0.5f;
            r->last = 1;
        } else {
            r->lo = x; r->fl = f;
            if (r->last < 0) r->fh *= 0.5f;
            r->last = -1;
        }
        return np_fim_rs_next(r, c, stride);
    }
}

/* Whether the smallest valid solution `best` is g(U_x) as it stands (src/fim/godunov.rs: solve):
 * with 004's solver (paper) wherever one is valid; with the exact one where every extremum of
 * eq. 6 is a minimum there; and where no neighbour is finite (g is INF: H_G has no root, the
 * search would find none). Otherwise the root of H_G (np_fim_rs_*). Why the last: with 004's
 * solver 84 % of the roots fim_roots was handed had no finite neighbour (a block's first
 * evaluation reaches voxels the front has not; example 3 at 128x128x50 on PoCL). */
NP_FN int np_fim_settled(int paper, float best, const float *nb)
{
    if (!(best < NP_FIM_INF)) return !(np_fim_nb_min(nb) < NP_FIM_INF);
    if (!paper) for (int k = 0; k < 3; ++k) if (best + best > nb[2 * k] + nb[2 * k + 1]) return 0;
    return 1;
}

/* The combinations' finite solutions moved to the front of `sol` (in order); their count. */
NP_FN int np_fim_gather(NP_LOCAL_PTR float *sol, int stride)
{
    int nc = 0;
    for (int c = 0; c < 26; ++c) {
        float x = sol[c * stride];
        if (x < NP_FIM_INF) sol[(nc++) * stride] = x;
    }
    return nc;
}

/* Solver settings shared with the host (#[repr(C)] FimParams in src/fim/gpu.rs). */
typedef struct {
    int nx, ny, nz;      /* grid in voxels */
    int bx, by, bz;      /* grid in blocks */
    float ihx, ihy, ihz; /* 1 / voxel size (mm) */
    float tol;           /* converged when an update lowers u by at most tol * u */
    int tsai;            /* 1: Tsai's validity test, 0: the paper's index test */
    int groups;          /* work-groups launched (they stride over the device-side list) */
    int paper;           /* 1: 004's valid-minimum candidate (Local::Paper), 0: exact */
    int nspeed;          /* voxels per component of S (blocks with voxels to update x 64) */
    int short_len;       /* a folded list of at most this many blocks gets short_inner updates */
    int short_inner;
} np_fim_params;

#endif
