//! The paper-table harness (`neuroport reproduce`).
