/* bedpost.h: Bayesian ball-and-two-sticks MCMC (paper 003 Sec. III-A/IV-A; the model of FSL
 * bedpostx, Behrens 2003/2007), shared by cl/bedpost.cl and cu/bedpost.cu and mirrored step for
 * step by src/bedpost/cpu.rs.
 *
 * Model: S_i = S0 [(1 - f1 - f2) e0_i + f1 e1_i + f2 e2_i], e0_i = exp(-b_i d) (ball),
 * e_j,i = exp(-b_i d (g_i . v_j)^2) (stick j), v_j = (sin th cos ph, sin th sin ph, cos th).
 * Energy (negative log posterior up to a constant):
 *   (n/2) log(SS)        the Gaussian likelihood with the noise precision marginalised under a
 *                        Jeffreys prior, as bedpostx does (paper 003's ninth parameter);
 *   - log|sin th_j|      uniform prior on each stick direction over the sphere;
 *   + ard log f2         automatic relevance determination on the second stick (prior f2^-ard);
 * and hard bounds S0 > 0, 0 < d < 0.005 mm^2/s, 0 < f_j < 1, f1 + f2 <= 1.
 *
 * Sampler: per voxel, each of the eight parameters in turn (d, S0, th1, ph1, f1, th2, ph2, f2,
 * bedpostx's order) gets a zero-mean Gaussian random-walk proposal, accepted with probability
 * min(1, exp(E_old - E_new)). Parameter k draws its numbers from its own Tausworthe stream k:
 * two uniforms for the Box-Muller normal and one for the accept test, every loop, whether or
 * not the proposal falls out of bounds. A stream's position therefore depends only on the loop
 * index, so the thread layout, the warp layout and the CPU consume identical numbers.
 * Every `every` loops each proposal width whose acceptance rate left [25 %, 50 %] is scaled by
 * sqrt(((acc + 1) / (rej + 1)) (1 - t) / t) with t = 0.375 (bedpostx's rule aimed at the middle
 * of 003's window).
 *
 * Layouts (kernel variants), all with one chain per voxel:
 *   thread (003): one work-item per voxel. `cache` keeps the per-direction ball and stick terms
 *     in device memory (two slots per term, flipped on accept) so a proposal recomputes only the
 *     term it changes, as bedpostx does; without it every pass recomputes all three.
 *     `moments` keeps SS, R_k = sum r e_k and G_kl = sum e_k e_l, so S0, f1 and f2 proposals
 *     cost O(1) instead of a pass (SS is quadratic in S0 w_k).
 *   warp (bedpostx_gpu): 32 work-items per voxel, each holding every 32nd direction's terms in
 *     registers; SS is a butterfly sum across the group; streams 0-7 live in lanes 0-7. */
#ifndef NP_BEDPOST_H
#define NP_BEDPOST_H

#define NP_BP_NPARAM 8
#define NP_BP_D 0
#define NP_BP_S0 1
#define NP_BP_TH1 2
#define NP_BP_PH1 3
#define NP_BP_F1 4
#define NP_BP_TH2 5
#define NP_BP_PH2 6
#define NP_BP_F2 7
#define NP_BP_DMAX 0.005f          /* bedpostx's UPPERDIFF, mm^2/s */
#define NP_BP_SSFLOOR 1.0e-20f     /* keeps log(SS) finite for a (numerically) perfect fit */
#define NP_BP_ODDS 1.66666667f     /* (1 - t) / t for the target acceptance t = 0.375 */
#define NP_BP_LANES 32
#define NP_BP_PER 8                /* directions per lane in the warp layout: n <= 256 */


/* Sums over directions at one parameter set: SS, R_k = sum r_i e_k,i, G_kl = sum e_k,i e_l,i. */
typedef struct {
    float ss, r0, r1, r2, g00, g01, g02, g11, g12, g22;
} np_bp_mom;

