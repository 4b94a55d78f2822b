/* Probabilistic streamlining entry points for both dialects; the step lives in
 * common/probtrack.h. Paths of a batch: path i is half i / n of streamline t = t0 + i % n (or
 * list[i % n]), seed t % nseeds, sample volume (t / nseeds) mod nsamp. Device compaction is a
 * stream compaction by prefix sum over the live flags: per-group counts, one group scanning the
 * group counts, then each group scattering its live paths in order (so the order of the live
 * paths is kept, as the host path keeps it). */
#include "common/portable.h"
#include "common/probtrack.h"

#define NP_PT_GROUP 256

NP_KERNEL void probtrack_start(NP_GLOBAL const np_float4 *samples_big, NP_GLOBAL const np_uint *roi, NP_GLOBAL const int *seeds,
                               NP_GLOBAL const np_uint *list, int use_list, np_uint t0, int n, NP_GLOBAL np_pt_path *st,
                               NP_GLOBAL int *live, NP_GLOBAL int *out_steps, NP_GLOBAL np_uint *out_flags, np_pt_params p)
{
    int i = NP_GID();
    if (i >= 2 * n) return;
    np_uint side = (np_uint)(i / n);
    int j = i % n;
    np_uint t = use_list ? list[j] : t0 + (np_uint)j;
    np_uint ns = (np_uint)p.nseeds;
    np_pt_path s;
    int go = np_pt_start(&s, samples_big, roi, &p, seeds[t % ns], t / ns, side, (np_uint)i);
    st[i] = s;
    live[i] = go;
    if (!go) {
        out_steps[i] = 0;
        out_flags[i] = s.flags;
    }
}

NP_KERNEL void probtrack_segment(NP_GLOBAL np_pt_path *st, NP_GLOBAL int *live, int n, int iters,
                                 NP_GLOBAL const np_float4 *samples_big, NP_GLOBAL const np_uint *roi, NP_GLOBAL np_uint *visits,
                                 NP_GLOBAL int *out_steps, NP_GLOBAL np_uint *out_flags, np_pt_params p)
{
    np_pt_segment(NP_GID(), st, live, n, iters, samples_big, roi, visits, out_steps, out_flags, &p);
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
