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
  /* A function called from many places whose body is large: one copy, called (code size). */
  #define NP_FN_CALLED static __device__ __noinline__
  #define NP_LOCAL_MEM __shared__
  #define NP_GID() ((int)(blockIdx.x * blockDim.x + threadIdx.x))
  #define NP_LID() ((int)threadIdx.x)
  #define NP_GROUP() ((int)blockIdx.x)
  #define NP_NGROUPS() ((int)gridDim.x)
  #define NP_LSIZE() ((int)blockDim.x)
  #define NP_BARRIER() __syncthreads()
  #define np_sqrt sqrtf
  #define np_rsqrt rsqrtf
  #define np_exp expf
  /* The hardware's e^x (MUFU.EX2 of x log2 e): two instructions where the library's take a
   * dozen, at a documented loss of accuracy (see the callers). */
  #define np_exp_native __expf
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
  #define NP_RESTRICT __restrict__
  /* A load of data read once (streamed): evict-first in L2, so it does not push out data that
   * is read again (CUDA's ld.global.cs). */
  #define np_load_stream(p) __ldcs(p)
  #define NP_TEX3D unsigned long long
  #define NP_LOCAL_PTR
  #define np_atomic_inc_local_u32(p) atomicAdd((unsigned int *)(p), 1u)
  #define np_atomic_add_local_u32(p, v) atomicAdd((unsigned int *)(p), (unsigned int)(v))
  #define np_atomic_xchg_u32(p, v) atomicExch((unsigned int *)(p), (unsigned int)(v))
  /* Orders this item's global writes before its later ones as every other item sees them. */
  #define NP_GLOBAL_FENCE() __threadfence()
  typedef float4 np_float4;
  typedef unsigned char np_uchar;
  typedef long long np_long;
  #define np_make_float4(a, b, c, d) make_float4((a), (b), (c), (d))
  /* Hardware trilinear filtering at voxel-index coordinates (voxel i's centre at i). */
  #define np_tex3d_f4(t, x, y, z) tex3D<float4>((cudaTextureObject_t)(t), (x) + 0.5f, (y) + 0.5f, (z) + 0.5f)
  #define np_tex3d_f1(t, x, y, z) tex3D<float>((cudaTextureObject_t)(t), (x) + 0.5f, (y) + 0.5f, (z) + 0.5f)
  #define np_atomic_add_i32(p, v) atomicAdd((int *)(p), (int)(v))
  #define np_atomic_add_u32(p, v) atomicAdd((unsigned int *)(p), (unsigned int)(v))
  #define np_atomic_min_i32(p, v) atomicMin((int *)(p), (int)(v))
  #define np_atomic_max_i32(p, v) atomicMax((int *)(p), (int)(v))
  #define np_atomic_or_i32(p, v) atomicOr((int *)(p), (int)(v))
  #define np_atomic_min_local_i32(p, v) atomicMin((int *)(p), (int)(v))
  #define np_atomic_max_local_i32(p, v) atomicMax((int *)(p), (int)(v))
  #define np_atomic_and_local_i32(p, v) atomicAnd((int *)(p), (int)(v))
  #define np_float_as_int(x) __float_as_int(x)
  #define np_int_as_float(x) __int_as_float(x)
  #define np_atomic_and_i32(p, v) atomicAnd((int *)(p), (int)(v))
  #define np_atomic_add_f32(p, v) atomicAdd((float *)(p), (float)(v))
#else
  #define NP_KERNEL __kernel
  #define NP_GLOBAL __global
  #define NP_CONST_PTR __global const
  #define NP_FN static inline
  #define NP_FN_CALLED static __attribute__((noinline))
  #define NP_LOCAL_MEM __local
  #define NP_GID() ((int)get_global_id(0))
  #define NP_LID() ((int)get_local_id(0))
  #define NP_GROUP() ((int)get_group_id(0))
  #define NP_NGROUPS() ((int)get_num_groups(0))
  #define NP_LSIZE() ((int)get_local_size(0))
  #define NP_BARRIER() barrier(CLK_LOCAL_MEM_FENCE)
  #define np_sqrt sqrt
  #define np_rsqrt rsqrt
  #define np_exp exp
  #define np_exp_native native_exp
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
  #define NP_RESTRICT restrict
  #define np_load_stream(p) (*(p))
  #define NP_TEX3D __read_only image3d_t
  #define NP_LOCAL_PTR __local
  #define np_atomic_inc_local_u32(p) atomic_inc((volatile __local uint *)(p))
  #define np_atomic_add_local_u32(p, v) atomic_add((volatile __local uint *)(p), (uint)(v))
  #define np_atomic_xchg_u32(p, v) atomic_xchg((volatile __global uint *)(p), (uint)(v))
  #define NP_GLOBAL_FENCE() mem_fence(CLK_GLOBAL_MEM_FENCE)
  typedef float4 np_float4;
  typedef uchar np_uchar;
  typedef long np_long;
  #define np_make_float4(a, b, c, d) ((float4)((a), (b), (c), (d)))
  __constant sampler_t np_linear_sampler = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_LINEAR;
  /* Hardware trilinear filtering at voxel-index coordinates (voxel i's centre at i). */
  #define np_tex3d_f4(t, x, y, z) read_imagef((t), np_linear_sampler, (float4)((x) + 0.5f, (y) + 0.5f, (z) + 0.5f, 0.0f))
  #define np_tex3d_f1(t, px, py, pz) np_tex3d_f4(t, px, py, pz).x
  #define np_atomic_add_i32(p, v) atomic_add((volatile __global int *)(p), (int)(v))
  #define np_atomic_add_u32(p, v) atomic_add((volatile __global uint *)(p), (uint)(v))
  #define np_atomic_min_i32(p, v) atomic_min((volatile __global int *)(p), (int)(v))
  #define np_atomic_max_i32(p, v) atomic_max((volatile __global int *)(p), (int)(v))
  #define np_atomic_or_i32(p, v) atomic_or((volatile __global int *)(p), (int)(v))
  #define np_atomic_min_local_i32(p, v) atomic_min((volatile __local int *)(p), (int)(v))
  #define np_atomic_max_local_i32(p, v) atomic_max((volatile __local int *)(p), (int)(v))
  #define np_atomic_and_local_i32(p, v) atomic_and((volatile __local int *)(p), (int)(v))
  #define np_float_as_int(x) as_int(x)
  #define np_int_as_float(x) as_float(x)
  #define np_atomic_and_i32(p, v) atomic_and((volatile __global int *)(p), (int)(v))
  /* OpenCL 1.2 has no float atomic add: a compare-and-swap loop on the bits. */
  inline float np_atomic_add_f32(volatile __global float *p, float v)
  {
      union { unsigned int u; float f; } old, upd;
      do {
          old.f = *p;
          upd.f = old.f + v;
      } while (atomic_cmpxchg((volatile __global unsigned int *)p, old.u, upd.u) != old.u);
      return old.f;
  }
#endif

#define NP_PI_F 3.14159265358979f

#endif
