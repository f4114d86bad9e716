//! The ssl monitor: a TLS handshake with `hostname` on `port`, failing on an untrusted
//! chain, a name mismatch or an expired certificate, and marking the certificate's expiry
//! `warning` or `critical` by days left (`warningDays`, `criticalDays`) or by the share of
//! its lifetime left (`warningPercent`, `criticalPercent`).
//!
//! A percentage keeps a threshold meaningful as certificate lifetimes shrink: 30 days is a
//! quarter of a 90-day certificate's life but two thirds of a 47-day one's.

use crate::time::{self, DAY};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tocsin_plugin_sdk::FieldError;
use tocsin_plugin_sdk::typed::{PluginConfig, TypedConfig, field_error};

pub const DEFAULT_PORT: u16 = 443;
pub const DEFAULT_WARNING_DAYS: i64 = 30;
pub const DEFAULT_CRITICAL_DAYS: i64 = 7;
/// Largest day threshold accepted (ten years).
pub const MAX_DAYS: i64 = 3650;

/// When a threshold is reached.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// At most this many whole days left.
    Days(i64),
    /// At most this share (in percent) of the certificate's lifetime left.
    Percent(f64),
}

/// A validated ssl configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct SslConfig {
    pub hostname: String,
    pub port: u16,
    pub warning: Threshold,
    pub critical: Threshold,
}

/// The fields of an ssl monitor's configuration, as users write them; [`SslConfig`] is
/// what they mean.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
// Built-in: its fields sit at the top level of a monitor object.
#[schemars(title = "ssl monitor", extend("x-tocsin-top-level" = true))]
pub struct SslFields {
    /// Host name (sent as SNI and matched against the certificate) or IP address.
    #[schemars(length(min = 1, max = 253), extend("format" = "hostname"))]
    #[schemars(title = "Host")]
    pub hostname: String,
    /// TCP port of the TLS service.
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535))]
    #[schemars(title = "Port")]
    pub port: u16,
    /// Emit ssl.expiry_warning when at most this many days are left. Not together with
    /// warningPercent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 3650), extend("default" = 30))]
    #[schemars(title = "Warning threshold (days)")]
    pub warning_days: Option<i64>,
    /// Emit ssl.expiry_critical when at most this many days are left. Not together with
    /// criticalPercent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 3650), extend("default" = 7))]
    #[schemars(title = "Critical threshold (days)")]
    pub critical_days: Option<i64>,
    /// Emit ssl.expiry_warning when at most this share of the certificate's lifetime is
    /// left, e.g. 33 for a third.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 100), extend("exclusiveMinimum" = 0))]
    #[schemars(title = "Warning threshold (%)")]
    pub warning_percent: Option<f64>,
    /// Emit ssl.expiry_critical when at most this share of the certificate's lifetime is
    /// left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 100), extend("exclusiveMinimum" = 0))]
    #[schemars(title = "Critical threshold (%)")]
    pub critical_percent: Option<f64>,
}

fn default_port() -> u16 {
    DEFAULT_PORT
}

impl TypedConfig for SslFields {
    /// One form per threshold, and the critical one below the warning one.
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.hostname = self.hostname.trim().to_string();
        let mut problems = Vec::new();
        for (level, days, percent) in [
            ("warning", self.warning_days, self.warning_percent),
            ("critical", self.critical_days, self.critical_percent),
        ] {
            if days.is_some() && percent.is_some() {
                problems.push(field_error(
                    &format!("{level}Percent"),
                    format!("give {level}Days or {level}Percent, not both"),
                ));
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        let meant = SslConfig::from(self.clone());
        match (meant.warning, meant.critical) {
            (Threshold::Days(w), Threshold::Days(c)) if c > w => Err(vec![field_error(
                "criticalDays",
                "must not be greater than warningDays",
            )]),
            (Threshold::Percent(w), Threshold::Percent(c)) if c > w => Err(vec![field_error(
                "criticalPercent",
                "must not be greater than warningPercent",
            )]),
            _ => Ok(self),
        }
    }
}

impl From<SslFields> for SslConfig {
    fn from(f: SslFields) -> SslConfig {
        let threshold =
            |days: Option<i64>, percent: Option<f64>, default_days: i64| match (days, percent) {
                (None, Some(p)) => Threshold::Percent(p),
                (d, _) => Threshold::Days(d.unwrap_or(default_days)),
            };
        SslConfig {
            hostname: f.hostname,
            port: f.port,
            warning: threshold(f.warning_days, f.warning_percent, DEFAULT_WARNING_DAYS),
            critical: threshold(f.critical_days, f.critical_percent, DEFAULT_CRITICAL_DAYS),
        }
    }
}

/// Parse and validate a configuration given as JSON text.
pub fn parse(text: &str) -> Result<SslConfig, Vec<FieldError>> {
    SslFields::parse(text).map(SslConfig::from)
}

/// The normalised configuration.
pub fn to_json(c: &SslConfig) -> Value {
    let mut o = Map::new();
    o.insert("hostname".into(), Value::from(c.hostname.clone()));
    o.insert("port".into(), Value::from(c.port));
    for (level, t) in [("warning", c.warning), ("critical", c.critical)] {
        match t {
            Threshold::Days(d) => o.insert(format!("{level}Days"), Value::from(d)),
            Threshold::Percent(p) => o.insert(format!("{level}Percent"), Value::from(p)),
        };
    }
    Value::Object(o)
}

/// The JSON Schema of the configuration.
pub fn schema() -> Value {
    SslFields::schema()
}

/// The leaf certificate and its validation, as the host reported them.
#[derive(Debug, Clone, PartialEq)]
pub struct Inspection {
    pub subject: String,
    pub issuer: String,
    pub sans: Vec<String>,
    /// Unix seconds.
    pub not_before: i64,
    /// Unix seconds.
    pub not_after: i64,
    pub serial: String,
    pub chain_valid: bool,
    pub hostname_matches: bool,
    pub validation_error: Option<String>,
    pub protocol: String,
    pub elapsed_ms: u32,
}

/// How close a certificate is to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    Fine,
    Warning,
    Critical,
}

