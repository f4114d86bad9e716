//! The `dns` monitor: asks a chosen resolver for one record type of a name, and checks that
//! the answer holds the expected values. Record types A, AAAA, CNAME, MX, TXT, NS and SOA.
//! It asks over UDP (the host's `udp-socket`) and again over TCP (RFC 7766, the host's TCP
//! stream) when the answer is truncated or does not come over UDP; or over TCP only, when
//! the configuration says so.

pub mod wire;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::time::Instant;
use tocsin_plugin_sdk::net;
use tocsin_plugin_sdk::tcp::{self, Conn};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Capability, CheckContext, FieldError, Info, Monitor, Outcome, export_monitor,
};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "dns monitor")]
pub struct DnsConfig {
    /// The name to look up, e.g. example.com.
    #[schemars(length(min = 1, max = 253))]
    #[schemars(title = "Host name")]
    pub hostname: String,
    /// A, AAAA, CNAME, MX, TXT, NS or SOA.
    #[serde(default = "default_type")]
    #[schemars(extend("enum" = ["A", "AAAA", "CNAME", "MX", "TXT", "NS", "SOA"]))]
    #[schemars(title = "Record type")]
    pub record_type: String,
    /// The resolver's IP address (or name) to ask.
    #[serde(default = "default_resolver")]
    #[schemars(length(min = 1, max = 253))]
    #[schemars(title = "DNS resolver")]
    pub resolver: String,
    /// The resolver's port.
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535))]
    #[schemars(title = "Resolver port")]
    pub port: u16,
    /// How to ask: "udp" (the default: over UDP with at most half the timeout, and again
    /// over TCP when the answer is truncated or does not come) or "tcp" (over TCP only).
    #[serde(default = "default_transport")]
    #[schemars(extend("enum" = ["udp", "tcp"]))]
    #[schemars(title = "Transport")]
    pub transport: String,
    /// Values the answer must hold, each as the answer shows it ("192.0.2.1",
    /// "10 mail.example.com", "v=spf1 -all"); any answer passes when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    #[schemars(title = "Expected values")]
    pub expected: Vec<String>,
}

fn default_type() -> String {
    "A".into()
}

fn default_resolver() -> String {
    "1.1.1.1".into()
}

fn default_port() -> u16 {
    53
}

fn default_transport() -> String {
    "udp".into()
}

