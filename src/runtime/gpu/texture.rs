//! 3-D textures of float4 or float texels (CUDA texture objects, OpenCL image3d_t) with
//! hardware linear filtering.

/// A texture of either API; destroyed on drop.
pub enum RawTexture {
    Cl(opencl3::memory::Image),
    Cu(super::cu::CuTexture),
}

/// A 3-D texture read by `np_tex3d_f4` (float4 texels) or `np_tex3d_f1` (float) in kernels.
pub struct Texture3d {
    pub(crate) raw: RawTexture,
    pub dims: [usize; 3],
}
