//! Rows tests insert straight into the store.

use tocsin::store::MonitorRow;

/// An http monitor `id` of workspace `ws`, named after its id, checked every minute.
pub fn monitor(id: &str, ws: &str, created_at: i64) -> MonitorRow {
    MonitorRow {
        config: r#"{"url":"https://a.test/","method":"GET"}"#.into(),
        ..MonitorRow::new(id, ws, "http", created_at)
    }
}
