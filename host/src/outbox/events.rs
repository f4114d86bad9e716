//! Event payloads exactly as the spec defines them: `event`, `timestamp`, `webhookId`,
//! `monitor`, `workspace`, and per kind `incident` (+ `failure` on `incident.created`) or
//! `ssl`. The same JSON text is what webhook receivers get and what e-mail and Telegram
//! messages are rendered from.

use crate::store::{IncidentRow, MonitorRow, State};
use serde_json::{Map, Value, json};

/// Event kinds.
pub mod kind {
    pub const INCIDENT_CREATED: &str = "incident.created";
    pub const INCIDENT_ACKNOWLEDGED: &str = "incident.acknowledged";
    pub const INCIDENT_RESOLVED: &str = "incident.resolved";
    pub const INCIDENT_REMINDER: &str = "incident.reminder";
    pub const MONITOR_PAUSED: &str = "monitor.paused";
    pub const MONITOR_RESUMED: &str = "monitor.resumed";
    pub const SSL_EXPIRY_WARNING: &str = "ssl.expiry_warning";
    pub const SSL_EXPIRY_CRITICAL: &str = "ssl.expiry_critical";
    pub const MONITOR_FLAPPING: &str = "monitor.flapping";
    pub const MONITOR_FLAPPING_STARTED: &str = "monitor.flapping_started";
    pub const MONITOR_DEGRADED: &str = "monitor.degraded";
    pub const MONITOR_DEGRADED_ENDED: &str = "monitor.degraded_ended";
    /// The previous month's uptime report of a workspace (its PDF goes with e-mail); not
    /// about one monitor, so not among [`ALL`].
    pub const REPORT_MONTHLY: &str = "report.monthly";
    /// Every probe of a private location went silent; and one was heard again. About a
    /// location, not one monitor, so not among [`ALL`].
    pub const LOCATION_OFFLINE: &str = "location.offline";
    pub const LOCATION_ONLINE: &str = "location.online";
    pub const ALL: [&str; 12] = [
        INCIDENT_CREATED,
        INCIDENT_REMINDER,
        INCIDENT_ACKNOWLEDGED,
        INCIDENT_RESOLVED,
        MONITOR_PAUSED,
        MONITOR_RESUMED,
        SSL_EXPIRY_WARNING,
        SSL_EXPIRY_CRITICAL,
        MONITOR_FLAPPING_STARTED,
        MONITOR_FLAPPING,
        MONITOR_DEGRADED,
        MONITOR_DEGRADED_ENDED,
    ];
}

/// The `monitor` object of a payload.
pub fn monitor_object(m: &MonitorRow) -> Value {
    let config: Map<String, Value> = serde_json::from_str(&m.config).unwrap_or_default();
    let mut o = Map::new();
    o.insert("id".into(), Value::from(m.id.clone()));
    o.insert("name".into(), Value::from(m.name.clone()));
    o.insert("type".into(), Value::from(m.kind.clone()));
    match m.kind.as_str() {
        "http" | "keyword" => {
            if let Some(url) = config.get("url") {
                o.insert("url".into(), url.clone());
            }
        }
        "ping" | "ssl" => {
            if let Some(host) = config.get("hostname") {
                o.insert("hostname".into(), host.clone());
            }
        }
        _ => {}
    }
    Value::Object(o)
}

/// The failure that a check reported, as a payload's `failure` object.
pub fn failure_object(
    reason: &str,
    status_code: Option<u16>,
    response_time_ms: Option<u32>,
    region: &str,
    details: &Map<String, Value>,
) -> Value {
    let mut o = Map::new();
    o.insert("reason".into(), Value::from(reason));
    if let Some(code) = status_code {
        o.insert("statusCode".into(), Value::from(code));
    }
    // Null when the check timed out, as the spec says.
    o.insert(
        "responseTime".into(),
        response_time_ms.map_or(Value::Null, Value::from),
    );
    o.insert("region".into(), Value::from(region));
    if let Some(keyword) = details.get("keyword").and_then(Value::as_str) {
        o.insert("keyword".into(), Value::from(keyword));
    }
    Value::Object(o)
}

/// The `incident` object of a payload.
pub fn incident_object(i: &IncidentRow, public_url: &str) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), Value::from(i.id.clone()));
    o.insert(
        "url".into(),
        Value::from(format!("{public_url}/incidents/{}", i.id)),
    );
    o.insert("status".into(), Value::from(i.status.name()));
    if let Some(g) = &i.group_id {
        o.insert("groupId".into(), Value::from(g.clone()));
    }
    o.insert(
        "createdAt".into(),
        Value::from(crate::time::format_ms(i.created_at)),
    );
    if let Some(at) = i.acknowledged_at {
        o.insert(
            "acknowledgedAt".into(),
            Value::from(crate::time::format_ms(at)),
        );
    }
    if let Some(at) = i.resolved_at {
        o.insert("resolvedAt".into(), Value::from(crate::time::format_ms(at)));
        o.insert(
            "durationSeconds".into(),
            Value::from((at - i.created_at) / 1000),
        );
    }
    Value::Object(o)
}

/// What goes into one payload besides the envelope fields.
pub struct EventBody {
    pub event: &'static str,
    pub at_ms: i64,
    pub monitor: Value,
    pub workspace_id: String,
    pub workspace_name: String,
    pub incident: Option<Value>,
    pub failure: Option<Value>,
    pub ssl: Option<Value>,
    /// Set on test deliveries from `POST /v1/channels/{id}/test`.
    pub test: bool,
}

