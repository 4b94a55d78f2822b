//! Tables and tractograms written by the commands, and the numbers of their summary lines.

pub mod figure;
pub mod progress;
pub mod table;
pub mod tck;
pub mod trk;
