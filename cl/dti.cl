/* DTI entry points for both dialects: one work-item per voxel; the bodies live in common/dti.h. */
#include "common/portable.h"
#include "common/sym3.h"
#include "common/dti.h"

NP_KERNEL void dti_fit(NP_GLOBAL const float *NP_RESTRICT dwi, NP_GLOBAL const np_uchar *NP_RESTRICT mask,
                       NP_GLOBAL const float *NP_RESTRICT design, NP_GLOBAL const float *NP_RESTRICT pinv,
                       int nvox, int ngrad, float lam_floor,
                       NP_GLOBAL float *tensor, NP_GLOBAL float *s0, NP_GLOBAL int *flags)
{
    np_dti_fit(NP_GID(), dwi, mask, design, pinv, nvox, ngrad, lam_floor, tensor, s0, flags);
}

NP_KERNEL void dti_scalars(NP_GLOBAL const float *NP_RESTRICT tensor, int nvox, NP_GLOBAL float *out)
{
    np_dti_scalars(NP_GID(), tensor, nvox, out);
}

NP_KERNEL void metric_inverse(NP_GLOBAL const float *NP_RESTRICT tensor, int nvox, int flipx,
                              float ivx, float ivy, float ivz, float d_iso,
                              NP_GLOBAL float *fields, NP_GLOBAL float *g)
{
    np_metric_inverse(NP_GID(), tensor, nvox, flipx, ivx, ivy, ivz, d_iso, fields, g);
}

NP_KERNEL void metric_derivs(NP_GLOBAL const float *NP_RESTRICT g, int nx, int ny, int nz, NP_GLOBAL float *fields)
{
    np_metric_derivs(NP_GID(), g, nx, ny, nz, fields);
}

NP_KERNEL void metric_sharpen(NP_GLOBAL const float *NP_RESTRICT tensor, int nvox, float alpha, float lam_floor,
                              NP_GLOBAL float *out)
{
    np_metric_sharpen(NP_GID(), tensor, nvox, alpha, lam_floor, out);
}
