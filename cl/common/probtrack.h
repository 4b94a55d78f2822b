/* probtrack.h: probabilistic streamlining (paper 003 Sec. III-B, IV-B; FSL probtrackx's rules),
 * one half-streamline per work-item. Written operation for operation again in
 * src/probtrack/step.rs: only IEEE products and sums in a fixed order, never fused (FP_CONTRACT
 * off in OpenCL, __fmul_rn/__fadd_rn in CUDA, which NVRTC never contracts), plus exact
 * operations (comparisons, floor, fabs, integer hashing), so every backend traces the very same
 * streamlines as the CPU reference.
 *
 * A step: the voxel whose sample is read is floor(p + u) per axis (u = 0.5: the nearest voxel;
 * u uniform in [0, 1) from the path's hash: probtrackx's random sub-voxel choice, a neighbour
 * with its trilinear weight), clamped to the grid. Of its two sticks (records of x, y, z, f in
 * voxel axes) those with f > fibthresh are candidates; the one with the largest |cos| to the
 * previous direction is taken (stick 1 on a tie), flipped to keep the orientation. The path
 * stops when no stick counts, when that cosine is below min_cos, when the new point (p + h d,
 * h = step / voxel size per axis) leaves the grid or the mask (the point is then not taken),
 * when it enters the exclusion mask (taken, and the streamline is discarded), or at max_steps.
 * The ROI words of every point reached are OR-ed into the path's flags; entering a voxel
 * counts one visit when counting is on. */
#ifndef NP_PROBTRACK_H
#define NP_PROBTRACK_H

#if defined(NP_CUDA)
  #define NP_PT_MUL(a, b) __fmul_rn((a), (b))
  #define NP_PT_ADD(a, b) __fadd_rn((a), (b))
#else
  #pragma OPENCL FP_CONTRACT OFF
  #define NP_PT_MUL(a, b) ((a) * (b))
  #define NP_PT_ADD(a, b) ((a) + (b))
#endif

#define NP_PT_INSIDE 1u
#define NP_PT_EXCLUDE 2u

/* src/probtrack/step.rs: Params (21 words). The samples hold `rows` voxels per sample volume,
 * the voxels tracking can read (src/probtrack/crop.rs), compacted; `index` holds the row of
 * each voxel of their bounding box (ox, oy, oz) + (cx, cy, cz), -1 for one not held. */
typedef struct {
    int nx, ny, nz, nsamp;
    float hx, hy, hz, min_cos;
    float fibthresh;
    int max_steps, jitter;
    np_uint key;
    int count, nseeds;
    int ox, oy, oz, cx, cy, cz;
    int rows;
} np_pt_params;

/* src/probtrack/step.rs: Path (12 words). */
typedef struct {
    float px, py, pz, dx, dy, dz;
    int steps;
    np_uint flags;
    int vox;
    np_uint id, rkey;
    int samp;
} np_pt_path;

