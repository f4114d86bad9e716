//! The `http` monitor: one HTTP request per check, judged against the monitor's expectations.

use tocsin_http_checks::config::HttpConfig;
use tocsin_http_checks::exchange::{self, MAX_BODY_BYTES};
use tocsin_http_checks::verdict::{self, Exchange};
use tocsin_plugin_sdk::{Capability, CheckContext, Info, Monitor, Outcome, export_monitor, http};

struct HttpMonitor;

impl Monitor for HttpMonitor {
    type Config = HttpConfig;

    fn info() -> Info {
        Info {
            name: "http",
            version: env!("CARGO_PKG_VERSION"),
            description: "Sends an HTTP request and checks the status, body and response time.",
            capabilities: &[Capability::Http],
        }
    }

    fn check(config: HttpConfig, ctx: &CheckContext) -> Outcome {
        // Skip reading a body when nothing looks at it.
        let wants_body = config.body_contains.is_some()
            || config.body_not_contains.is_some()
            || !config.json_assertions.is_empty();
        let request = exchange::request(
            &config,
            ctx.timeout_ms,
            if wants_body { MAX_BODY_BYTES } else { 0 },
        );
        let v = match http::send(&request) {
            Ok(response) => verdict::judge(
                &config,
                &Exchange {
                    status: response.status,
                    body: &response.body,
                    body_truncated: response.body_truncated,
                    elapsed_ms: response.elapsed_ms,
                },
            ),
            Err(error) => verdict::transport_failure(&config, &error.into()),
        };
        Outcome {
            ok: v.ok,
            reason: v.reason,
            status_code: v.status_code,
            response_time_ms: v.response_time_ms,
            details: serde_json::json!({}),
        }
    }
}

export_monitor!(HttpMonitor);
