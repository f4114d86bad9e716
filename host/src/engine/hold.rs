//! Why an incident's notifications are held (a dependency down, a snooze, flapping): the
//! one type the incident, hold, flapping and recorder files share.

use crate::store::IncidentState;
use serde::{Deserialize, Serialize};

/// Why an incident's notifications are held. Stored as JSON on the incident; the API
/// shows it with `until` as ISO 8601.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum Hold {
    /// A monitor it depends on is down.
    #[serde(rename_all = "camelCase")]
    Dependency {
        monitor_id: String,
        monitor_name: String,
    },
    /// The monitor (or one of its tags) is snoozed until `until` (ms).
    Snoozed { until: i64 },
    /// The monitor is flapping (since `since`, ms): held until it is stable, then told
    /// in one summary (see `flapping`).
    Flapping { since: i64 },
}

impl Hold {
    /// The stored form.
    pub fn text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored hold; None when absent or unreadable.
    pub fn parse(text: Option<&str>) -> Option<Hold> {
        text.and_then(|t| serde_json::from_str(t).ok())
    }

    /// The state an incident opening under this hold starts in.
    pub fn opening_state(&self) -> IncidentState {
        match self {
            Hold::Dependency { .. } => IncidentState::Suppressed,
            Hold::Snoozed { .. } | Hold::Flapping { .. } => IncidentState::Open,
        }
    }

    /// As the API and timelines show it.
    pub fn view(&self) -> serde_json::Value {
        match self {
            Hold::Dependency {
                monitor_id,
                monitor_name,
            } => serde_json::json!({
                "reason": "dependency",
                "monitorId": monitor_id,
                "monitorName": monitor_name,
            }),
            Hold::Snoozed { until } => serde_json::json!({
                "reason": "snoozed",
                "until": crate::time::format_ms(*until),
            }),
            Hold::Flapping { since } => serde_json::json!({
                "reason": "flapping",
                "since": crate::time::format_ms(*since),
            }),
        }
    }
}
