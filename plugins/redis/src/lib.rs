//! The `redis` monitor: connects (optionally TLS), authenticates when asked (`AUTH`, with
//! a user name for ACLs), selects a database, sends `PING` and expects `PONG`, and
//! optionally checks that a key exists or holds an expected value. Speaks RESP over the
//! host's TCP stream.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Instant;
use tocsin_plugin_sdk::net::TlsOptions;
use tocsin_plugin_sdk::tcp::{self, Conn};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Capability, CheckContext, FieldError, Info, Monitor, Outcome, export_monitor,
};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "redis monitor")]
pub struct RedisConfig {
    /// Host name or IP address.
    #[schemars(length(min = 1, max = 253), extend("x-tocsin-target" = true))]
    #[schemars(title = "Host")]
    pub host: String,
    /// Port (6379 by default).
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535), extend("x-tocsin-target" = true))]
    #[schemars(title = "Port")]
    pub port: u16,
    /// User name (Redis 6 ACLs); the default user when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    #[schemars(title = "Username")]
    pub username: Option<String>,
    /// Password; no AUTH when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512), extend("writeOnly" = true))]
    #[schemars(title = "Password")]
    pub password: Option<String>,
    /// Database number to SELECT.
    #[serde(default)]
    #[schemars(range(min = 0, max = 1000))]
    #[schemars(title = "Database number")]
    pub database: u16,
    /// A key that must exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    #[schemars(title = "Key")]
    pub key: Option<String>,
    /// With key: the value it must hold (a string value, compared exactly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 4096))]
    #[schemars(title = "Expected value")]
    pub expected_value: Option<String>,
    /// Connect with TLS.
    #[serde(default)]
    #[schemars(extend("x-tocsin-target" = true))]
    #[schemars(title = "Use TLS")]
    pub tls: bool,
    /// With tls: accept a certificate that does not validate.
    #[serde(default)]
    #[schemars(extend("x-tocsin-target" = true))]
    #[schemars(title = "Ignore TLS errors")]
    pub ignore_tls_errors: bool,
}

fn default_port() -> u16 {
    6379
}

impl TypedConfig for RedisConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.host = self.host.trim().to_string();
        let mut problems = Vec::new();
        if self.host.is_empty() || self.host.contains(char::is_whitespace) {
            problems.push(field_error("host", "must be a host name or IP address"));
        }
        if self.expected_value.is_some() && self.key.is_none() {
            problems.push(field_error("expectedValue", "needs a key"));
        }
        if self.username.is_some() && self.password.is_none() {
            problems.push(field_error("password", "is required with a username"));
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

/// One RESP reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Integer(i64),
    Bulk(Option<Vec<u8>>),
    /// Arrays are not needed by these commands; their length is kept for messages.
    Array(i64),
}

/// A command as RESP: an array of bulk strings.
pub fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn read_reply(conn: &mut Conn) -> Result<Reply, String> {
    let line = conn
        .read_line(64 * 1024)
        .map_err(|e| tcp::describe(&e))?
        .ok_or("the server closed the connection")?;
    let (kind, rest) = line.split_at(line.len().min(1));
    let number = || {
        rest.parse::<i64>()
            .map_err(|_| format!("the server sent an unreadable reply: {line}"))
    };
    match kind {
        "+" => Ok(Reply::Simple(rest.to_string())),
        "-" => Ok(Reply::Error(rest.to_string())),
        ":" => Ok(Reply::Integer(number()?)),
        "$" => {
            let n = number()?;
            if n < 0 {
                return Ok(Reply::Bulk(None));
            }
            let n = usize::try_from(n).map_err(|_| "reply too long")?;
            if n > 1 << 20 {
                return Err("the value is longer than 1 MiB".into());
            }
            let mut data = conn.read_exact(n + 2).map_err(|e| tcp::describe(&e))?;
            data.truncate(n);
            Ok(Reply::Bulk(Some(data)))
        }
        "*" => Ok(Reply::Array(number()?)),
        _ => Err(format!(
            "the server does not speak Redis (it sent \"{}\")",
            line.chars().take(60).collect::<String>()
        )),
    }
}

fn ask(conn: &mut Conn, args: &[&[u8]]) -> Result<Reply, String> {
    conn.write(&command(args)).map_err(|e| tcp::describe(&e))?;
    read_reply(conn)
}

struct Redis;

impl Monitor for Redis {
    type Config = RedisConfig;

