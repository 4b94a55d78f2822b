//! Tables and tractograms written by the commands.

pub mod progress;
pub mod table;
pub mod tck;
pub mod trk;
