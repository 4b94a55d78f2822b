/* portable.h: the one place where OpenCL C and CUDA C differ.
 * Every device source in cl/ and cu/ is assembled by the host as
 *   #define NP_OPENCL 1  (or NP_CUDA 1), this header, the method's shared headers, the entry points.
 * Shared device math (the headers in cl/common/) is written once against these macros. */
#ifndef NP_PORTABLE_H
#define NP_PORTABLE_H

#if defined(NP_CUDA)
  #define NP_KERNEL extern "C" __global__
  #define NP_GLOBAL
  #define NP_CONST_PTR const
  #define NP_FN static __device__ __forceinline__
  #define NP_LOCAL_MEM __shared__
  #define NP_GID() ((int)(blockIdx.x * blockDim.x + threadIdx.x))
  #define NP_LID() ((int)threadIdx.x)
  #define NP_GROUP() ((int)blockIdx.x)
  #define NP_LSIZE() ((int)blockDim.x)
  #define NP_BARRIER() __syncthreads()
  #define np_sqrt sqrtf
  #define np_rsqrt rsqrtf
  #define np_exp expf
  #define np_log logf
  #define np_pow powf
  #define np_cos cosf
  #define np_sin sinf
  #define np_acos acosf
  #define np_atan2 atan2f
  #define np_fabs fabsf
  #define np_fmin fminf
  #define np_fmax fmaxf
  #define np_floor floorf
  #define np_cbrt cbrtf
  #define np_isfinite(x) isfinite(x)
  typedef unsigned int np_uint;
  typedef unsigned long long np_ulong;
#else
  #define NP_KERNEL __kernel
  #define NP_GLOBAL __global
  #define NP_CONST_PTR __global const
  #define NP_FN static inline
  #define NP_LOCAL_MEM __local
  #define NP_GID() ((int)get_global_id(0))
  #define NP_LID() ((int)get_local_id(0))
  #define NP_GROUP() ((int)get_group_id(0))
  #define NP_LSIZE() ((int)get_local_size(0))
  #define NP_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
  #define np_sqrt sqrt
  #define np_rsqrt rsqrt
  #define np_exp exp
  #define np_log log
  #define np_pow pow
  #define np_cos cos
  #define np_sin sin
  #define np_acos acos
  #define np_atan2 atan2
  #define np_fabs fabs
  #define np_fmin fmin
  #define np_fmax fmax
  #define np_floor floor
  #define np_cbrt cbrt
  #define np_isfinite(x) isfinite(x)
  typedef uint np_uint;
  typedef ulong np_ulong;
#endif

#define NP_PI_F 3.14159265358979f

#endif
