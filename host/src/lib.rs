//! Tocsin: uptime monitoring and alerting where every monitor type and notification
//! channel is a sandboxed WebAssembly component.
//!
//! A check flows one way: the `scheduler` runs it through a monitor plugin (`plugins`) and
//! hands the result to the `engine`, which records it and any incident change through the
//! `store` and queues the notifications in the `outbox`; the outbox worker delivers them
//! through channel plugins. The `api` reads the `store`, asks the `engine` for changes and
//! `plugins` for validation. Imports point the same way, down to `store`, `config` and the
//! leaves (`ids`, `plans`, `clock`, `time`, `text`, `crypto`); `app` wires it all, `probe` runs
//! checks in a private location for a server over its API, and `cli` holds the command-line
//! tools. docs/architecture.md draws it.

// No function of the server over 150 lines (clippy.toml); tests may tell longer stories.
#![warn(clippy::too_many_lines)]

pub mod accounts;
pub mod api;
pub mod app;
pub mod cli;
pub mod clock;
pub mod config;
pub mod crypto;
pub mod declared;
pub mod engine;
pub mod ids;
pub mod outbox;
pub mod plans;
pub mod plugins;
pub mod probe;
pub mod reports;
pub mod scheduler;
pub mod store;
pub mod telemetry;
pub mod text;
pub mod time;
pub mod wake;
pub mod web;
