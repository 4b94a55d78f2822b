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

/* S in FSL order a b c d e f = xx xy xz yy yz zz. */
NP_FN float np_fim_s(const float *m, int i, int j)
{
    int k = i == j ? (i == 0 ? 0 : (i == 1 ? 3 : 5)) : (i + j == 1 ? 1 : (i + j == 2 ? 2 : 4));
    return m[k];
}

NP_FN float np_fim_quad(const float *m, const float *a, const float *b)
{
    float acc = 0.0f;
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) acc += a[i] * np_fim_s(m, i, j) * b[j];
    return acc;
}

/* The p minimising H on axis k with the other two components held. */
NP_FN float np_fim_critical(const float *m, const float *g, int k)
{
    int i = (k + 1) % 3, j = (k + 2) % 3;
    return -(np_fim_s(m, k, i) * g[i] + np_fim_s(m, k, j) * g[j]) / np_fim_s(m, k, k);
}

/* The paper's "left side index" (Sec. 4.2). */
NP_FN int np_fim_side(float pm, float pp, float ps)
{
    if (pm < ps && ps < pp) return 0;
    if ((pm + pp) * 0.5f < ps) return 1;
    return -1;
}

NP_FN float np_fim_tsai_select(float pm, float pp, float ps)
{
    float a = pm - ps > 0.0f ? pm - ps : 0.0f;
    float b = pp - ps < 0.0f ? pp - ps : 0.0f;
    return a >= -b ? ps + a : ps + b;
}

/* One combination side[k] in {-1 backward, 0 critical, +1 forward}: its solution (INF if none
 * or not causal), *valid set by the validity test. nb[2k] / nb[2k+1]: backward / forward
 * neighbour on axis k (INF if unusable). */
NP_FN float np_fim_combo(const float *m, const float *ih, const float *nb, const int *side, int tsai, int *valid)
{
    *valid = 0;
    float n0 = -NP_FIM_INF;
    for (int k = 0; k < 3; ++k) {
        if (side[k] != 0) {
            float n = nb[2 * k + (side[k] > 0)];
            if (!(n < NP_FIM_INF)) return NP_FIM_INF;
            if (n > n0) n0 = n;
        }
    }
    float v[3] = {0.0f, 0.0f, 0.0f}, w[3] = {0.0f, 0.0f, 0.0f};
    int crit[2] = {0, 0}, nc = 0;
    for (int k = 0; k < 3; ++k) {
        if (side[k] == 0) {
            crit[nc < 2 ? nc : 1] = k;
            ++nc;
        } else {
            float sg = side[k] < 0 ? ih[k] : -ih[k];
            v[k] = sg;
            w[k] = -sg * (nb[2 * k + (side[k] > 0)] - n0);
        }
    }
    if (nc == 1) {
        int c = crit[0];
        v[c] = np_fim_critical(m, v, c);
        w[c] = np_fim_critical(m, w, c);
    } else if (nc == 2) {
        int c0 = crit[0], c1 = crit[1], k = 3 - c0 - c1;
        float a = np_fim_s(m, c0, c0), b = np_fim_s(m, c0, c1), d = np_fim_s(m, c1, c1);
        float det = a * d - b * b;
        float r0 = np_fim_s(m, c0, k), r1 = np_fim_s(m, c1, k);
        float f0 = -(d * r0 - b * r1) / det;
        float f1 = -(a * r1 - b * r0) / det;
        v[c0] = f0 * v[k];
        v[c1] = f1 * v[k];
        w[c0] = f0 * w[k];
        w[c1] = f1 * w[k];
    }
    float qa = np_fim_quad(m, v, v);
    float qb = 2.0f * np_fim_quad(m, v, w);
    float qc = np_fim_quad(m, w, w) - 1.0f;
    float disc = qb * qb - 4.0f * qa * qc;
    if (!(disc >= 0.0f) || !(qa > 0.0f)) return NP_FIM_INF;
    float t = (-qb + np_sqrt(disc)) / (2.0f * qa);
    float u = n0 + t;
    float g[3];
    for (int k = 0; k < 3; ++k) g[k] = t * v[k] + w[k];
    int ok = 1;
    for (int k = 0; k < 3; ++k) {
        float pm = (u - nb[2 * k]) * ih[k], pp = (nb[2 * k + 1] - u) * ih[k];
        float ps = np_fim_critical(m, g, k);
        if (tsai) {
            float gk[3] = {g[0], g[1], g[2]};
            gk[k] = np_fim_tsai_select(pm, pp, ps);
            /* 1e-3: see Real::TSAI_TOL in src/fim/godunov.rs */
            if (!(np_fabs(np_sqrt(np_fim_quad(m, gk, gk)) - 1.0f) < 1e-3f)) ok = 0;
        } else if (np_fim_side(pm, pp, ps) != side[k]) {
            ok = 0;
        }
    }
    if (ok) { *valid = 1; return u; }
    /* Causal fallback (src/fim/godunov.rs: solve): used neighbours upwind along S grad u. */
    for (int k = 0; k < 3; ++k) {
        if (side[k] == 0) continue;
        float sg = np_fim_s(m, k, 0) * g[0] + np_fim_s(m, k, 1) * g[1] + np_fim_s(m, k, 2) * g[2];
        if (!((float)side[k] * sg <= 0.0f && t >= nb[2 * k + (side[k] > 0)] - n0)) return NP_FIM_INF;
    }
    return u;
}

/* g(U_x): the smallest valid solution over the 26 combinations. */
NP_FN float np_fim_solve(const float *m, const float *ih, const float *nb, int tsai)
{
    float best = NP_FIM_INF, causal = NP_FIM_INF;
    for (int combo = 0; combo < 27; ++combo) {
        if (combo == 13) continue;
        int side[3] = {combo % 3 - 1, (combo / 3) % 3 - 1, combo / 9 - 1};
        int valid;
        float u = np_fim_combo(m, ih, nb, side, tsai, &valid);
        if (valid) { if (u < best) best = u; }
        else if (u < causal) causal = u;
    }
    return best < NP_FIM_INF ? best : causal;
}

/* Solver settings shared with the host (#[repr(C)] FimParams in src/fim/gpu.rs). */
typedef struct {
    int nx, ny, nz;      /* grid in voxels */
    int bx, by, bz;      /* grid in blocks */
    float ihx, ihy, ihz; /* 1 / voxel size (mm) */
    float tol;           /* converged when an update lowers u by at most tol * u */
    int tsai;            /* 1: Tsai's validity test, 0: the paper's index test */
    int groups;          /* work-groups launched (they stride over the device-side list) */
} np_fim_params;

#endif
