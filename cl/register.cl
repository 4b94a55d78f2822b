/* Affine-registration cost entry points for both dialects (paper 002 appendix, with the
 * reduction on the device): register_cost samples the moving image in-kernel (exact, as the
 * CPU), register_cost_texture through the hardware filter (002's tex3D; 8-bit weights on
 * NVIDIA). One launch evaluates up to NP_REG_MAXMAPS maps: work-group g serves map
 * g / ngroups. A map's fixed grid is cut into tiles of NP_REG_TX x NP_REG_TY voxels by `tz`
 * slices; a work-group takes tiles g, g + ngroups, ... and each item walks its column of a
 * tile in z. Why tiles: the 8 gathers of one sample touch rows y, y+1 of slices z, z+1 of the
 * moving image; in a tile those rows were just read by the item's neighbours and by its own
 * previous slice, so they come from L1, where a grid-stride over x-rows fetched each moving row
 * from L2 about four times (the texture kernel ran at 81 % of L2 throughput). The last
 * work-group of a map to finish reduces its partials (and, for MI/NMI, the joint histogram to
 * entropies) into the map's record (register.h np_reg_finish). */
#include "common/portable.h"
#include "common/register.h"

/* CUDA: at least NP_REG_MIN_BLOCKS work-groups resident per SM, when the host sets it
 * (NEUROPORT_REG_MIN_BLOCKS), capping registers per item. */
#if defined(NP_CUDA) && defined(NP_REG_MIN_BLOCKS)
  #define NP_REG_BOUNDS __launch_bounds__(NP_REG_GROUP, NP_REG_MIN_BLOCKS)
#else
  #define NP_REG_BOUNDS
#endif

/* The fixed image is read once per evaluation: streamed past L2 (CUDA), so the moving image,
 * whose voxels several samples share, stays there (43 MB of the H100's 50 MB L2 each).
 * NP_REG_NO_STREAM (NEUROPORT_REG_STREAM=0) builds plain loads, for comparison. */
#ifdef NP_REG_NO_STREAM
  #define NP_REG_FIXED_LOAD(p) (*(p))
#else
  #define NP_REG_FIXED_LOAD(p) np_load_stream(p)
#endif