/// The test event of the channel test button and `tocsin webhook send-test`: an
/// `incident.created` with `"test": true`.
pub fn test_event(
    at_ms: i64,
    public_url: &str,
    workspace_id: &str,
    workspace_name: &str,
    region: &str,
) -> EventBody {
    EventBody {
        event: kind::INCIDENT_CREATED,
        at_ms,
        monitor: json!({"id": "mon_test", "name": "Test monitor", "type": "http", "url": "https://example.com/"}),
        workspace_id: workspace_id.to_string(),
        workspace_name: workspace_name.to_string(),
        incident: Some(
            json!({"id": "inc_test", "url": format!("{public_url}/incidents/inc_test"), "status": "open", "createdAt": crate::time::format_ms(at_ms)}),
        ),
        failure: Some(
            json!({"reason": "This is a test notification from Tocsin", "statusCode": 503, "responseTime": 42, "region": region}),
        ),
        ssl: None,
        test: true,
    }
}

/// The payload text for one delivery (`webhook_id` is the delivery's id).
/// The payload with one more top-level object (`group` of a grouped message, `flapping`
/// of a flapping summary).
pub fn payload_with(body: &EventBody, webhook_id: &str, extra: Option<(&str, Value)>) -> String {
    let text = payload(body, webhook_id);
    match extra {
        Some((key, value)) => with_object(&text, key, value),
        None => text,
    }
}

/// A payload's text with one more top-level object.
pub fn with_object(text: &str, key: &str, value: Value) -> String {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(mut o)) => {
            o.insert(key.to_string(), value);
            Value::Object(o).to_string()
        }
        _ => text.to_string(),
    }
}

pub fn payload(body: &EventBody, webhook_id: &str) -> String {
    let mut o = Map::new();
    o.insert("event".into(), Value::from(body.event));
    o.insert(
        "timestamp".into(),
        Value::from(crate::time::format_ms(body.at_ms)),
    );
    o.insert("webhookId".into(), Value::from(webhook_id));
    if body.test {
        o.insert("test".into(), Value::from(true));
    }
    if let Some(i) = &body.incident {
        o.insert("incident".into(), i.clone());
    }
    o.insert("monitor".into(), body.monitor.clone());
    if let Some(f) = &body.failure {
        o.insert("failure".into(), f.clone());
    }
    if let Some(s) = &body.ssl {
        o.insert("ssl".into(), s.clone());
    }
    o.insert(
        "workspace".into(),
        json!({"id": body.workspace_id, "name": body.workspace_name}),
    );
    Value::Object(o).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::IncidentState;

    fn incident(resolved: Option<i64>) -> IncidentRow {
        IncidentRow {
            id: "inc_1".into(),
            workspace_id: "ws_1".into(),
            monitor_id: "mon_1".into(),
            policy_id: None,
            status: if resolved.is_some() {
                IncidentState::Resolved
            } else {
                IncidentState::Open
            },
            open_key: None,
            created_at: 1_795_253_400_000,
            acknowledged_at: None,
            acknowledged_by: None,
            resolved_at: resolved,
            escalate_at: None,
            escalated_at: None,
            failure: "{}".into(),
            monitor: "{}".into(),
            hold: None,
            group_id: None,
            notified: true,
            remind_at: None,
            reminders: 0,
            escalation_step: 0,
        }
    }

    #[test]
    fn incident_objects_carry_optional_fields_only_when_set() {
        let open = incident_object(&incident(None), "https://t.example");
        assert_eq!(open["url"], "https://t.example/incidents/inc_1");
        assert!(open.get("resolvedAt").is_none() && open.get("durationSeconds").is_none());
        let done = incident_object(
            &incident(Some(1_795_253_400_000 + 95_500)),
            "https://t.example",
        );
        assert_eq!(done["durationSeconds"], 95);
        assert_eq!(done["resolvedAt"], "2026-11-21T09:31:35.500Z");
    }

    #[test]
    fn failures_report_null_response_time_on_timeout() {
        let f = failure_object("Timed out after 10 s", None, None, "eu", &Map::new());
        assert_eq!(f["responseTime"], Value::Null);
        assert!(f.get("statusCode").is_none());
        let mut details = Map::new();
        details.insert("keyword".into(), Value::from("ok"));
        let f = failure_object("x", Some(503), Some(12), "eu", &details);
        assert_eq!(
            (f["statusCode"].as_u64(), f["keyword"].as_str()),
            (Some(503), Some("ok"))
        );
    }

    #[test]
    fn payload_has_the_spec_fields() {
        let body = EventBody {
            event: kind::MONITOR_PAUSED,
            at_ms: 0,
            monitor: json!({"id": "mon_1", "name": "n", "type": "http", "url": "http://x"}),
            workspace_id: "ws_1".into(),
            workspace_name: "Default".into(),
            incident: None,
            failure: None,
            ssl: None,
            test: false,
        };
        let p: Value = serde_json::from_str(&payload(&body, "whd_1")).expect("json");
        assert_eq!(p["event"], "monitor.paused");
        assert_eq!(p["webhookId"], "whd_1");
        assert_eq!(p["timestamp"], "1970-01-01T00:00:00.000Z");
        assert_eq!(p["workspace"]["name"], "Default");
        assert!(p.get("incident").is_none() && p.get("test").is_none());
    }
}
