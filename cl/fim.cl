/* Block FIM (004 Algorithm 5.1) for both dialects. Volumes are stored block by block (004
 * Fig. 3): voxel (x, y, z) lives at block * 64 + local, local = lx + 4 (ly + 4 lz). One
 * work-group of NP_FIM_LANES x 64 per active block; the active list and its count stay on the device and
 * the groups stride over it, so no launch needs the count on the host. 004's iteration is four
 * launches: the active blocks' updates (which append the unconverged ones to the next list),
 * the candidates (appended once each), the candidates' updates (appending likewise), and the
 * candidates' results committed. The device list folds the candidates into the next
 * iteration's update instead (NP_FIM_FOLDED): two launches, the update and the neighbours (with
 * roots deferred, fim_settle: the roots and the neighbours). Updates read u and write unew, and a block's results are
 * copied into u by the next launch: no block reads a value another group of its own launch
 * writes, so the result does not depend on which group runs first (before round 9 the halo
 * came from u as other groups wrote it: runs differed by up to 1e-4 on PoCL's helix).
 * NP_NVRTC_OPTIONS: --prec-div=false --prec-sqrt=false --ftz=true
 * NP_OPENCL_OPTIONS: -cl-denorms-are-zero
 * (CUDA built to OpenCL 1.2's accuracy of division and sqrt, 2.5 and 3 ulp, as NVIDIA's OpenCL
 * builds this file by default, and both dialects with float denormals flushed to zero, which
 * OpenCL 1.2 allows and which takes the rescaling around each sqrt and division off eq. 6's
 * combinations (no value of the solve is that small): one arithmetic contract for both
 * dialects; the block FIM's tolerances against the CPU allow it, docs/fim.md.) */
#include "common/portable.h"
#include "common/fim.h"

/* The block across face f (-x, +x, -y, +y, -z, +z) of block b at (bx, by, bz), or -1 off the
 * grid. An update's face voxels read their outside neighbours through it, each item finding its
 * block's coordinates once per listed block, instead of three divisions (round 19) in each of
 * the five faces' branches that ran in every warp (~15 % of the update's instructions; round
 * 19: found by six items into local memory instead, the exact solver on CUDA was 3 % slower). */
NP_FN int np_fim_next(np_fim_params p, int b, int bx, int by, int bz, int f)
{
    int axis = f >> 1, up = f & 1;
    int at = axis == 0 ? bx : (axis == 1 ? by : bz), n = axis == 0 ? p.bx : (axis == 1 ? p.by : p.bz);
    int stride = axis == 0 ? 1 : (axis == 1 ? p.bx : p.bx * p.by);
    if (up ? at == n - 1 : at == 0) return -1;
    return up ? b + stride : b - stride;
}

/* The voxel across face f of local voxel l (on that face) in the block next (next >= 0). */
NP_FN int np_fim_across_at(int next, int l, int f)
{
    int step = (f >> 1) == 0 ? NP_FIM_B - 1 : ((f >> 1) == 1 ? NP_FIM_B * (NP_FIM_B - 1) : NP_FIM_B * NP_FIM_B * (NP_FIM_B - 1));
    return next * NP_FIM_BV + ((f & 1) ? l - step : l + step);
}

/* u across face f of local voxel l in the block next, or INF off the grid. */
NP_FN float np_fim_across(NP_GLOBAL const float *u, int next, int l, int f)
{
    return next >= 0 ? u[np_fim_across_at(next, l, f)] : NP_FIM_INF;
}

/* moved across face f of local voxel l in the block next, or 0 (never) off the grid. */
NP_FN int np_fim_stamp_across(NP_GLOBAL const int *moved, int next, int l, int f)
{
    return next >= 0 ? moved[np_fim_across_at(next, l, f)] : 0;
}

/* Bit f set where local voxel (lx, ly, lz) lies on face f of its block (-x, +x, -y, +y, -z, +z). */
NP_FN int np_fim_faces_on(int lx, int ly, int lz)
{
    return (lx == 0) | (lx == NP_FIM_B - 1) << 1 | (ly == 0) << 2 | (ly == NP_FIM_B - 1) << 3 | (lz == 0) << 4 | (lz == NP_FIM_B - 1) << 5;
}

/* Whether no neighbour of voxel v (local l at (lx, ly, lz) in block b at (bx, by, bz)) has moved
 * since its last evaluation, launch s: launches are numbered (seq, from 1); seen[v] is the
 * launch that last evaluated v, moved[w] the launch whose update lowered w (0: never). A change
 * made by launch s is read from launch s + 1 on, so v has read every neighbour's value if each
 * moved before s; then g is the same as at that evaluation and v keeps its value (u only falls,
 * and that evaluation left it at most g): the skip changes no bit. A neighbour in another block
 * moving in this very launch (its group racing this read) shows either its new stamp, an
 * evaluation that changes nothing, or its old one, and is read next time; so one item decides
 * for all of a voxel's lanes (fim_update's lane 0: lanes that read the race differently once
 * joined a stale lane's minimum). */
