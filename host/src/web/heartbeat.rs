//! A heartbeat monitor's set-up on its page: the ping URL, what is expected (a period or a
//! cron schedule, and the grace), the last ping, and lines to copy that call the URL from
//! a shell, a crontab and a systemd service.

use super::span;
use serde_json::{Map, Value};

/// What the monitor page shows of a heartbeat monitor (to those who may write: the URL
/// changes the monitor's state).
pub struct Setup {
    pub url: String,
    /// "every 5 min" or "on `0 3 * * *` (Europe/Paris)".
    pub expected: String,
    /// "5 min".
    pub grace: String,
    /// "3 min ago", or "never".
    pub last_ping: String,
    pub curl: String,
    pub cron: String,
    pub systemd: String,
}

/// The crontab schedule that runs a job to match the monitor: its own cron, or one that
/// runs at least as often as its period (a crontab says whole minutes, hours or days, so
/// a 45-minute period runs at :00 and :45, never more than 45 minutes apart).
fn schedule(config: &Map<String, Value>) -> String {
    if let Some(cron) = config.get("cron").and_then(Value::as_str) {
        return cron.to_string();
    }
    match config.get("period").and_then(Value::as_i64).unwrap_or(0) {
        p if p < 120 => "* * * * *".to_string(),
        p if p < 3600 => format!("*/{} * * * *", p / 60),
        p if p < 7200 => "0 * * * *".to_string(),
        p if p < 86_400 => format!("0 */{} * * *", p / 3600),
        _ => "0 3 * * *".to_string(),
    }
}

/// The set-up of a heartbeat monitor whose stored configuration is `config` (JSON text).
pub fn setup(url: String, config: &str, default_grace: i64, last_ping: Option<String>) -> Setup {
    let config: Map<String, Value> = serde_json::from_str(config).unwrap_or_default();
    let expected = match (
        config.get("cron").and_then(Value::as_str),
        config.get("period").and_then(Value::as_i64),
    ) {
        (Some(cron), _) => format!(
            "on the schedule {cron} ({})",
            config
                .get("timezone")
                .and_then(Value::as_str)
                .unwrap_or("UTC")
        ),
        (None, Some(period)) => format!("every {}", span(period)),
        (None, None) => "a ping".to_string(),
    };
    let grace = span(
        config
            .get("grace")
            .and_then(Value::as_i64)
            .unwrap_or(default_grace),
    );
    let quiet = "curl -fsS -m 10 --retry 3 -o /dev/null";
    Setup {
        curl: format!("{quiet} {url}"),
        cron: format!(
            "{} /path/to/job.sh && {quiet} {url} || {quiet} {url}/fail",
            schedule(&config)
        ),
        systemd: format!(
            "ExecStartPre=-/usr/bin/{quiet} {url}/start\nExecStopPost=/bin/sh -c '{quiet} {url}/$EXIT_STATUS'"
        ),
        url,
        expected,
        grace,
        last_ping: last_ping.unwrap_or_else(|| "never".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_becomes_a_crontab_schedule_where_one_can_say_it() {
        let of = |c: &str| schedule(&serde_json::from_str(c).expect("JSON"));
        assert_eq!(of(r#"{"period": 60}"#), "* * * * *");
        assert_eq!(of(r#"{"period": 300}"#), "*/5 * * * *");
        assert_eq!(of(r#"{"period": 2700}"#), "*/45 * * * *");
        assert_eq!(of(r#"{"period": 5400}"#), "0 * * * *");
        assert_eq!(of(r#"{"period": 3600}"#), "0 * * * *");
        assert_eq!(of(r#"{"period": 21600}"#), "0 */6 * * *");
        assert_eq!(of(r#"{"period": 86400}"#), "0 3 * * *");
        assert_eq!(
            of(r#"{"cron": "30 2 * * 1", "timezone": "Europe/Paris"}"#),
            "30 2 * * 1"
        );
    }

    #[test]
    fn the_lines_call_the_ping_url() {
        let s = setup(
            "https://t.example/ping/abc".into(),
            r#"{"period": 600, "grace": 120}"#,
            300,
            None,
        );
        assert_eq!(s.expected, "every 10 min");
        assert_eq!(s.grace, "2 min");
        assert_eq!(s.last_ping, "never");
        assert_eq!(
            s.curl,
            "curl -fsS -m 10 --retry 3 -o /dev/null https://t.example/ping/abc"
        );
        assert!(s.cron.starts_with("*/10 * * * * /path/to/job.sh && curl"));
        assert!(s.cron.ends_with("https://t.example/ping/abc/fail"));
        assert!(s.systemd.contains("https://t.example/ping/abc/start"));
        assert!(
            s.systemd
                .contains("https://t.example/ping/abc/$EXIT_STATUS")
        );
    }
}
