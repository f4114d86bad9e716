//! Monthly reports: a workspace's `monthly_reports` row names the channels that get the
//! previous month's uptime report on the 1st (`channel_ids`, a JSON array) and the last
//! month sent (`sent_for`, `2026-10`), taken with a conditional update in the same
//! transaction as the deliveries, so a restart or a second node neither loses nor repeats
//! a month. `delivery_files` holds what a delivery carries besides its payload (the
//! report's PDF), written with the delivery and removed with it.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum MonthlyReports {
    Table,
    WorkspaceId,
    ChannelIds,
    SentFor,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum DeliveryFiles {
    Table,
    DeliveryId,
    Name,
    ContentType,
    Data,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(MonthlyReports::Table)
                    .col(
                        ColumnDef::new(MonthlyReports::WorkspaceId)
                            .string_len(32)
                            .not_null()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(MonthlyReports::ChannelIds).text().not_null())
                    .col(ColumnDef::new(MonthlyReports::SentFor).string_len(7).null())
                    .col(
                        ColumnDef::new(MonthlyReports::UpdatedAt)
                            .big_integer()
                            .not_null(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(DeliveryFiles::Table)
                    .col(
                        ColumnDef::new(DeliveryFiles::DeliveryId)
                            .string_len(32)
                            .not_null(),
                    )
                    .col(ColumnDef::new(DeliveryFiles::Name).string_len(200).not_null())
                    .col(
                        ColumnDef::new(DeliveryFiles::ContentType)
                            .string_len(100)
                            .not_null(),
                    )
                    .col(ColumnDef::new(DeliveryFiles::Data).binary().not_null())
                    .primary_key(
                        Index::create()
                            .col(DeliveryFiles::DeliveryId)
                            .col(DeliveryFiles::Name),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(DeliveryFiles::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(MonthlyReports::Table).to_owned())
            .await
    }
}