/* lowbias32: a full-avalanche 32-bit integer hash. */
NP_FN np_uint np_pt_hash(np_uint x)
{
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

/* Uniform in [0, 1) from the top 24 bits: exact in float. */
NP_FN float np_pt_u01(np_uint h) { return (float)(h >> 8) * 5.9604644775390625e-8f; }

NP_FN int np_pt_nearest(float qx, float qy, float qz, const np_pt_params *p)
{
    float fx = np_floor(NP_PT_ADD(qx, 0.5f));
    float fy = np_floor(NP_PT_ADD(qy, 0.5f));
    float fz = np_floor(NP_PT_ADD(qz, 0.5f));
    if (!(fx >= 0.0f && fx < (float)p->nx) || !(fy >= 0.0f && fy < (float)p->ny) || !(fz >= 0.0f && fz < (float)p->nz))
        return -1;
    return (int)fx + p->nx * ((int)fy + p->ny * (int)fz);
}

NP_FN int np_pt_clamped(float q, float u, int n)
{
    float f = np_floor(NP_PT_ADD(q, u));
    if (!(f >= 0.0f)) return 0;
    int i = (int)f;
    return i < n - 1 ? i : n - 1;
}

/* First float4 of the record of grid voxel (x, y, z) in sample volume samp: the box's origin
 * is subtracted from the integer index alone, no position changes, and the index gives the
 * voxel's row (every voxel a step can read is held). */
NP_FN long np_pt_record(const np_pt_params *p, NP_GLOBAL const int *index, int samp, int x, int y, int z)
{
    int b = (x - p->ox) + p->cx * ((y - p->oy) + p->cy * (z - p->oz));
    return 2 * ((long)samp * p->rows + index[b]);
}

NP_FN float np_pt_dot(np_float4 a, float dx, float dy, float dz)
{
    return NP_PT_ADD(NP_PT_ADD(NP_PT_MUL(a.x, dx), NP_PT_MUL(a.y, dy)), NP_PT_MUL(a.z, dz));
}

/* Half `side` (0 or 1) of streamline k from seed voxel v; returns 1 when the path goes on. */
NP_FN int np_pt_start(np_pt_path *s, NP_GLOBAL const np_float4 *samples_big, NP_GLOBAL const int *index, NP_GLOBAL const np_uint *roi,
                      const np_pt_params *p, int v, np_uint k, np_uint side, np_uint id)
{
    int x = v % p->nx, y = (v / p->nx) % p->ny, z = v / (p->nx * p->ny);
    s->px = (float)x;
    s->py = (float)y;
    s->pz = (float)z;
    s->samp = (int)(k % (np_uint)p->nsamp);
    long r = np_pt_record(p, index, s->samp, x, y, z);
    np_float4 a = samples_big[r], b = samples_big[r + 1];
    int pick = 0;
    if (a.w > p->fibthresh && a.w >= b.w) pick = 1;
    else if (b.w > p->fibthresh) pick = 2;
    np_float4 c = pick == 2 ? b : a;
    float sg = side == 1u ? -1.0f : 1.0f;
    s->dx = pick ? sg * c.x : 0.0f;
    s->dy = pick ? sg * c.y : 0.0f;
    s->dz = pick ? sg * c.z : 0.0f;
    s->steps = 0;
    s->flags = roi[v];
    s->vox = v;
    s->id = id;
    s->rkey = np_pt_hash(p->key ^ np_pt_hash((np_uint)v ^ np_pt_hash(k * 2u + side)));
    return pick != 0 && (s->flags & NP_PT_EXCLUDE) == 0u && p->max_steps > 0;
}

/* One step; returns 0 when the path has ended. */
NP_FN int np_pt_step(np_pt_path *s, NP_GLOBAL const np_float4 *samples_big, NP_GLOBAL const int *index, NP_GLOBAL const np_uint *roi,
                     NP_GLOBAL np_uint *visits, const np_pt_params *p)
{
    if (s->steps >= p->max_steps) return 0;
    float ux = 0.5f, uy = 0.5f, uz = 0.5f;
    if (p->jitter) {
        np_uint h = np_pt_hash(s->rkey ^ np_pt_hash((np_uint)s->steps));
        ux = np_pt_u01(h);
        h = np_pt_hash(h);
        uy = np_pt_u01(h);
        h = np_pt_hash(h);
        uz = np_pt_u01(h);
    }
    long r = np_pt_record(p, index, s->samp, np_pt_clamped(s->px, ux, p->nx), np_pt_clamped(s->py, uy, p->ny), np_pt_clamped(s->pz, uz, p->nz));
    np_float4 a = samples_big[r], b = samples_big[r + 1];
    float ca = np_pt_dot(a, s->dx, s->dy, s->dz);
    float cb = np_pt_dot(b, s->dx, s->dy, s->dz);
    float best = -1.0f;
    int pick = 0;
    if (a.w > p->fibthresh) { best = np_fabs(ca); pick = 1; }
    if (b.w > p->fibthresh && np_fabs(cb) > best) { best = np_fabs(cb); pick = 2; }
    if (pick == 0 || best < p->min_cos) return 0;
    np_float4 n = pick == 1 ? a : b;
    if ((pick == 1 ? ca : cb) < 0.0f) { n.x = -n.x; n.y = -n.y; n.z = -n.z; }
    float qx = NP_PT_ADD(s->px, NP_PT_MUL(p->hx, n.x));
    float qy = NP_PT_ADD(s->py, NP_PT_MUL(p->hy, n.y));
    float qz = NP_PT_ADD(s->pz, NP_PT_MUL(p->hz, n.z));
    int w = np_pt_nearest(qx, qy, qz, p);
    if (w < 0) return 0;
    np_uint word = roi[w];
    if ((word & NP_PT_INSIDE) == 0u) return 0;
    s->flags |= word;
    s->px = qx; s->py = qy; s->pz = qz;
    s->dx = n.x; s->dy = n.y; s->dz = n.z;
    s->steps += 1;
    if (word & NP_PT_EXCLUDE) return 0;
    if (w != s->vox) {
        s->vox = w;
        if (p->count) np_atomic_add_u32(&visits[w], 1u);
    }
    return s->steps < p->max_steps;
}

/* Runs live path i for up to `iters` steps; a finished path writes its result by id. */
NP_FN void np_pt_segment(int i, NP_GLOBAL np_pt_path *st, NP_GLOBAL int *live, int n, int iters,
                         NP_GLOBAL const np_float4 *samples_big, NP_GLOBAL const int *index, NP_GLOBAL const np_uint *roi,
                         NP_GLOBAL np_uint *visits, NP_GLOBAL int *out_steps, NP_GLOBAL np_uint *out_flags, const np_pt_params *p)
{
    if (i >= n) return;
    np_pt_path s = st[i];
    int go = 1;
    for (int it = 0; it < iters && go; ++it) go = np_pt_step(&s, samples_big, index, roi, visits, p);
    st[i] = s;
    live[i] = go;
    if (!go) {
        out_steps[s.id] = s.steps;
        out_flags[s.id] = s.flags;
    }
}

#endif
