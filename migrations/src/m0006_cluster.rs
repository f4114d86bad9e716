//! Several nodes on one database: `nodes` (who is alive, in which region) and
//! `check_claims` (one row per monitor and round, so each due check runs on one node: the
//! primary key decides who runs it, not timing).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Nodes {
    Table,
    Id,
    Region,
    StartedAt,
    LastSeenAt,
    Version,
}

#[derive(DeriveIden)]
enum CheckClaims {
    Table,
    MonitorId,
    Round,
    NodeId,
    ClaimedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Nodes::Table)
                    .col(string_len(Nodes::Id, 64).primary_key())
                    .col(string_len(Nodes::Region, 64))
                    .col(big_integer(Nodes::StartedAt))
                    .col(big_integer(Nodes::LastSeenAt))
                    .col(string_len(Nodes::Version, 32))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(CheckClaims::Table)
                    .col(string_len(CheckClaims::MonitorId, 32))
                    .col(big_integer(CheckClaims::Round))
                    .col(string_len(CheckClaims::NodeId, 64))
                    .col(big_integer(CheckClaims::ClaimedAt))
                    .primary_key(
                        Index::create()
                            .col(CheckClaims::MonitorId)
                            .col(CheckClaims::Round),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_check_claims_claimed_at")
                    .table(CheckClaims::Table)
                    .col(CheckClaims::ClaimedAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(CheckClaims::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(Nodes::Table).to_owned())
            .await
    }
}
