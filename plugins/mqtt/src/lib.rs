//! The `mqtt` monitor: connects to an MQTT broker (3.1.1, optionally TLS), signs in when
//! given credentials, and with a `topic` makes a round trip: subscribes, publishes a
//! message of its own and waits for it to come back. Speaks MQTT over the host's TCP
//! stream.

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
#[schemars(title = "mqtt monitor")]
pub struct MqttConfig {
    /// Host name or IP address of the broker.
    #[schemars(length(min = 1, max = 253), extend("x-tocsin-target" = true))]
    #[schemars(title = "Host")]
    pub host: String,
    /// Port (1883 by default; 8883 is the usual TLS port).
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535), extend("x-tocsin-target" = true))]
    #[schemars(title = "Port")]
    pub port: u16,
    /// User name, when the broker wants one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    #[schemars(title = "Username")]
    pub username: Option<String>,
    /// Password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 512), extend("writeOnly" = true))]
    #[schemars(title = "Password")]
    pub password: Option<String>,
    /// Client identifier; "tocsin-" and the monitor's id when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    #[schemars(title = "Client ID")]
    pub client_id: Option<String>,
    /// With a topic: subscribe, publish a message and wait for it (a round trip).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 256))]
    #[schemars(title = "Topic")]
    pub topic: Option<String>,
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
    1883
}

