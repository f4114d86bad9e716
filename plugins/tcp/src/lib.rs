//! The `tcp` monitor: a TCP connection to `host:port` (optionally TLS), optionally a line
//! sent and the answer checked for an expected text (a banner such as `SSH-2.0` or
//! `+PONG`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Instant;
use tocsin_plugin_sdk::net::TlsOptions;
use tocsin_plugin_sdk::tcp::{self, Conn};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Capability, CheckContext, FieldError, Info, Monitor, Outcome, export_monitor, net,
};

/// Most bytes of an answer read while looking for `expect`.
const MAX_ANSWER: usize = 16 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "tcp monitor")]
pub struct TcpConfig {
    /// Host name or IP address.
    #[schemars(length(min = 1, max = 253))]
    #[schemars(title = "Host")]
    pub host: String,
    /// TCP port.
    #[schemars(range(min = 1, max = 65535))]
    #[schemars(title = "Port")]
    pub port: u16,
    /// Text sent once connected (e.g. "PING\r\n"); nothing when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 4096))]
    #[schemars(title = "Text to send")]
    pub send: Option<String>,
    /// Text the answer (or the server's greeting) must contain, e.g. "SSH-2.0".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 1024))]
    #[schemars(title = "Expected text")]
    pub expect: Option<String>,
    /// Connect with TLS (implicit TLS, like port 443 or 993).
    #[serde(default)]
    #[schemars(title = "Use TLS")]
    pub tls: bool,
    /// With tls: accept a certificate that does not validate.
    #[serde(default)]
    #[schemars(title = "Ignore TLS errors")]
    pub ignore_tls_errors: bool,
}

impl TypedConfig for TcpConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.host = self.host.trim().to_string();
        if self.host.is_empty() || self.host.contains(char::is_whitespace) {
            return Err(vec![field_error(
                "host",
                "must be a host name or IP address",
            )]);
        }
        if self.ignore_tls_errors && !self.tls {
            return Err(vec![field_error(
                "ignoreTlsErrors",
                "only applies with tls",
            )]);
        }
        Ok(self)
    }
}

struct Tcp;

impl Monitor for Tcp {
    type Config = TcpConfig;

    fn info() -> Info {
        Info {
            name: "tcp",
            version: env!("CARGO_PKG_VERSION"),
            description: "Opens a TCP connection (optionally TLS), optionally sends a line and checks the answer for an expected text.",
            capabilities: &[Capability::Tcp],
        }
    }

    fn check(c: TcpConfig, ctx: &CheckContext) -> Outcome {
        let target = format!("{}:{}", c.host, c.port);
        let started = Instant::now();
        let tls = c.tls.then_some(TlsOptions {
            server_name: None,
            accept_invalid_certificates: c.ignore_tls_errors,
        });
        let mut conn = match Conn::open(&c.host, c.port, tls, ctx.timeout_ms) {
            Ok(conn) => conn,
            Err(e) => return Outcome::fail(connect_failure(&target, &e)),
        };
        let mut details = json!({"address": conn.peer(), "connectMs": conn.connect_ms()});
        if let Some(session) = conn.tls_session() {
            details["tls"] = json!(session.protocol);
        }
        if let Some(send) = &c.send
            && let Err(e) = conn.write(send.as_bytes())
        {
            return Outcome::fail(format!("Could not send to {target}: {}", tcp::describe(&e)))
                .with_details(details);
        }
        let Some(expect) = &c.expect else {
            conn.close();
            return Outcome::pass(Some(elapsed(started))).with_details(details);
        };
        let mut answer = Vec::new();
        loop {
            if contains(&answer, expect.as_bytes()) {
                conn.close();
                details["answer"] = json!(printable(&answer));
                return Outcome::pass(Some(elapsed(started))).with_details(details);
            }
            match conn.read_some() {
                Ok(bytes) if bytes.is_empty() => break,
                Ok(bytes) => answer.extend_from_slice(&bytes),
                Err(net::Error::Timeout(_)) => break,
                Err(e) => {
                    return Outcome::fail(format!(
                        "Could not read from {target}: {}",
                        tcp::describe(&e)
                    ))
                    .with_details(details);
                }
            }
            if answer.len() > MAX_ANSWER {
                break;
            }
        }
        details["answer"] = json!(printable(&answer));
        let got = if answer.is_empty() {
            "nothing".to_string()
        } else {
            format!("\"{}\"", printable(&answer))
        };
        Outcome::fail(format!(
            "Expected an answer containing \"{expect}\" from {target}, got {got}"
        ))
        .with_time(elapsed(started))
        .with_details(details)
    }
}

fn elapsed(started: Instant) -> u32 {
    u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && haystack.windows(needle.len()).any(|w| w == needle)
}

/// The first 200 characters of an answer, control characters shown as spaces.
fn printable(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect::<String>()
        .trim()
        .to_string()
}

/// The words an alert shows for a connection that did not open.
pub fn connect_failure(target: &str, e: &net::Error) -> String {
    match e {
        net::Error::Timeout(ms) => format!("No connection to {target} within {ms} ms"),
        net::Error::ConnectionRefused(_) => format!("{target} refused the connection"),
        net::Error::Tls(d) => format!("TLS with {target} failed: {d}"),
        other => format!("Could not connect to {target}: {}", tcp::describe(other)),
    }
}

export_monitor!(Tcp);

#[cfg(test)]
mod tests {
    use super::*;
    use tocsin_plugin_sdk::typed::PluginConfig;

    #[test]
    fn configuration_is_checked() {
        let c = TcpConfig::parse(r#"{"host":" db ","port":22,"expect":"SSH-2.0"}"#).expect("valid");
        assert_eq!(
            c.canonical(),
            json!({"host": "db", "port": 22, "expect": "SSH-2.0", "tls": false, "ignoreTlsErrors": false})
        );
        let problems = TcpConfig::parse(r#"{"host":"db","port":0}"#).expect_err("port 0");
        assert_eq!(problems[0].field, "port");
        let problems = TcpConfig::parse(r#"{"host":"db","port":1,"ignoreTlsErrors":true}"#)
            .expect_err("no tls");
        assert_eq!(problems[0].field, "ignoreTlsErrors");
    }

    #[test]
    fn answers_are_searched_and_shown_readably() {
        assert!(contains(b"SSH-2.0-OpenSSH_9.6\r\n", b"SSH-2.0"));
        assert!(!contains(b"HTTP/1.1 400", b"SSH"));
        assert_eq!(printable(b"+PONG\r\n"), "+PONG");
    }
}
