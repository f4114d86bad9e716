//! The `mysql` monitor (MySQL and MariaDB): connects (optionally TLS), signs in with
//! `mysql_native_password` or `caching_sha2_password`, optionally runs one query and
//! compares the first column of its first row with an expected value. Speaks the MySQL
//! client/server protocol over the host's TCP stream.

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
#[schemars(title = "mysql monitor")]
pub struct MysqlConfig {
    /// Host name or IP address.
    #[schemars(length(min = 1, max = 253), extend("x-tocsin-target" = true))]
    #[schemars(title = "Host")]
    pub host: String,
    /// Port (3306 by default).
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535), extend("x-tocsin-target" = true))]
    #[schemars(title = "Port")]
    pub port: u16,
    /// The user to sign in as.
    #[serde(default = "default_user")]
    #[schemars(length(min = 1, max = 80))]
    #[schemars(title = "User")]
    pub user: String,
    /// The password (none when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512), extend("writeOnly" = true))]
    #[schemars(title = "Password")]
    pub password: Option<String>,
    /// The database to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    #[schemars(title = "Database")]
    pub database: Option<String>,
    /// One query to run, e.g. "SELECT 1".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    #[schemars(title = "Query")]
    pub query: Option<String>,
    /// With query: the text the first column of the first row must equal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    #[schemars(title = "Expected value")]
    pub expected_value: Option<String>,
    /// Require TLS.
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
    3306
}

fn default_user() -> String {
    "root".into()
}

impl TypedConfig for MysqlConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.host = self.host.trim().to_string();
        let mut problems = Vec::new();
        if self.host.is_empty() || self.host.contains(char::is_whitespace) {
            problems.push(field_error("host", "must be a host name or IP address"));
        }
        if self.expected_value.is_some() && self.query.is_none() {
            problems.push(field_error("expectedValue", "needs a query"));
        }
        if self.user.contains('\0') {
            problems.push(field_error("user", "must not contain NUL"));
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

struct Mysql;

impl Monitor for Mysql {
    type Config = MysqlConfig;

    fn info() -> Info {
        Info {
            name: "mysql",
            version: env!("CARGO_PKG_VERSION"),
            description: "Connects to MySQL or MariaDB, signs in, and optionally runs a query and checks its answer.",
            capabilities: &[Capability::Tcp],
        }
    }

    fn check(c: MysqlConfig, ctx: &CheckContext) -> Outcome {
        let target = format!("{}:{}", c.host, c.port);
        let started = Instant::now();
        let conn = match tcp::connect("MySQL", &c.host, c.port, None, ctx.timeout_ms) {
            Ok(conn) => conn,
            Err(reason) => return Outcome::fail(reason),
        };
        let mut details = json!({"address": conn.peer(), "connectMs": conn.connect_ms()});
        let mut session = Session::new(conn);
        let result = run(&c, &mut session, &mut details);
        session.end();
        match result {
            Ok(()) => Outcome::pass(Some(elapsed(started))).with_details(details),
            Err(reason) => Outcome::fail(format!("MySQL at {target}: {reason}"))
                .with_time(elapsed(started))
                .with_details(details),
        }
    }
}

fn run(c: &MysqlConfig, s: &mut Session, details: &mut serde_json::Value) -> Result<(), String> {
    let tls = c.tls.then_some(TlsOptions {
        server_name: None,
        accept_invalid_certificates: c.ignore_tls_errors,
    });
    let (version, session) = s.start(
        &c.user,
        c.password.as_deref().unwrap_or(""),
        c.database.as_deref(),
        tls,
    )?;
    details["serverVersion"] = json!(version);
    if let Some(session) = session {
        details["tls"] = json!(session.protocol);
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

export_monitor!(Mysql);
