/* register.h: the affine-registration cost kernel's device math (paper 002, AIRWC), written
 * once for both dialects. For every fixed voxel: map its centre through the fixed-voxel ->
 * moving-voxel affine, drop it (and count it out) when it falls outside the box of moving voxel
 * centres, sample the moving image trilinearly, and add its cost contribution. Sums are reduced
 * in each work-group and then by register_reduce, so one small record comes back per
 * evaluation; MI/NMI count a joint histogram with integer atomics (local, then global).
 *
 * Arithmetic is done without fused multiply-adds, in the order of src/register/cpu.rs, so the
 * in-kernel samples (and their histogram bins) are bit-identical to the CPU's. */
#ifndef NP_REGISTER_H
#define NP_REGISTER_H

#define NP_REG_GROUP 256
#define NP_REG_MAXBINS 32
#define NP_REG_SAD 0
#define NP_REG_SSD 1
#define NP_REG_NCC 2

#if defined(NP_CUDA)
  #define NP_REG_MUL(a, b) __fmul_rn((a), (b))
  #define NP_REG_ADD(a, b) __fadd_rn((a), (b))
  #define NP_REG_SUB(a, b) __fsub_rn((a), (b))
  #define np_reg_local_inc(p) atomicAdd((unsigned int *)(p), 1u)
  #define NP_REG_LOCAL_PTR
#else
  #pragma OPENCL FP_CONTRACT OFF
  #define NP_REG_MUL(a, b) ((a) * (b))
  #define NP_REG_ADD(a, b) ((a) + (b))
  #define NP_REG_SUB(a, b) ((a) - (b))
  #define np_reg_local_inc(p) atomic_inc((volatile __local uint *)(p))
  #define NP_REG_LOCAL_PTR __local
#endif

/* Fixed-voxel -> moving-voxel map, rows of 4 (src/register/mod.rs voxel_map_f32). */
typedef struct { float m[12]; } np_reg_map;
/* src/register/cost.rs CostSpec. */
typedef struct {
    int cost, bins;
    float fixed_shift, moving_shift, fixed_lo, fixed_inv_width, moving_lo, moving_inv_width;
} np_reg_spec;
/* One work-group's (or the whole evaluation's) sums and overlap count. */
typedef struct { float s[5]; int inside; int total; int pad; } np_reg_partial;

/* ((m0 x + m1 y) + m2 z) + m3 per row, each operation rounded. */
NP_FN void np_reg_map_point(const np_reg_map *a, float x, float y, float z, float *q)
{
    for (int r = 0; r < 3; r++) {
        const float *m = a->m + 4 * r;
        q[r] = NP_REG_ADD(NP_REG_ADD(NP_REG_ADD(NP_REG_MUL(m[0], x), NP_REG_MUL(m[1], y)), NP_REG_MUL(m[2], z)), m[3]);
    }
}

NP_FN int np_reg_inside(const float *q, int nx, int ny, int nz)
{
    return q[0] >= 0.0f && q[0] <= (float)(nx - 1) && q[1] >= 0.0f && q[1] <= (float)(ny - 1) && q[2] >= 0.0f && q[2] <= (float)(nz - 1);
}

NP_FN float np_reg_lerp(float a, float b, float t)
{
    return NP_REG_ADD(a, NP_REG_MUL(t, NP_REG_SUB(b, a)));
}

/* In-kernel trilinear sample at an inside point (x, then y, then z, as the CPU). */
NP_FN float np_reg_trilinear(NP_GLOBAL const float *NP_RESTRICT v, const float *q, int nx, int ny, int nz)
{
    int i = (int)q[0], j = (int)q[1], k = (int)q[2];
    float fx = NP_REG_SUB(q[0], (float)i), fy = NP_REG_SUB(q[1], (float)j), fz = NP_REG_SUB(q[2], (float)k);
    int sx = i + 1 < nx ? 1 : 0, sy = j + 1 < ny ? nx : 0, sz = k + 1 < nz ? nx * ny : 0;
    int b = i + nx * (j + ny * k);
    float c00 = np_reg_lerp(v[b], v[b + sx], fx);
    float c10 = np_reg_lerp(v[b + sy], v[b + sy + sx], fx);
    float c01 = np_reg_lerp(v[b + sz], v[b + sz + sx], fx);
    float c11 = np_reg_lerp(v[b + sz + sy], v[b + sz + sy + sx], fx);
    return np_reg_lerp(np_reg_lerp(c00, c10, fy), np_reg_lerp(c01, c11, fy), fz);
}

