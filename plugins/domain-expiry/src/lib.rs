//! The `domain-expiry` monitor: asks RDAP (RFC 9082, 9083) when a domain's registration
//! expires, and fails when at most `criticalDays` are left (and says `warning` in its
//! details from `warningDays`). By default it asks rdap.org, which redirects to the
//! registry that is authoritative for the domain's top-level domain; `rdapServer` names
//! a registry's RDAP base URL instead.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Capability, CheckContext, FieldError, Header, Info, Monitor, Outcome, export_monitor, http,
};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "domain-expiry monitor")]
pub struct DomainConfig {
    /// The registered domain, e.g. example.com.
    #[schemars(length(min = 3, max = 253))]
    #[schemars(title = "Domain")]
    pub domain: String,
    /// Say "warning" from this many days before expiry.
    #[serde(default = "default_warning")]
    #[schemars(range(min = 1, max = 365))]
    #[schemars(title = "Warning threshold (days)")]
    pub warning_days: u32,
    /// Fail from this many days before expiry.
    #[serde(default = "default_critical")]
    #[schemars(range(min = 0, max = 365))]
    #[schemars(title = "Critical threshold (days)")]
    pub critical_days: u32,
    /// An RDAP base URL (e.g. https://rdap.verisign.com/com/v1); https://rdap.org when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 2048))]
    #[schemars(title = "RDAP server URL")]
    pub rdap_server: Option<String>,
}

fn default_warning() -> u32 {
    30
}

fn default_critical() -> u32 {
    7
}

