/* Ball-and-sticks MCMC entry points, CUDA C (NVRTC); the bodies live in common/bedpost.h.
 * Thread layout: one thread per voxel (paper 003). Warp layout: one warp per voxel
 * (bedpostx_gpu), reducing with shuffles; a block holds blockDim.x / 32 voxels. */
#include "common/portable.h"
#include "common/rng.h"
#include "common/bedpost.h"

#define NP_BP_ARGS const float *__restrict__ y, const float *__restrict__ gtab, int nvox, int ndir, \
    int l0, int l1, int burnin, int thin, int nsamp, int every, float ard, \
    float *par, float *prop, int *acc, unsigned int *rng, int *nacc, float *samples, float *ec
#define NP_BP_PASS y, gtab, nvox, ndir, l0, l1, burnin, thin, nsamp, every, ard, par, prop, acc, rng, nacc, samples

NP_KERNEL void bedpost_naive(NP_BP_ARGS) { np_bp_thread(NP_GID(), NP_BP_PASS, ec, 0, 0); }
NP_KERNEL void bedpost_cached(NP_BP_ARGS) { np_bp_thread(NP_GID(), NP_BP_PASS, ec, 1, 0); }
NP_KERNEL void bedpost_moments(NP_BP_ARGS) { np_bp_thread(NP_GID(), NP_BP_PASS, ec, 0, 1); }
NP_KERNEL void bedpost_cached_moments(NP_BP_ARGS) { np_bp_thread(NP_GID(), NP_BP_PASS, ec, 1, 1); }

NP_KERNEL void bedpost_warp(NP_BP_ARGS)
{
    int v = (int)(blockIdx.x * (blockDim.x / NP_BP_LANES) + threadIdx.x / NP_BP_LANES);
    np_bp_warp(v, (int)(threadIdx.x % NP_BP_LANES), 0, NP_BP_PASS);
}

NP_KERNEL void bedpost_energy(const float *__restrict__ y, const float *__restrict__ gtab, int nvox, int ndir,
                              float ard, const float *__restrict__ par, float *out)
{
    np_bp_energy_voxel(NP_GID(), y, gtab, nvox, ndir, ard, par, out);
}

NP_KERNEL void bedpost_rng(unsigned int *rng, int nvox, int count, float *out)
{
    np_bp_rng_voxel(NP_GID(), rng, nvox, count, out);
}