impl TypedConfig for DnsConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.hostname = self
            .hostname
            .trim()
            .trim_end_matches('.')
            .to_ascii_lowercase();
        self.record_type = self.record_type.trim().to_ascii_uppercase();
        self.resolver = self.resolver.trim().to_string();
        self.transport = self.transport.trim().to_ascii_lowercase();
        let mut problems = Vec::new();
        if self.transport != "udp" && self.transport != "tcp" {
            problems.push(field_error("transport", "must be udp or tcp"));
        }
        if wire::encode_name(&self.hostname).is_none() {
            problems.push(field_error("hostname", "must be a domain name"));
        }
        if wire::type_code(&self.record_type).is_none() {
            problems.push(field_error(
                "recordType",
                "must be A, AAAA, CNAME, MX, TXT, NS or SOA",
            ));
        }
        if self.resolver.is_empty() || self.resolver.contains(char::is_whitespace) {
            problems.push(field_error(
                "resolver",
                "must be an IP address or host name",
            ));
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

/// How an expected value compares with an answer: names without case or final dot.
fn same(expected: &str, answer: &str) -> bool {
    let norm = |s: &str| s.trim().trim_end_matches('.').to_ascii_lowercase();
    norm(expected) == norm(answer)
}

struct Dns;

impl Monitor for Dns {
    type Config = DnsConfig;

    fn info() -> Info {
        Info {
            name: "dns",
            version: env!("CARGO_PKG_VERSION"),
            description: "Asks a resolver for a record (A, AAAA, CNAME, MX, TXT, NS, SOA) and checks the answer.",
            capabilities: &[Capability::Udp, Capability::Tcp],
        }
    }

    fn check(c: DnsConfig, ctx: &CheckContext) -> Outcome {
        let resolver = format!("{}:{}", c.resolver, c.port);
        let started = Instant::now();
        let qtype = wire::type_code(&c.record_type).unwrap_or(1);
        let id = tocsin_plugin_sdk::random_u64() as u16;
        let Some(query) = wire::query(id, &c.hostname, qtype) else {
            return Outcome::fail(format!("`{}` is not a domain name", c.hostname));
        };
        let left = |ctx: &CheckContext| {
            ctx.timeout_ms
                .saturating_sub(u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX))
                .max(1)
        };
        // Over UDP first, with part of the budget, so that TCP still has time when the
        // datagrams are lost, refused or cut.
        let mut over_udp: Option<String> = None;
        if c.transport == "udp" {
            match ask_udp(&c, &query, id, udp_budget(ctx.timeout_ms)) {
                Asked::Answer(message) => {
                    return judge(&c, &resolver, qtype, id, &message, "udp", started);
                }
                // Too long for a datagram (RFC 7766): ask again over TCP.
                Asked::Truncated => {}
                // Nothing listens on the UDP port: the resolver may answer over TCP only.
                Asked::Refused => over_udp = Some("refused".into()),
                Asked::Failed(reason) => over_udp = Some(reason),
            }
        }
        let mut conn = match Conn::open(&c.resolver, c.port, None, left(ctx)) {
            Ok(conn) => conn,
            Err(net::Error::ConnectionRefused(_)) => {
                return Outcome::fail(match &over_udp {
                    Some(udp) if udp == "refused" => format!(
                        "The resolver {resolver} refused the connection over UDP and over TCP"
                    ),
                    Some(udp) => format!(
                        "The resolver {resolver} did not answer over UDP ({udp}) and refused the connection over TCP"
                    ),
                    None => format!(
                        "The resolver {resolver} refused the connection (it may not answer over TCP)"
                    ),
                });
            }
            Err(e) => {
                let udp = over_udp
                    .filter(|u| u != "refused")
                    .map(|u| format!(" (over UDP: {u})"))
                    .unwrap_or_default();
                return Outcome::fail(format!(
                    "Could not reach the resolver {resolver}: {}{udp}",
                    tcp::describe(&e)
                ));
            }
        };
        let mut framed = (query.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(&query);
        let answer = conn
            .write(&framed)
            .and_then(|_| conn.read_exact(2))
            .and_then(|len| conn.read_exact(usize::from(u16::from_be_bytes([len[0], len[1]]))));
        conn.close();
        match answer {
            Ok(message) => judge(&c, &resolver, qtype, id, &message, "tcp", started),
            Err(e) => Outcome::fail(format!(
                "The resolver {resolver} did not answer: {}",
                tcp::describe(&e)
            )),
        }
    }
}

/// What asking over UDP came to.
enum Asked {
    Answer(Vec<u8>),
    Truncated,
    Refused,
    Failed(String),
}

/// The part of a check's budget asking over UDP may take: half, at most 4 s.
fn udp_budget(timeout_ms: u32) -> u32 {
    (timeout_ms / 2).clamp(1, 4000)
}

/// Ask over UDP within `budget_ms`: send the query, wait half the budget for its answer,
/// send it again once and wait the rest (a datagram may be lost). Datagrams that are not a
/// response to this query (another id, a late answer to an earlier query) are skipped.
fn ask_udp(c: &DnsConfig, query: &[u8], id: u16, budget_ms: u32) -> Asked {
    let started = Instant::now();
    let spent = || u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
    let request = net::DatagramRequest {
        host: c.resolver.clone(),
        port: c.port,
        timeout_ms: budget_ms,
    };
    let socket = match net::UdpSocket::open(&request) {
        Ok(s) => s,
        Err(net::Error::ConnectionRefused(_)) => return Asked::Refused,
        Err(e) => return Asked::Failed(tcp::describe(&e)),
    };
    for (attempt, until) in [(1, budget_ms / 2), (2, budget_ms)] {
        if let Err(e) = socket.send(query) {
            return match e {
                net::Error::ConnectionRefused(_) => Asked::Refused,
                e => Asked::Failed(tcp::describe(&e)),
            };
        }
        loop {
            let left = until.saturating_sub(spent());
            if left == 0 {
                break;
            }
            match socket.receive(4096, left) {
                Ok(m) if is_response_to(&m, id) => {
                    return if m[2] & 0x02 != 0 {
                        Asked::Truncated
                    } else {
                        Asked::Answer(m)
                    };
                }
                Ok(_) => continue,
                Err(net::Error::Timeout(_)) => break,
                Err(net::Error::ConnectionRefused(_)) => return Asked::Refused,
                Err(e) => return Asked::Failed(tcp::describe(&e)),
            }
        }
        if attempt == 2 {
            break;
        }
    }
    Asked::Failed(format!("no answer within {budget_ms} ms"))
}

/// Whether a datagram is a response (QR set) to the query `id`.
fn is_response_to(m: &[u8], id: u16) -> bool {
    m.len() >= 12 && u16::from_be_bytes([m[0], m[1]]) == id && m[2] & 0x80 != 0
}

/// Judge a resolver's answer against what the monitor expects.
fn judge(
    c: &DnsConfig,
    resolver: &str,
    qtype: u16,
    id: u16,
    message: &[u8],
    transport: &str,
    started: Instant,
) -> Outcome {
    let elapsed = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
    let response = match wire::parse_response(message, id) {
        Ok(r) => r,
        Err(e) => return Outcome::fail(format!("The resolver {resolver} answered badly: {e}")),
    };
    let name = &c.hostname;
    let kind = &c.record_type;
    if let Some(problem) = wire::rcode_problem(response.rcode) {
        return Outcome::fail(format!("{name} {kind}: {problem} (from {resolver})"))
            .with_time(elapsed);
    }
    let values: Vec<String> = response
        .answers
        .iter()
        .filter(|r| r.rtype == qtype)
        .map(|r| r.value.clone())
        .collect();
    let details = json!({"resolver": resolver, "transport": transport, "answers": values});
    if values.is_empty() {
        return Outcome::fail(format!("{name} has no {kind} record (from {resolver})"))
            .with_time(elapsed)
            .with_details(details);
    }
    let missing: Vec<&String> = c
        .expected
        .iter()
        .filter(|e| !values.iter().any(|v| same(e, v)))
        .collect();
    if !missing.is_empty() {
        let missing: Vec<String> = missing.iter().map(|m| format!("\"{m}\"")).collect();
        return Outcome::fail(format!(
            "{name} {kind} does not hold {}; it holds {}",
            missing.join(", "),
            values
                .iter()
                .map(|v| format!("\"{v}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .with_time(elapsed)
        .with_details(details);
    }
    Outcome::pass(Some(elapsed)).with_details(details)
}

export_monitor!(Dns);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_takes_half_the_budget_and_at_most_four_seconds() {
        assert_eq!(udp_budget(5000), 2500);
        assert_eq!(udp_budget(30_000), 4000);
        assert_eq!(udp_budget(1), 1);
    }

    #[test]
    fn only_a_response_to_the_query_counts() {
        let mut m = vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0];
        assert!(is_response_to(&m, 0x1234));
        assert!(!is_response_to(&m, 0x1235), "another id");
        m[2] = 0x01;
        assert!(!is_response_to(&m, 0x1234), "a query, not a response");
        assert!(
            !is_response_to(&[0x12, 0x34, 0x81], 0x1234),
            "shorter than a header"
        );
    }
}