typedef struct {
    float p[NP_BP_NPARAM];
    float prop[NP_BP_NPARAM];
    int acc[NP_BP_NPARAM];     /* accepted since the last adaptation */
    float v1[3], v2[3];
    float pth1, pth2, pf2;     /* prior energies */
    float energy;
    np_bp_mom m;
    int slot[3];               /* cache slot holding the current ball/stick terms */
    int nacc;                  /* accepted after burn-in, all parameters */
} np_bp_chain;

/* The model's exponentials, three a direction a pass: with the library's expf (~11 instructions,
 * 2 ulp on CUDA) about half the sampler's instructions. NP_BP_EXP chooses: 0 the library's exp;
 * 1 the hardware's e^x (MUFU.EX2 of x log2 e: the product's rounding grows the error with |x|,
 * to ~8 ulp at the model's largest arguments, b d ~ 15, below the rounding of the 68-134 terms
 * summed into SS). Measured on an H200 (round 34, `bench bedpost`, moments): CUDA 157.6 ms with
 * 0, 130.5 with 1; NVIDIA OpenCL 141.3, 126.6 (an ex2 with the product's rounding put back, ~3
 * ulp, took 149.0 and 148.9: not kept); on the issue-7 volume the posterior means moved on
 * average by 1/200 of what another seed moves them.
 * So 1 on CUDA and on NVIDIA's OpenCL (set from the host: bedpost.cl's NP_OPENCL_NV_OPTIONS),
 * whose native_exp is that instruction; 0 on other OpenCL devices, where native_exp's accuracy
 * is the implementation's. */
#ifndef NP_BP_EXP
  #if defined(NP_CUDA)
    #define NP_BP_EXP 1
  #else
    #define NP_BP_EXP 0
  #endif
#endif
NP_FN float np_bp_exp(float x)
{
#if NP_BP_EXP == 1
    return np_exp_native(x);
#else
    return np_exp(x);
#endif
}

/* Stick direction from its angles; returns sin(th) for the prior. */
NP_FN float np_bp_dir(float th, float ph, float *v)
{
    float st = np_sin(th), ct = np_cos(th), sp = np_sin(ph), cp = np_cos(ph);
    v[0] = st * cp;
    v[1] = st * sp;
    v[2] = ct;
    return st;
}

NP_FN float np_bp_energy(float ss, int ndir, float prior)
{
    return 0.5f * (float)ndir * np_log(np_fmax(ss, NP_BP_SSFLOOR)) + prior;
}

NP_FN int np_bp_inside(int k, const float *q)
{
    if (k == NP_BP_D) return q[k] > 0.0f && q[k] < NP_BP_DMAX;
    if (k == NP_BP_S0) return q[k] > 0.0f;
    if (k == NP_BP_F1 || k == NP_BP_F2)
        return q[k] > 0.0f && q[k] < 1.0f && q[NP_BP_F1] + q[NP_BP_F2] <= 1.0f;
    return 1;
}

NP_FN float np_bp_prop_cap(int k)
{
    if (k == NP_BP_D) return NP_BP_DMAX;
    if (k == NP_BP_S0) return 1.0e30f;
    if (k == NP_BP_F1 || k == NP_BP_F2) return 1.0f;
    return NP_PI_F;
}

/* Terms a proposal of parameter k changes: bit 0 ball, bit 1 stick 1, bit 2 stick 2. */
NP_FN int np_bp_which(int k)
{
    if (k == NP_BP_D) return 7;
    if (k == NP_BP_TH1 || k == NP_BP_PH1) return 2;
    if (k == NP_BP_TH2 || k == NP_BP_PH2) return 4;
    return 0;
}

NP_FN void np_bp_adapt(np_bp_chain *c, int every)
{
#pragma unroll
    for (int k = 0; k < NP_BP_NPARAM; ++k) {
        int a = c->acc[k];
        if (4 * a < every || 2 * a > every) {
            float f = np_sqrt((float)(a + 1) / (float)(every - a + 1) * NP_BP_ODDS);
            c->prop[k] = np_fmin(c->prop[k] * f, np_bp_prop_cap(k));
        }
        c->acc[k] = 0;
    }
}

/* Parameters, widths and counters of voxel v from component-major state arrays; the derived
 * directions and prior energies are recomputed (the energy itself by the caller's first pass). */
