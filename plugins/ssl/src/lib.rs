//! The `ssl` monitor: a TLS handshake through the host's `tls` interface. Fails on an
//! untrusted chain, a name mismatch or an expired certificate; reports the certificate and,
//! when a threshold is reached, `"expiry": "warning" | "critical"` in its details, from
//! which the server emits `ssl.expiry_warning` / `ssl.expiry_critical` once per
//! certificate and threshold.

use tocsin_net_checks::ssl::{self, Inspection, SslConfig};
use tocsin_plugin_sdk::{Capability, CheckContext, Info, Monitor, Outcome, export_monitor, tls};

struct SslMonitor;

impl Monitor for SslMonitor {
    type Config = SslConfig;

    fn info() -> Info {
        Info {
            name: "ssl",
            version: env!("CARGO_PKG_VERSION"),
            description: "Completes a TLS handshake, checks the certificate's chain, name and expiry, and warns before it expires.",
            capabilities: &[Capability::Tls],
        }
    }

    fn check(config: SslConfig, ctx: &CheckContext) -> Outcome {
        let result = tls::inspect(&tls::InspectRequest {
            host: config.hostname.clone(),
            port: config.port,
            server_name: None,
            timeout_ms: ctx.timeout_ms,
        });
        let verdict = match result {
            Ok(r) => {
                let inspection = Inspection {
                    subject: r.leaf.subject,
                    issuer: r.leaf.issuer,
                    sans: r.leaf.sans,
                    not_before: r.leaf.not_before,
                    not_after: r.leaf.not_after,
                    serial: r.leaf.serial,
                    chain_valid: r.chain_valid,
                    hostname_matches: r.hostname_matches,
                    validation_error: r.validation_error,
                    protocol: r.protocol,
                    elapsed_ms: r.elapsed_ms,
                };
                ssl::judge(&config, &inspection, now())
            }
            Err(e) => {
                let reason = match e {
                    tls::Error::Timeout(ms) => format!("timed out after {ms} ms"),
                    tls::Error::Dns(d)
                    | tls::Error::ConnectionRefused(d)
                    | tls::Error::Handshake(d)
                    | tls::Error::InvalidRequest(d)
                    | tls::Error::Denied(d)
                    | tls::Error::Other(d) => d,
                };
                ssl::failed(&config, &reason)
            }
        };
        Outcome {
            ok: verdict.ok,
            reason: verdict.reason,
            status_code: None,
            response_time_ms: verdict.response_time_ms,
            details: verdict.details,
        }
    }
}

/// Unix seconds from the wall clock the host provides.
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

export_monitor!(SslMonitor);
