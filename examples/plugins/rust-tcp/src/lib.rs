//! A `tcp` monitor: passes when a TCP connection to `host:port` opens, optionally within
//! `maxConnectMs`. Copy this folder to start your own plugin.

use serde_json::json;
use tocsin_plugin_sdk::config::{FieldProblem, Reader, valid_hostname};
use tocsin_plugin_sdk::{
    Capability, CheckContext, Info, Monitor, Outcome, export_monitor, net, schema,
};

/// The configuration once validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TcpConfig {
    pub host: String,
    pub port: u16,
    pub max_connect_ms: Option<u32>,
}

pub struct Tcp;

impl Monitor for Tcp {
    type Config = TcpConfig;

    fn info() -> Info {
        Info {
            name: "tcp",
            version: env!("CARGO_PKG_VERSION"),
            description: "Opens a TCP connection and passes when it is accepted.",
            schema: schema::object(
                &[
                    ("host", schema::string("Host name or IP address", 1, 253)),
                    ("port", schema::integer("TCP port", 1, 65535, None)),
                    (
                        "maxConnectMs",
                        schema::integer("Fail when connecting takes longer (ms)", 1, 60000, None),
                    ),
                ],
                &["host", "port"],
            ),
            // What the server must grant: `[plugin_grants.tcp] capabilities = ["net"]`.
            capabilities: &[Capability::Net],
        }
    }

    fn parse(text: &str) -> Result<TcpConfig, Vec<FieldProblem>> {
        let mut r = Reader::new(text, "tcp monitor", &["host", "port", "maxConnectMs"])?;
        let host = r.required_string("host", 253);
        if let Some(h) = &host
            && !valid_hostname(h)
        {
            r.push(
                "host",
                "must be a host name or an IP address, without scheme or port",
            );
        }
        if !r.has("port") {
            r.push("port", "is required");
        }
        let port = r.integer("port", 1, 65535);
        let max_connect_ms = r.integer("maxConnectMs", 1, 60000);
        let config = match (host, port) {
            (Some(host), Some(port)) => Some(TcpConfig {
                host,
                port: u16::try_from(port).unwrap_or(0),
                max_connect_ms: max_connect_ms.and_then(|m| u32::try_from(m).ok()),
            }),
            _ => None,
        };
        r.finish(config)
    }

    fn canonical(c: &TcpConfig) -> serde_json::Value {
        let mut v = json!({"host": c.host, "port": c.port});
        if let Some(ms) = c.max_connect_ms {
            v["maxConnectMs"] = json!(ms);
        }
        v
    }

    fn check(c: TcpConfig, ctx: &CheckContext) -> Outcome {
        match net::tcp_connect(&c.host, c.port, ctx.timeout_ms) {
            Ok(r) => judge(&c, r.elapsed_ms).with_details(json!({"address": r.address})),
            Err(e) => Outcome::fail(reason(&c, &e)),
        }
    }
}

/// Pass, unless the connection was slower than allowed.
pub fn judge(c: &TcpConfig, elapsed_ms: u32) -> Outcome {
    match c.max_connect_ms {
        Some(max) if elapsed_ms > max => Outcome::fail(format!(
            "Connected to {}:{} in {elapsed_ms} ms, over the {max} ms allowed",
            c.host, c.port
        ))
        .with_time(elapsed_ms),
        _ => Outcome::pass(Some(elapsed_ms)),
    }
}

/// The words an alert shows for a failed connection.
fn reason(c: &TcpConfig, e: &net::Error) -> String {
    let target = format!("{}:{}", c.host, c.port);
    match e {
        net::Error::Timeout(ms) => format!("No connection to {target} within {ms} ms"),
        net::Error::Dns(d) => format!("Could not resolve {}: {d}", c.host),
        net::Error::ConnectionRefused(_) => format!("{target} refused the connection"),
        net::Error::NotPermitted(d)
        | net::Error::InvalidRequest(d)
        | net::Error::Denied(d)
        | net::Error::Other(d) => format!("Could not connect to {target}: {d}"),
    }
}

export_monitor!(Tcp);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_is_validated_field_by_field() {
        let c = Tcp::parse(r#"{"host":" db.internal ","port":5432}"#).expect("valid");
        assert_eq!(c.host, "db.internal");
        assert_eq!(
            Tcp::canonical(&c),
            json!({"host": "db.internal", "port": 5432})
        );
        let problems =
            Tcp::parse(r#"{"host":"a b","port":70000,"colour":1}"#).expect_err("invalid");
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["colour", "host", "port"]);
        assert_eq!(
            Tcp::parse(r#"{"host":"x"}"#).expect_err("no port")[0].field,
            "port"
        );
    }

    #[test]
    fn slow_connections_fail_when_a_limit_is_set() {
        let c = Tcp::parse(r#"{"host":"x","port":1,"maxConnectMs":100}"#).expect("valid");
        assert!(judge(&c, 99).ok);
        let slow = judge(&c, 150);
        assert!(!slow.ok);
        assert_eq!(slow.response_time_ms, Some(150));
        assert!(
            slow.reason
                .expect("reason")
                .contains("over the 100 ms allowed")
        );
    }
}
