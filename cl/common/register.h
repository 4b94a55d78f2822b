/* register.h: the affine-registration cost kernel's device math (paper 002, AIRWC), written
 * once for both dialects. For every fixed voxel: map its centre through the fixed-voxel ->
 * moving-voxel affine, drop it (and count it out) when it falls outside the box of moving voxel
 * centres, sample the moving image trilinearly, and add its cost contribution. Sums are reduced
 * in each work-group and then by the last work-group to finish, so one small record comes back per
 * evaluation; MI/NMI count a joint histogram with integer atomics (local, then global) and the
 * last work-group turns it into entropies.
 *
 * Arithmetic is done without fused multiply-adds, in the order of src/register/cpu.rs, so the
 * in-kernel samples (and their histogram bins) are bit-identical to the CPU's.
 *
 * NaN/Inf voxels (src/register/cost.rs): a fixed voxel whose value is not finite is neither
 * summed nor counted in `total`; a sample that is not finite (its blend read a non-finite
 * moving voxel) is outside. Both tests look at the finished values only, as the CPU's do, so
 * the counts stay the CPU's. */
#ifndef NP_REGISTER_H
#define NP_REGISTER_H

#define NP_REG_GROUP 256
#define NP_REG_MAXBINS 32
/* Slices per pass of an item's loop whose loads are in flight together (register.cl); the host
 * may set it (NEUROPORT_REG_UNROLL) to build other loop shapes. 2: on the H100 (`bench
 * register`, tiled loop) 2 beat 4 by 6-8 % in-kernel on CUDA and NVIDIA OpenCL, 8 lost 40 %;
 * the texture path did not care. */
#ifndef NP_REG_UNROLL
#define NP_REG_UNROLL 2
#endif
/* A tile's x and y extent (NP_REG_TX x NP_REG_TY = NP_REG_GROUP items) and the most maps one
 * launch evaluates (src/register/gpu.rs TILE, MAX_MAPS). */
#define NP_REG_TX 16
#define NP_REG_TY 16
#define NP_REG_MAXMAPS 8
#define NP_REG_SAD 0
#define NP_REG_SSD 1
#define NP_REG_NCC 2

#if defined(NP_CUDA)
  #define NP_REG_MUL(a, b) __fmul_rn((a), (b))
  #define NP_REG_ADD(a, b) __fadd_rn((a), (b))
  #define NP_REG_SUB(a, b) __fsub_rn((a), (b))
#else
  #pragma OPENCL FP_CONTRACT OFF
  #define NP_REG_MUL(a, b) ((a) * (b))
  #define NP_REG_ADD(a, b) ((a) + (b))
  #define NP_REG_SUB(a, b) ((a) - (b))
#endif

/* Whether x is finite, read from its exponent bits: a float compare (x == x, isfinite) may be
 * folded to true where the build assumes finite math, which register.cl's options do not ask
 * for but NEUROPORT_OPENCL_OPTIONS / NEUROPORT_NVRTC_OPTIONS may add (-cl-fast-relaxed-math
 * implies -cl-finite-math-only); the bits cannot be assumed away. One AND and one compare. */
#define NP_REG_FINITE(x) ((np_float_as_int(x) & 0x7f800000) != 0x7f800000)

/* Whether a voxel counts in `total` (on the grid, and its fixed value finite) and whether its
 * sample is used (inside, counted, and itself finite). The tests are compiled only into the
 * program for images that hold NaN/Inf (NP_REG_NONFINITE, chosen by the host from
 * CostSpec::nonfinite): they cost the lone evaluation 2-8 % on the H200 (round 36), which finite
 * images, the usual case, need not pay. */
#if defined(NP_REG_NONFINITE)
  #define NP_REG_COUNTED(valid, f) ((valid) && NP_REG_FINITE(f))
  #define NP_REG_USED(ok, counted, m) ((ok) && (counted) && NP_REG_FINITE(m))
#else
  #define NP_REG_COUNTED(valid, f) (valid)
  #define NP_REG_USED(ok, counted, m) (ok)
#endif

