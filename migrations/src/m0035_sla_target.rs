//! A monitor's `sla_target_ppm` (the uptime it should reach, in parts per million: 99.9 %
//! is 999,000; null: none): uptime reports mark it met or missed. Whole numbers, so the
//! target compares and round-trips exactly. Reports read a monitor's incidents of a period:
//! an index on `(monitor_id, created_at)` keeps that from scanning every incident.
//! `monitors_live` is created again with the new column.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The view as `m0033_degraded` made it, with the new column at the end.
const LIVE_VIEW: &str = "CREATE VIEW monitors_live AS SELECT \
    m.id, m.workspace_id, m.name, m.kind, m.config, m.interval_secs, m.timeout_secs, \
    m.alert_policy_id, m.regions, m.status, m.created_at, m.updated_at, \
    h.last_checked_at, h.last_response_time_ms, \
    COALESCE(h.consecutive_failures, 0) AS consecutive_failures, \
    COALESCE(h.consecutive_successes, 0) AS consecutive_successes, \
    m.region_cursor, m.regional_confirmation, m.tags, m.ping_token, m.depends_on, \
    m.snoozed_until, m.apply_key, m.managed_by, m.retry_interval_secs, \
    m.degraded_after_ms, COALESCE(h.consecutive_slow, 0) AS consecutive_slow, \
    m.sla_target_ppm \
    FROM monitors m LEFT JOIN monitor_health h ON h.monitor_id = m.id";

/// The view before.
const OLD_VIEW: &str = "CREATE VIEW monitors_live AS SELECT \
    m.id, m.workspace_id, m.name, m.kind, m.config, m.interval_secs, m.timeout_secs, \
    m.alert_policy_id, m.regions, m.status, m.created_at, m.updated_at, \
    h.last_checked_at, h.last_response_time_ms, \
    COALESCE(h.consecutive_failures, 0) AS consecutive_failures, \
    COALESCE(h.consecutive_successes, 0) AS consecutive_successes, \
    m.region_cursor, m.regional_confirmation, m.tags, m.ping_token, m.depends_on, \
    m.snoozed_until, m.apply_key, m.managed_by, m.retry_interval_secs, \
    m.degraded_after_ms, COALESCE(h.consecutive_slow, 0) AS consecutive_slow \
    FROM monitors m LEFT JOIN monitor_health h ON h.monitor_id = m.id";

#[derive(DeriveIden)]
enum Monitors {
    Table,
    SlaTargetPpm,
}

#[derive(DeriveIden)]
enum Incidents {
    Table,
    MonitorId,
    CreatedAt,
}

const INCIDENT_INDEX: &str = "idx_incidents_monitor_created";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Monitors::Table)
                    .add_column(ColumnDef::new(Monitors::SlaTargetPpm).integer().null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(INCIDENT_INDEX)
                    .table(Incidents::Table)
                    .col(Incidents::MonitorId)
                    .col(Incidents::CreatedAt)
                    .to_owned(),
            )
            .await?;
        let db = manager.get_connection();
        db.execute_unprepared("DROP VIEW monitors_live").await?;
        db.execute_unprepared(LIVE_VIEW).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared("DROP VIEW monitors_live").await?;
        db.execute_unprepared(OLD_VIEW).await?;
        manager
            .drop_index(
                Index::drop()
                    .name(INCIDENT_INDEX)
                    .table(Incidents::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Monitors::Table)
                    .drop_column(Monitors::SlaTargetPpm)
                    .to_owned(),
            )
            .await
    }
}