impl TypedConfig for DomainConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.domain = self
            .domain
            .trim()
            .trim_end_matches('.')
            .to_ascii_lowercase();
        self.rdap_server = self
            .rdap_server
            .map(|s| s.trim().trim_end_matches('/').to_string());
        let mut problems = Vec::new();
        let labels: Vec<&str> = self.domain.split('.').collect();
        let valid = labels.len() >= 2
            && labels.iter().all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !valid {
            problems.push(field_error(
                "domain",
                "must be a domain name such as example.com",
            ));
        }
        if self.critical_days >= self.warning_days {
            problems.push(field_error("criticalDays", "must be less than warningDays"));
        }
        if let Some(s) = &self.rdap_server
            && !(s.starts_with("https://") || s.starts_with("http://"))
        {
            problems.push(field_error("rdapServer", "must be an https:// URL"));
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Unix seconds of an RFC 3339 date-time (`2027-08-13T04:00:00Z`, offsets and fractions
/// allowed).
pub fn parse_time(text: &str) -> Option<i64> {
    let t = text.trim();
    let num = |a: usize, b: usize| t.get(a..b)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    if t.get(4..5)? != "-" || t.get(7..8)? != "-" {
        return None;
    }
    let (h, mi, s) = if t.len() >= 19 {
        (num(11, 13)?, num(14, 16)?, num(17, 19)?)
    } else {
        (0, 0, 0)
    };
    let mut rest = t.get(19..).unwrap_or("");
    if let Some(frac) = rest.strip_prefix('.') {
        rest = frac.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "" | "Z" | "z" => 0,
        o if o.len() == 6 => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            sign * (o.get(1..3)?.parse::<i64>().ok()? * 3600
                + o.get(4..6)?.parse::<i64>().ok()? * 60)
        }
        _ => return None,
    };
    Some(days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset)
}

/// The registration's expiry from an RDAP domain object: the `expiration` event.
pub fn expiry(rdap: &Value) -> Option<(String, i64)> {
    rdap["events"].as_array()?.iter().find_map(|e| {
        (e["eventAction"] == "expiration")
            .then(|| e["eventDate"].as_str())
            .flatten()
            .and_then(|d| parse_time(d).map(|t| (d.to_string(), t)))
    })
}

/// The verdict for `days` left.
pub fn judge(c: &DomainConfig, expires_at: &str, days: i64) -> Outcome {
    let state = if days <= i64::from(c.critical_days) {
        "critical"
    } else if days <= i64::from(c.warning_days) {
        "warning"
    } else {
        "ok"
    };
    let details = json!({"expiresAt": expires_at, "daysRemaining": days, "expiry": state});
    if days < 0 {
        return Outcome::fail(format!(
            "The registration of {} expired {} days ago ({expires_at})",
            c.domain, -days
        ))
        .with_details(details);
    }
    if state == "critical" {
        return Outcome::fail(format!(
            "The registration of {} expires in {days} days ({expires_at})",
            c.domain
        ))
        .with_details(details);
    }
    Outcome::pass(None).with_details(details)
}

struct DomainExpiry;

impl Monitor for DomainExpiry {
    type Config = DomainConfig;

    fn info() -> Info {
        Info {
            name: "domain-expiry",
            version: env!("CARGO_PKG_VERSION"),
            description: "Asks RDAP when a domain's registration expires and fails when it is close.",
            capabilities: &[Capability::Http],
        }
    }

    fn check(c: DomainConfig, ctx: &CheckContext) -> Outcome {
        let base = c.rdap_server.as_deref().unwrap_or("https://rdap.org");
        let request = http::Request {
            method: "GET".into(),
            url: format!("{base}/domain/{}", c.domain),
            headers: vec![Header {
                name: "Accept".into(),
                value: "application/rdap+json, application/json".into(),
            }],
            body: None,
            timeout_ms: ctx.timeout_ms,
            follow_redirects: true,
            max_redirects: 5,
            max_body_bytes: 512 * 1024,
            version: http::HttpVersion::Any,
        };
        let response = match http::send(&request) {
            Ok(r) => r,
            Err(e) => return Outcome::fail(format!("RDAP lookup of {} failed: {e:?}", c.domain)),
        };
        if response.status == 404 {
            return Outcome::fail(format!(
                "RDAP does not know {} (404): not registered, or the registry has no RDAP",
                c.domain
            ))
            .with_status(404);
        }
        if response.status != 200 {
            return Outcome::fail(format!(
                "RDAP lookup of {} answered {}",
                c.domain, response.status
            ))
            .with_status(response.status);
        }
        let Ok(rdap) = serde_json::from_slice::<Value>(&response.body) else {
            return Outcome::fail(format!("RDAP's answer for {} is not JSON", c.domain));
        };
        let Some((date, at)) = expiry(&rdap) else {
            return Outcome::fail(format!(
                "RDAP's answer for {} has no expiration date",
                c.domain
            ));
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        judge(&c, &date, (at - now).div_euclid(86_400))
            .with_time(response.elapsed_ms)
            .with_status(200)
    }
}

export_monitor!(DomainExpiry);

#[cfg(test)]
mod tests {
    use super::*;
    use tocsin_plugin_sdk::typed::PluginConfig;

    #[test]
    fn rfc3339_dates_are_read() {
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_time("2027-08-13T04:00:00Z"), Some(1_818_129_600));
        assert_eq!(
            parse_time("2027-08-13T06:00:00.123+02:00"),
            Some(1_818_129_600)
        );
        assert_eq!(parse_time("2027-08-13"), Some(1_818_115_200));
        assert_eq!(parse_time("next year"), None);
    }

    #[test]
    fn the_expiration_event_decides() {
        let rdap = serde_json::json!({"events": [
            {"eventAction": "registration", "eventDate": "1995-08-14T04:00:00Z"},
            {"eventAction": "expiration", "eventDate": "2027-08-13T04:00:00Z"}]});
        assert_eq!(expiry(&rdap).map(|e| e.1), Some(1_818_129_600));
        let c = DomainConfig::parse(r#"{"domain":"Example.COM."}"#).expect("valid");
        assert_eq!(c.domain, "example.com");
        assert!(judge(&c, "d", 31).ok);
        let w = judge(&c, "d", 30);
        assert!(w.ok && w.details["expiry"] == "warning");
        let f = judge(&c, "2026-12-01", 7);
        assert_eq!(
            f.reason.as_deref(),
            Some("The registration of example.com expires in 7 days (2026-12-01)")
        );
        assert!(DomainConfig::parse(r#"{"domain":"localhost"}"#).is_err());
        assert!(
            DomainConfig::parse(r#"{"domain":"a.com","warningDays":5,"criticalDays":5}"#).is_err()
        );
    }
}