/* Fixed-voxel -> moving-voxel map, rows of 4 (src/register/mod.rs voxel_map_f32). */
typedef struct { float m[12]; } np_reg_map;
/* The maps of one launch, NP_REG_MAXMAPS x 12 (unused ones ignored). */
typedef struct { float m[12 * NP_REG_MAXMAPS]; } np_reg_maps;
/* src/register/cost.rs CostSpec, less `nonfinite` (gpu.rs KernelSpec). */
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

/* The same map split for a column walked in z: m0 x + m1 y once per column (`a`), then per
 * slice (a + m2 z) + m3 - the operations and order of np_reg_map_point, so the same bits. */
NP_FN void np_reg_map_column(const np_reg_map *a, float x, float y, float *col)
{
    for (int r = 0; r < 3; r++)
        col[r] = NP_REG_ADD(NP_REG_MUL(a->m[4 * r], x), NP_REG_MUL(a->m[4 * r + 1], y));
}

NP_FN void np_reg_map_slice(const np_reg_map *a, const float *col, float z, float *q)
{
    for (int r = 0; r < 3; r++)
        q[r] = NP_REG_ADD(NP_REG_ADD(col[r], NP_REG_MUL(a->m[4 * r + 2], z)), a->m[4 * r + 3]);
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

/* One inside sample's contribution. MI/NMI: `run` counts consecutive samples of this item in
 * the same joint bin `*last` and is added to the local histogram when the bin changes (most of
 * a head image is background, and 256 items incrementing one local counter serialise). */
NP_FN void np_reg_add(const np_reg_spec *sp, float f, float m, float *acc, NP_LOCAL_PTR np_uint *lh, int *last, np_uint *run)
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
        int b = i * sp->bins + j;
        if (b != *last) {
            if (*run != 0u)
                np_atomic_add_local_u32(lh + *last, *run);
            *last = b;
            *run = 0u;
        }
        (*run)++;
    }
}

/* Zeroes the work-group's histogram (call before the voxel loop, all items). */
NP_FN void np_reg_hist_begin(const np_reg_spec *sp, NP_LOCAL_PTR np_uint *lh)
{
    if (sp->cost > NP_REG_NCC)
        for (int i = NP_LID(); i < sp->bins * sp->bins; i += NP_LSIZE())
            lh[i] = 0u;
    NP_BARRIER();
}

/* Tree-reduces the items' 5 sums and 2 counts in place: the totals end in red[k * NP_REG_GROUP]
 * and cnt[0], cnt[NP_REG_GROUP]. `red` holds 5 * NP_REG_GROUP floats, `cnt` 2 * NP_REG_GROUP
 * ints; fixed order, so the same inputs give the same bits.
 * The two counts cross the first barrier in volatile copies, as the item's id in register.cl:
 * PoCL 5.0 (Ubuntu 24.04's, LLVM 16) keeps a copy per item of a value live across a barrier
 * unless it judges the value uniform, and now and then (3 of 52 fresh compiles here, varying from
 * process to process; a cached binary then fails every time) judged the voxel loop's `inside`
 * uniform: every item passed on the group's last item's count (`check` seeds 334/335: overlap
 * 36352 / 36864 of 69120, the counts of whole tiles). A volatile local stays a private variable,
 * which PoCL always copies per item. `acc` is such an array already. Once per item and call,
 * so nothing on a GPU. */
NP_FN void np_reg_block_sum(const float *acc, int inside, int total, NP_LOCAL_PTR float *red, NP_LOCAL_PTR int *cnt)
{
    int l = NP_LID(), n = NP_LSIZE();
    volatile int inside_ = inside, total_ = total;
    NP_BARRIER();
    for (int k = 0; k < 5; k++)
        red[k * NP_REG_GROUP + l] = acc[k];
    cnt[l] = inside_;
    cnt[NP_REG_GROUP + l] = total_;
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
}

