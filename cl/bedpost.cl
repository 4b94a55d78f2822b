/* Ball-and-sticks MCMC entry points, OpenCL C; the bodies live in common/bedpost.h.
 * Thread layout: one work-item per voxel (paper 003). Warp layout: a work-group of
 * NP_BP_LANES work-items per voxel (bedpostx_gpu), reducing through local memory. */
#include "common/portable.h"
#include "common/rng.h"
#include "common/bedpost.h"

#define NP_BP_ARGS __global const float *y, __global const float *gtab, int nvox, int ndir, \
    int l0, int l1, int burnin, int thin, int nsamp, int every, float ard, \
    __global float *par, __global float *prop, __global int *acc, __global uint *rng, \
    __global int *nacc, __global float *samples, __global float *ec
#define NP_BP_PASS y, gtab, nvox, ndir, l0, l1, burnin, thin, nsamp, every, ard, par, prop, acc, rng, nacc, samples

__kernel void bedpost_naive(NP_BP_ARGS) { np_bp_thread(get_global_id(0), NP_BP_PASS, ec, 0, 0); }
__kernel void bedpost_cached(NP_BP_ARGS) { np_bp_thread(get_global_id(0), NP_BP_PASS, ec, 1, 0); }
__kernel void bedpost_moments(NP_BP_ARGS) { np_bp_thread(get_global_id(0), NP_BP_PASS, ec, 0, 1); }
__kernel void bedpost_cached_moments(NP_BP_ARGS) { np_bp_thread(get_global_id(0), NP_BP_PASS, ec, 1, 1); }

__kernel void bedpost_warp(NP_BP_ARGS)
{
    __local float sh[NP_BP_LANES + 2 * NP_BP_NPARAM];
    np_bp_warp(get_group_id(0), get_local_id(0), sh, NP_BP_PASS);
}

__kernel void bedpost_energy(__global const float *y, __global const float *gtab, int nvox, int ndir,
                             float ard, __global const float *par, __global float *out)
{
    np_bp_energy_voxel(get_global_id(0), y, gtab, nvox, ndir, ard, par, out);
}

__kernel void bedpost_rng(__global uint *rng, int nvox, int count, __global float *out)
{
    np_bp_rng_voxel(get_global_id(0), rng, nvox, count, out);
}