NP_FN void np_bp_load(np_bp_chain *c, int v, int nvox, float ard, NP_GLOBAL float *par,
                      NP_GLOBAL float *prop, NP_GLOBAL int *acc, NP_GLOBAL int *nacc)
{
    for (int k = 0; k < NP_BP_NPARAM; ++k) {
        c->p[k] = par[k * nvox + v];
        c->prop[k] = prop[k * nvox + v];
        c->acc[k] = acc[k * nvox + v];
    }
    c->pth1 = -np_log(np_fabs(np_bp_dir(c->p[NP_BP_TH1], c->p[NP_BP_PH1], c->v1)));
    c->pth2 = -np_log(np_fabs(np_bp_dir(c->p[NP_BP_TH2], c->p[NP_BP_PH2], c->v2)));
    c->pf2 = ard * np_log(c->p[NP_BP_F2]);
    c->slot[0] = c->slot[1] = c->slot[2] = 0;
    c->nacc = nacc[v];
}

NP_FN void np_bp_store(const np_bp_chain *c, int v, int nvox, NP_GLOBAL float *par,
                       NP_GLOBAL float *prop, NP_GLOBAL int *acc, NP_GLOBAL int *nacc)
{
    for (int k = 0; k < NP_BP_NPARAM; ++k) {
        par[k * nvox + v] = c->p[k];
        prop[k * nvox + v] = c->prop[k];
        acc[k * nvox + v] = c->acc[k];
    }
    nacc[v] = c->nacc;
}

/* Loop l (0-based, counting burn-in) ends with sample s = (l + 1 - burnin) / thin - 1 when
 * (l + 1 - burnin) is a positive multiple of thin. */
NP_FN int np_bp_sample_index(int l, int burnin, int thin, int nsamp)
{
    int t = l + 1 - burnin;
    if (t <= 0 || t % thin != 0) return -1;
    int s = t / thin - 1;
    return s < nsamp ? s : -1;
}

/* ---- thread layout -------------------------------------------------------------------- */

#define NP_BP_CI(t, s, i) ((((t) * 2 + (s)) * ndir + (i)) * nvox + v)

/* The pass is compiled once and called where the sampler is the moments layout (NP_BP_ONLY 2,
 * its own program): its eight inlined copies made ~10 K lines of PTX, and the called one ran
 * 4-5 % faster (round 34, H200: CUDA 130.5 -> 123.3-124.8 ms, NVIDIA OpenCL 126.4 -> 119.5-119.8;
 * the naive layout slower called, 176 -> 187, so it stays inlined there; the direction loop
 * unrolled by 2 or 4 gained nothing). NP_BP_PASS_CALLED remains for measuring. */
#ifndef NP_BP_PASS_CALLED
  #if defined(NP_BP_ONLY) && NP_BP_ONLY == 2
    #define NP_BP_PASS_CALLED 1
  #else
    #define NP_BP_PASS_CALLED 0
  #endif
#endif
#if NP_BP_PASS_CALLED
#define NP_BP_PASS_FN NP_FN_CALLED
#else
#define NP_BP_PASS_FN NP_FN
#endif

/* One pass over the directions at candidate parameters. With `cache`, terms in `which` are
 * recomputed into their spare slot and the others read from the current one. */
