/* DTI entry points, CUDA C (NVRTC): one thread per voxel; the bodies live in common/dti.h. */
#include "common/portable.h"
#include "common/sym3.h"
#include "common/dti.h"

NP_KERNEL void dti_fit(const float *__restrict__ dwi, const unsigned char *__restrict__ mask,
                      const float *__restrict__ design, const float *__restrict__ pinv,
                      int nvox, int ngrad, float lam_floor,
                      float *tensor, float *s0, int *flags)
{
    np_dti_fit(NP_GID(), dwi, mask, design, pinv, nvox, ngrad, lam_floor, tensor, s0, flags);
}

NP_KERNEL void dti_scalars(const float *__restrict__ tensor, int nvox, float *out)
{
    np_dti_scalars(NP_GID(), tensor, nvox, out);
}

NP_KERNEL void metric_inverse(const float *__restrict__ tensor, int nvox, int flipx,
                             float ivx, float ivy, float ivz, float d_iso,
                             float *fields, float *g)
{
    np_metric_inverse(NP_GID(), tensor, nvox, flipx, ivx, ivy, ivz, d_iso, fields, g);
}

NP_KERNEL void metric_derivs(const float *__restrict__ g, int nx, int ny, int nz, float *fields)
{
    np_metric_derivs(NP_GID(), g, nx, ny, nz, fields);
}

NP_KERNEL void metric_sharpen(const float *__restrict__ tensor, int nvox, float alpha, float lam_floor,
                             float *out)
{
    np_metric_sharpen(NP_GID(), tensor, nvox, alpha, lam_floor, out);
}
