/* Affine-registration cost entry points for both dialects (paper 002 appendix, with the
 * reduction on the device): register_cost samples the moving image in-kernel (exact, as the
 * CPU), register_cost_texture through the hardware filter (002's tex3D; 8-bit weights on
 * NVIDIA). One launch per evaluation: work-groups of NP_REG_GROUP items stride over the fixed
 * voxels, x fastest, so neighbouring items read neighbouring voxels; the last work-group to
 * finish reduces the groups' partials (and, for MI/NMI, the joint histogram to entropies) into
 * one record (register.h np_reg_finish). */
#include "common/portable.h"
#include "common/register.h"

#define NP_REG_LOOP(SAMPLE)                                                                              \
    NP_LOCAL_MEM float red[5 * NP_REG_GROUP];                                                            \
    NP_LOCAL_MEM int cnt[2 * NP_REG_GROUP];                                                              \
    NP_LOCAL_MEM np_uint lh[NP_REG_MAXBINS * NP_REG_MAXBINS];                                            \
    NP_LOCAL_MEM int last;                                                                               \
    np_reg_hist_begin(&spec, lh);                                                                        \
    float acc[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};                                                       \
    int inside = 0, total = 0, bin = -1;                                                                 \
    np_uint run = 0u;                                                                                    \
    int n = fnx * fny * fnz, stride = NP_LSIZE() * ngroups;                                              \
    /* x, y, z of the item's first voxel, then advanced by the stride with carries: three integer  \
     * divisions per voxel (~60 instructions, a third of the loop) were the kernel's largest cost. */ \
    int i = NP_GID(), x = i % fnx, y = (i / fnx) % fny, z = i / (fnx * fny);                             \
    int sx = stride % fnx, sy = (stride / fnx) % fny, sz = stride / (fnx * fny);                         \
    /* NP_REG_UNROLL voxels of the item's stride per pass: all their loads (fixed value, 8 gathers \
     * or one texture fetch) are issued before any is used, so several voxels' memory latency      \
     * overlaps (ncu: 78 % of stalls were one voxel's gathers). An outside or past-the-end voxel    \
     * samples voxel 0 (a valid address) and is dropped; the sums are still added voxel by voxel   \
     * in the item's order, so the result is the same bits as one voxel per pass. */               \
    for (; i < n; i += NP_REG_UNROLL * stride) {                                                         \
        float fv[NP_REG_UNROLL], mv[NP_REG_UNROLL];                                                      \
        int ok[NP_REG_UNROLL], valid[NP_REG_UNROLL];                                                     \
        for (int u = 0; u < NP_REG_UNROLL; u++) {                                                        \
            float q[3];                                                                                  \
            valid[u] = u * stride < n - i;                                                               \
            np_reg_map_point(&map, (float)x, (float)y, (float)z, q);                                     \
            ok[u] = valid[u] && np_reg_inside(q, mnx, mny, mnz);                                         \
            if (!ok[u])                                                                                  \
                q[0] = q[1] = q[2] = 0.0f;                                                               \
            fv[u] = fixed[valid[u] ? i + u * stride : 0];                                                \
            mv[u] = (SAMPLE);                                                                            \
            x += sx;                                                                                     \
            if (x >= fnx) {                                                                              \
                x -= fnx;                                                                                \
                y++;                                                                                     \
            }                                                                                            \
            y += sy;                                                                                     \
            if (y >= fny) {                                                                              \
                y -= fny;                                                                                \
                z++;                                                                                     \
            }                                                                                            \
            z += sz;                                                                                     \
        }                                                                                                \
        for (int u = 0; u < NP_REG_UNROLL; u++) {                                                        \
            total += valid[u];                                                                           \
            if (ok[u]) {                                                                                 \
                inside++;                                                                                \
                np_reg_add(&spec, fv[u], mv[u], acc, lh, &bin, &run);                                    \
            }                                                                                            \
        }                                                                                                \
        if (n - i <= NP_REG_UNROLL * stride)                                                             \
            break;                                                                                       \
    }                                                                                                    \
    if (run != 0u)                                                                                       \
        np_atomic_add_local_u32(lh + bin, run);                                                          \
    np_reg_finish(&spec, acc, inside, total, ngroups, red, cnt, lh, partial, hist, done, out, hist_out, &last);

NP_KERNEL void register_cost(NP_GLOBAL const float *NP_RESTRICT fixed, NP_GLOBAL const float *NP_RESTRICT moving,
                             int fnx, int fny, int fnz, int mnx, int mny, int mnz, int ngroups,
                             np_reg_map map, np_reg_spec spec, NP_GLOBAL np_reg_partial *partial, NP_GLOBAL np_uint *hist,
                             NP_GLOBAL np_uint *done, NP_GLOBAL np_reg_partial *out, NP_GLOBAL np_uint *hist_out)
{
    NP_REG_LOOP(np_reg_trilinear(moving, q, mnx, mny, mnz))
}

NP_KERNEL void register_cost_texture(NP_GLOBAL const float *NP_RESTRICT fixed, NP_TEX3D moving,
                                     int fnx, int fny, int fnz, int mnx, int mny, int mnz, int ngroups,
                                     np_reg_map map, np_reg_spec spec, NP_GLOBAL np_reg_partial *partial, NP_GLOBAL np_uint *hist,
                                     NP_GLOBAL np_uint *done, NP_GLOBAL np_reg_partial *out, NP_GLOBAL np_uint *hist_out)
{
    NP_REG_LOOP(np_tex3d_f4(moving, q[0], q[1], q[2]).x)
}