NP_BP_PASS_FN np_bp_mom np_bp_pass(NP_CONST_PTR float *y, NP_CONST_PTR np_float4 *gtab, int nvox, int ndir, int v,
                           float s0, float d, float f1, float f2, const float *v1, const float *v2,
                           int which, int cache, NP_GLOBAL float *ec, const int *slot)
{
    np_bp_mom m;
    m.ss = m.r0 = m.r1 = m.r2 = 0.0f;
    m.g00 = m.g01 = m.g02 = m.g11 = m.g12 = m.g22 = 0.0f;
    float w0 = 1.0f - f1 - f2;
    for (int i = 0; i < ndir; ++i) {
        np_float4 g = gtab[i];
        float bd = g.x * d;
        float gx = g.y, gy = g.z, gz = g.w;
        float e0, e1, e2;
        if (!cache || (which & 1)) {
            e0 = np_bp_exp(-bd);
            if (cache) ec[NP_BP_CI(0, 1 - slot[0], i)] = e0;
        } else {
            e0 = ec[NP_BP_CI(0, slot[0], i)];
        }
        if (!cache || (which & 2)) {
            float x = gx * v1[0] + gy * v1[1] + gz * v1[2];
            e1 = np_bp_exp(-bd * x * x);
            if (cache) ec[NP_BP_CI(1, 1 - slot[1], i)] = e1;
        } else {
            e1 = ec[NP_BP_CI(1, slot[1], i)];
        }
        if (!cache || (which & 4)) {
            float x = gx * v2[0] + gy * v2[1] + gz * v2[2];
            e2 = np_bp_exp(-bd * x * x);
            if (cache) ec[NP_BP_CI(2, 1 - slot[2], i)] = e2;
        } else {
            e2 = ec[NP_BP_CI(2, slot[2], i)];
        }
        float r = y[i * nvox + v] - s0 * (w0 * e0 + f1 * e1 + f2 * e2);
        m.ss += r * r;
        m.r0 += r * e0;
        m.r1 += r * e1;
        m.r2 += r * e2;
        m.g00 += e0 * e0;
        m.g01 += e0 * e1;
        m.g02 += e0 * e2;
        m.g11 += e1 * e1;
        m.g12 += e1 * e2;
        m.g22 += e2 * e2;
    }
    return m;
}

/* The sums after the prediction moves by sum_k c_k e_k (an S0 or f change): r -> r - sum c_k e_k. */
/* A shifted SS below this share of the magnitudes it was computed from is float32
 * cancellation noise (a dozen roundings of 2^-24 each, with margin): the caller recomputes it
 * with a fresh pass instead of trusting a false energy minimum (high SNR, fits near perfect). */
#define NP_BP_SHIFT_GUARD (64.0f * 1.1920929e-7f)

NP_FN np_bp_mom np_bp_shift(const np_bp_mom *m, float c0, float c1, float c2, float *mag)
{
    float h0 = m->g00 * c0 + m->g01 * c1 + m->g02 * c2;
    float h1 = m->g01 * c0 + m->g11 * c1 + m->g12 * c2;
    float h2 = m->g02 * c0 + m->g12 * c1 + m->g22 * c2;
    np_bp_mom o = *m;
    float cr = c0 * m->r0 + c1 * m->r1 + c2 * m->r2, ch = c0 * h0 + c1 * h1 + c2 * h2;
    o.ss = m->ss - 2.0f * cr + ch;
    *mag = np_fabs(m->ss) + 2.0f * np_fabs(cr) + np_fabs(ch);
    o.r0 = m->r0 - h0;
    o.r1 = m->r1 - h1;
    o.r2 = m->r2 - h2;
    return o;
}

/* Candidate q: parameter k moved to x; directions and prior energies follow. Returns 0 when
 * the candidate is out of bounds (an immediate rejection); q is then the current state. */
NP_FN int np_bp_candidate(const np_bp_chain *c, int k, float x, float ard, float *q, float *v1, float *v2,
                          float *pth1, float *pth2, float *pf2)
{
    for (int j = 0; j < NP_BP_NPARAM; ++j) q[j] = c->p[j];
    for (int j = 0; j < 3; ++j) { v1[j] = c->v1[j]; v2[j] = c->v2[j]; }
    *pth1 = c->pth1;
    *pth2 = c->pth2;
    *pf2 = c->pf2;
    q[k] = x;
    if (!np_bp_inside(k, q)) {
        q[k] = c->p[k];
        return 0;
    }
    if (k == NP_BP_TH1 || k == NP_BP_PH1) *pth1 = -np_log(np_fabs(np_bp_dir(q[NP_BP_TH1], q[NP_BP_PH1], v1)));
    if (k == NP_BP_TH2 || k == NP_BP_PH2) *pth2 = -np_log(np_fabs(np_bp_dir(q[NP_BP_TH2], q[NP_BP_PH2], v2)));
    if (k == NP_BP_F2) *pf2 = ard * np_log(q[NP_BP_F2]);
    return 1;
}

