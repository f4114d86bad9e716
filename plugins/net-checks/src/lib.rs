//! The rules of the `ping` and `ssl` monitor plugins: reading and validating their
//! configuration, judging what the host's `net` and `tls` interfaces report, and deciding
//! when a certificate's expiry deserves a warning. Plain Rust over the SDK's config
//! reader, unit-tested natively and linked into each plugin.

pub mod ping;
pub mod ssl;
pub mod time;