/* The end of one map's evaluation, after the voxel loop, in one launch: each work-group reduces
 * its sums into partial[group] (`group` its index among the map's ngroups; every buffer here is
 * the map's own) and adds its histogram to the map's global one; the last of the map's
 * work-groups to finish (a global counter, `done`, kept at 0 between launches) sums the
 * partials in group order into *out and, for MI/NMI, takes the global histogram (reading and
 * zeroing it with atomic exchanges, so the next launch starts from zeros), copies it to
 * hist_out and puts the entropies H(F), H(M), H(F,M) (nats) in out->s[0..2]. One 32-byte
 * record per map is then all the host reads. */
NP_FN void np_reg_finish(const np_reg_spec *sp, float *acc, int inside, int total, int ngroups, NP_LOCAL_PTR float *red,
                         NP_LOCAL_PTR int *cnt, NP_LOCAL_PTR np_uint *lh, int group, NP_GLOBAL np_reg_partial *partial,
                         NP_GLOBAL np_uint *hist, NP_GLOBAL np_uint *done, NP_GLOBAL np_reg_partial *out,
                         NP_GLOBAL np_uint *hist_out, NP_LOCAL_PTR int *last)
{
    int l = NP_LID(), n = NP_LSIZE(), nb = sp->bins * sp->bins;
    int histo = sp->cost > NP_REG_NCC;
    np_reg_block_sum(acc, inside, total, red, cnt);
    if (l == 0) {
        NP_GLOBAL np_reg_partial *p = partial + group;
        for (int k = 0; k < 5; k++)
            p->s[k] = red[k * NP_REG_GROUP];
        p->inside = cnt[0];
        p->total = cnt[NP_REG_GROUP];
        p->pad = 0;
    }
    if (histo)
        for (int i = l; i < nb; i += n)
            if (lh[i] != 0u)
                np_atomic_add_u32(hist + i, lh[i]);
    NP_GLOBAL_FENCE();
    NP_BARRIER();
    if (l == 0)
        *last = np_atomic_add_u32(done, 1u) == (np_uint)(ngroups - 1);
    NP_BARRIER();
    if (!*last)
        return;
    NP_GLOBAL_FENCE();
    /* Other groups' partials: volatile loads, so no stale cached copy is used. */
    NP_GLOBAL volatile float *pw = (NP_GLOBAL volatile float *)partial;
    NP_GLOBAL volatile int *pi = (NP_GLOBAL volatile int *)partial;
    float s[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    int in = 0, tot = 0;
    for (int g = l; g < ngroups; g += n) {
        for (int k = 0; k < 5; k++)
            s[k] += pw[8 * g + k];
        in += pi[8 * g + 5];
        tot += pi[8 * g + 6];
    }
    np_reg_block_sum(s, in, tot, red, cnt);
    float sums[5];
    for (int k = 0; k < 5; k++)
        sums[k] = red[k * NP_REG_GROUP];
    int all_in = cnt[0], all_tot = cnt[NP_REG_GROUP];
    if (histo) {
        for (int i = l; i < nb; i += n) {
            np_uint c = np_atomic_xchg_u32(hist + i, 0u);
            lh[i] = c;
            hist_out[i] = c;
        }
        NP_BARRIER();
        /* -p ln p per joint bin, per marginal row (items < bins) and column (bins <= item < 2 bins). */
        float inv = all_in > 0 ? 1.0f / (float)all_in : 0.0f;
        float e[5] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        for (int i = l; i < nb; i += n)
            if (lh[i] != 0u) {
                float p = (float)lh[i] * inv;
                e[2] -= p * np_log(p);
            }
        if (l < 2 * sp->bins) {
            int r = l % sp->bins;
            np_uint c = 0u;
            for (int j = 0; j < sp->bins; j++)
                c += l < sp->bins ? lh[r * sp->bins + j] : lh[j * sp->bins + r];
            float p = (float)c * inv;
            if (c != 0u)
                e[l < sp->bins ? 0 : 1] -= p * np_log(p);
        }
        np_reg_block_sum(e, 0, 0, red, cnt);
        for (int k = 0; k < 5; k++)
            sums[k] = red[k * NP_REG_GROUP];
    }
    if (l == 0) {
        for (int k = 0; k < 5; k++)
            out->s[k] = sums[k];
        out->inside = all_in;
        out->total = all_tot;
        out->pad = 0;
        done[0] = 0u;
    }
}

#endif
