//! 3-D float4 textures (CUDA texture objects, OpenCL image3d_t) with hardware linear filtering.

/// A texture of either API; destroyed on drop.
pub enum RawTexture {
    Cl(opencl3::memory::Image),
    Cu(super::cu::CuTexture),
}

/// A float4 3-D texture read by `np_tex3d_f4` in kernels.
pub struct Texture3d {
    pub(crate) raw: RawTexture,
    pub dims: [usize; 3],
}
