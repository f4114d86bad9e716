//! The `keyword` monitor: an http check that also requires a keyword to be present in (or
//! absent from) the response body.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

pub mod rules;

wit_bindgen::generate!({
    path: "../../wit/v0.1.0",
    world: "monitor",
});

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::http;
use tocsin::plugin::types::{Capability, FieldError, Header, PluginInfo, PluginKind};
use tocsin_http_checks::verdict::{self, Exchange, TransportFailure, Verdict};

/// The body is read up to 1 MiB, as the server promises.
const MAX_BODY_BYTES: u32 = 1024 * 1024;

struct KeywordMonitor;

impl Guest for KeywordMonitor {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "keyword".into(),
            kind: PluginKind::Monitor,
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Sends an HTTP request and checks that a keyword is present in, or absent from, the response."
                .into(),
            config_schema: rules::schema().to_string(),
            capabilities: vec![Capability::Http],
        }
    }

    fn validate_config(text: String) -> Result<String, Vec<FieldError>> {
        rules::parse(&text)
            .map(|c| rules::to_json(&c))
            .map_err(|problems| {
                problems
                    .into_iter()
                    .map(|p| FieldError {
                        field: p.field,
                        message: p.message,
                    })
                    .collect()
            })
    }

    fn check(req: CheckRequest) -> CheckOutcome {
        let config = match rules::parse(&req.config) {
            Ok(c) => c,
            Err(problems) => {
                let first = problems
                    .first()
                    .map(|p| format!("{} {}", p.field, p.message))
                    .unwrap_or_default();
                return outcome(
                    Verdict {
                        ok: false,
                        reason: Some(format!("Invalid configuration: {first}")),
                        status_code: None,
                        response_time_ms: None,
                    },
                    "",
                );
            }
        };
        let h = &config.http;
        let request = http::Request {
            method: h.method.clone(),
            url: h.url.clone(),
            headers: h
                .headers
                .iter()
                .map(|(name, value)| Header {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
            body: h.body.as_ref().map(|b| b.as_bytes().to_vec()),
            timeout_ms: req.timeout_ms,
            follow_redirects: h.follow_redirects,
            max_redirects: h.max_redirects,
            max_body_bytes: MAX_BODY_BYTES,
        };
        let result = match http::send(&request) {
            Ok(response) => {
                let exchange = Exchange {
                    status: response.status,
                    body: &response.body,
                    elapsed_ms: response.elapsed_ms,
                };
                let v = verdict::judge(h, &exchange);
                match (v.ok, rules::judge(&config, &response.body)) {
                    (true, Some(reason)) => Verdict {
                        ok: false,
                        reason: Some(reason),
                        ..v
                    },
                    _ => v,
                }
            }
            Err(e) => verdict::transport_failure(h, &transport(e)),
        };
        outcome(result, &config.keyword)
    }
}

fn transport(error: http::Error) -> TransportFailure {
    match error {
        http::Error::Timeout(ms) => TransportFailure::Timeout(ms),
        http::Error::Dns(d) => TransportFailure::Dns(d),
        http::Error::ConnectionRefused(d) => TransportFailure::ConnectionRefused(d),
        http::Error::Tls(d) => TransportFailure::Tls(d),
        http::Error::TooManyRedirects(n) => TransportFailure::TooManyRedirects(n),
        http::Error::InvalidRequest(d) => TransportFailure::InvalidRequest(d),
        http::Error::Denied(d) => TransportFailure::Denied(d),
        http::Error::Other(d) => TransportFailure::Other(d),
    }
}

/// The outcome, carrying the keyword so failures name it (`failure.keyword`).
fn outcome(v: Verdict, keyword: &str) -> CheckOutcome {
    let details = if keyword.is_empty() {
        "{}".to_string()
    } else {
        serde_json::json!({"keyword": keyword}).to_string()
    };
    CheckOutcome {
        ok: v.ok,
        reason: v.reason,
        status_code: v.status_code,
        response_time_ms: v.response_time_ms,
        details,
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(KeywordMonitor);
