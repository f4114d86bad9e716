//! A `tcp-port` monitor: passes when a TCP connection to `host:port` opens, optionally within
//! `maxConnectMs`. Copy this folder to start your own plugin.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tocsin_plugin_sdk::typed::TypedConfig;
use tocsin_plugin_sdk::{
    Capability, CheckContext, FieldError, Info, Monitor, Outcome, export_monitor, net,
};

/// The configuration: this one struct is the JSON Schema the server shows, the parsing
/// (every problem reported by field) and the stored form.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "tcp-port monitor")]
pub struct TcpConfig {
    /// Host name or IP address.
    #[schemars(length(min = 1, max = 253), extend("format" = "hostname"))]
    pub host: String,
    /// TCP port.
    #[schemars(range(min = 1, max = 65535))]
    pub port: u16,
    /// Fail when connecting takes longer (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 60000))]
    pub max_connect_ms: Option<u32>,
}

impl TypedConfig for TcpConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.host = self.host.trim().to_string();
        Ok(self)
    }
}

pub struct Tcp;

impl Monitor for Tcp {
    type Config = TcpConfig;

    fn info() -> Info {
        Info {
            name: "tcp-port",
            version: env!("CARGO_PKG_VERSION"),
            description: "Opens a TCP connection and passes when it is accepted.",
            // What the server must grant: `[plugin_grants.tcp-port] capabilities = ["net"]`.
            capabilities: &[Capability::Net],
        }
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
        | net::Error::Other(d)
        | net::Error::Tls(d)
        | net::Error::Limit(d)
        | net::Error::Closed(d) => format!("Could not connect to {target}: {d}"),
    }
}

export_monitor!(Tcp);

#[cfg(test)]
mod tests {
    use super::*;
    use tocsin_plugin_sdk::typed::PluginConfig;

    #[test]
    fn configuration_is_validated_field_by_field() {
        let c = TcpConfig::parse(r#"{"host":" db.internal ","port":5432}"#).expect("valid");
        assert_eq!(c.host, "db.internal");
        assert_eq!(c.canonical(), json!({"host": "db.internal", "port": 5432}));
        let problems =
            TcpConfig::parse(r#"{"host":"a b","port":70000,"colour":1}"#).expect_err("invalid");
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["colour", "host", "port"]);
        assert_eq!(
            TcpConfig::parse(r#"{"host":"x"}"#).expect_err("no port")[0].field,
            "port"
        );
    }

    #[test]
    fn slow_connections_fail_when_a_limit_is_set() {
        let c = TcpConfig::parse(r#"{"host":"x","port":1,"maxConnectMs":100}"#).expect("valid");
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