NP_FN int np_fim_unmoved(int s, NP_GLOBAL const int *moved, np_fim_params p, int v, int l, int lx, int ly, int lz, int b, int bx, int by, int bz)
{
    if (s == 0) return 0;
    int st[6];
    st[0] = lx > 0 ? moved[v - 1] : np_fim_stamp_across(moved, np_fim_next(p, b, bx, by, bz, 0), l, 0);
    st[1] = lx < NP_FIM_B - 1 ? moved[v + 1] : np_fim_stamp_across(moved, np_fim_next(p, b, bx, by, bz, 1), l, 1);
    st[2] = ly > 0 ? moved[v - NP_FIM_B] : np_fim_stamp_across(moved, np_fim_next(p, b, bx, by, bz, 2), l, 2);
    st[3] = ly < NP_FIM_B - 1 ? moved[v + NP_FIM_B] : np_fim_stamp_across(moved, np_fim_next(p, b, bx, by, bz, 3), l, 3);
    st[4] = lz > 0 ? moved[v - NP_FIM_B * NP_FIM_B] : np_fim_stamp_across(moved, np_fim_next(p, b, bx, by, bz, 4), l, 4);
    st[5] = lz < NP_FIM_B - 1 ? moved[v + NP_FIM_B * NP_FIM_B] : np_fim_stamp_across(moved, np_fim_next(p, b, bx, by, bz, 5), l, 5);
    int unmoved = 1;
    for (int k = 0; k < 6; ++k) unmoved &= st[k] < s;
    return unmoved;
}

/* Whether an in-block neighbour of local voxel l was lowered by the block's last Jacobi update
 * (bit 0 of schg): after a launch's first update only such a voxel can get another g, since its
 * neighbours across the faces are read from u, which no group of the launch writes. */
NP_FN int np_fim_inblock_moved(NP_LOCAL_PTR const int *schg, int l, int lx, int ly, int lz)
{
    return (lx > 0 && (schg[l - 1] & 1)) || (lx < NP_FIM_B - 1 && (schg[l + 1] & 1)) || (ly > 0 && (schg[l - NP_FIM_B] & 1)) ||
           (ly < NP_FIM_B - 1 && (schg[l + NP_FIM_B] & 1)) || (lz > 0 && (schg[l - NP_FIM_B * NP_FIM_B] & 1)) ||
           (lz < NP_FIM_B - 1 && (schg[l + NP_FIM_B * NP_FIM_B] & 1));
}

/* A block's state in conv: 0 active (not converged), 1 converged, 2 a candidate that came out
 * unchanged; NP_FIM_FACES the faces on which its last update lowered a voxel; NP_FIM_HASROOT
 * set where that update queued a root (fim_settle then leaves the block to its roots). */
#define NP_FIM_STATE(c) ((c) & 3)
#define NP_FIM_FACES(c) (((c) >> 2) & 63)
#define NP_FIM_HASROOT (1 << 8)

/* How fim_update treats its list: 004's step 1 (active blocks), its step 2 (candidates, once
 * each), or both at once (the device list's default since round 10: the candidates found after
 * one iteration's update are updated with the next iteration's active blocks, two launches an
 * iteration instead of four). */
#define NP_FIM_ACTIVE 0
#define NP_FIM_CANDIDATES 1
#define NP_FIM_FOLDED 2

/* Items sharing one voxel's evaluation of H_G in fim_update (roots in place), with nr voxels
 * searching: the group's items split among them, at most NP_FIM_SHARE each (H_G has at most 28
 * candidates). One item a voxel where a group has one lane (CPU devices: PoCL runs a group's
 * items one after the other, and each sharing item builds the candidates again: example 3 at
 * 128x128x50 on 2 cores took 2.10 s of kernels shared at 2 lanes against 1.18 s unshared). */
#ifndef NP_FIM_SHARE
#define NP_FIM_SHARE (NP_FIM_LANES == 1 ? 1 : 32)
#endif
NP_FN int np_fim_per_root(int nr)
{
    int per = NP_LSIZE() / nr;
    return per < NP_FIM_SHARE ? per : NP_FIM_SHARE;
}

/* CUDA: fim_update's registers capped, so that the skip's few more do not cost a work-group an
 * SM. Roots deferred (004's solver, 256 items a group): 80, three groups. With the skip it took
 * 91 and two groups fitted; with NVRTC's --maxrregcount=80 for the whole program 004's solver
 * took 22.2-22.4 ms of kernels on example 3 against 25.0-25.2 uncapped and 23.9-24.0 before the
 * skip (round20.sh PART=c); __launch_bounds__(256, 3), which let ptxas settle at 72, took
 * 23.1-24.1 (PART=d). Roots in place (the exact solver, 128 items): 96 as before the skip,
 * five groups; at 100 (104 allocated) four fitted, and `fim --target` took 560 ms against 520
 * (PART=f). Round 23 (round23.sh PART=m), the roots in place shared: 80 as fast (CUDA 43.4-43.7
 * ms against 43.8-44.0 at 96), and NVIDIA's OpenCL, 90 uncapped, 51.8 against 55.1 ms at 80:
 * 80 for both programs on both dialects (NVIDIA's OpenCL gets it for the whole program from the
 * host, src/fim/gpu.rs: program; its other kernels use fewer). 004's solver at 64: CUDA 14.0-14.2
 * against 14.5-14.6 ms, NVIDIA OpenCL 14.8 and 17.3 against 15.0-15.1: not taken. */