#define NP_REG_LOOP(SAMPLE)                                                                              \
    NP_LOCAL_MEM float red[5 * NP_REG_GROUP];                                                            \
    NP_LOCAL_MEM int cnt[2 * NP_REG_GROUP];                                                              \
    NP_LOCAL_MEM np_uint lh[NP_REG_MAXBINS * NP_REG_MAXBINS];                                            \
    NP_LOCAL_MEM int last;                                                                               \
    int e = NP_GROUP() / ngroups, g = NP_GROUP() - e * ngroups, nb = spec.bins * spec.bins;             \
    np_reg_map map;                                                                                      \
    for (int k = 0; k < 12; k++)                                                                         \
        map.m[k] = maps.m[12 * e + k];                                                                   \
    np_reg_hist_begin(&spec, lh);                                                                        \
    float acc[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};                                                       \
    int inside = 0, total = 0, bin = -1;                                                                 \
    np_uint run = 0u;                                                                                    \
    int ntx = (fnx + NP_REG_TX - 1) / NP_REG_TX, nty = (fny + NP_REG_TY - 1) / NP_REG_TY;                \
    int ntiles = ntx * nty * ((fnz + tz - 1) / tz);                                                      \
    /* The item's place in its tile, through a volatile copy of its id: PoCL 5.0 (Ubuntu 24.04's,   \
     * LLVM 16) otherwise gave every item of a work-group one item's inside test in this loop (a   \
     * tile's samples counted all or none, slice by slice: `check` failed 11 registration rows on   \
     * it; PoCL 3.1 and NVIDIA did not). Once per item, so nothing on a GPU. */                      \
    volatile int lid_ = NP_LID();                                                                        \
    int lx = lid_ % NP_REG_TX, ly = lid_ / NP_REG_TX;                                                    \
    for (int t = g; t < ntiles; t += ngroups) {                                                          \
        int bx = t % ntx, by = (t / ntx) % nty, bz = t / (ntx * nty);                                    \
        int x = bx * NP_REG_TX + lx, y = by * NP_REG_TY + ly, z0 = bz * tz;                              \
        int z1 = z0 + tz < fnz ? z0 + tz : fnz;                                                          \
        int col = x < fnx && y < fny;                                                                    \
        int base = x + fnx * y;                                                                          \
        float cq[3];                                                                                     \
        np_reg_map_column(&map, (float)x, (float)y, cq);                                                 \
        /* NP_REG_UNROLL slices per pass: all their loads (fixed value, 8 gathers or one texture   \
         * fetch) are issued before any is used, so several samples' memory latency overlaps. A    \
         * voxel off the grid or outside the moving image samples voxel 0 (a valid address) and  \
         * is dropped; sums are added slice by slice, so the result does not depend on the unroll. \
         * Not branched around (round 15): loading only inside samples was 6-20 % faster on PoCL \
         * 3.1 and no faster on the H100, and PoCL 5.0 miscounted the overlap (`check` seeds     \
         * 191-196), as with the item's id before the volatile copy above.                  */   \
        for (int z = z0; z < z1; z += NP_REG_UNROLL) {                                                   \
            float fv[NP_REG_UNROLL], mv[NP_REG_UNROLL];                                                  \
            int ok[NP_REG_UNROLL], valid[NP_REG_UNROLL];                                                 \
            for (int u = 0; u < NP_REG_UNROLL; u++) {                                                    \
                float q[3];                                                                              \
                valid[u] = col && z + u < z1;                                                            \
                np_reg_map_slice(&map, cq, (float)(z + u), q);                                           \
                ok[u] = valid[u] && np_reg_inside(q, mnx, mny, mnz);                                     \
                if (!ok[u])                                                                              \
                    q[0] = q[1] = q[2] = 0.0f;                                                           \
                fv[u] = NP_REG_FIXED_LOAD(fixed + (valid[u] ? base + fnx * fny * (z + u) : 0));          \
                mv[u] = (SAMPLE);                                                                        \
            }                                                                                            \
            for (int u = 0; u < NP_REG_UNROLL; u++) {                                                    \
                /* NaN/Inf: a fixed value is not counted, a sample is outside (register.h). */            \
                int counted = NP_REG_COUNTED(valid[u], fv[u]);                                           \
                total += counted;                                                                        \
                if (NP_REG_USED(ok[u], counted, mv[u])) {                                                \
                    inside++;                                                                            \
                    np_reg_add(&spec, fv[u], mv[u], acc, lh, &bin, &run);                                \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
    }                                                                                                    \
    if (run != 0u)                                                                                       \
        np_atomic_add_local_u32(lh + bin, run);                                                          \
    np_reg_finish(&spec, acc, inside, total, ngroups, red, cnt, lh, g, partial + ngroups * e, hist + nb * e, done + e, out + e, \
                  hist_out + nb * e, &last);

NP_KERNEL void NP_REG_BOUNDS register_cost(NP_GLOBAL const float *NP_RESTRICT fixed, NP_GLOBAL const float *NP_RESTRICT moving,
                             int fnx, int fny, int fnz, int mnx, int mny, int mnz, int tz, int ngroups,
                             np_reg_maps maps, np_reg_spec spec, NP_GLOBAL np_reg_partial *partial, NP_GLOBAL np_uint *hist,
                             NP_GLOBAL np_uint *done, NP_GLOBAL np_reg_partial *out, NP_GLOBAL np_uint *hist_out)
{
    NP_REG_LOOP(np_reg_trilinear(moving, q, mnx, mny, mnz))
}

NP_KERNEL void NP_REG_BOUNDS register_cost_texture(NP_GLOBAL const float *NP_RESTRICT fixed, NP_TEX3D moving,
                                     int fnx, int fny, int fnz, int mnx, int mny, int mnz, int tz, int ngroups,
                                     np_reg_maps maps, np_reg_spec spec, NP_GLOBAL np_reg_partial *partial, NP_GLOBAL np_uint *hist,
                                     NP_GLOBAL np_uint *done, NP_GLOBAL np_reg_partial *out, NP_GLOBAL np_uint *hist_out)
{
    NP_REG_LOOP(np_tex3d_f1(moving, q[0], q[1], q[2]))
}