impl Expiry {
    pub fn as_str(self) -> Option<&'static str> {
        match self {
            Expiry::Fine => None,
            Expiry::Warning => Some("warning"),
            Expiry::Critical => Some("critical"),
        }
    }
}

/// Whole days left until `not_after` (negative once expired).
pub fn days_remaining(not_after: i64, now: i64) -> i64 {
    (not_after - now).div_euclid(DAY)
}

fn reached(t: Threshold, not_before: i64, not_after: i64, now: i64) -> bool {
    match t {
        Threshold::Days(d) => days_remaining(not_after, now) <= d,
        Threshold::Percent(p) => {
            let lifetime = (not_after - not_before).max(1) as f64;
            let left = (not_after - now) as f64;
            left * 100.0 / lifetime <= p
        }
    }
}

/// Where the certificate stands against the configured thresholds.
pub fn expiry(c: &SslConfig, not_before: i64, not_after: i64, now: i64) -> Expiry {
    if reached(c.critical, not_before, not_after, now) {
        Expiry::Critical
    } else if reached(c.warning, not_before, not_after, now) {
        Expiry::Warning
    } else {
        Expiry::Fine
    }
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub ok: bool,
    pub reason: Option<String>,
    pub response_time_ms: Option<u32>,
    /// JSON object of facts: `certificate` and, when a threshold is reached, `expiry`.
    pub details: Value,
}

/// Judge an inspection at time `now` (Unix seconds).
pub fn judge(c: &SslConfig, i: &Inspection, now: i64) -> Verdict {
    let days = days_remaining(i.not_after, now);
    let level = expiry(c, i.not_before, i.not_after, now);
    let mut certificate = json!({
        "subject": i.subject,
        "issuer": i.issuer,
        "sans": i.sans,
        "serial": i.serial,
        "notBefore": time::rfc3339(i.not_before),
        "expiresAt": time::rfc3339(i.not_after),
        "daysRemaining": days,
        "chainValid": i.chain_valid,
        "hostnameMatches": i.hostname_matches,
        "protocol": i.protocol,
    });
    if let Some(e) = &i.validation_error {
        certificate["validationError"] = Value::from(e.clone());
    }
    let mut details = json!({ "certificate": certificate });
    if let Some(l) = level.as_str() {
        details["expiry"] = Value::from(l);
    }
    let reason = if now >= i.not_after {
        Some(format!(
            "Certificate expired on {} ({} day{} ago)",
            time::date(i.not_after),
            -days,
            if days == -1 { "" } else { "s" }
        ))
    } else if now < i.not_before {
        Some(format!(
            "Certificate is not valid until {}",
            time::rfc3339(i.not_before)
        ))
    } else if !i.chain_valid {
        Some(format!(
            "Certificate is not trusted: {}",
            i.validation_error
                .as_deref()
                .unwrap_or("the chain does not validate")
        ))
    } else if !i.hostname_matches {
        Some(format!(
            "Certificate does not match {}: {}",
            c.hostname,
            i.validation_error
                .as_deref()
                .unwrap_or("the name is not in the certificate")
        ))
    } else {
        None
    };
    Verdict {
        ok: reason.is_none(),
        reason,
        response_time_ms: Some(i.elapsed_ms),
        details,
    }
}

/// A failed handshake or connection, as a verdict.
pub fn failed(c: &SslConfig, reason: &str) -> Verdict {
    Verdict {
        ok: false,
        reason: Some(format!("{}:{}: {reason}", c.hostname, c.port)),
        response_time_ms: None,
        details: json!({}),
    }
}

/// Read through [`SslFields`]: its thresholds come in two forms (days or a share of the
/// certificate's lifetime), of which the stored form keeps the one given.
impl PluginConfig for SslConfig {
    fn schema() -> Value {
        schema()
    }

    fn parse(text: &str) -> Result<Self, Vec<FieldError>> {
        parse(text)
    }

