//! The `grpc` monitor: the standard gRPC health check (`grpc.health.v1.Health/Check`) over
//! HTTP/2, through the host's `http` interface (contract 0.3.0: HTTP/2 and trailers). It
//! passes when the server answers `SERVING` for the service asked about.

pub mod wire;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Capability, CheckContext, FieldError, Header, Info, Monitor, Outcome, export_monitor, http,
};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "grpc monitor")]
pub struct GrpcConfig {
    /// The server: `http://host:port` for plaintext HTTP/2 (h2c), `https://host:port` for
    /// TLS.
    #[schemars(length(min = 1, max = 2048))]
    #[schemars(extend(
        "format" = "uri",
        "x-tocsin-target" = true,
        "examples" = ["https://grpc.example.com:443", "http://127.0.0.1:50051"]
    ))]
    #[schemars(title = "Server URL")]
    pub url: String,
    /// The service to ask about, e.g. `shop.Cart`; empty asks about the server as a whole.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 256))]
    #[schemars(title = "Service")]
    pub service: String,
    /// Metadata sent with the call, e.g. `authorization` (HTTP/2 sends names in lowercase).
    /// Their values are secrets: read keys and exports do not see them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(extend("additionalProperties" = {"type": "string", "x-tocsin-secret": true}))]
    #[schemars(title = "Metadata")]
    pub metadata: BTreeMap<String, String>,
}

impl TypedConfig for GrpcConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.url = self.url.trim().trim_end_matches('/').to_string();
        self.service = self.service.trim().to_string();
        let mut problems = Vec::new();
        let rest = self
            .url
            .strip_prefix("http://")
            .or_else(|| self.url.strip_prefix("https://"));
        match rest {
            Some(authority) if !authority.is_empty() && !authority.contains(['/', '?', '#']) => {}
            _ => problems.push(field_error(
                "url",
                "must be http://host:port or https://host:port, without a path",
            )),
        }
        if self.metadata.len() > 20 {
            problems.push(field_error("metadata", "must have at most 20 entries"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (name, value) in &self.metadata {
            let lower = name.to_ascii_lowercase();
            if !seen.insert(lower.clone()) {
                problems.push(field_error(
                    &format!("metadata.{name}"),
                    "is given twice (names are not case-sensitive)",
                ));
            }
            let valid_name = !lower.is_empty()
                && lower.len() <= 64
                && lower
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b))
                && !lower.starts_with("grpc-")
                && !wire::RESERVED.contains(&lower.as_str());
            if !valid_name {
                problems.push(field_error(
                    &format!("metadata.{name}"),
                    "must be a metadata name (letters, digits, -, _, .), not a reserved one",
                ));
            }
            if value.len() > 4096 || !value.bytes().all(|b| (0x20..=0x7e).contains(&b)) {
                problems.push(field_error(
                    &format!("metadata.{name}"),
                    "must be at most 4096 bytes of printable ASCII",
                ));
            }
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

struct Grpc;

impl Monitor for Grpc {
    type Config = GrpcConfig;

    fn info() -> Info {
        Info {
            name: "grpc",
            version: env!("CARGO_PKG_VERSION"),
            description: "Asks a gRPC server's standard health service (grpc.health.v1) whether a service is serving.",
            capabilities: &[Capability::Http],
        }
    }

    fn check(c: GrpcConfig, ctx: &CheckContext) -> Outcome {
        let mut headers = vec![
            Header {
                name: "content-type".into(),
                value: "application/grpc".into(),
            },
            Header {
                name: "te".into(),
                value: "trailers".into(),
            },
        ];
        headers.extend(c.metadata.iter().map(|(name, value)| Header {
            name: name.clone(),
            value: value.clone(),
        }));
        let request = http::Request {
            method: "POST".into(),
            url: format!("{}{}", c.url, wire::CHECK_PATH),
            headers,
            body: Some(wire::check_request(&c.service)),
            timeout_ms: ctx.timeout_ms,
            follow_redirects: false,
            max_redirects: 0,
            max_body_bytes: 64 * 1024,
            version: http::HttpVersion::Http2,
        };
        let response = match http::send(&request) {
            Ok(r) => r,
            Err(e) => return Outcome::fail(transport_reason(&c.url, &e)),
        };
        let elapsed = response.elapsed_ms;
        if response.body_truncated {
            return Outcome::fail(format!(
                "{} answered with more than 64 KiB, which no health answer is",
                c.url
            ))
            .with_time(elapsed);
        }
        let what = if c.service.is_empty() {
            "The server".to_string()
        } else {
            format!("The service `{}`", c.service)
        };
        match wire::judge(
            response.status,
            &response.headers,
            &response.trailers,
            &response.body,
        ) {
            Ok(status) => {
                let details = json!({"status": status.name(), "service": c.service,
                                     "http": response.version});
                if status == wire::Serving::Serving {
                    Outcome::pass(Some(elapsed)).with_details(details)
                } else {
                    Outcome::fail(format!("{what} is {}", status.name()))
                        .with_time(elapsed)
                        .with_details(details)
                }
            }
            Err(reason) => Outcome::fail(format!("{what}: {reason}")).with_time(elapsed),
        }
    }
}

/// A sentence for a failed exchange.
fn transport_reason(url: &str, e: &http::Error) -> String {
    match e {
        http::Error::Timeout(ms) => format!("{url} did not answer within {ms} ms"),
        http::Error::ConnectionRefused(_) => format!("{url} refused the connection"),
        http::Error::Dns(d) => format!("Could not resolve {url}: {d}"),
        http::Error::Tls(d) => format!("TLS with {url} failed: {d}"),
        http::Error::TooManyRedirects(_) => format!("{url} redirected"),
        http::Error::InvalidRequest(d) | http::Error::Denied(d) => d.clone(),
        http::Error::Other(d) => format!("{url} could not be asked over HTTP/2: {d}"),
    }
}

export_monitor!(Grpc);
