//! A workspace's objects declared in a file, and the files other tools keep: `apply` makes
//! a workspace match a file (and `export` writes one) over a running server's API;
//! `import` translates Uptime Kuma's, Gatus's and Healthchecks' into one and applies it.
//! The command line (`tocsin apply`, `export`, `import`) and the dashboard's Import page
//! use them alike; they talk to the server only through its API.

pub mod apply;
pub mod import;
