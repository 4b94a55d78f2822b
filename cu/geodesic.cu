/* Geodesic ray-tracing entry points, CUDA C (NVRTC): one thread per fibre (001 Sec. 4.3). The
 * integrator lives in common/geodesic.h; this file adds only the texture-object sampler. */
#include "common/portable.h"
#include "common/sym3.h"
#include "common/geodesic.h"

/* Hardware trilinear filtering of 3-D texture objects (linear filter, clamped, unnormalised
 * coordinates); voxel centre i sits at texture coordinate i + 0.5. */
static __device__ __forceinline__ void np_geo_sample_textures(const unsigned long long *tex, int ngroups,
                                                             const float q[3], float f[NP_GEO_NCOMP])
{
    float x = q[0] + 0.5f, y = q[1] + 0.5f, z = q[2] + 0.5f;
#pragma unroll
    for (int k = 0; k < NP_GEO_GROUPS; ++k) {
        float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (k < ngroups) s = tex3D<float4>((cudaTextureObject_t)tex[k], x, y, z);
        f[4 * k] = s.x; f[4 * k + 1] = s.y; f[4 * k + 2] = s.z; f[4 * k + 3] = s.w;
    }
}

NP_KERNEL void geodesic_trace_kernel(const float4 *__restrict__ f4, const unsigned char *__restrict__ labels,
                                     const float *__restrict__ seeds, np_geo_params p,
                                     float *points, int *sum_i, float *sum_f)
{
    int i = NP_GID();
    NP_GEO_TRACE(i, p, seeds, labels, points, sum_i, sum_f, np_geo_sample_global(f4, &p, q, f))
}

NP_KERNEL void geodesic_trace_texture(unsigned long long t0, unsigned long long t1, unsigned long long t2,
                                      unsigned long long t3, unsigned long long t4, unsigned long long t5,
                                      const unsigned char *__restrict__ labels, const float *__restrict__ seeds,
                                      np_geo_params p, float *points, int *sum_i, float *sum_f)
{
    int i = NP_GID();
    const unsigned long long tex[NP_GEO_GROUPS] = { t0, t1, t2, t3, t4, t5 };
    NP_GEO_TRACE(i, p, seeds, labels, points, sum_i, sum_f, np_geo_sample_textures(tex, p.ngroups, q, f))
}

NP_KERNEL void geodesic_pack(int n, const float *__restrict__ points, const int *__restrict__ steps,
                             const unsigned long long *__restrict__ offset, float *packed)
{
    np_geo_pack(NP_GID(), n, points, steps, offset, packed);
}
