//! The rules of HTTP-based checks, shared by the `http` and `keyword` monitor plugins:
//! reading and validating the configuration, and judging an exchange. Plain Rust with no
//! bindings, so it is unit-tested natively and linked into each plugin.

pub mod config;
pub mod verdict;
