//! The tests that run the server's parts inside the test process (the store on SQLite and
//! PostgreSQL, the plugin runtime and its limits, egress, retention, the conformance kit,
//! the generated docs), in one test binary. Run one area with
//! `cargo test -p tocsin --test inproc store::`. The scheduler, engine and recorder tests,
//! which read process-wide counters, keep binaries of their own.

mod support;

mod bounded_data;
mod conformance;
mod dashboard_speed;
mod docs_catalogue;
mod egress;
mod http_redirects;
mod plugin_limits;
mod retention;
mod store;
mod stream_limits;
