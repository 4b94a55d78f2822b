//! Tables and tractograms written by the commands.

pub mod table;
pub mod tck;
pub mod trk;
