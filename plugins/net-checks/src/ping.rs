//! The ping monitor: `hostname` and `packetCount`; passes when any echo reply arrives, and
//! its response time is the mean round trip.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tocsin_plugin_sdk::FieldError;
use tocsin_plugin_sdk::typed::{PluginConfig, TypedConfig};

/// Echo requests per check unless configured.
pub const DEFAULT_PACKET_COUNT: u8 = 3;
/// Most echo requests per check.
pub const MAX_PACKET_COUNT: u8 = 10;

/// A ping monitor's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
// Built-in: its fields sit at the top level of a monitor object.
#[schemars(title = "ping monitor", extend("x-tocsin-top-level" = true))]
pub struct PingConfig {
    /// Host name or IP address (IPv4 or IPv6) to send ICMP echo requests to.
    #[schemars(length(min = 1, max = 253), extend("format" = "hostname"))]
    #[schemars(title = "Host")]
    pub hostname: String,
    /// Echo requests per check. The check passes when any reply arrives.
    #[serde(default = "default_packet_count")]
    #[schemars(range(min = 1, max = 10))]
    #[schemars(title = "Packets per check")]
    pub packet_count: u8,
}

fn default_packet_count() -> u8 {
    DEFAULT_PACKET_COUNT
}

impl TypedConfig for PingConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.hostname = self.hostname.trim().to_string();
        Ok(self)
    }
}

/// Parse and validate a configuration given as JSON text.
pub fn parse(text: &str) -> Result<PingConfig, Vec<FieldError>> {
    PingConfig::parse(text)
}

/// The normalised configuration.
pub fn to_json(c: &PingConfig) -> Value {
    c.canonical()
}

/// What the host reported for one ping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replies {
    pub address: String,
    pub sent: u32,
    pub received: u32,
    pub rtts_us: Vec<u32>,
}

/// Why the host could not ping at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PingFailure {
    Timeout(u32),
    Dns(String),
    NotPermitted(String),
    Other(String),
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub ok: bool,
    pub reason: Option<String>,
    pub response_time_ms: Option<u32>,
    /// JSON object of facts.
    pub details: Value,
}

/// Judge a ping: any reply passes; the response time is the mean round trip.
pub fn judge(c: &PingConfig, result: Result<Replies, PingFailure>) -> Verdict {
    match result {
        Ok(r) => {
            let loss = if r.sent == 0 {
                100.0
            } else {
                f64::from(r.sent - r.received.min(r.sent)) * 100.0 / f64::from(r.sent)
            };
            let details = json!({
                "address": r.address,
                "sent": r.sent,
                "received": r.received,
                "packetLossPercent": (loss * 10.0).round() / 10.0,
            });
            if r.rtts_us.is_empty() {
                return Verdict {
                    ok: false,
                    reason: Some(format!(
                        "No reply from {} to {} echo request{}",
                        describe_target(&c.hostname, &r.address),
                        r.sent,
                        if r.sent == 1 { "" } else { "s" }
                    )),
                    response_time_ms: None,
                    details,
                };
            }
            let mean_us =
                r.rtts_us.iter().map(|v| u64::from(*v)).sum::<u64>() / r.rtts_us.len() as u64;
            Verdict {
                ok: true,
                reason: None,
                response_time_ms: Some(u32::try_from((mean_us + 500) / 1000).unwrap_or(u32::MAX)),
                details,
            }
        }
        Err(f) => {
            let reason = match f {
                PingFailure::Timeout(ms) => format!("Timed out after {ms} ms"),
                PingFailure::Dns(d) => format!("Cannot resolve {}: {d}", c.hostname),
                PingFailure::NotPermitted(d) => format!("Cannot send ICMP echo requests: {d}"),
                PingFailure::Other(d) => format!("Ping failed: {d}"),
            };
            Verdict {
                ok: false,
                reason: Some(reason),
                response_time_ms: None,
                details: json!({}),
            }
        }
    }
}

fn describe_target(hostname: &str, address: &str) -> String {
    if hostname == address {
        address.to_string()
    } else {
        format!("{hostname} ({address})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_limits() {
        let c = parse(r#"{"hostname":"127.0.0.1"}"#).expect("valid");
        assert_eq!(c.packet_count, 3);
        assert_eq!(parse(&to_json(&c).to_string()), Ok(c));
        let e = parse(r#"{"hostname":"https://x","packetCount":11}"#).expect_err("invalid");
        let fields: Vec<&str> = e.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["hostname", "packetCount"]);
        assert!(parse(r#"{"packetCount":2}"#).is_err());
        assert!(parse(r#"{"hostname":"a","packetCount":"3"}"#).is_err());
        assert!(parse(r#"{"hostname":"a","packetCount":0}"#).is_err());
    }

    #[test]
    fn any_reply_passes_with_the_mean_round_trip() {
        let c = parse(r#"{"hostname":"db.internal"}"#).expect("valid");
        let v = judge(
            &c,
            Ok(Replies {
                address: "10.0.0.5".into(),
                sent: 3,
                received: 2,
                rtts_us: vec![1_000, 2_600],
            }),
        );
        assert!(v.ok);
        assert_eq!(v.response_time_ms, Some(2));
        assert_eq!(v.details["packetLossPercent"], 33.3);
    }

    #[test]
    fn silence_and_errors_fail_with_a_reason() {
        let c = parse(r#"{"hostname":"db.internal","packetCount":1}"#).expect("valid");
        let v = judge(
            &c,
            Ok(Replies {
                address: "10.0.0.5".into(),
                sent: 1,
                received: 0,
                rtts_us: vec![],
            }),
        );
        assert!(!v.ok);
        assert_eq!(
            v.reason.as_deref(),
            Some("No reply from db.internal (10.0.0.5) to 1 echo request")
        );
        assert_eq!(v.response_time_ms, None);
        let v = judge(&c, Err(PingFailure::NotPermitted("no raw sockets".into())));
        assert_eq!(
            v.reason.as_deref(),
            Some("Cannot send ICMP echo requests: no raw sockets")
        );
    }
}
