//! neuroport: published GPU methods for diffusion MRI and registration on CPU, OpenCL and
//! CUDA, chosen at run time, with the papers' benchmark tables reproduced.

pub mod bedpost;
pub mod check;
pub mod dti;
pub mod guard;
pub mod geodesic;
pub mod register;
pub mod io;
pub mod repro;
pub mod runtime;
pub mod synth;
pub mod volume;

pub use runtime::{BackendSpec, Device, DeviceInfo, Inventory, Timings};
