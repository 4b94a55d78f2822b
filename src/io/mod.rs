//! Tables and tractograms written by the commands.

pub mod table;
