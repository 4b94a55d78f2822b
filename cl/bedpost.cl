/* Ball-and-sticks MCMC entry points for both dialects; the bodies live in common/bedpost.h.
 * Thread layout: one work-item per voxel (paper 003). Warp layout: NP_BP_LANES work-items per
 * voxel (bedpostx_gpu), NP_BP_WARP_VOXELS voxels per work-group; CUDA reduces with shuffles,
 * OpenCL through local memory (one slice of `sh` per voxel).
 * NP_OPENCL_NV_OPTIONS: -DNP_BP_EXP=1
 * (NVIDIA's OpenCL: the model's exponentials by the hardware's e^x, as on CUDA; common/bedpost.h.
 * The moments program adds a register cap there: src/bedpost/gpu.rs.) */
#include "common/portable.h"
#include "common/rng.h"
#include "common/bedpost.h"

#define NP_BP_WARP_VOXELS 4

#define NP_BP_ARGS NP_GLOBAL const float *NP_RESTRICT y, NP_GLOBAL const np_float4 *NP_RESTRICT gtab, int nvox, int ndir, \
    int l0, int l1, int burnin, int thin, int nsamp, int every, float ard, \
    NP_GLOBAL float *par, NP_GLOBAL float *prop, NP_GLOBAL int *acc, NP_GLOBAL np_uint *rng, \
    NP_GLOBAL int *nacc, NP_GLOBAL float *samples, NP_GLOBAL float *ec
#define NP_BP_PASS y, gtab, nvox, ndir, l0, l1, burnin, thin, nsamp, every, ard, par, prop, acc, rng, nacc, samples

/* NP_BP_ONLY = k builds only variant k (0 naive .. 4 warp) beside the energy and RNG kernels: each
 * variant inlines the whole sampler, and a run uses one, so compiling all five quintuples the
 * first run's compile time. Without it (the source tests) every variant is built. */
#ifndef NP_BP_ONLY
#define NP_BP_ONLY (-1)
#endif
#define NP_BP_WANT(k) (NP_BP_ONLY < 0 || NP_BP_ONLY == (k))

#if NP_BP_WANT(0)
NP_KERNEL void bedpost_naive(NP_BP_ARGS) { np_bp_thread(NP_GID(), NP_BP_PASS, ec, 0, 0); }
#endif
#if NP_BP_WANT(1)
NP_KERNEL void bedpost_cached(NP_BP_ARGS) { np_bp_thread(NP_GID(), NP_BP_PASS, ec, 1, 0); }
#endif
#if NP_BP_WANT(2)
NP_KERNEL void bedpost_moments(NP_BP_ARGS) { np_bp_thread(NP_GID(), NP_BP_PASS, ec, 0, 1); }
#endif
#if NP_BP_WANT(3)
NP_KERNEL void bedpost_cached_moments(NP_BP_ARGS) { np_bp_thread(NP_GID(), NP_BP_PASS, ec, 1, 1); }
#endif

#if NP_BP_WANT(4)
NP_KERNEL void bedpost_warp(NP_BP_ARGS)
{
    int slot = NP_LID() / NP_BP_LANES;
    int v = NP_GROUP() * (NP_LSIZE() / NP_BP_LANES) + slot;
#if defined(NP_CUDA)
    np_bp_warp(v, NP_LID() % NP_BP_LANES, 0, NP_BP_PASS);
#else
    NP_LOCAL_MEM float sh[NP_BP_WARP_VOXELS * (NP_BP_LANES + 2 * NP_BP_NPARAM)];
    np_bp_warp(v, NP_LID() % NP_BP_LANES, sh + slot * (NP_BP_LANES + 2 * NP_BP_NPARAM), NP_BP_PASS);
#endif
}
#endif

NP_KERNEL void bedpost_energy(NP_GLOBAL const float *NP_RESTRICT y, NP_GLOBAL const np_float4 *NP_RESTRICT gtab, int nvox, int ndir,
                              float ard, NP_GLOBAL const float *NP_RESTRICT par, NP_GLOBAL float *out)
{
    np_bp_energy_voxel(NP_GID(), y, gtab, nvox, ndir, ard, par, out);
}

NP_KERNEL void bedpost_rng(NP_GLOBAL np_uint *rng, int nvox, int count, NP_GLOBAL float *out)
{
    np_bp_rng_voxel(NP_GID(), rng, nvox, count, out);
}