/* Histogram bin: one subtraction and one multiplication, truncated, clamped (cost.rs bin). */
NP_FN int np_reg_bin(float v, float lo, float inv_width, int bins)
{
    int b = (int)NP_REG_MUL(NP_REG_SUB(v, lo), inv_width);
    return b < 0 ? 0 : (b > bins - 1 ? bins - 1 : b);
}

/* One inside sample's contribution. */
NP_FN void np_reg_add(const np_reg_spec *sp, float f, float m, float *acc, NP_REG_LOCAL_PTR np_uint *lh)
{
    if (sp->cost == NP_REG_SAD) {
        acc[0] += np_fabs(NP_REG_SUB(f, m));
    } else if (sp->cost == NP_REG_SSD) {
        float d = NP_REG_SUB(f, m);
        acc[0] += d * d;
    } else if (sp->cost == NP_REG_NCC) {
        float a = NP_REG_SUB(f, sp->fixed_shift), b = NP_REG_SUB(m, sp->moving_shift);
        acc[0] += a;
        acc[1] += b;
        acc[2] += a * a;
        acc[3] += b * b;
        acc[4] += a * b;
    } else {
        int i = np_reg_bin(f, sp->fixed_lo, sp->fixed_inv_width, sp->bins);
        int j = np_reg_bin(m, sp->moving_lo, sp->moving_inv_width, sp->bins);
        np_reg_local_inc(lh + i * sp->bins + j);
    }
}

/* Zeroes the work-group's histogram (call before the voxel loop, all items). */
NP_FN void np_reg_hist_begin(const np_reg_spec *sp, NP_REG_LOCAL_PTR np_uint *lh)
{
    if (sp->cost > NP_REG_NCC)
        for (int i = NP_LID(); i < sp->bins * sp->bins; i += NP_LSIZE())
            lh[i] = 0u;
    NP_BARRIER();
}

/* Tree-reduces the items' sums and counts into partial[group]; adds the local histogram to the
 * global one. `red` holds 5 * NP_REG_GROUP floats, `cnt` 2 * NP_REG_GROUP ints. */
NP_FN void np_reg_group_end(const np_reg_spec *sp, float *acc, int inside, int total, NP_REG_LOCAL_PTR float *red,
                            NP_REG_LOCAL_PTR int *cnt, NP_REG_LOCAL_PTR np_uint *lh, NP_GLOBAL np_reg_partial *partial,
                            NP_GLOBAL np_uint *hist)
{
    int l = NP_LID(), n = NP_LSIZE();
    for (int k = 0; k < 5; k++)
        red[k * NP_REG_GROUP + l] = acc[k];
    cnt[l] = inside;
    cnt[NP_REG_GROUP + l] = total;
    NP_BARRIER();
    for (int s = n / 2; s > 0; s >>= 1) {
        if (l < s) {
            for (int k = 0; k < 5; k++)
                red[k * NP_REG_GROUP + l] += red[k * NP_REG_GROUP + l + s];
            cnt[l] += cnt[l + s];
            cnt[NP_REG_GROUP + l] += cnt[NP_REG_GROUP + l + s];
        }
        NP_BARRIER();
    }
    if (l == 0) {
        NP_GLOBAL np_reg_partial *p = partial + NP_GROUP();
        for (int k = 0; k < 5; k++)
            p->s[k] = red[k * NP_REG_GROUP];
        p->inside = cnt[0];
        p->total = cnt[NP_REG_GROUP];
        p->pad = 0;
    }
    if (sp->cost > NP_REG_NCC)
        for (int i = l; i < sp->bins * sp->bins; i += n)
            if (lh[i] != 0u)
                np_atomic_add_u32(hist + i, lh[i]);
}

#endif