impl TypedConfig for MqttConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.host = self.host.trim().to_string();
        let mut problems = Vec::new();
        if self.host.is_empty() || self.host.contains(char::is_whitespace) {
            problems.push(field_error("host", "must be a host name or IP address"));
        }
        if self.password.is_some() && self.username.is_none() {
            problems.push(field_error("username", "is required with a password"));
        }
        if self
            .topic
            .as_deref()
            .is_some_and(|t| t.contains(['+', '#']) || t.contains('\0'))
        {
            problems.push(field_error(
                "topic",
                "must be a plain topic name, without wildcards",
            ));
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

/// An MQTT string: two bytes of length, then UTF-8.
fn string(s: &str) -> Vec<u8> {
    let mut out = (s.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(s.as_bytes());
    out
}

/// A packet: fixed header byte, remaining length (variable length integer), body.
pub fn packet(first: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![first];
    let mut n = body.len();
    loop {
        let mut byte = (n % 128) as u8;
        n /= 128;
        if n > 0 {
            byte |= 0x80;
        }
        out.push(byte);
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(body);
    out
}

/// CONNECT with a clean session and a 30 s keep-alive.
pub fn connect(client_id: &str, username: Option<&str>, password: Option<&str>) -> Vec<u8> {
    let mut flags = 0x02;
    if username.is_some() {
        flags |= 0x80;
    }
    if password.is_some() {
        flags |= 0x40;
    }
    let mut body = string("MQTT");
    body.extend_from_slice(&[0x04, flags, 0, 30]);
    body.extend_from_slice(&string(client_id));
    if let Some(u) = username {
        body.extend_from_slice(&string(u));
    }
    if let Some(p) = password {
        body.extend_from_slice(&string(p));
    }
    packet(0x10, &body)
}

/// What a CONNACK return code means.
pub fn refusal(code: u8) -> String {
    match code {
        1 => "the broker does not accept MQTT 3.1.1".into(),
        2 => "the broker rejected the client identifier".into(),
        3 => "the broker is unavailable".into(),
        4 => "bad user name or password".into(),
        5 => "not authorized".into(),
        other => format!("the broker refused the connection (code {other})"),
    }
}

fn read_packet(conn: &mut Conn) -> Result<(u8, Vec<u8>), String> {
    let first = conn.read_exact(1).map_err(|e| tcp::describe(&e))?[0];
    let mut len = 0usize;
    let mut shift = 0;
    loop {
        let b = conn.read_exact(1).map_err(|e| tcp::describe(&e))?[0];
        len |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
        if shift > 21 {
            return Err("the broker sent a malformed packet".into());
        }
    }
    if len > 1 << 20 {
        return Err("the broker sent a packet larger than 1 MiB".into());
    }
    let body = conn.read_exact(len).map_err(|e| tcp::describe(&e))?;
    Ok((first, body))
}

struct Mqtt;

impl Monitor for Mqtt {
    type Config = MqttConfig;

    fn info() -> Info {
        Info {
            name: "mqtt",
            version: env!("CARGO_PKG_VERSION"),
            description: "Connects to an MQTT broker, signs in, and optionally makes a publish and subscribe round trip.",
            capabilities: &[Capability::Tcp],
        }
    }

    fn check(c: MqttConfig, ctx: &CheckContext) -> Outcome {
        let target = format!("{}:{}", c.host, c.port);
        let started = Instant::now();
        let tls = c.tls.then_some(TlsOptions {
            server_name: None,
            accept_invalid_certificates: c.ignore_tls_errors,
        });
        let mut conn = match tcp::connect("the MQTT broker", &c.host, c.port, tls, ctx.timeout_ms) {
            Ok(conn) => conn,
            Err(reason) => return Outcome::fail(reason),
        };
        let mut details = json!({"address": conn.peer(), "connectMs": conn.connect_ms()});
        let client_id = c
            .client_id
            .clone()
            .unwrap_or_else(|| format!("tocsin-{}", ctx.monitor_id));
        let result = session(&c, &mut conn, &client_id, &mut details);
        let _ = conn.write(&[0xE0, 0x00]);
        conn.close();
        match result {
            Ok(()) => Outcome::pass(Some(elapsed(started))).with_details(details),
            Err(reason) => Outcome::fail(format!("MQTT broker at {target}: {reason}"))
                .with_time(elapsed(started))
                .with_details(details),
        }
    }
}

fn session(
    c: &MqttConfig,
    conn: &mut Conn,
    client_id: &str,
    details: &mut serde_json::Value,
) -> Result<(), String> {
    conn.write(&connect(
        client_id,
        c.username.as_deref(),
        c.password.as_deref(),
    ))
    .map_err(|e| tcp::describe(&e))?;
    let (kind, body) = read_packet(conn)?;
    if kind != 0x20 || body.len() != 2 {
        return Err("the server does not speak MQTT (no CONNACK)".into());
    }
    if body[1] != 0 {
        return Err(refusal(body[1]));
    }
    let Some(topic) = &c.topic else {
        return Ok(());
    };
    let mut subscribe = vec![0, 1];
    subscribe.extend_from_slice(&string(topic));
    subscribe.push(0);
    conn.write(&packet(0x82, &subscribe))
        .map_err(|e| tcp::describe(&e))?;
    let nonce = format!(
        "tocsin round trip {}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    );
    let mut published = false;
    let round_trip = Instant::now();
    for _ in 0..100 {
        let (kind, body) = read_packet(conn)?;
        match kind >> 4 {
            9 => {
                if body.get(2) == Some(&0x80) {
                    return Err(format!(
                        "the broker refused the subscription to \"{topic}\""
                    ));
                }
                let mut publish = string(topic);
                publish.extend_from_slice(nonce.as_bytes());
                conn.write(&packet(0x30, &publish))
                    .map_err(|e| tcp::describe(&e))?;
                published = true;
            }
            3 if published => {
                let name_len = body
                    .get(..2)
                    .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
                    .unwrap_or(0);
                // QoS 0 messages carry no packet identifier after the topic.
                let payload = body.get(2 + name_len..).unwrap_or_default();
                if payload == nonce.as_bytes() {
                    details["roundTripMs"] = json!(elapsed(round_trip));
                    return Ok(());
                }
            }
            _ => {}
        }
    }
    Err(format!(
        "the message published to \"{topic}\" did not come back"
    ))
}

fn elapsed(started: Instant) -> u32 {
    u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX)
}

export_monitor!(Mqtt);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_follow_mqtt_3_1_1() {
        let c = connect("tocsin", Some("u"), Some("p"));
        assert_eq!(
            c,
            [
                0x10, 24, 0, 4, b'M', b'Q', b'T', b'T', 4, 0xC2, 0, 30, 0, 6, b't', b'o', b'c',
                b's', b'i', b'n', 0, 1, b'u', 0, 1, b'p'
            ]
        );
        assert_eq!(&packet(0x30, &[0; 200])[..3], &[0x30, 0xC8, 0x01]);
        assert_eq!(refusal(4), "bad user name or password");
    }
}
