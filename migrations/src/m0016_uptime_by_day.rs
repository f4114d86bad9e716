//! An index of the daily uptime counts by day, so `/metrics` reads one day of every
//! monitor without scanning every monitor's history.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum DailyUptime {
    Table,
    Day,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name("idx_daily_uptime_day")
                    .table(DailyUptime::Table)
                    .col(DailyUptime::Day)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(
                Index::drop()
                    .name("idx_daily_uptime_day")
                    .table(DailyUptime::Table)
                    .to_owned(),
            )
            .await
    }
}
