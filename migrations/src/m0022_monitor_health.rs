//! Each monitor's counters and last check in a narrow table of their own, `monitor_health`,
//! kept in the schedule's order, and `monitors_live`, the view every read of a monitor
//! goes through.
//!
//! Every check moves a monitor's counters and last check. In `monitors` that rewrote the
//! monitor's whole row, which holds its configuration, and a batch's monitors (the ones
//! due in the same second, their phases a hash of the id) sat all over that wide table:
//! about one page written per check. `monitor_health` is ordered by interval and phase, the
//! order checks come in, so a batch's rows share a few dozen pages; the recorder finds a
//! row by its unique monitor id, an index the updates never change. On SQLite the table is
//! `WITHOUT ROWID`, so its primary key is the order the rows are stored in.
//!
//! The four columns stay in `monitors`, unwritten, until nodes of the version before have
//! stopped (a rolling upgrade's old nodes still read and write them there). Their values
//! are copied here once; the phase of a monitor's existing row is taken from its last
//! check's offset in its interval, which is where its rounds run (a placement only: the
//! recorder never looks rows up by it).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The view's columns: every column of `monitors`, the four outcome-driven ones from
/// `monitor_health`. A migration that adds a column to `monitors` must create it again.
const LIVE_VIEW: &str = "CREATE VIEW monitors_live AS SELECT \
    m.id, m.workspace_id, m.name, m.kind, m.config, m.interval_secs, m.timeout_secs, \
    m.alert_policy_id, m.regions, m.status, m.created_at, m.updated_at, \
    h.last_checked_at, h.last_response_time_ms, \
    COALESCE(h.consecutive_failures, 0) AS consecutive_failures, \
    COALESCE(h.consecutive_successes, 0) AS consecutive_successes, \
    m.region_cursor, m.regional_confirmation, m.tags, m.ping_token, m.depends_on, \
    m.snoozed_until, m.apply_key, m.managed_by \
    FROM monitors m LEFT JOIN monitor_health h ON h.monitor_id = m.id";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        let without_rowid = match manager.get_database_backend() {
            DbBackend::Sqlite => " WITHOUT ROWID",
            _ => "",
        };
        db.execute_unprepared(&format!(
            "CREATE TABLE monitor_health (\
             interval_ms BIGINT NOT NULL, \
             phase_ms BIGINT NOT NULL, \
             monitor_id VARCHAR(32) NOT NULL REFERENCES monitors (id) ON DELETE CASCADE, \
             consecutive_failures INTEGER NOT NULL DEFAULT 0, \
             consecutive_successes INTEGER NOT NULL DEFAULT 0, \
             last_checked_at BIGINT NULL, \
             last_response_time_ms INTEGER NULL, \
             PRIMARY KEY (interval_ms, phase_ms, monitor_id))\
             {without_rowid}"
        ))
        .await?;
        db.execute_unprepared(
            "CREATE UNIQUE INDEX idx_monitor_health_monitor ON monitor_health (monitor_id)",
        )
        .await?;
        db.execute_unprepared(
            "INSERT INTO monitor_health (interval_ms, phase_ms, monitor_id, \
             consecutive_failures, consecutive_successes, last_checked_at, \
             last_response_time_ms) \
             SELECT CAST(interval_secs AS BIGINT) * 1000, \
             COALESCE(last_checked_at, 0) % (CAST(interval_secs AS BIGINT) * 1000), \
             id, consecutive_failures, consecutive_successes, last_checked_at, \
             last_response_time_ms FROM monitors",
        )
        .await?;
        db.execute_unprepared(LIVE_VIEW).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared(
            "UPDATE monitors SET \
             consecutive_failures = (SELECT h.consecutive_failures FROM monitor_health h WHERE h.monitor_id = monitors.id), \
             consecutive_successes = (SELECT h.consecutive_successes FROM monitor_health h WHERE h.monitor_id = monitors.id), \
             last_checked_at = (SELECT h.last_checked_at FROM monitor_health h WHERE h.monitor_id = monitors.id), \
             last_response_time_ms = (SELECT h.last_response_time_ms FROM monitor_health h WHERE h.monitor_id = monitors.id) \
             WHERE EXISTS (SELECT 1 FROM monitor_health h WHERE h.monitor_id = monitors.id)",
        )
        .await?;
        db.execute_unprepared("DROP VIEW monitors_live").await?;
        manager
            .drop_table(Table::drop().table(Alias::new("monitor_health")).to_owned())
            .await
    }
}