#ifndef NP_FIM_MAXREG /* the cap (NEUROPORT_NVRTC_OPTIONS=-DNP_FIM_MAXREG=N sets it, for measuring) */
  #define NP_FIM_MAXREG 80
#endif
#if defined(NP_CUDA)
  #define NP_FIM_UPDATE_BOUNDS __maxnreg__(NP_FIM_MAXREG)
#else
  #define NP_FIM_UPDATE_BOUNDS
#endif

/* Step 1 (and, with inner = 1 over the candidate list, step 2): `inner` Jacobi updates of every
 * listed block in local memory, then the block's convergence by reduction (Sec. 5.2.3: a tree;
 * here an atomic AND in local memory, the same bits in any order).
 * A work-group is NP_FIM_LANES x 64 items: item t serves voxel t % 64 as lane t / 64, so a warp
 * holds one lane of 32 voxels and runs the same combinations for all of them; lane 0 takes the
 * minimum over the lanes (exact in any order) and, where needed, the root, and owns the voxel. */
NP_KERNEL void NP_FIM_UPDATE_BOUNDS fim_update(NP_GLOBAL const float *NP_RESTRICT speed, NP_GLOBAL const int *NP_RESTRICT sblock,
                          NP_GLOBAL const np_uchar *NP_RESTRICT mask,
                          NP_GLOBAL const float *NP_RESTRICT u, NP_GLOBAL float *NP_RESTRICT unew,
                          NP_GLOBAL const int *NP_RESTRICT list, NP_GLOBAL const int *NP_RESTRICT count,
                          np_fim_params p, int inner, NP_GLOBAL int *conv, NP_GLOBAL int *hist, int slot,
                          NP_GLOBAL int *next, NP_GLOBAL int *next_count, int append,
                          NP_GLOBAL int *zero, NP_GLOBAL int *cand, int mode,
                          NP_GLOBAL int *roots, NP_GLOBAL int *root_count, NP_GLOBAL int *root_zero,
                          NP_GLOBAL int *seen, NP_GLOBAL int *moved, int seq, NP_GLOBAL int *work,
                          NP_GLOBAL int *rootsin, NP_GLOBAL float *rootnb, int probe, NP_GLOBAL int *wanted)
{
    NP_LOCAL_MEM float su[NP_FIM_BV];
    /* Whether each voxel is evaluated (the skip, np_fim_unmoved), and how many were. */
    NP_LOCAL_MEM int sgo[NP_FIM_BV];
    /* Per voxel: bit 0 lowered by the last Jacobi update, bit 1 its root queued (NP_FIM_DEFER:
     * once a launch, however many updates want it), bit 2 a root wanted after an in-block
     * neighbour moved in this launch (the block then stays listed). */
    NP_LOCAL_MEM int schg[NP_FIM_BV];
    NP_LOCAL_MEM unsigned int sevals;
    /* The block's state, the AND over its voxels' (one barrier instead of a tree's six). */
    NP_LOCAL_MEM int sc;
    NP_LOCAL_MEM float sbest[NP_FIM_LANES * NP_FIM_BV];
    NP_LOCAL_MEM float ssol[26 * NP_FIM_BV];
    NP_LOCAL_MEM float sx[NP_FIM_BV];
    NP_LOCAL_MEM int sflag[2];
#ifndef NP_FIM_DEFER
    /* The roots in place: the voxels that want H_G this round (sroot, counted in snr; a voxel's
     * place in sidx) with their S and neighbours, so that the group's items share the
     * evaluations, whichever voxel they serve otherwise. */
    NP_LOCAL_MEM float sS[6 * NP_FIM_BV];
    NP_LOCAL_MEM float snb[6 * NP_FIM_BV];
    NP_LOCAL_MEM int sroot[NP_FIM_BV];
    NP_LOCAL_MEM int sidx[NP_FIM_BV];
    NP_LOCAL_MEM int snr[2];
#endif
    int t = NP_LID(), l = t % NP_FIM_BV, lane = t / NP_FIM_BV;
    int lx = l % NP_FIM_B, ly = (l / NP_FIM_B) % NP_FIM_B, lz = l / (NP_FIM_B * NP_FIM_B);
    int n = *count;
    /* The list length of this launch, kept on the device for the run's statistics; `zero` is a
     * counter the next launch appends to and no group of this one reads (no fill per launch). */
    if (NP_GROUP() == 0 && t == 0) {
        if (slot >= 0) hist[slot] = n;
        *zero = 0;
        *root_zero = 0;
    }
    if (t < 2) sflag[t] = 0;
#ifndef NP_FIM_DEFER
    if (t < 2) snr[t] = 0;
#endif
    if (t == 0) sevals = 0u;
    float ih[3] = {p.ihx, p.ihy, p.ihz};
    /* A short folded list (the front's last blocks, or a late correction crawling through
     * converged blocks one an iteration) gets more Jacobi updates a launch: its launches are
     * latency, not work (src/fim/gpu.rs: short_lists). */
    int reps = mode == NP_FIM_FOLDED && n <= p.short_len ? p.short_inner : inner;
    for (int i = NP_GROUP(); i < n; i += p.groups) {
        int b = list[i];
        int v = b * NP_FIM_BV + l;
        int m = mask[v];
        /* S is stored only for blocks that hold voxels to update (sblock[b] >= 0 there). */
        float s[6], rd[3];
        if (m == 1) {
            int w = sblock[b] * NP_FIM_BV + l;
            for (int c = 0; c < 6; ++c) s[c] = speed[c * p.nspeed + w];
            np_fim_recip_diag(s, rd);
        }
        if (t == 0) sc = -1;
        int bx = b % p.bx, by = (b / p.bx) % p.by, bz = b / (p.bx * p.by);
        /* A voxel none of whose neighbours moved since its last evaluation is skipped: it would
         * compute the same g and keep its value. With seq 0 (NEUROPORT_FIM_SKIP=0) every voxel
         * is evaluated in every update. */
        if (lane == 0) {
            su[l] = u[v];
            schg[l] = 0;
            sgo[l] = m == 1 && (seq == 0 || !np_fim_unmoved(seen[v], moved, p, v, l, lx, ly, lz, b, bx, by, bz));
        }
        /* done: the last update changed nothing; still: no update of this launch did (both
         * within tol); lowered: an update of this launch lowered the voxel, by any amount. */
        int done = 1, still = 1, lowered = 0;
        NP_BARRIER();
        for (int it = 0; it < reps; ++it) {
            /* The first update evaluates what the stamps leave (sgo); a later one only voxels an
             * in-block neighbour of which the update before lowered (every lane reads the same
             * local flags after the barrier, so the lanes agree). */
            int nbmoved = it > 0 && np_fim_inblock_moved(schg, l, lx, ly, lz);
            int go = it == 0 || seq == 0 ? sgo[l] : m == 1 && nbmoved;
            if (go && lane == 0) {
                if (seq > 0) seen[v] = seq;
                np_atomic_add_local_u32(&sevals, 1u);
            }
            float old = su[l], next = old;
            float nb[6];
            if (go) {
                nb[0] = lx > 0 ? su[l - 1] : np_fim_across(u, np_fim_next(p, b, bx, by, bz, 0), l, 0);
                nb[1] = lx < NP_FIM_B - 1 ? su[l + 1] : np_fim_across(u, np_fim_next(p, b, bx, by, bz, 1), l, 1);
                nb[2] = ly > 0 ? su[l - NP_FIM_B] : np_fim_across(u, np_fim_next(p, b, bx, by, bz, 2), l, 2);
                nb[3] = ly < NP_FIM_B - 1 ? su[l + NP_FIM_B] : np_fim_across(u, np_fim_next(p, b, bx, by, bz, 3), l, 3);
                nb[4] = lz > 0 ? su[l - NP_FIM_B * NP_FIM_B] : np_fim_across(u, np_fim_next(p, b, bx, by, bz, 4), l, 4);
                nb[5] = lz < NP_FIM_B - 1 ? su[l + NP_FIM_B * NP_FIM_B] : np_fim_across(u, np_fim_next(p, b, bx, by, bz, 5), l, 5);
                float best = NP_FIM_INF;
                for (int c = lane; c < 26; c += NP_FIM_LANES) {
                    int valid; /* combination 13: all three critical, no equation */
                    float x = np_fim_combo(s, rd, ih, nb, c < 13 ? c : c + 1, p.tsai, best, &valid);
                    ssol[c * NP_FIM_BV + l] = x;
                    if (valid && x < best) best = x;
                }
                sbest[lane * NP_FIM_BV + l] = best;
            }
            NP_BARRIER();
            /* Lane 0 takes the minimum over the lanes; where that does not settle g, H_G's root
             * follows, each of its evaluations shared by the voxel's lanes (lane j evaluates
             * candidates j, j + LANES, ... of H_G; lane 0 joins them and picks the next point),
             * every group walking in step until its last root is found: one item's root of
             * 10-16 serial H_G evaluations set the length of every launch (round 6). */
            np_fim_rs r;
            int need = 0, nc = 0, queued = 0;
            float q = NP_FIM_INF;
            if (lane == 0 && go) {
                float best = sbest[l];
                for (int k = 1; k < NP_FIM_LANES; ++k) best = sbest[k * NP_FIM_BV + l] < best ? sbest[k * NP_FIM_BV + l] : best;
                q = best;
#ifndef NP_FIM_NOROOT /* a diagnostic build (NEUROPORT_FIM_DIAG_NOROOT): no roots, wrong answers, the rest timed */
                if (!np_fim_settled(p.paper, best, nb)) {
#else
                if (0) {
#endif
#ifdef NP_FIM_DEFER
                    /* To the roots' search (fim_settle): the voxel keeps its value here (q INF: best was INF, no
                     * valid candidate, the only case 004's solver wants a root). */
                    if (!(schg[l] & 2)) {
                        /* With its neighbours as the launch began (u; those across the faces
                         * are read from u anyway), whichever update wants it: a voxel evaluated
                         * only because it read a racing stamp then gets the root it had. */
                        int qi = np_atomic_add_i32(root_count, 1);
                        roots[qi] = v;
                        rootnb[6 * qi + 0] = lx > 0 ? u[v - 1] : nb[0];
                        rootnb[6 * qi + 1] = lx < NP_FIM_B - 1 ? u[v + 1] : nb[1];
                        rootnb[6 * qi + 2] = ly > 0 ? u[v - NP_FIM_B] : nb[2];
                        rootnb[6 * qi + 3] = ly < NP_FIM_B - 1 ? u[v + NP_FIM_B] : nb[3];
                        rootnb[6 * qi + 4] = lz > 0 ? u[v - NP_FIM_B * NP_FIM_B] : nb[4];
                        rootnb[6 * qi + 5] = lz < NP_FIM_B - 1 ? u[v + NP_FIM_B * NP_FIM_B] : nb[5];
                        np_atomic_add_i32(&rootsin[b], 1);
                        /* The probe (src/fim/gpu.rs: probe): the voxels that ever wanted a root,
                         * each counted once in wanted[0] (bits from wanted[1]). A voxel evaluated
                         * only because it read a racing stamp wants what it wanted before, so the
                         * count is the same on every run. */
                        int bit = 1 << (v & 31);
                        if (probe && !(np_atomic_or_i32(wanted + 1 + (v >> 5), bit) & bit))
                            np_atomic_add_i32(wanted, 1);
                    }
                    queued = 2 | (nbmoved ? 4 : 0);
                    q = NP_FIM_INF;
#else
                    nc = np_fim_gather(ssol + l, NP_FIM_BV);
                    need = np_fim_rs_start(&r, s, ih, nb, best, ssol + l, NP_FIM_BV, nc);
                    q = r.x;
                    sx[l] = r.x;
                    if (need) sflag[0] = 1;
#endif
                }
            }
#ifndef NP_FIM_DEFER
            /* Each round the voxels still searching are numbered and the group's items split
             * among them: with nr of them, per = items / nr to a voxel, item j of a voxel's taking
             * H_G's candidates j, j + per, ... (round 23: a voxel's own lanes only, two, left the
             * exact solver's warps a third full, ncu). H_G is the minimum (maximum where a > b)
             * over its candidates in any order, so the split changes no bit. */
            if (need) {
                for (int c = 0; c < 6; ++c) {
                    sS[6 * l + c] = s[c];
                    snb[6 * l + c] = nb[c];
                }
            }
            NP_BARRIER();
            for (int round = 0; sflag[round & 1]; ++round) {
                if (need) {
                    int ri = np_atomic_inc_local_u32(&snr[round & 1]);
                    sroot[ri] = l;
                    sidx[l] = ri;
                }
                NP_BARRIER();
                int nr = snr[round & 1], per = np_fim_per_root(nr), ri = t / per;
                if (ri < nr) {
                    int w = sroot[ri];
                    float ws[6], wnb[6], wrd[3];
                    for (int c = 0; c < 6; ++c) {
                        ws[c] = sS[6 * w + c];
                        wnb[c] = snb[6 * w + c];
                    }
                    np_fim_recip_diag(ws, wrd);
                    sbest[t] = np_fim_f_part(ws, wrd, ih, wnb, sx[w], t % per, per);
                }
                NP_BARRIER();
                if (t == 0) {
                    sflag[round & 1] = 0;
                    snr[(round + 1) & 1] = 0;
                }
                if (need) {
                    int per = np_fim_per_root(snr[round & 1]), first = sidx[l] * per;
                    float h2 = sbest[first];
                    for (int k = 1; k < per; ++k) h2 = np_fim_hg2_join(ih, nb, r.x, h2, sbest[first + k]);
                    need = np_fim_rs_take(&r, h2 - 1.0f, ssol + l, NP_FIM_BV, nc);
                    q = r.x;
                    sx[l] = r.x;
                    if (need) sflag[(round + 1) & 1] = 1;
                }
                NP_BARRIER();
            }
            /* The last round's count (the other was cleared in that round). */
            if (t == 0) {
                snr[0] = 0;
                snr[1] = 0;
            }
#endif
            if (lane == 0) {
                if (m == 1 && q < old) next = q;
                done = !(next < old) || old - next <= p.tol * next;
                still &= done;
                lowered |= next < old;
            }
            if (lane == 0) {
                su[l] = next;
                schg[l] = (schg[l] & 6) | queued | (next < old);
            }
            NP_BARRIER();
        }
        if (lane == 0) {
            unew[v] = su[l];
            /* A root queued after an in-block neighbour moved in this launch is found from u, which
             * lacks that move (its neighbours are recorded from u): the block stays listed, so that the voxel is
             * evaluated again from the values it missed. */
            if (schg[l] & 4) done = 0;
            if (lowered && seq > 0) moved[v] = seq;
            /* Bit 2 + f: no voxel on face f (-x, +x, -y, +y, -z, +z) was lowered at all. */
            int face = 63 & ~np_fim_faces_on(lx, ly, lz);
            np_atomic_and_local_i32(&sc, done | still << 1 | (lowered ? face : 63) << 2 | ((schg[l] & 2) ? 0 : NP_FIM_HASROOT));
        }
        NP_BARRIER();
        /* Step 3 without a pass over all blocks: a block that has not converged joins the next
         * list (C_b false) at once; candidates leave the candidate set. Folded lists
         * (NP_FIM_FOLDED) hold the active blocks and last iteration's candidates: a candidate
         * that no update of this launch changed leaves as inactive without activating its
         * neighbours (conv 2), as in 004's step 2 where it is never added. Above those two
         * bits conv keeps the faces on which a voxel was lowered (NP_FIM_FACES), for the
         * neighbour kernel's eager activation. */
        if (t == 0) {
            /* A candidate is a listed block with its flag up and, in the folded list, its state
             * not active: fim_settle lists a block whose root did not settle through the same
             * flag (once), and clears its state. */
            int flagged = mode != NP_FIM_ACTIVE && cand[b];
            int was_cand = flagged && (mode != NP_FIM_FOLDED || NP_FIM_STATE(conv[b]) != 0), converged = sc & 1, unchanged = (sc >> 1) & 1;
            conv[b] = (converged ? (mode == NP_FIM_FOLDED && was_cand && unchanged ? 2 : 1) : 0) | (~sc & (63 << 2 | NP_FIM_HASROOT));
            if (append && !converged) next[np_atomic_add_i32(next_count, 1)] = b;
            if (flagged) cand[b] = 0;
        }
        NP_BARRIER();
    }
    /* The group's own slot (no atomics on one address from every group of every launch). */
    if (t == 0) work[NP_GROUP()] += (int)sevals;
}

#include "common/fim_roots.h"

/* Step 2's candidates: the inactive 6-neighbour blocks of every converged listed block, each
 * appended once to the candidate list (the first to raise its flag appends it). */
NP_FN void np_fim_candidate(NP_GLOBAL const int *conv, NP_GLOBAL const int *sblock, NP_GLOBAL int *cand, NP_GLOBAL int *cand_list,
                            NP_GLOBAL int *cand_count, int b)
{
    /* Only neighbours not still active (C_b true): one update of an active block must not mark
     * it converged, or it leaves the list without its own neighbours being checked (node FIM
     * likewise re-evaluates only neighbours outside the list). Nor blocks without a mask voxel
     * (sblock < 0): their update changes nothing, so they would leave again at once. */
    if (NP_FIM_STATE(conv[b]) && sblock[b] >= 0 && np_atomic_xchg_u32(&cand[b], 1) == 0u) cand_list[np_atomic_add_i32(cand_count, 1)] = b;
}

/* The candidates of listed block b in state c: 004's, all six neighbours of a block that
 * converged, and with `eager` also the neighbours across the faces on which its update (or a
 * root) lowered a voxel (by any amount, as node FIM re-evaluates a neighbour that any change
 * improves), so that a change reaches the next block in the next iteration instead of after
 * its own block has converged (docs/fim.md, "Eager activation"). */
NP_FN void np_fim_candidates(NP_GLOBAL const int *conv, NP_GLOBAL const int *sblock, np_fim_params p, NP_GLOBAL int *cand,
                             NP_GLOBAL int *cand_list, NP_GLOBAL int *cand_count, int b, int c, int eager)
{
    int faces = (NP_FIM_STATE(c) == 1 ? 63 : 0) | (eager ? NP_FIM_FACES(c) : 0);
    if (!faces) return;
    int bx = b % p.bx, by = (b / p.bx) % p.by, bz = b / (p.bx * p.by);
    if (bx > 0 && (faces & 1)) np_fim_candidate(conv, sblock, cand, cand_list, cand_count, b - 1);
    if (bx < p.bx - 1 && (faces & 2)) np_fim_candidate(conv, sblock, cand, cand_list, cand_count, b + 1);
    if (by > 0 && (faces & 4)) np_fim_candidate(conv, sblock, cand, cand_list, cand_count, b - p.bx);
    if (by < p.by - 1 && (faces & 8)) np_fim_candidate(conv, sblock, cand, cand_list, cand_count, b + p.bx);
    if (bz > 0 && (faces & 16)) np_fim_candidate(conv, sblock, cand, cand_list, cand_count, b - p.bx * p.by);
    if (bz < p.bz - 1 && (faces & 32)) np_fim_candidate(conv, sblock, cand, cand_list, cand_count, b + p.bx * p.by);
}

/* Item i of a commit: voxel i % 64 of listed block list[i / 64] copied from unew into u; the
 * block. */
NP_FN int np_fim_commit(NP_GLOBAL const int *list, int i, NP_GLOBAL const float *unew, NP_GLOBAL float *u)
{
    int b = list[i / NP_FIM_BV], w = b * NP_FIM_BV + i % NP_FIM_BV;
    u[w] = unew[w];
    return b;
}

/* After the active blocks' updates: their results committed (64 items per listed block), and
 * the first item of each listed block appends its candidates. */
NP_KERNEL void fim_neighbours(NP_GLOBAL const int *NP_RESTRICT list, NP_GLOBAL const int *NP_RESTRICT count,
                              NP_GLOBAL const int *NP_RESTRICT conv, NP_GLOBAL const int *NP_RESTRICT sblock, np_fim_params p, NP_GLOBAL int *cand,
                              NP_GLOBAL int *cand_list, NP_GLOBAL int *cand_count,
                              NP_GLOBAL const float *NP_RESTRICT unew, NP_GLOBAL float *NP_RESTRICT u, int eager)
{
    int n = *count;
    for (int i = NP_GID(); i < n * NP_FIM_BV; i += p.groups * NP_FIM_BV) {
        int b = np_fim_commit(list, i, unew, u);
        if (i % NP_FIM_BV == 0) np_fim_candidates(conv, sblock, p, cand, cand_list, cand_count, b, conv[b], eager);
    }
}

/* The deferred roots and the neighbours in one launch (the folded list's default with roots
 * deferred, round 22): one launch an iteration fewer, the neighbours' work beside the roots'.
 * Groups below nroot take the queued roots, the others commit the listed blocks that queued no
 * root and append their candidates, as fim_neighbours (the host may launch the two parts one
 * after the other, nroot the launch's groups and then 0: the same bits). A root reads no u (its neighbours were
 * recorded with it), keeps its result in rnew and corrects its block's state; the last root of
 * a block (rootsin, counted by the update) commits the block (u = min(unew, rnew)) and appends
 * its candidates from the final state. A block whose root did not settle is listed through the
 * candidates' flag, so it is listed once whichever way comes first, and the next update sees
 * its cleared state and treats it as active: the lists, and so the result, do not depend on the
 * order in which groups run. */
NP_KERNEL void fim_settle(NP_GLOBAL const float *NP_RESTRICT speed, NP_GLOBAL const int *NP_RESTRICT sblock,
                          NP_GLOBAL float *u, NP_GLOBAL const float *unew,
                          NP_GLOBAL const int *NP_RESTRICT roots, NP_GLOBAL const int *NP_RESTRICT root_count,
                          np_fim_params p, NP_GLOBAL int *conv, NP_GLOBAL int *next, NP_GLOBAL int *next_count,
                          NP_GLOBAL int *moved, int seq, NP_GLOBAL int *rootsin, NP_GLOBAL const float *rootnb,
                          NP_GLOBAL float *rnew, NP_GLOBAL const int *NP_RESTRICT list, NP_GLOBAL const int *NP_RESTRICT count,
                          NP_GLOBAL int *cand, int eager, int nroot)
{
    NP_LOCAL_MEM float ssol[26];
    NP_LOCAL_MEM float ssorted[26];
    NP_LOCAL_MEM float sbest[NP_FIM_LANES * NP_FIM_SLOTS];
    NP_LOCAL_MEM int slo, shi;
    NP_LOCAL_MEM float snb[6];
    /* The block whose last root this group found, or -1 (item 0's, for all items). */
    NP_LOCAL_MEM int slast;
    int t = NP_LID(), g = NP_GROUP();
    if (g < nroot) {
        int n = *root_count;
        for (int i = g; i < n; i += nroot) {
            /* The update's value, read before the search's barriers: PoCL 3.1 lost a private
             * value set after a barrier and used after loops with barriers. */
            int v = roots[i], b = v / NP_FIM_BV, l = v % NP_FIM_BV;
            float old = unew[v];
            float hi = np_fim_root_search(speed, sblock, rootnb, i, p, v, ssol, ssorted, sbest, &slo, &shi, snb);
            if (t == 0) {
                float nx = hi < old ? hi : old;
                int done = !(nx < old) || old - nx <= p.tol * nx;
                if (nx < old) {
                    rnew[v] = nx;
                    np_atomic_or_i32(&conv[b], np_fim_faces_on(l % NP_FIM_B, (l / NP_FIM_B) % NP_FIM_B, l / (NP_FIM_B * NP_FIM_B)) << 2);
                    if (seq > 0) moved[v] = seq;
                }
                if (!done && (np_atomic_and_i32(&conv[b], ~3) & 3) && np_atomic_xchg_u32(&cand[b], 1) == 0u)
                    next[np_atomic_add_i32(next_count, 1)] = b;
                NP_GLOBAL_FENCE();
                slast = np_atomic_add_i32(&rootsin[b], -1) == 1 ? b : -1;
            }
            NP_BARRIER();
            if (slast >= 0) {
                int b = slast;
                /* The block's last root: every root's result and state change are in. */
                NP_GLOBAL_FENCE();
                NP_GLOBAL volatile float *rv = (NP_GLOBAL volatile float *)rnew;
                for (int k = t; k < NP_FIM_BV; k += NP_LSIZE()) {
                    int w = b * NP_FIM_BV + k;
                    float r = rv[w], x = unew[w];
                    if (r < x) {
                        x = r;
                        rv[w] = NP_FIM_INF;
                    }
                    u[w] = x;
                }
                if (t == 0) np_fim_candidates(conv, sblock, p, cand, next, next_count, b, np_atomic_or_i32(&conv[b], 0), eager);
            }
            NP_BARRIER();
        }
    } else {
        int n = *count, items = (NP_NGROUPS() - nroot) * NP_LSIZE();
        for (int i = (g - nroot) * NP_LSIZE() + t; i < n * NP_FIM_BV; i += items) {
            int b = list[i / NP_FIM_BV];
            int c = conv[b]; /* NP_FIM_HASROOT: set by the update, changed by no root */
            if (c & NP_FIM_HASROOT) continue;
            np_fim_commit(list, i, unew, u);
            if (i % NP_FIM_BV == 0) np_fim_candidates(conv, sblock, p, cand, next, next_count, b, c, eager);
        }
    }
}

/* After the candidates' updates: their results committed. */
NP_KERNEL void fim_commit(NP_GLOBAL const int *NP_RESTRICT list, NP_GLOBAL const int *NP_RESTRICT count, np_fim_params p,
                          NP_GLOBAL const float *NP_RESTRICT unew, NP_GLOBAL float *NP_RESTRICT u)
{
    int n = *count;
    for (int i = NP_GID(); i < n * NP_FIM_BV; i += p.groups * NP_FIM_BV) np_fim_commit(list, i, unew, u);
}

/* u before the first iteration: 0 on the sources (mask 2), infinite elsewhere; fim_settle's
 * root results (rnew, nr voxels: every voxel with roots deferred, else none) infinite. */
NP_KERNEL void fim_init(NP_GLOBAL const np_uchar *NP_RESTRICT mask, NP_GLOBAL float *u, int n, NP_GLOBAL float *rnew, int nr)
{
    int i = NP_GID();
    if (i < n) u[i] = mask[i] == 2 ? 0.0f : NP_FIM_INF;
    if (i < nr) rnew[i] = NP_FIM_INF;
}

/* The blocked slot (004 Fig. 3: block w / 64, x fastest within it) of grid voxel v = x + nx (y + ny z). */
NP_FN int np_fim_slot(np_fim_params p, int v)
{
    int x = v % p.nx, y = (v / p.nx) % p.ny, z = v / (p.nx * p.ny);
    return (x / NP_FIM_B + p.bx * (y / NP_FIM_B + p.by * (z / NP_FIM_B))) * NP_FIM_BV + x % NP_FIM_B + NP_FIM_B * (y % NP_FIM_B + NP_FIM_B * (z % NP_FIM_B));
}

/* 004's Fig. 3 reordering of the mask's voxels only, vox[i] ascending (round 25; the host
 * reordered every slot of the grid before, 6.5 M on example 3 for ~200 K in the mask): the
 * blocked mask (zeroed before) gets each voxel's state, 1 or 2 (a source). */
NP_KERNEL void fim_block_mask(NP_GLOBAL const int *NP_RESTRICT vox, NP_GLOBAL const np_uchar *NP_RESTRICT state, int n, np_fim_params p,
                              NP_GLOBAL np_uchar *NP_RESTRICT mask)
{
    int i = NP_GID();
    if (i < n) mask[np_fim_slot(p, vox[i])] = state[i];
}

/* ... and S: component c of voxel vox[i] (s[c n + i]) into its block's place in the blocked
 * field (sblock numbers the blocks that hold mask voxels; nspeed slots a component). */
NP_KERNEL void fim_block_speed(NP_GLOBAL const int *NP_RESTRICT vox, NP_GLOBAL const float *NP_RESTRICT s, int n, np_fim_params p,
                               NP_GLOBAL const int *NP_RESTRICT sblock, NP_GLOBAL float *NP_RESTRICT speed, int nspeed)
{
    int i = NP_GID();
    if (i >= n) return;
    int w = np_fim_slot(p, vox[i]);
    int k = sblock[w / NP_FIM_BV] * NP_FIM_BV + w % NP_FIM_BV;
    for (int c = 0; c < 6; c++) speed[c * nspeed + k] = s[c * n + i];
}

/* u of the mask's voxels for the download, in the grid's order (the inverse of 004's Fig. 3
 * reordering, done on the host before round 10): out[i] for voxel vox[i] = x + nx (y + ny z).
 * Only the mask's voxels leave the device (round 19: example 3's 0.8 MB instead of the grid's
 * 26 MB); the host writes NaN where the front never arrived (INF) and off the mask, one NaN on
 * every device (PoCL's NAN has other bits than CUDA's). */
NP_KERNEL void fim_unblock(NP_GLOBAL const float *NP_RESTRICT u, np_fim_params p, NP_GLOBAL const int *NP_RESTRICT vox,
                           NP_GLOBAL float *NP_RESTRICT out, int n)
{
    int i = NP_GID();
    if (i < n) out[i] = u[np_fim_slot(p, vox[i])];
}
