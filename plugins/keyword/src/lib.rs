//! The `keyword` monitor: an http check that also requires a keyword to be present in (or
//! absent from) the response body.

pub mod rules;

use rules::KeywordConfig;
use tocsin_http_checks::exchange::{self, MAX_BODY_BYTES};
use tocsin_http_checks::verdict::{self, Exchange, Verdict};
use tocsin_plugin_sdk::{Capability, CheckContext, Info, Monitor, Outcome, export_monitor, http};

struct KeywordMonitor;

impl Monitor for KeywordMonitor {
    type Config = KeywordConfig;

    fn info() -> Info {
        Info {
            name: "keyword",
            version: env!("CARGO_PKG_VERSION"),
            description: "Sends an HTTP request and checks that a keyword is present in, or absent from, the response.",
            capabilities: &[Capability::Http],
        }
    }

    fn check(config: KeywordConfig, ctx: &CheckContext) -> Outcome {
        let h = &config.http;
        let request = exchange::request(h, ctx.timeout_ms, MAX_BODY_BYTES);
        let v = match http::send(&request) {
            Ok(response) => {
                let exchange = Exchange {
                    status: response.status,
                    body: &response.body,
                    body_truncated: response.body_truncated,
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
            Err(e) => verdict::transport_failure(h, &e.into()),
        };
        // Failures name the keyword (`failure.keyword` in events).
        Outcome {
            ok: v.ok,
            reason: v.reason,
            status_code: v.status_code,
            response_time_ms: v.response_time_ms,
            details: serde_json::json!({"keyword": config.keyword}),
        }
    }
}

export_monitor!(KeywordMonitor);
