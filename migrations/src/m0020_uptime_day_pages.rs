//! Indexes for reading `/metrics` in pages: the daily uptime counts by day and monitor
//! (instead of by day alone), and the monitors by workspace and id, so that a page ordered
//! by monitor is a range of an index instead of a sort of the whole day or workspace.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DailyUptime {
    Table,
    Day,
    MonitorId,
}

#[derive(DeriveIden)]
enum Monitors {
    Table,
    WorkspaceId,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name("idx_monitors_workspace_id")
                    .table(Monitors::Table)
                    .col(Monitors::WorkspaceId)
                    .col(Monitors::Id)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_daily_uptime_day_monitor")
                    .table(DailyUptime::Table)
                    .col(DailyUptime::Day)
                    .col(DailyUptime::MonitorId)
                    .to_owned(),
            )
            .await?;
        // The new index serves every query the old one did (it leads with the day).
        manager
            .drop_index(
                Index::drop()
                    .name("idx_daily_uptime_day")
                    .table(DailyUptime::Table)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("idx_monitors_workspace_id")
                    .table(Monitors::Table)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_daily_uptime_day")
                    .table(DailyUptime::Table)
                    .col(DailyUptime::Day)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("idx_daily_uptime_day_monitor")
                    .table(DailyUptime::Table)
                    .to_owned(),
            )
            .await
    }
}
