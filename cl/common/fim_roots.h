/* fim_roots.h: the deferred roots' search of the block FIM (fim_settle in cl/fim.cl), over the
 * local solver of fim.h; one work-group searches one queued voxel's root. */
#ifndef NP_FIM_ROOTS_H
#define NP_FIM_ROOTS_H

#include "common/portable.h"
#include "common/fim.h"

/* Slots of a deferred root's work-group (fim_settle), each with NP_FIM_LANES items; the host
 * sets it (src/fim/gpu.rs root_slots: 32). */
#ifndef NP_FIM_SLOTS
#define NP_FIM_SLOTS 32
#endif

/* Deferred roots (NP_FIM_DEFER, 004's solver on GPUs, round 16): fim_update leaves a voxel
 * whose combinations give no valid candidate at its value and queues it; the launch after the
 * update (fim_settle; a launch of its own before round 22) finds its root with one work-group per
 * queued voxel and corrects the block's state: the faces on which it lowered a voxel, and a
 * block that has not converged after all joins the next list, once. Why: the root's code held
 * every update at 92 registers and 120 us mid-run; without it the update takes 64 registers and
 * 40 us (round 16, ncu). The old value comes from unew, the update's result (with more than one
 * update a launch the voxel may have been lowered before its root was wanted).
 *
 * The search, wide and without serial steps: each round the group's NP_FIM_SLOTS slots (32)
 * each evaluate H_G at one point (the slot's lanes sharing the evaluation) and the bracket [lo, hi] (H_G^2 - 1 < 0
 * at lo, >= 0 at hi) closes to the nearest points on either side, by atomic min / max on the
 * points' bits (u >= 0, so the bits order as the values). Round 0: the combinations' solutions
 * above the lowest neighbour, each with the point 4 eps below it (the root is one of them in
 * most nodes, and then the bracket closes at once; over several rounds where they outnumber the
 * slots), the remaining slots doubling steps past the largest; then a point a slot evenly inside
 * the bracket (or doubling steps while it has no upper end). The root is hi once lo is within 4 eps |hi| below it: the contract of the sequential
 * search (src/fim/hg.rs: root, which the CPU keeps), so the two give the same root to within
 * that width, not the same bits. */
/* Queued root i's search by the whole work-group (NP_FIM_SLOTS slots x NP_FIM_LANES lanes),
 * for voxel v, from its neighbours as the update's launch began (rootnb); returns the root (hi)
 * in every item. The local arrays are the caller's (ssol, ssorted 26 each, sbest NP_FIM_LANES x
 * NP_FIM_SLOTS, snb 6). */
NP_FN float np_fim_root_search(NP_GLOBAL const float *NP_RESTRICT speed, NP_GLOBAL const int *NP_RESTRICT sblock,
                               NP_GLOBAL const float *rootnb, int i, np_fim_params p, int v, NP_LOCAL_PTR float *ssol, NP_LOCAL_PTR float *ssorted,
                               NP_LOCAL_PTR float *sbest, NP_LOCAL_PTR int *slo, NP_LOCAL_PTR int *shi, NP_LOCAL_PTR float *snb)
{
    int t = NP_LID(), slot = t % NP_FIM_SLOTS, lane = t / NP_FIM_SLOTS;
    float ih[3] = {p.ihx, p.ihy, p.ihz};
    int b = v / NP_FIM_BV, l = v % NP_FIM_BV;
    float s[6], nb[6];
    int w = sblock[b] * NP_FIM_BV + l;
    for (int c = 0; c < 6; ++c) s[c] = speed[c * p.nspeed + w];
    float rd[3];
    np_fim_recip_diag(s, rd);
    if (t < 6) snb[t] = rootnb[6 * i + t];
    NP_BARRIER();
    for (int k = 0; k < 6; ++k) nb[k] = snb[k];
    float lo, step;
    np_fim_rs_floor(s, ih, nb, &lo, &step);
    /* The combinations over the group's items (fewer than 26 with few slots). */
    for (int c = t; c < 26; c += NP_LSIZE()) {
        int valid;
        ssol[c] = np_fim_combo(s, rd, ih, nb, c < 13 ? c : c + 1, p.tsai, -NP_FIM_INF, &valid);
    }
    if (t == 0) {
        *slo = np_float_as_int(lo);
        *shi = np_float_as_int(NP_FIM_INF);
    }
    NP_BARRIER();
    /* The solutions above lo in ascending order (rank sort; ties by index). */
    int nc = 0;
    for (int c = 0; c < 26; ++c) nc += ssol[c] < NP_FIM_INF && ssol[c] > lo;
    for (int a = t; a < 26; a += NP_LSIZE()) {
        if (!(ssol[a] < NP_FIM_INF && ssol[a] > lo)) continue;
        int r = 0;
        for (int c = 0; c < 26; ++c) r += ssol[c] < NP_FIM_INF && ssol[c] > lo && (ssol[c] < ssol[a] || (ssol[c] == ssol[a] && c < a));
        ssorted[r] = ssol[a];
    }
    NP_BARRIER();
    /* Round 0 takes the solutions and, where both fit the slots (nc <= 16), the points 4 eps
     * below them; its other slots step past the largest. Where only the solutions fit, the
     * last slot of each later round takes the point 4 eps below the bracket's upper end,
     * which closes the bracket at once where the root is that end (before round 21 the
     * solutions and their points took two rounds there: most non-trivial roots of example
     * 3's, with 17 to 26 solutions, then took 4 or 5 rounds). */
    float hi = NP_FIM_INF, top = nc > 0 ? ssorted[nc - 1] : lo;
    int pairs = 2 * nc <= NP_FIM_SLOTS, n0 = pairs ? 2 * nc : nc;
    for (int round = 0; round < 65 && lo < NP_FIM_INF; ++round) {
        float x;
        int g = -1;
        if (round == 0 && slot < n0) {
            float c = ssorted[pairs ? slot / 2 : slot];
            x = pairs && !(slot & 1) ? c - np_fim_rs_width(c) : c;
        } else if (hi < NP_FIM_INF) {
            x = !pairs && slot > 0 && slot == NP_FIM_SLOTS - 1 ? hi - np_fim_rs_width(hi) : lo + (hi - lo) * ((float)(slot + 1) / (float)(NP_FIM_SLOTS + 1));
        } else {
            g = round == 0 ? slot - n0 : slot;
        }
        if (g >= 0) { /* doubling steps past the largest point so far */
            float m = step;
            for (int e = 0; e < g; ++e) m += m;
            x = (round == 0 ? top : lo) + m;
        }
        int use = x > lo && x < hi && x < NP_FIM_INF;
        float f = 0.0f;
        if (use) sbest[lane * NP_FIM_SLOTS + slot] = np_fim_f_part(s, rd, ih, nb, x, lane, NP_FIM_LANES);
        NP_BARRIER();
        if (lane == 0 && use) {
            float h2 = sbest[slot];
            for (int q = 1; q < NP_FIM_LANES; ++q) h2 = np_fim_hg2_join(ih, nb, x, h2, sbest[q * NP_FIM_SLOTS + slot]);
            f = h2 - 1.0f;
            if (f >= 0.0f) np_atomic_min_local_i32(shi, np_float_as_int(x));
        }
        NP_BARRIER();
        hi = np_int_as_float(*shi);
        if (lane == 0 && use && f < 0.0f && x < hi) np_atomic_max_local_i32(slo, np_float_as_int(x));
        NP_BARRIER();
        lo = np_int_as_float(*slo);
        if (hi < NP_FIM_INF && !(lo < hi - np_fim_rs_width(hi))) break;
    }
    return hi;
}

#endif
