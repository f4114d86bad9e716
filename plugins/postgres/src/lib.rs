//! The `postgres` monitor: connects (optionally TLS, negotiated with `SSLRequest`), starts
//! a session as a user on a database, authenticating by password (cleartext, MD5 or
//! SCRAM-SHA-256, whichever the server asks for), optionally runs one query and compares
//! the first column of its first row with an expected value, and ends the session. Speaks
//! the PostgreSQL frontend/backend protocol 3.0 over the host's TCP stream.

pub mod protocol;

use protocol::Session;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Instant;
use tocsin_plugin_sdk::net::TlsOptions;
use tocsin_plugin_sdk::tcp;
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Capability, CheckContext, FieldError, Info, Monitor, Outcome, export_monitor,
};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "postgres monitor")]
pub struct PostgresConfig {
    /// Host name or IP address.
    #[schemars(length(min = 1, max = 253), extend("x-tocsin-target" = true))]
    #[schemars(title = "Host")]
    pub host: String,
    /// Port (5432 by default).
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535), extend("x-tocsin-target" = true))]
    #[schemars(title = "Port")]
    pub port: u16,
    /// The user to connect as.
    #[serde(default = "default_user")]
    #[schemars(length(min = 1, max = 63))]
    #[schemars(title = "User")]
    pub user: String,
    /// The password, when the server asks for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512), extend("writeOnly" = true))]
    #[schemars(title = "Password")]
    pub password: Option<String>,
    /// The database; the user's name when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 63))]
    #[schemars(title = "Database")]
    pub database: Option<String>,
    /// One query to run, e.g. "SELECT 1" or "SELECT count(*) FROM jobs WHERE failed".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    #[schemars(title = "Query")]
    pub query: Option<String>,
    /// With query: the text the first column of the first row must equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    #[schemars(title = "Expected value")]
    pub expected_value: Option<String>,
    /// Require TLS (the server must accept it).
    #[serde(default)]
    #[schemars(extend("x-tocsin-target" = true))]
    #[schemars(title = "Require TLS")]
    pub tls: bool,
    /// With tls: accept a certificate that does not validate.
    #[serde(default)]
    #[schemars(extend("x-tocsin-target" = true))]
    #[schemars(title = "Ignore TLS errors")]
    pub ignore_tls_errors: bool,
}

fn default_port() -> u16 {
    5432
}

fn default_user() -> String {
    "postgres".into()
}

impl TypedConfig for PostgresConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.host = self.host.trim().to_string();
        let mut problems = Vec::new();
        if self.host.is_empty() || self.host.contains(char::is_whitespace) {
            problems.push(field_error("host", "must be a host name or IP address"));
        }
        if self.expected_value.is_some() && self.query.is_none() {
            problems.push(field_error("expectedValue", "needs a query"));
        }
        if self.user.contains('\0') || self.database.as_deref().is_some_and(|d| d.contains('\0')) {
            problems.push(field_error("user", "must not contain NUL"));
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

struct Postgres;

impl Monitor for Postgres {
    type Config = PostgresConfig;

    fn info() -> Info {
        Info {
            name: "postgres",
            version: env!("CARGO_PKG_VERSION"),
            description: "Connects to PostgreSQL, signs in, and optionally runs a query and checks its answer.",
            capabilities: &[Capability::Tcp],
        }
    }

    fn check(c: PostgresConfig, ctx: &CheckContext) -> Outcome {
        let target = format!("{}:{}", c.host, c.port);
        let started = Instant::now();
        let conn = match tcp::connect("PostgreSQL", &c.host, c.port, None, ctx.timeout_ms) {
            Ok(conn) => conn,
            Err(reason) => return Outcome::fail(reason),
        };
        let mut details = json!({"address": conn.peer(), "connectMs": conn.connect_ms()});
        let mut session = Session::new(conn);
        let result = run(&c, &mut session, &mut details);
        session.end();
        match result {
            Ok(()) => Outcome::pass(Some(elapsed(started))).with_details(details),
            Err(reason) => Outcome::fail(format!("PostgreSQL at {target}: {reason}"))
                .with_time(elapsed(started))
                .with_details(details),
        }
    }
}

fn run(c: &PostgresConfig, s: &mut Session, details: &mut serde_json::Value) -> Result<(), String> {
    if c.tls {
        let session = s.start_tls(TlsOptions {
            server_name: None,
            accept_invalid_certificates: c.ignore_tls_errors,
        })?;
        details["tls"] = json!(session.protocol);
    }
    let database = c.database.as_deref().unwrap_or(&c.user);
    let version = s.start(&c.user, database, c.password.as_deref())?;
    if let Some(v) = version {
        details["serverVersion"] = json!(v);
    }
    let Some(query) = &c.query else {
        return Ok(());
    };
    let first = s.query(query)?;
    details["value"] = json!(first);
    tocsin_plugin_sdk::expect_answer(c.expected_value.as_deref(), first.as_deref())
}

fn elapsed(started: Instant) -> u32 {
    u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX)
}

export_monitor!(Postgres);
