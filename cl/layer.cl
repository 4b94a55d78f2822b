/* Self-test kernels of the GPU host layer (src/runtime/gpu): argument passing of every kind,
 * textures, atomics and launch shapes, checked against the host on every device. */
#include "common/portable.h"

typedef struct { float a; int n; float b; int pad; } np_layer_params;

NP_KERNEL void layer_axpy(NP_GLOBAL const float *NP_RESTRICT x, NP_GLOBAL float *y, int n, float a,
                          np_layer_params p, np_uint mask)
{
    int i = NP_GID();
    if (i >= n || i >= p.n) return;
    y[i] = a * x[i] + p.a * y[i] + p.b + (float)((np_uint)i & mask);
}

/* Sums per work-group through local memory, then one atomic per group. */
NP_KERNEL void layer_group_sum(NP_GLOBAL const int *x, int n, NP_GLOBAL int *total)
{
    NP_LOCAL_MEM int part[64];
    int l = NP_LID();
    int i = NP_GID();
    part[l] = i < n ? x[i] : 0;
    NP_BARRIER();
    for (int s = NP_LSIZE() / 2; s > 0; s >>= 1) {
        if (l < s) part[l] += part[l + s];
        NP_BARRIER();
    }
    if (l == 0) np_atomic_add_i32(total, part[0]);
}

NP_KERNEL void layer_tex_sample(NP_TEX3D t, NP_GLOBAL const float *q, int n, NP_GLOBAL np_float4 *out)
{
    int i = NP_GID();
    if (i >= n) return;
    out[i] = np_tex3d_f4(t, q[3 * i], q[3 * i + 1], q[3 * i + 2]);
}

NP_KERNEL void layer_fatomic(NP_GLOBAL const float *x, int n, NP_GLOBAL float *total)
{
    int i = NP_GID();
    if (i < n) np_atomic_add_f32(total, x[i]);
}

NP_KERNEL void layer_nop(int n) {}
