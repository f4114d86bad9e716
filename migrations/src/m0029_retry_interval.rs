//! Fast re-checks: a monitor's `retry_interval_secs` (null: its interval). After a failing
//! check that has not yet opened an incident, the next check comes this long after it,
//! not a whole interval later, until the policy's threshold decides; then the monitor's
//! rhythm resumes. `monitors_live` is created again with the new column.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The view as `m0022_monitor_health` made it, with `retry_interval_secs` at the end.
const LIVE_VIEW: &str = "CREATE VIEW monitors_live AS SELECT \
    m.id, m.workspace_id, m.name, m.kind, m.config, m.interval_secs, m.timeout_secs, \
    m.alert_policy_id, m.regions, m.status, m.created_at, m.updated_at, \
    h.last_checked_at, h.last_response_time_ms, \
    COALESCE(h.consecutive_failures, 0) AS consecutive_failures, \
    COALESCE(h.consecutive_successes, 0) AS consecutive_successes, \
    m.region_cursor, m.regional_confirmation, m.tags, m.ping_token, m.depends_on, \
    m.snoozed_until, m.apply_key, m.managed_by, m.retry_interval_secs \
    FROM monitors m LEFT JOIN monitor_health h ON h.monitor_id = m.id";

/// The view before.
const OLD_VIEW: &str = "CREATE VIEW monitors_live AS SELECT \
    m.id, m.workspace_id, m.name, m.kind, m.config, m.interval_secs, m.timeout_secs, \
    m.alert_policy_id, m.regions, m.status, m.created_at, m.updated_at, \
    h.last_checked_at, h.last_response_time_ms, \
    COALESCE(h.consecutive_failures, 0) AS consecutive_failures, \
    COALESCE(h.consecutive_successes, 0) AS consecutive_successes, \
    m.region_cursor, m.regional_confirmation, m.tags, m.ping_token, m.depends_on, \
    m.snoozed_until, m.apply_key, m.managed_by \
    FROM monitors m LEFT JOIN monitor_health h ON h.monitor_id = m.id";

#[derive(DeriveIden)]
enum Monitors {
    Table,
    RetryIntervalSecs,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Monitors::Table)
                    .add_column(ColumnDef::new(Monitors::RetryIntervalSecs).integer().null())
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
            .alter_table(
                Table::alter()
                    .table(Monitors::Table)
                    .drop_column(Monitors::RetryIntervalSecs)
                    .to_owned(),
            )
            .await
    }
}