NP_FN void np_bp_commit(np_bp_chain *c, int k, const float *q, const float *v1, const float *v2,
                        float pth1, float pth2, float pf2, float e, int sampling)
{
    c->p[k] = q[k];
    for (int j = 0; j < 3; ++j) { c->v1[j] = v1[j]; c->v2[j] = v2[j]; }
    c->pth1 = pth1;
    c->pth2 = pth2;
    c->pf2 = pf2;
    c->energy = e;
    c->acc[k] += 1;
    c->nacc += sampling;
}

/* One Metropolis-Hastings step on parameter k (a constant once inlined) with normal z and
 * uniform u. */
NP_FN void np_bp_propose(np_bp_chain *c, int k, float z, float u, int sampling, float ard,
                         NP_CONST_PTR float *y, NP_CONST_PTR np_float4 *gtab, int nvox, int ndir, int v,
                         int cache, int moments, NP_GLOBAL float *ec)
{
    float q[NP_BP_NPARAM], v1[3], v2[3], pth1, pth2, pf2;
    if (!np_bp_candidate(c, k, c->p[k] + z * c->prop[k], ard, q, v1, v2, &pth1, &pth2, &pf2)) return;
    int which = np_bp_which(k);
    np_bp_mom m;
    if (moments && which == 0) {
        float s0 = c->p[NP_BP_S0], f1 = c->p[NP_BP_F1], f2 = c->p[NP_BP_F2];
        float w0 = 1.0f - f1 - f2, w0n = 1.0f - q[NP_BP_F1] - q[NP_BP_F2];
        float mag;
        m = np_bp_shift(&c->m, q[NP_BP_S0] * w0n - s0 * w0, q[NP_BP_S0] * q[NP_BP_F1] - s0 * f1,
                        q[NP_BP_S0] * q[NP_BP_F2] - s0 * f2, &mag);
        if (!(m.ss > NP_BP_SHIFT_GUARD * mag))
            m = np_bp_pass(y, gtab, nvox, ndir, v, q[NP_BP_S0], q[NP_BP_D], q[NP_BP_F1], q[NP_BP_F2], v1, v2,
                           which, cache, ec, c->slot);
    } else {
        m = np_bp_pass(y, gtab, nvox, ndir, v, q[NP_BP_S0], q[NP_BP_D], q[NP_BP_F1], q[NP_BP_F2], v1, v2,
                       which, cache, ec, c->slot);
    }
    float e = np_bp_energy(m.ss, ndir, pth1 + pth2 + pf2);
    if (!(u < np_exp(c->energy - e))) return;
    np_bp_commit(c, k, q, v1, v2, pth1, pth2, pf2, e, sampling);
    c->m = m;
    for (int t = 0; t < 3; ++t)
        if (cache && ((which >> t) & 1)) c->slot[t] = 1 - c->slot[t];
}

/* Loops [l0, l1) of voxel v's chain. Kernel arguments, shared by every layout:
 * y (ndir x nvox), gtab (direction i's b, gx, gy, gz in one 16-byte element: one load where
 * four columns took four loads and their address arithmetic, ~9 of a pass's ~48 instructions a
 * direction), state: par/prop/acc (8 x nvox), rng
 * (32 x nvox: stream k is words 4k..4k+3), nacc (nvox); samples (8 x nsamp x nvox); ec
 * (3 terms x 2 slots x ndir x nvox, only with `cache`). */
