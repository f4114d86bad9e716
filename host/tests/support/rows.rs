//! Rows tests insert straight into the store.

use tocsin::store::{MonitorRow, MonitorState};

/// An http monitor `id` of workspace `ws`, named after its id, checked every minute.
pub fn monitor(id: &str, ws: &str, created_at: i64) -> MonitorRow {
    MonitorRow {
        id: id.into(),
        workspace_id: ws.into(),
        name: id.into(),
        kind: "http".into(),
        config: r#"{"url":"https://a.test/","method":"GET"}"#.into(),
        interval_secs: 60,
        timeout_secs: 10,
        alert_policy_id: None,
        regions: "[]".into(),
        status: MonitorState::Pending,
        created_at,
        updated_at: created_at,
        last_checked_at: None,
        last_response_time_ms: None,
        consecutive_failures: 0,
        consecutive_successes: 0,
        region_cursor: 0,
        regional_confirmation: false,
        tags: "[]".into(),
        ping_token: None,
        depends_on: "[]".into(),
        snoozed_until: None,
        apply_key: None,
        managed_by: None,
    }
}
