//! Certificate expiry notices. A monitor plugin that inspects a certificate reports it in
//! its outcome's details, and `"expiry": "warning"` or `"critical"` once a threshold is
//! reached:
//!
//! ```json
//! {"certificate": {"serial": "0abc", "expiresAt": "2026-11-26T09:30:00.000Z",
//!                  "daysRemaining": 5, "issuer": "CN=Test CA"},
//!  "expiry": "critical"}
//! ```
//!
//! The engine then emits `ssl.expiry_warning` / `ssl.expiry_critical` to the monitor's
//! channels, once per certificate serial and threshold, in the transaction that records
//! the check. A critical notice also marks the warning as given, so a certificate first
//! seen with five days left causes one message, not two.

use super::incidents::{self, Ctx};
use super::policy::{Rules, Target};
use crate::outbox::events::{self, EventBody, kind};
use crate::outbox::{self, Origin};
use crate::store::{IncidentRow, MonitorRow, StoreError, Tx};
use serde_json::{Map, Value, json};

/// Longest serial accepted (hexadecimal of a 20-byte serial is 40; room for odd ones).
const MAX_SERIAL_CHARS: usize = 128;

/// What a check reported about a certificate that reached a threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub level: Level,
    pub serial: String,
    /// The payload's `ssl` object: `expiresAt`, `daysRemaining`, `issuer`.
    pub ssl: Value,
}

/// Expiry thresholds, in order of urgency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Warning,
    Critical,
}

impl Level {
    fn as_str(self) -> &'static str {
        match self {
            Level::Warning => "warning",
            Level::Critical => "critical",
        }
    }

    fn event(self) -> &'static str {
        match self {
            Level::Warning => kind::SSL_EXPIRY_WARNING,
            Level::Critical => kind::SSL_EXPIRY_CRITICAL,
        }
    }

    /// This level and the milder ones it covers.
    fn covered(self) -> &'static [Level] {
        match self {
            Level::Warning => &[Level::Warning],
            Level::Critical => &[Level::Warning, Level::Critical],
        }
    }
}

/// Read a notice from a check's details text. Cheap for the common case of no notice.
pub fn notice_in(details: &str) -> Option<Notice> {
    if !details.contains("\"expiry\"") {
        return None;
    }
    let o: Map<String, Value> = serde_json::from_str(details).ok()?;
    let level = match o.get("expiry")?.as_str()? {
        "warning" => Level::Warning,
        "critical" => Level::Critical,
        _ => return None,
    };
    let cert = o.get("certificate")?.as_object()?;
    let serial = cert.get("serial")?.as_str()?;
    if serial.is_empty() || serial.chars().count() > MAX_SERIAL_CHARS {
        return None;
    }
    let ssl = json!({
        "expiresAt": cert.get("expiresAt").and_then(Value::as_str).unwrap_or_default(),
        "daysRemaining": cert.get("daysRemaining").and_then(Value::as_i64).unwrap_or_default(),
        "issuer": cert.get("issuer").and_then(Value::as_str).unwrap_or_default(),
    });
    Some(Notice {
        level,
        serial: serial.to_string(),
        ssl,
    })
}

/// Record the notice and queue its event, unless this certificate already had one at
/// this level. Returns whether anything was queued.
pub async fn notify(
    tx: &Tx,
    ctx: &Ctx<'_>,
    monitor: &MonitorRow,
    rules: &Rules,
    open_incident: Option<&IncidentRow>,
    notice: Notice,
) -> Result<bool, StoreError> {
    let given = tx
        .certificate_levels_notified(&monitor.id, &notice.serial)
        .await?;
    if given.iter().any(|l| l == notice.level.as_str()) {
        return Ok(false);
    }
    let new_levels: Vec<&str> = notice
        .level
        .covered()
        .iter()
        .map(|l| l.as_str())
        .filter(|l| !given.iter().any(|g| g == l))
        .collect();
    tx.add_certificate_notices(&monitor.id, &notice.serial, &new_levels, ctx.now)
        .await?;

    // Everyone who hears about the monitor's incidents, escalation included once escalated.
    let targets: Vec<&Target> = match open_incident {
        Some(inc) => incidents::audience(rules, inc),
        None => rules.channels.iter().collect(),
    };
    if targets.is_empty() {
        return Ok(false);
    }
    let body = EventBody {
        event: notice.level.event(),
        at_ms: ctx.now,
        monitor: events::monitor_object(monitor),
        workspace_id: ctx.workspace_id.to_string(),
        workspace_name: ctx.workspace_name.to_string(),
        incident: None,
        failure: None,
        ssl: Some(notice.ssl),
        test: false,
    };
    let origin = Origin {
        workspace_id: ctx.workspace_id,
        incident_id: None,
        monitor_id: Some(&monitor.id),
    };
    for t in targets {
        outbox::enqueue(tx, &origin, t, &body, ctx.now).await?;
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_need_a_level_and_a_serial() {
        let n = notice_in(
            r#"{"certificate":{"serial":"0abc","expiresAt":"2026-11-26T09:30:00.000Z","daysRemaining":5,"issuer":"CN=CA"},"expiry":"critical"}"#,
        )
        .expect("notice");
        assert_eq!(n.level, Level::Critical);
        assert_eq!(n.serial, "0abc");
        assert_eq!(
            n.ssl,
            json!({"expiresAt": "2026-11-26T09:30:00.000Z", "daysRemaining": 5, "issuer": "CN=CA"})
        );
        assert_eq!(notice_in(r#"{"certificate":{"serial":"0abc"}}"#), None);
        assert_eq!(
            notice_in(r#"{"certificate":{"serial":""},"expiry":"warning"}"#),
            None
        );
        assert_eq!(
            notice_in(r#"{"certificate":{"serial":"1"},"expiry":"soon"}"#),
            None
        );
        assert_eq!(notice_in(r#"{"keyword":"expiry"}"#), None);
        assert_eq!(Level::Critical.covered(), [Level::Warning, Level::Critical]);
    }
}