NP_FN void np_bp_thread(int v, NP_CONST_PTR float *y, NP_CONST_PTR np_float4 *gtab, int nvox, int ndir,
                        int l0, int l1, int burnin, int thin, int nsamp, int every, float ard,
                        NP_GLOBAL float *par, NP_GLOBAL float *prop, NP_GLOBAL int *acc,
                        NP_GLOBAL np_uint *rng, NP_GLOBAL int *nacc, NP_GLOBAL float *samples,
                        NP_GLOBAL float *ec, int cache, int moments)
{
    if (v >= nvox) return;
    np_bp_chain c;
    np_bp_load(&c, v, nvox, ard, par, prop, acc, nacc);
    np_uint rs[4 * NP_BP_NPARAM];
    for (int j = 0; j < 4 * NP_BP_NPARAM; ++j) rs[j] = rng[j * nvox + v];
    c.m = np_bp_pass(y, gtab, nvox, ndir, v, c.p[NP_BP_S0], c.p[NP_BP_D], c.p[NP_BP_F1], c.p[NP_BP_F2],
                     c.v1, c.v2, 7, cache, ec, c.slot);
    c.slot[0] = c.slot[1] = c.slot[2] = 1;
    c.energy = np_bp_energy(c.m.ss, ndir, c.pth1 + c.pth2 + c.pf2);
    for (int l = l0; l < l1; ++l) {
        int sampling = l >= burnin;
#pragma unroll
        for (int k = 0; k < NP_BP_NPARAM; ++k) {
            float z = np_rng_gauss(rs + 4 * k);
            float u = np_rng_uniform(rs + 4 * k);
            np_bp_propose(&c, k, z, u, sampling, ard, y, gtab, nvox, ndir, v, cache, moments, ec);
        }
        if ((l + 1) % every == 0) np_bp_adapt(&c, every);
        int s = np_bp_sample_index(l, burnin, thin, nsamp);
        if (s >= 0)
            for (int k = 0; k < NP_BP_NPARAM; ++k) samples[(k * nsamp + s) * nvox + v] = c.p[k];
    }
    np_bp_store(&c, v, nvox, par, prop, acc, nacc);
    for (int j = 0; j < 4 * NP_BP_NPARAM; ++j) rng[j * nvox + v] = rs[j];
}

/* ---- warp layout ---------------------------------------------------------------------- */

