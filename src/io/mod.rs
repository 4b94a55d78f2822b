//! Tables and tractograms written by the commands.

#[cfg(target_os = "linux")]
pub mod mapped;
pub mod table;
pub mod tck;
pub mod trk;