    fn canonical(&self) -> Value {
        to_json(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_795_253_400;

    fn cert(not_before: i64, not_after: i64) -> Inspection {
        Inspection {
            subject: "CN=shop.test".into(),
            issuer: "CN=Test CA".into(),
            sans: vec!["shop.test".into()],
            not_before,
            not_after,
            serial: "0abc".into(),
            chain_valid: true,
            hostname_matches: true,
            validation_error: None,
            protocol: "TLSv1.3".into(),
            elapsed_ms: 12,
        }
    }

    #[test]
    fn defaults_and_round_trip() {
        let c = parse(r#"{"hostname":"shop.test"}"#).expect("valid");
        assert_eq!(c.port, 443);
        assert_eq!(c.warning, Threshold::Days(30));
        assert_eq!(c.critical, Threshold::Days(7));
        assert_eq!(parse(&to_json(&c).to_string()), Ok(c));
        let p = parse(r#"{"hostname":"shop.test","warningPercent":33.3,"criticalDays":3}"#)
            .expect("valid");
        assert_eq!(p.warning, Threshold::Percent(33.3));
        assert_eq!(parse(&to_json(&p).to_string()), Ok(p));
    }

    #[test]
    fn refuses_contradictions_and_wrong_types() {
        let fields = |text: &str| -> Vec<String> {
            parse(text)
                .expect_err("invalid")
                .into_iter()
                .map(|p| p.field)
                .collect()
        };
        assert_eq!(
            fields(r#"{"hostname":"a","warningDays":10,"warningPercent":20}"#),
            ["warningPercent"]
        );
        assert_eq!(
            fields(r#"{"hostname":"a","warningDays":5,"criticalDays":6}"#),
            ["criticalDays"]
        );
        assert_eq!(
            fields(r#"{"hostname":"a","warningPercent":10,"criticalPercent":20}"#),
            ["criticalPercent"]
        );
        assert_eq!(
            fields(r#"{"hostname":"a","port":0,"criticalPercent":0}"#),
            ["port", "criticalPercent"]
        );
        assert_eq!(fields(r#"{"port":"443"}"#), ["hostname", "port"]);
    }

    #[test]
    fn expiry_by_days_and_by_share_of_lifetime() {
        let days = parse(r#"{"hostname":"a"}"#).expect("valid");
        let start = NOW - 80 * DAY;
        assert_eq!(expiry(&days, start, NOW + 40 * DAY, NOW), Expiry::Fine);
        assert_eq!(expiry(&days, start, NOW + 30 * DAY, NOW), Expiry::Warning);
        assert_eq!(expiry(&days, start, NOW + 5 * DAY, NOW), Expiry::Critical);
        // A 47-day certificate with 20 days left has 42% of its life left.
        let share =
            parse(r#"{"hostname":"a","warningPercent":50,"criticalPercent":10}"#).expect("valid");
        let issued = NOW - 27 * DAY;
        assert_eq!(expiry(&share, issued, NOW + 20 * DAY, NOW), Expiry::Warning);
        assert_eq!(
            expiry(&share, NOW - 10 * DAY, NOW + 40 * DAY, NOW),
            Expiry::Fine
        );
        assert_eq!(
            expiry(&share, NOW - 43 * DAY, NOW + 4 * DAY, NOW),
            Expiry::Critical
        );
    }

    #[test]
    fn judges_trust_names_and_expiry() {
        let c = parse(r#"{"hostname":"shop.test"}"#).expect("valid");
        let good = cert(NOW - DAY, NOW + 90 * DAY);
        let v = judge(&c, &good, NOW);
        assert!(v.ok, "{v:?}");
        assert!(v.details.get("expiry").is_none());
        assert_eq!(v.details["certificate"]["daysRemaining"], 90);

        let soon = cert(NOW - 85 * DAY, NOW + 5 * DAY);
        let v = judge(&c, &soon, NOW);
        assert!(v.ok);
        assert_eq!(v.details["expiry"], "critical");
        assert_eq!(
            v.details["certificate"]["expiresAt"],
            "2026-11-26T09:30:00.000Z"
        );

        let expired = cert(NOW - 90 * DAY, NOW - 2 * DAY);
        let v = judge(&c, &expired, NOW);
        assert_eq!(
            v.reason.as_deref(),
            Some("Certificate expired on 2026-11-19 (2 days ago)")
        );

        let mut untrusted = good.clone();
        untrusted.chain_valid = false;
        untrusted.validation_error = Some("unknown issuer".into());
        let v = judge(&c, &untrusted, NOW);
        assert_eq!(
            v.reason.as_deref(),
            Some("Certificate is not trusted: unknown issuer")
        );

        let mut other_name = good;
        other_name.hostname_matches = false;
        let v = judge(&c, &other_name, NOW);
        assert!(!v.ok);
        assert!(
            v.reason
                .as_deref()
                .unwrap_or("")
                .starts_with("Certificate does not match shop.test")
        );
    }
}
