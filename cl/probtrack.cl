/* Probabilistic streamlining entry points for both dialects; the step lives in
 * common/probtrack.h. Paths of a batch: path i is half i / n of streamline t = t0 + i % n (or
 * list[i % n]), seed t % nseeds, sample volume (t / nseeds) mod nsamp. Device compaction is a
 * stream compaction by prefix sum over the live flags: per-group counts, one group scanning the
 * group counts, then each group scattering its live paths in order (so the order of the live
 * paths is kept, as the host path keeps it).
 * NP_OPENCL_NV_OPTIONS: -cl-nv-maxrregcount=128
 * (NVIDIA's OpenCL: with any cap from 80 to 128 its build of the tracing kernels ran 8 % faster on
 * the H200, 18.15 -> 16.7 ms of `bench probtrack`'s trace kernels, the same bytes; why was not
 * found: CUDA's build of probtrack_segment takes 37 registers and no cap moved it. Round 35,
 * scripts/device/round35.sh PART=f, g.) */
#include "common/portable.h"
#include "common/probtrack.h"

#define NP_PT_GROUP 256

NP_KERNEL void probtrack_start(NP_GLOBAL const np_float4 *samples_big, NP_GLOBAL const int *index, NP_GLOBAL const np_uint *roi, NP_GLOBAL const int *seeds,
                               NP_GLOBAL const np_uint *list, int use_list, np_uint t0, int n, NP_GLOBAL np_pt_path *st,
                               NP_GLOBAL int *live, NP_GLOBAL int *out_steps, NP_GLOBAL np_uint *out_flags,
                               NP_GLOBAL np_uint *visits, np_pt_params p)
{
    int i = NP_GID();
    if (i >= 2 * n) return;
    np_uint side = (np_uint)(i / n);
    int j = i % n;
    np_uint t = use_list ? list[j] : t0 + (np_uint)j;
    np_uint ns = (np_uint)p.nseeds;
    np_pt_path s;
    int v = seeds[t % ns];
    int go = np_pt_start(&s, samples_big, index, roi, &p, v, t / ns, side, (np_uint)i);
    /* The seed voxel counts once per streamline: counting is on only where every streamline of
     * the batch is kept (no waypoint or exclusion mask, or the second pass over the kept). */
    if (p.count && side == 0u) np_atomic_add_u32(&visits[v], 1u);
    st[i] = s;
    live[i] = go;
    if (!go) {
        out_steps[i] = 0;
        out_flags[i] = s.flags;
    }
}

NP_KERNEL void probtrack_segment(NP_GLOBAL np_pt_path *st, NP_GLOBAL int *live, int n, int iters,
                                 NP_GLOBAL const np_float4 *samples_big, NP_GLOBAL const int *index, NP_GLOBAL const np_uint *roi,
                                 NP_GLOBAL np_uint *visits, NP_GLOBAL int *out_steps, NP_GLOBAL np_uint *out_flags, np_pt_params p)
{
    np_pt_segment(NP_GID(), st, live, n, iters, samples_big, index, roi, visits, out_steps, out_flags, &p);
}

/* Inclusive scan of x over the group (Hillis-Steele in local memory); returns the group total
 * through *total. */
NP_FN int np_pt_group_scan(NP_LOCAL_PTR int *sh, int x, int *total)
{
    int l = NP_LID();
    sh[l] = x;
    NP_BARRIER();
    for (int off = 1; off < NP_PT_GROUP; off *= 2) {
        int y = l >= off ? sh[l - off] : 0;
        NP_BARRIER();
        sh[l] += y;
        NP_BARRIER();
    }
    int r = sh[l];
    *total = sh[NP_PT_GROUP - 1];
    NP_BARRIER();
    return r;
}

/* Live paths per group of NP_PT_GROUP. */
NP_KERNEL void probtrack_count(NP_GLOBAL const int *live, int n, NP_GLOBAL int *group_sums)
{
    NP_LOCAL_MEM int sh[NP_PT_GROUP];
    int i = NP_GID();
    int total;
    np_pt_group_scan(sh, i < n ? live[i] : 0, &total);
    if (NP_LID() == 0) group_sums[NP_GROUP()] = total;
}

