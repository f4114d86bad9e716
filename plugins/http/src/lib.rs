//! The `http` monitor: one HTTP request per check, judged against the monitor's expectations.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

use tocsin_http_checks::{config, verdict};

wit_bindgen::generate!({
    path: "../../wit/v0.1.0",
    world: "monitor",
});

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::http;
use tocsin::plugin::types::{Capability, FieldError, PluginInfo, PluginKind};
use verdict::{Exchange, TransportFailure, Verdict};

/// The body is read up to 1 MiB, as the server promises.
const MAX_BODY_BYTES: u32 = 1024 * 1024;

struct HttpMonitor;

impl Guest for HttpMonitor {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "http".into(),
            kind: PluginKind::Monitor,
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Sends an HTTP request and checks the status, body and response time."
                .into(),
            config_schema: config::schema().to_string(),
            capabilities: vec![Capability::Http],
        }
    }

    fn validate_config(text: String) -> Result<String, Vec<FieldError>> {
        match config::parse(&text) {
            Ok(c) => Ok(serde_json::to_string(&c).unwrap_or_default()),
            Err(problems) => Err(problems
                .into_iter()
                .map(|p| FieldError {
                    field: p.field,
                    message: p.message,
                })
                .collect()),
        }
    }

    fn check(req: CheckRequest) -> CheckOutcome {
        let config = match config::parse(&req.config) {
            Ok(c) => c,
            Err(problems) => {
                let first = problems
                    .first()
                    .map(|p| format!("{} {}", p.field, p.message));
                return outcome(Verdict {
                    ok: false,
                    reason: Some(format!(
                        "Invalid configuration: {}",
                        first.unwrap_or_default()
                    )),
                    status_code: None,
                    response_time_ms: None,
                });
            }
        };
        let request = http::Request {
            method: config.method.clone(),
            url: config.url.clone(),
            headers: config
                .headers
                .iter()
                .map(|(name, value)| tocsin::plugin::types::Header {
                    name: name.clone(),
                    value: value.clone(),
                })
                .collect(),
            body: config.body.as_ref().map(|b| b.as_bytes().to_vec()),
            timeout_ms: req.timeout_ms,
            follow_redirects: config.follow_redirects,
            max_redirects: config.max_redirects,
            // HEAD has no body; skip reading one when nothing looks at it.
            max_body_bytes: if config.body_contains.is_some() || config.body_not_contains.is_some()
            {
                MAX_BODY_BYTES
            } else {
                0
            },
        };
        let verdict = match http::send(&request) {
            Ok(response) => verdict::judge(
                &config,
                &Exchange {
                    status: response.status,
                    body: &response.body,
                    elapsed_ms: response.elapsed_ms,
                },
            ),
            Err(error) => verdict::transport_failure(&config, &transport(error)),
        };
        outcome(verdict)
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

fn outcome(v: Verdict) -> CheckOutcome {
    CheckOutcome {
        ok: v.ok,
        reason: v.reason,
        status_code: v.status_code,
        response_time_ms: v.response_time_ms,
        details: "{}".into(),
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(HttpMonitor);
