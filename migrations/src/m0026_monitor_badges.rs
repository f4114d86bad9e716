//! Public badges: a monitor a member marks public gets a secret token; `/badge/{token}/...`
//! draws its status, uptime and response time as SVG for anyone with the link. One token
//! per monitor; a new one replaces it, deleting it revokes every link at once.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum MonitorBadges {
    Table,
    MonitorId,
    WorkspaceId,
    Token,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(MonitorBadges::Table)
                    .col(
                        ColumnDef::new(MonitorBadges::MonitorId)
                            .string_len(32)
                            .not_null()
                            .primary_key(),
                    )
                    .col(
                        ColumnDef::new(MonitorBadges::WorkspaceId)
                            .string_len(32)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(MonitorBadges::Token)
                            .string_len(64)
                            .not_null()
                            .unique_key(),
                    )
                    .col(
                        ColumnDef::new(MonitorBadges::CreatedAt)
                            .big_integer()
                            .not_null(),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(MonitorBadges::Table).to_owned())
            .await
    }
}