/* One group: the group sums become exclusive offsets; the live count goes to count[0]. */
NP_KERNEL void probtrack_offsets(NP_GLOBAL int *group_sums, int ngroups, NP_GLOBAL int *count)
{
    NP_LOCAL_MEM int sh[NP_PT_GROUP];
    int l = NP_LID();
    int per = (ngroups + NP_PT_GROUP - 1) / NP_PT_GROUP;
    int a = l * per, b = a + per < ngroups ? a + per : ngroups;
    int mine = 0;
    for (int g = a; g < b; ++g) mine += group_sums[g];
    int total;
    int run = np_pt_group_scan(sh, mine, &total) - mine;
    for (int g = a; g < b; ++g) {
        int x = group_sums[g];
        group_sums[g] = run;
        run += x;
    }
    if (l == 0) count[0] = total;
}

/* Each live path to its place in `to`. */
NP_KERNEL void probtrack_scatter(NP_GLOBAL const np_pt_path *from, NP_GLOBAL const int *live, int n,
                                 NP_GLOBAL const int *group_sums, NP_GLOBAL np_pt_path *to)
{
    NP_LOCAL_MEM int sh[NP_PT_GROUP];
    int i = NP_GID();
    int x = i < n ? live[i] : 0;
    int total;
    int pos = np_pt_group_scan(sh, x, &total) - x + group_sums[NP_GROUP()];
    if (x) to[pos] = from[i];
}

/* Bins of each histogram of `probtrack_tally` counted in local memory first (lengths beyond go
 * straight to the global counters): three of them, 12 KB. */
#define NP_PT_HBINS 1024

/* Histogram `which` (its counters from sums[gbase] on), bin x. */
NP_FN void np_pt_bump(NP_LOCAL_PTR np_uint *h, NP_GLOBAL np_uint *sums, int which, int x, int gbase)
{
    if (x < NP_PT_HBINS) np_atomic_inc_local_u32(&h[which * NP_PT_HBINS + x]);
    else np_atomic_add_u32(&sums[gbase + x], 1u);
}

/* The batch's results turned into outputs (src/probtrack/tally.rs, `Rules::tally`, is the
 * reference and documents `sums`): each item judges 32 streamlines and writes their keep word;
 * with `full`, the length histograms and seed-target counts are added into the run's counters.
 * Integer counts only: the order of the atomic additions cannot change them. */
NP_KERNEL void probtrack_tally(NP_GLOBAL const int *out_steps, NP_GLOBAL const np_uint *out_flags, int n,
                               NP_GLOBAL const np_uint *list, int use_list, np_uint t0, np_uint need, int tshift, int ntarg,
                               int full, NP_GLOBAL np_uint *keep, NP_GLOBAL np_uint *seed_targets, NP_GLOBAL np_uint *sums,
                               np_pt_params p)
{
    NP_LOCAL_MEM np_uint h[3 * NP_PT_HBINS];
    for (int i = NP_LID(); i < 3 * NP_PT_HBINS; i += NP_LSIZE()) h[i] = 0u;
    NP_BARRIER();
    int m = p.max_steps, l = 2 * m + 1;
    int w = NP_GID();
    int j0 = w * 32;
    np_uint word = 0u;
    for (int k = 0; k < 32 && j0 + k < n; ++k) {
        int j = j0 + k;
        int s0 = out_steps[j], s1 = out_steps[n + j];
        if (s0 < 0 || s1 < 0 || s0 > m || s1 > m) {
            np_atomic_add_u32(&sums[2 * l + m + 1], 1u);
            continue;
        }
        np_uint f = out_flags[j] | out_flags[n + j];
        int kept = (f & NP_PT_EXCLUDE) == 0u && (f & need) == need;
        if (kept) word |= 1u << k;
        if (!full) continue;
        int len = s0 + s1;
        np_pt_bump(h, sums, 1, len, l);
        np_pt_bump(h, sums, 2, s0 > s1 ? s0 : s1, 2 * l);
        if (kept) {
            np_pt_bump(h, sums, 0, len, 0);
            np_uint t = use_list ? list[j] : t0 + (np_uint)j;
            np_uint seed = t % (np_uint)p.nseeds;
            for (int c = 0; c < ntarg; ++c)
                if ((f >> (tshift + c)) & 1u) np_atomic_add_u32(&seed_targets[seed * (np_uint)ntarg + (np_uint)c], 1u);
        }
    }
    if (j0 < n) keep[w] = word;
    NP_BARRIER();
    for (int i = NP_LID(); i < 3 * NP_PT_HBINS; i += NP_LSIZE())
        if (h[i] != 0u) np_atomic_add_u32(&sums[(i / NP_PT_HBINS) * l + i % NP_PT_HBINS], h[i]);
}
