//! Public status pages, and the daily check counts their 90-day uptime bars are drawn from
//! (kept up to date in the transaction that records the checks, so a page never scans raw
//! results).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum StatusPages {
    Table,
    Id,
    WorkspaceId,
    Slug,
    Title,
    Description,
    Public,
    MonitorIds,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum DailyUptime {
    Table,
    MonitorId,
    Day,
    Total,
    Up,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(StatusPages::Table)
                    .col(string_len(StatusPages::Id, 32).primary_key())
                    .col(string_len(StatusPages::WorkspaceId, 32))
                    .col(string_len_uniq(StatusPages::Slug, 64))
                    .col(string_len(StatusPages::Title, 200))
                    .col(text(StatusPages::Description))
                    .col(boolean(StatusPages::Public))
                    .col(text(StatusPages::MonitorIds))
                    .col(big_integer(StatusPages::CreatedAt))
                    .col(big_integer(StatusPages::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(DailyUptime::Table)
                    .col(string_len(DailyUptime::MonitorId, 32))
                    // Days since 1970-01-01 (UTC).
                    .col(integer(DailyUptime::Day))
                    .col(integer(DailyUptime::Total))
                    .col(integer(DailyUptime::Up))
                    .primary_key(
                        Index::create()
                            .col(DailyUptime::MonitorId)
                            .col(DailyUptime::Day),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(DailyUptime::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(StatusPages::Table).to_owned())
            .await
    }
}
