/* DTI entry points, OpenCL C: one work-item per voxel; the bodies live in common/dti.h. */
#include "common/portable.h"
#include "common/sym3.h"
#include "common/dti.h"

__kernel void dti_fit(__global const float *dwi, __global const uchar *mask,
                      __global const float *design, __global const float *pinv,
                      int nvox, int ngrad, float lam_floor,
                      __global float *tensor, __global float *s0, __global int *flags)
{
    np_dti_fit(get_global_id(0), dwi, mask, design, pinv, nvox, ngrad, lam_floor, tensor, s0, flags);
}

__kernel void dti_scalars(__global const float *tensor, int nvox, __global float *out)
{
    np_dti_scalars(get_global_id(0), tensor, nvox, out);
}

__kernel void metric_inverse(__global const float *tensor, int nvox, int flipx,
                             float ivx, float ivy, float ivz, float d_iso,
                             __global float *fields, __global float *g)
{
    np_metric_inverse(get_global_id(0), tensor, nvox, flipx, ivx, ivy, ivz, d_iso, fields, g);
}

__kernel void metric_derivs(__global const float *g, int nx, int ny, int nz, __global float *fields)
{
    np_metric_derivs(get_global_id(0), g, nx, ny, nz, fields);
}

__kernel void metric_sharpen(__global const float *tensor, int nvox, float alpha, float lam_floor,
                             __global float *out)
{
    np_metric_sharpen(get_global_id(0), tensor, nvox, alpha, lam_floor, out);
}
