//! The `tocsin` command line ([`commands`], one module per subcommand) and what it does
//! besides serving: the benchmark (`tocsin bench`), the plugin author's tools (`tocsin
//! plugin check|new|catalogue`), the webhook tools (`tocsin webhook verify|send-test`),
//! backups, `doctor`. They sit on top of the server's modules and
//! nothing in the server imports them.

pub mod backup;
pub mod bench;
pub mod catalogue;
pub mod commands;
pub mod doctor;
pub mod plugin_tools;
pub mod users;
pub mod webhook_tools;
