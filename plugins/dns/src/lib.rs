//! The `dns` monitor: asks a chosen resolver (DNS over TCP, RFC 7766, through the host's
//! TCP stream) for one record type of a name, and checks that the answer holds the
//! expected values. Record types A, AAAA, CNAME, MX, TXT, NS and SOA.

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

impl TypedConfig for DnsConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.hostname = self
            .hostname
            .trim()
            .trim_end_matches('.')
            .to_ascii_lowercase();
        self.record_type = self.record_type.trim().to_ascii_uppercase();
        self.resolver = self.resolver.trim().to_string();
        let mut problems = Vec::new();
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
            capabilities: &[Capability::Tcp],
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
        let mut conn = match Conn::open(&c.resolver, c.port, None, ctx.timeout_ms) {
            Ok(conn) => conn,
            Err(net::Error::ConnectionRefused(_)) => {
                return Outcome::fail(format!(
                    "The resolver {resolver} refused the connection (it may not answer over TCP)"
                ));
            }
            Err(e) => {
                return Outcome::fail(format!(
                    "Could not reach the resolver {resolver}: {}",
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
        let elapsed = u32::try_from(started.elapsed().as_millis()).unwrap_or(u32::MAX);
        let message = match answer {
            Ok(m) => m,
            Err(e) => {
                return Outcome::fail(format!(
                    "The resolver {resolver} did not answer: {}",
                    tcp::describe(&e)
                ));
            }
        };
        let response = match wire::parse_response(&message, id) {
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
        let details = json!({"resolver": resolver, "answers": values});
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
}

export_monitor!(Dns);
