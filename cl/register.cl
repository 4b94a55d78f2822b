/* Affine-registration cost entry points for both dialects (paper 002 appendix, with the
 * reduction on the device): register_cost samples the moving image in-kernel (exact, as the
 * CPU), register_cost_texture through the hardware filter (002's tex3D; 8-bit weights on
 * NVIDIA), register_reduce sums the work-groups' partials. Work-groups of NP_REG_GROUP items
 * stride over the fixed voxels, x fastest, so neighbouring items read neighbouring voxels. */
#include "common/portable.h"
#include "common/register.h"

#define NP_REG_LOOP(SAMPLE)                                                                              \
    NP_LOCAL_MEM float red[5 * NP_REG_GROUP];                                                            \
    NP_LOCAL_MEM int cnt[2 * NP_REG_GROUP];                                                              \
    NP_LOCAL_MEM np_uint lh[NP_REG_MAXBINS * NP_REG_MAXBINS];                                            \
    np_reg_hist_begin(&spec, lh);                                                                        \
    float acc[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};                                                       \
    int inside = 0, total = 0;                                                                           \
    int n = fnx * fny * fnz, stride = NP_LSIZE() * ngroups;                                              \
    for (int i = NP_GID(); i < n; i += stride) {                                                         \
        int x = i % fnx, y = (i / fnx) % fny, z = i / (fnx * fny);                                       \
        float q[3];                                                                                      \
        np_reg_map_point(&map, (float)x, (float)y, (float)z, q);                                         \
        total++;                                                                                         \
        if (!np_reg_inside(q, mnx, mny, mnz))                                                            \
            continue;                                                                                    \
        inside++;                                                                                        \
        np_reg_add(&spec, fixed[i], (SAMPLE), acc, lh);                                                  \
    }                                                                                                    \
    np_reg_group_end(&spec, acc, inside, total, red, cnt, lh, partial, hist);

NP_KERNEL void register_cost(NP_GLOBAL const float *NP_RESTRICT fixed, NP_GLOBAL const float *NP_RESTRICT moving,
                             int fnx, int fny, int fnz, int mnx, int mny, int mnz, int ngroups,
                             np_reg_map map, np_reg_spec spec, NP_GLOBAL np_reg_partial *partial, NP_GLOBAL np_uint *hist)
{
    NP_REG_LOOP(np_reg_trilinear(moving, q, mnx, mny, mnz))
}

NP_KERNEL void register_cost_texture(NP_GLOBAL const float *NP_RESTRICT fixed, NP_TEX3D moving,
                                     int fnx, int fny, int fnz, int mnx, int mny, int mnz, int ngroups,
                                     np_reg_map map, np_reg_spec spec, NP_GLOBAL np_reg_partial *partial, NP_GLOBAL np_uint *hist)
{
    NP_REG_LOOP(np_tex3d_f4(moving, q[0], q[1], q[2]).x)
}

/* One work-group of NP_REG_GROUP items sums `ngroups` partials into out[0] (fixed order, so
 * the same inputs give the same bits). */
NP_KERNEL void register_reduce(NP_GLOBAL const np_reg_partial *NP_RESTRICT partial, int ngroups, NP_GLOBAL np_reg_partial *out)
{
    NP_LOCAL_MEM float red[5 * NP_REG_GROUP];
    NP_LOCAL_MEM int cnt[2 * NP_REG_GROUP];
    int l = NP_LID();
    float acc[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    int inside = 0, total = 0;
    for (int g = l; g < ngroups; g += NP_LSIZE()) {
        for (int k = 0; k < 5; k++)
            acc[k] += partial[g].s[k];
        inside += partial[g].inside;
        total += partial[g].total;
    }
    np_reg_spec none;
    none.cost = NP_REG_SAD;
    np_reg_group_end(&none, acc, inside, total, red, cnt, (NP_REG_LOCAL_PTR np_uint *)cnt, out, (NP_GLOBAL np_uint *)0);
}
