/* Geodesic ray-tracing entry points for both dialects: one work-item per fibre (001 Sec. 4.3).
 * Point buffers are indexed in 64 bits (the _big names tell the host layer so).
 * The integrator lives in common/geodesic.h; this file adds only the texture sampler. */
#include "common/portable.h"
#include "common/sym3.h"
#include "common/geodesic.h"

/* Hardware trilinear filtering of the six float4 field groups (linear filter, clamped, voxel
 * centre i at coordinate i). Groups at or beyond ngroups read as zero, as in the global path. */
NP_FN void np_geo_sample_textures(NP_TEX3D t0, NP_TEX3D t1, NP_TEX3D t2, NP_TEX3D t3, NP_TEX3D t4, NP_TEX3D t5,
                                  int ngroups, const float q[3], float f[NP_GEO_NCOMP])
{
    np_float4 s[NP_GEO_GROUPS];
    np_float4 zero = np_make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    s[0] = ngroups > 0 ? np_tex3d_f4(t0, q[0], q[1], q[2]) : zero;
    s[1] = ngroups > 1 ? np_tex3d_f4(t1, q[0], q[1], q[2]) : zero;
    s[2] = ngroups > 2 ? np_tex3d_f4(t2, q[0], q[1], q[2]) : zero;
    s[3] = ngroups > 3 ? np_tex3d_f4(t3, q[0], q[1], q[2]) : zero;
    s[4] = ngroups > 4 ? np_tex3d_f4(t4, q[0], q[1], q[2]) : zero;
    s[5] = ngroups > 5 ? np_tex3d_f4(t5, q[0], q[1], q[2]) : zero;
    for (int k = 0; k < NP_GEO_GROUPS; ++k) {
        f[4 * k] = s[k].x; f[4 * k + 1] = s[k].y; f[4 * k + 2] = s[k].z; f[4 * k + 3] = s[k].w;
    }
}

NP_KERNEL void geodesic_trace_kernel(NP_GLOBAL const np_float4 *NP_RESTRICT f4, NP_GLOBAL const np_uchar *NP_RESTRICT labels,
                                     NP_GLOBAL const float *NP_RESTRICT seeds, np_geo_params p,
                                     NP_GLOBAL float *points_big, NP_GLOBAL int *sum_i, NP_GLOBAL float *sum_f)
{
    int i = NP_GID();
    NP_GEO_TRACE(i, p, seeds, labels, points_big, sum_i, sum_f, np_geo_sample_global(f4, &p, q, f))
}

NP_KERNEL void geodesic_trace_texture(NP_TEX3D t0, NP_TEX3D t1, NP_TEX3D t2, NP_TEX3D t3, NP_TEX3D t4, NP_TEX3D t5,
                                      NP_GLOBAL const np_uchar *NP_RESTRICT labels, NP_GLOBAL const float *NP_RESTRICT seeds,
                                      np_geo_params p, NP_GLOBAL float *points_big,
                                      NP_GLOBAL int *sum_i, NP_GLOBAL float *sum_f)
{
    int i = NP_GID();
    NP_GEO_TRACE(i, p, seeds, labels, points_big, sum_i, sum_f,
                 np_geo_sample_textures(t0, t1, t2, t3, t4, t5, p.ngroups, q, f))
}

NP_KERNEL void geodesic_pack(int n, int every, NP_GLOBAL const float *NP_RESTRICT points_big, NP_GLOBAL const int *NP_RESTRICT steps,
                             NP_GLOBAL const np_ulong *NP_RESTRICT offset, NP_GLOBAL float *packed_big)
{
    np_geo_pack(NP_GID(), n, every, points_big, steps, offset, packed_big);
}
