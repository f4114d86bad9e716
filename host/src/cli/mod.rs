//! What the `tocsin` command does besides serving: the benchmark (`tocsin bench`), the
//! plugin author's tools (`tocsin plugin check|new|catalogue`) and the webhook tools
//! (`tocsin webhook sign|verify|send-test`). They sit on top of the server's modules and
//! nothing in the server imports them.

pub mod apply;
pub mod backup;
pub mod bench;
pub mod catalogue;
pub mod doctor;
pub mod plugin_tools;
pub mod users;
pub mod webhook_tools;
