/* Geodesic ray-tracing entry points, OpenCL C: one work-item per fibre (001 Sec. 4.3). The
 * integrator lives in common/geodesic.h; this file adds only the image sampler. */
#include "common/portable.h"
#include "common/sym3.h"
#include "common/geodesic.h"

/* Hardware trilinear filtering; voxel centre i sits at image coordinate i + 0.5. */
__constant sampler_t np_geo_smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_LINEAR;

static inline void np_geo_sample_images(__read_only image3d_t t0, __read_only image3d_t t1,
                                        __read_only image3d_t t2, __read_only image3d_t t3,
                                        __read_only image3d_t t4, __read_only image3d_t t5,
                                        int ngroups, const float q[3], float f[NP_GEO_NCOMP])
{
    float4 c = (float4)(q[0] + 0.5f, q[1] + 0.5f, q[2] + 0.5f, 0.0f);
    float4 s[NP_GEO_GROUPS];
    float4 zero = (float4)(0.0f);
    s[0] = ngroups > 0 ? read_imagef(t0, np_geo_smp, c) : zero;
    s[1] = ngroups > 1 ? read_imagef(t1, np_geo_smp, c) : zero;
    s[2] = ngroups > 2 ? read_imagef(t2, np_geo_smp, c) : zero;
    s[3] = ngroups > 3 ? read_imagef(t3, np_geo_smp, c) : zero;
    s[4] = ngroups > 4 ? read_imagef(t4, np_geo_smp, c) : zero;
    s[5] = ngroups > 5 ? read_imagef(t5, np_geo_smp, c) : zero;
    for (int k = 0; k < NP_GEO_GROUPS; ++k) {
        f[4 * k] = s[k].x; f[4 * k + 1] = s[k].y; f[4 * k + 2] = s[k].z; f[4 * k + 3] = s[k].w;
    }
}

__kernel void geodesic_trace_kernel(__global const float4 *restrict f4, __global const uchar *restrict labels,
                                    __global const float *restrict seeds, np_geo_params p,
                                    __global float *points, __global int *sum_i, __global float *sum_f)
{
    int i = get_global_id(0);
    NP_GEO_TRACE(i, p, seeds, labels, points, sum_i, sum_f, np_geo_sample_global(f4, &p, q, f))
}

__kernel void geodesic_trace_texture(__read_only image3d_t t0, __read_only image3d_t t1,
                                     __read_only image3d_t t2, __read_only image3d_t t3,
                                     __read_only image3d_t t4, __read_only image3d_t t5,
                                     __global const uchar *restrict labels, __global const float *restrict seeds,
                                     np_geo_params p, __global float *points,
                                     __global int *sum_i, __global float *sum_f)
{
    int i = get_global_id(0);
    NP_GEO_TRACE(i, p, seeds, labels, points, sum_i, sum_f,
                 np_geo_sample_images(t0, t1, t2, t3, t4, t5, p.ngroups, q, f))
}

__kernel void geodesic_pack(int n, __global const float *points, __global const int *steps,
                            __global const ulong *offset, __global float *packed)
{
    np_geo_pack(get_global_id(0), n, points, steps, offset, packed);
}