    fn info() -> Info {
        Info {
            name: "redis",
            version: env!("CARGO_PKG_VERSION"),
            description: "Connects to Redis, authenticates, sends PING and optionally checks a key's value.",
            capabilities: &[Capability::Tcp],
        }
    }

    fn check(c: RedisConfig, ctx: &CheckContext) -> Outcome {
        let target = format!("{}:{}", c.host, c.port);
        let started = Instant::now();
        let tls = c.tls.then_some(TlsOptions {
            server_name: None,
            accept_invalid_certificates: c.ignore_tls_errors,
        });
        let mut conn = match tcp::connect("Redis", &c.host, c.port, tls, ctx.timeout_ms) {
            Ok(conn) => conn,
            Err(reason) => return Outcome::fail(reason),
        };
        let details = json!({"address": conn.peer(), "connectMs": conn.connect_ms()});
        let result = session(&c, &mut conn);
        conn.close();
        match result {
            Ok(found) => {
                let mut details = details;
                if let Some(found) = found {
                    details["key"] = json!(found);
                }
                Outcome::pass(Some(elapsed(started))).with_details(details)
            }
            Err(reason) => Outcome::fail(format!("Redis at {target}: {reason}"))
                .with_time(elapsed(started))
                .with_details(details),
        }
    }
}

/// AUTH, SELECT, PING and the key check. `Ok` with what the key check found.
fn session(c: &RedisConfig, conn: &mut Conn) -> Result<Option<String>, String> {
    if let Some(password) = &c.password {
        let reply = match &c.username {
            Some(user) => ask(conn, &[b"AUTH", user.as_bytes(), password.as_bytes()])?,
            None => ask(conn, &[b"AUTH", password.as_bytes()])?,
        };
        match reply {
            Reply::Simple(s) if s == "OK" => {}
            Reply::Error(e) => return Err(format!("authentication failed: {e}")),
            other => return Err(format!("unexpected answer to AUTH: {other:?}")),
        }
    }
    if c.database != 0 {
        let db = c.database.to_string();
        if let Reply::Error(e) = ask(conn, &[b"SELECT", db.as_bytes()])? {
            return Err(format!("cannot select database {db}: {e}"));
        }
    }
    match ask(conn, &[b"PING"])? {
        Reply::Simple(s) if s == "PONG" => {}
        Reply::Error(e) if e.starts_with("NOAUTH") => {
            return Err("the server requires a password (set password)".into());
        }
        Reply::Error(e) => return Err(format!("PING failed: {e}")),
        other => return Err(format!("expected PONG, got {other:?}")),
    }
    let Some(key) = &c.key else {
        return Ok(None);
    };
    match &c.expected_value {
        None => match ask(conn, &[b"EXISTS", key.as_bytes()])? {
            Reply::Integer(1) => Ok(Some("exists".into())),
            Reply::Integer(_) => Err(format!("the key \"{key}\" does not exist")),
            Reply::Error(e) => Err(format!("EXISTS failed: {e}")),
            other => Err(format!("unexpected answer to EXISTS: {other:?}")),
        },
        Some(expected) => match ask(conn, &[b"GET", key.as_bytes()])? {
            Reply::Bulk(Some(v)) if v == expected.as_bytes() => Ok(Some("matches".into())),
            Reply::Bulk(Some(v)) => Err(format!(
                "the key \"{key}\" holds \"{}\", expected \"{expected}\"",
                String::from_utf8_lossy(&v)
                    .chars()
                    .take(100)
                    .collect::<String>()
            )),
            Reply::Bulk(None) => Err(format!("the key \"{key}\" does not exist")),
            Reply::Error(e) => Err(format!("GET {key} failed: {e}")),
            other => Err(format!("unexpected answer to GET: {other:?}")),
        },
    }
}

fn elapsed(started: Instant) -> u32 {
    u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX)
}

export_monitor!(Redis);

#[cfg(test)]
mod tests {
    use super::*;
    use tocsin_plugin_sdk::typed::PluginConfig;

    #[test]
    fn commands_are_resp_arrays() {
        assert_eq!(
            command(&[b"GET", b"a key"]),
            b"*2\r\n$3\r\nGET\r\n$5\r\na key\r\n".to_vec()
        );
    }

    #[test]
    fn configuration_is_checked() {
        let c = RedisConfig::parse(r#"{"host":"cache"}"#).expect("valid");
        assert_eq!(c.port, 6379);
        let problems = RedisConfig::parse(r#"{"host":"cache","expectedValue":"x","username":"u"}"#)
            .expect_err("invalid");
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["expectedValue", "password"]);
    }
}
