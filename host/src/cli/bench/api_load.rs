//! API throughput under load, measured with `wrk` (the Debian package of that name): the
//! benchmark starts the real API router on loopback and runs `wrk` against it.

use std::process::Command;
use std::time::Duration;

/// What `wrk` reported for one URL.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiLoad {
    pub path: String,
    pub requests_per_sec: f64,
    pub p50: Option<Duration>,
    pub p99: Option<Duration>,
    pub requests: u64,
    /// Answers that were not 2xx or 3xx.
    pub errors: u64,
}

/// Whether `wrk` can be run.
pub fn available() -> bool {
    Command::new("wrk")
        .arg("--version")
        .output()
        .is_ok_and(|o| !o.stdout.is_empty() || !o.stderr.is_empty())
}

/// Load `base` + `path` with `connections` connections over `threads` threads for
/// `duration`, sending `Authorization: Bearer key`.
pub fn run(
    base: &str,
    path: &str,
    key: &str,
    threads: u32,
    connections: u32,
    duration: Duration,
) -> anyhow::Result<ApiLoad> {
    let output = Command::new("wrk")
        .args([
            "--latency",
            "-t",
            &threads.to_string(),
            "-c",
            &connections.to_string(),
            "-d",
            &format!("{}s", duration.as_secs().max(1)),
            "-H",
            &format!("Authorization: Bearer {key}"),
            &format!("{base}{path}"),
        ])
        .output()?;
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        anyhow::bail!(
            "wrk failed: {}{}",
            text,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    parse(path, &text).ok_or_else(|| anyhow::anyhow!("cannot read wrk's report:\n{text}"))
}

/// Read wrk's `--latency` report.
pub fn parse(path: &str, text: &str) -> Option<ApiLoad> {
    let after = |prefix: &str| {
        text.lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(prefix))
            .map(str::trim)
    };
    let requests_per_sec: f64 = after("Requests/sec:")?.parse().ok()?;
    let requests = text
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let errors = after("Non-2xx or 3xx responses:")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    Some(ApiLoad {
        path: path.to_string(),
        requests_per_sec,
        p50: after("50%").and_then(duration),
        p99: after("99%").and_then(duration),
        requests,
        errors,
    })
}

/// wrk's durations: `812.00us`, `5.10ms`, `1.20s`.
fn duration(text: &str) -> Option<Duration> {
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else {
        return None;
    };
    let value: f64 = number.trim().parse().ok()?;
    Some(Duration::from_secs_f64(value * scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "Running 10s test @ http://127.0.0.1:9/v1/monitors
  2 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     5.20ms    1.03ms  20.00ms   80.00%
    Req/Sec     3.08k   200.00     3.50k    70.00%
  Latency Distribution
     50%  812.00us
     75%    5.50ms
     90%    6.20ms
     99%    1.20s
  61234 requests in 10.00s, 100.00MB read
  Non-2xx or 3xx responses: 12
Requests/sec:   6123.40
Transfer/sec:     10.00MB
";

    #[test]
    fn reads_a_report() {
        let r = parse("/v1/monitors", REPORT).expect("parsed");
        assert_eq!(r.requests_per_sec, 6123.4);
        assert_eq!(r.requests, 61234);
        assert_eq!(r.errors, 12);
        assert_eq!(r.p50, Some(Duration::from_micros(812)));
        assert_eq!(r.p99, Some(Duration::from_millis(1200)));
        assert_eq!(parse("/", "garbage"), None);
    }
}
