//! Tocsin: uptime monitoring and alerting where every monitor type and notification
//! channel is a sandboxed WebAssembly component.
//!
//! Data flows one way: `scheduler` -> `plugins` -> `store` -> `engine` -> `outbox` ->
//! channel plugins. The `api` reads the store and calls the engine.

pub mod api;
pub mod app;
pub mod bench;
pub mod clock;
pub mod config;
pub mod engine;
pub mod ids;
pub mod outbox;
pub mod plugin_tools;
pub mod plugins;
pub mod scheduler;
pub mod store;
pub mod time;
pub mod webhook_tools;
