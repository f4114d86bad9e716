//! The rules of HTTP-based checks, shared by the `http` and `keyword` monitor plugins:
//! reading and validating the configuration, sending the request through the host, and
//! judging the exchange. Unit-tested natively and linked into each plugin.

pub mod config;
pub mod exchange;
pub mod json;
pub mod verdict;
