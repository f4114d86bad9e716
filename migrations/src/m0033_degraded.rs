//! A `degraded` state between up and down: a monitor's `degraded_after_ms` (null: never
//! degraded) marks a passing check slower than that as slow; `monitor_health` counts the
//! slow ones in a row (`consecutive_slow`), and an alert policy's `degraded_threshold` of
//! them makes the monitor `degraded`, told (`monitor.degraded`) when the policy's
//! `notify_degraded` says so. `monitors_live` is created again with the new columns.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The view as `m0029_retry_interval` made it, with the two new columns at the end.
const LIVE_VIEW: &str = "CREATE VIEW monitors_live AS SELECT \
    m.id, m.workspace_id, m.name, m.kind, m.config, m.interval_secs, m.timeout_secs, \
    m.alert_policy_id, m.regions, m.status, m.created_at, m.updated_at, \
    h.last_checked_at, h.last_response_time_ms, \
    COALESCE(h.consecutive_failures, 0) AS consecutive_failures, \
    COALESCE(h.consecutive_successes, 0) AS consecutive_successes, \
    m.region_cursor, m.regional_confirmation, m.tags, m.ping_token, m.depends_on, \
    m.snoozed_until, m.apply_key, m.managed_by, m.retry_interval_secs, \
    m.degraded_after_ms, COALESCE(h.consecutive_slow, 0) AS consecutive_slow \
    FROM monitors m LEFT JOIN monitor_health h ON h.monitor_id = m.id";

/// The view before.
const OLD_VIEW: &str = "CREATE VIEW monitors_live AS SELECT \
    m.id, m.workspace_id, m.name, m.kind, m.config, m.interval_secs, m.timeout_secs, \
    m.alert_policy_id, m.regions, m.status, m.created_at, m.updated_at, \
    h.last_checked_at, h.last_response_time_ms, \
    COALESCE(h.consecutive_failures, 0) AS consecutive_failures, \
    COALESCE(h.consecutive_successes, 0) AS consecutive_successes, \
    m.region_cursor, m.regional_confirmation, m.tags, m.ping_token, m.depends_on, \
    m.snoozed_until, m.apply_key, m.managed_by, m.retry_interval_secs \
    FROM monitors m LEFT JOIN monitor_health h ON h.monitor_id = m.id";

#[derive(DeriveIden)]
enum Monitors {
    Table,
    DegradedAfterMs,
}

#[derive(DeriveIden)]
enum MonitorHealth {
    Table,
    ConsecutiveSlow,
}

#[derive(DeriveIden)]
enum AlertPolicies {
    Table,
    DegradedThreshold,
    NotifyDegraded,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Monitors::Table)
                    .add_column(ColumnDef::new(Monitors::DegradedAfterMs).integer().null())
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(MonitorHealth::Table)
                    .add_column(
                        ColumnDef::new(MonitorHealth::ConsecutiveSlow)
                            .integer()
                            .not_null()
                            .default(0),
                    )
                    .to_owned(),
            )
            .await?;
        for column in [
            ColumnDef::new(AlertPolicies::DegradedThreshold)
                .integer()
                .not_null()
                .default(3)
                .to_owned(),
            ColumnDef::new(AlertPolicies::NotifyDegraded)
                .boolean()
                .not_null()
                .default(false)
                .to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(AlertPolicies::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        let db = manager.get_connection();
        db.execute_unprepared("DROP VIEW monitors_live").await?;
        db.execute_unprepared(LIVE_VIEW).await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let db = manager.get_connection();
        db.execute_unprepared("DROP VIEW monitors_live").await?;
        db.execute_unprepared(OLD_VIEW).await?;
        for column in [AlertPolicies::DegradedThreshold, AlertPolicies::NotifyDegraded] {
            manager
                .alter_table(
                    Table::alter()
                        .table(AlertPolicies::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(MonitorHealth::Table)
                    .drop_column(MonitorHealth::ConsecutiveSlow)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Monitors::Table)
                    .drop_column(Monitors::DegradedAfterMs)
                    .to_owned(),
            )
            .await
    }
}
