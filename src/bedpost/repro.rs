//! Harness target `bedpost-t3` (paper 003 Table III): written against the harness API on main.