#if defined(NP_CUDA)
/* Butterfly sum: every lane ends with the same bits (each level adds a commutative pair). */
NP_FN float np_bp_lsum(float x, NP_LOCAL_PTR float *sh, int lane)
{
    for (int o = NP_BP_LANES / 2; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}
NP_FN void np_bp_share(float z, float u, int lane, NP_LOCAL_PTR float *sh, float *zk, float *uk)
{
#pragma unroll
    for (int k = 0; k < NP_BP_NPARAM; ++k) {
        zk[k] = __shfl_sync(0xffffffffu, z, k);
        uk[k] = __shfl_sync(0xffffffffu, u, k);
    }
}
#else
/* Through local memory with two barriers: every work-item adds the 32 parts in the butterfly's
 * pairing, so the sum has the CUDA bits and is the same in every work-item. */
NP_FN float np_bp_lsum(float x, NP_LOCAL_PTR float *sh, int lane)
{
    float a[NP_BP_LANES];
    sh[lane] = x;
    NP_BARRIER();
    for (int i = 0; i < NP_BP_LANES; ++i) a[i] = sh[i];
    NP_BARRIER();
    for (int o = NP_BP_LANES / 2; o > 0; o >>= 1)
        for (int i = 0; i < o; ++i) a[i] += a[i + o];
    return a[0];
}
NP_FN void np_bp_share(float z, float u, int lane, NP_LOCAL_PTR float *sh, float *zk, float *uk)
{
    if (lane < NP_BP_NPARAM) {
        sh[NP_BP_LANES + lane] = z;
        sh[NP_BP_LANES + NP_BP_NPARAM + lane] = u;
    }
    NP_BARRIER();
    for (int k = 0; k < NP_BP_NPARAM; ++k) {
        zk[k] = sh[NP_BP_LANES + k];
        uk[k] = sh[NP_BP_LANES + NP_BP_NPARAM + k];
    }
    NP_BARRIER();
}
#endif

/* This lane's part of SS at candidate q; terms in `which` are recomputed into t*, the others
 * copied from the current e*. */
NP_FN float np_bp_wpass(const float *q, const float *v1, const float *v2, int which, int lane, int ndir,
                        NP_CONST_PTR np_float4 *gtab, const float *yv, const float *e0, const float *e1,
                        const float *e2, float *t0, float *t1, float *t2)
{
    float part = 0.0f;
    float w0 = 1.0f - q[NP_BP_F1] - q[NP_BP_F2];
#pragma unroll
    for (int s = 0; s < NP_BP_PER; ++s) {
        int i = lane + NP_BP_LANES * s;
        if (i < ndir) {
            np_float4 g = gtab[i];
            float bd = g.x * q[NP_BP_D];
            float gx = g.y, gy = g.z, gz = g.w;
            t0[s] = (which & 1) ? np_bp_exp(-bd) : e0[s];
            if (which & 2) {
                float x = gx * v1[0] + gy * v1[1] + gz * v1[2];
                t1[s] = np_bp_exp(-bd * x * x);
            } else {
                t1[s] = e1[s];
            }
            if (which & 4) {
                float x = gx * v2[0] + gy * v2[1] + gz * v2[2];
                t2[s] = np_bp_exp(-bd * x * x);
            } else {
                t2[s] = e2[s];
            }
            float r = yv[s] - q[NP_BP_S0] * (w0 * t0[s] + q[NP_BP_F1] * t1[s] + q[NP_BP_F2] * t2[s]);
            part += r * r;
        }
    }
    return part;
}

NP_FN void np_bp_wpropose(np_bp_chain *c, int k, float z, float u, int sampling, float ard, int lane, int ndir,
                          NP_LOCAL_PTR float *sh, NP_CONST_PTR np_float4 *gtab, const float *yv,
                          float *e0, float *e1, float *e2)
{
    float q[NP_BP_NPARAM], v1[3], v2[3], pth1, pth2, pf2;
    /* The group reduces even for an out-of-bounds candidate (at the current state), so that
     * every work-item meets every barrier unconditionally: PoCL replicates code behind
     * conditional barriers. */
    int ok = np_bp_candidate(c, k, c->p[k] + z * c->prop[k], ard, q, v1, v2, &pth1, &pth2, &pf2);
    int which = np_bp_which(k);
    float t0[NP_BP_PER], t1[NP_BP_PER], t2[NP_BP_PER];
    float ss = np_bp_lsum(np_bp_wpass(q, v1, v2, which, lane, ndir, gtab, yv, e0, e1, e2, t0, t1, t2), sh, lane);
    float e = np_bp_energy(ss, ndir, pth1 + pth2 + pf2);
    if (!ok || !(u < np_exp(c->energy - e))) return;
    np_bp_commit(c, k, q, v1, v2, pth1, pth2, pf2, e, sampling);
    c->m.ss = ss;
#pragma unroll
    for (int s = 0; s < NP_BP_PER; ++s) {
        if (which & 1) e0[s] = t0[s];
        if (which & 2) e1[s] = t1[s];
        if (which & 4) e2[s] = t2[s];
    }
}

/* Loops [l0, l1) of voxel v's chain with NP_BP_LANES work-items (`lane`) sharing it; the same
 * state arrays as np_bp_thread (no term cache: the terms live in registers). A group past the
 * last voxel (CUDA blocks hold several) repeats the last voxel's work and stores nothing, so
 * no work-item leaves before a barrier. */
NP_FN void np_bp_warp(int v, int lane, NP_LOCAL_PTR float *sh, NP_CONST_PTR float *y, NP_CONST_PTR np_float4 *gtab,
                      int nvox, int ndir, int l0, int l1, int burnin, int thin, int nsamp, int every, float ard,
                      NP_GLOBAL float *par, NP_GLOBAL float *prop, NP_GLOBAL int *acc,
                      NP_GLOBAL np_uint *rng, NP_GLOBAL int *nacc, NP_GLOBAL float *samples)
{
    int live = v < nvox;
    if (!live) v = nvox - 1;
    np_bp_chain c;
    np_bp_load(&c, v, nvox, ard, par, prop, acc, nacc);
    np_uint rs[4] = { 0u, 0u, 0u, 0u };
    if (lane < NP_BP_NPARAM)
        for (int w = 0; w < 4; ++w) rs[w] = rng[(4 * lane + w) * nvox + v];
    float yv[NP_BP_PER], e0[NP_BP_PER], e1[NP_BP_PER], e2[NP_BP_PER];
#pragma unroll
    for (int s = 0; s < NP_BP_PER; ++s) {
        int i = lane + NP_BP_LANES * s;
        yv[s] = i < ndir ? y[i * nvox + v] : 0.0f;
    }
    c.m.ss = np_bp_lsum(np_bp_wpass(c.p, c.v1, c.v2, 7, lane, ndir, gtab, yv, e0, e1, e2, e0, e1, e2), sh, lane);
    c.energy = np_bp_energy(c.m.ss, ndir, c.pth1 + c.pth2 + c.pf2);
    for (int l = l0; l < l1; ++l) {
        int sampling = l >= burnin;
        float z = 0.0f, u = 0.0f, zk[NP_BP_NPARAM], uk[NP_BP_NPARAM];
        if (lane < NP_BP_NPARAM) {
            z = np_rng_gauss(rs);
            u = np_rng_uniform(rs);
        }
        np_bp_share(z, u, lane, sh, zk, uk);
#pragma unroll
        for (int k = 0; k < NP_BP_NPARAM; ++k)
            np_bp_wpropose(&c, k, zk[k], uk[k], sampling, ard, lane, ndir, sh, gtab, yv, e0, e1, e2);
        if ((l + 1) % every == 0) np_bp_adapt(&c, every);
        int s = np_bp_sample_index(l, burnin, thin, nsamp);
        if (live && s >= 0 && lane < NP_BP_NPARAM) {
            float pk = c.p[0];
            for (int k = 1; k < NP_BP_NPARAM; ++k)
                if (k == lane) pk = c.p[k];
            samples[(lane * nsamp + s) * nvox + v] = pk;
        }
    }
    if (!live) return;
    if (lane == 0) np_bp_store(&c, v, nvox, par, prop, acc, nacc);
    if (lane < NP_BP_NPARAM)
        for (int w = 0; w < 4; ++w) rng[(4 * lane + w) * nvox + v] = rs[w];
}

/* ---- conformance entry points (neuroport check) ---------------------------------------- */

/* SS and energy of voxel v at the parameters in par (no sampling). */
NP_FN void np_bp_energy_voxel(int v, NP_CONST_PTR float *y, NP_CONST_PTR np_float4 *gtab, int nvox, int ndir,
                              float ard, NP_CONST_PTR float *par, NP_GLOBAL float *out)
{
    if (v >= nvox) return;
    float p[NP_BP_NPARAM], v1[3], v2[3];
    for (int k = 0; k < NP_BP_NPARAM; ++k) p[k] = par[k * nvox + v];
    float prior = -np_log(np_fabs(np_bp_dir(p[NP_BP_TH1], p[NP_BP_PH1], v1)));
    prior += -np_log(np_fabs(np_bp_dir(p[NP_BP_TH2], p[NP_BP_PH2], v2)));
    prior += ard * np_log(p[NP_BP_F2]);
    int slot[3] = { 0, 0, 0 };
    np_bp_mom m = np_bp_pass(y, gtab, nvox, ndir, v, p[NP_BP_S0], p[NP_BP_D], p[NP_BP_F1], p[NP_BP_F2],
                             v1, v2, 7, 0, 0, slot);
    out[v] = m.ss;
    out[nvox + v] = np_bp_energy(m.ss, ndir, prior);
}

/* `count` uniforms from stream 0 then `count` normals from stream 1 of voxel v. */
NP_FN void np_bp_rng_voxel(int v, NP_GLOBAL np_uint *rng, int nvox, int count, NP_GLOBAL float *out)
{
    if (v >= nvox) return;
    np_uint s0[4], s1[4];
    for (int w = 0; w < 4; ++w) {
        s0[w] = rng[w * nvox + v];
        s1[w] = rng[(4 + w) * nvox + v];
    }
    for (int j = 0; j < count; ++j) out[j * nvox + v] = np_rng_uniform(s0);
    for (int j = 0; j < count; ++j) out[(count + j) * nvox + v] = np_rng_gauss(s1);
}

#endif
