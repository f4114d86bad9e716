//! The `ping` monitor: ICMP echo requests through the host's `net` interface. Passes when
//! any reply arrives; the response time is the mean round trip.

use tocsin_net_checks::ping::{self, PingConfig as Config, PingFailure, Replies};
use tocsin_plugin_sdk::{Capability, CheckContext, Info, Monitor, Outcome, export_monitor, net};

struct PingMonitor;

impl Monitor for PingMonitor {
    type Config = Config;

    fn info() -> Info {
        Info {
            name: "ping",
            version: env!("CARGO_PKG_VERSION"),
            description: "Sends ICMP echo requests (IPv4 or IPv6) and passes when a reply arrives.",
            capabilities: &[Capability::Net],
        }
    }

    fn check(config: Config, ctx: &CheckContext) -> Outcome {
        let result = net::ping(&net::PingRequest {
            host: config.hostname.clone(),
            count: config.packet_count,
            timeout_ms: ctx.timeout_ms,
        })
        .map(|r| Replies {
            address: r.address,
            sent: r.sent,
            received: r.received,
            rtts_us: r.rtts_us,
        })
        .map_err(|e| match e {
            net::Error::Timeout(ms) => PingFailure::Timeout(ms),
            net::Error::Dns(d) => PingFailure::Dns(d),
            net::Error::NotPermitted(d) => PingFailure::NotPermitted(d),
            net::Error::ConnectionRefused(d)
            | net::Error::InvalidRequest(d)
            | net::Error::Denied(d)
            | net::Error::Other(d)
            | net::Error::Tls(d)
            | net::Error::Limit(d)
            | net::Error::Closed(d) => PingFailure::Other(d),
        });
        let v = ping::judge(&config, result);
        Outcome {
            ok: v.ok,
            reason: v.reason,
            status_code: None,
            response_time_ms: v.response_time_ms,
            details: v.details,
        }
    }
}

export_monitor!(PingMonitor);
