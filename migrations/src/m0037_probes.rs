//! Probes: processes that run a workspace's checks in a private location and send the
//! results back over HTTPS (`tocsin probe`). A probe's row holds the hash of its token
//! (`secret_hash`, unique; the token itself is shown once), the location it checks from,
//! what it last reported (version, results waiting in its buffer, lag, checks per second,
//! results it had to shed) and `acked_seq`, the highest sequence number of its results
//! stored: it moves in the transaction that stores them, so a replayed batch is stored
//! once.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Probes {
    Table,
    Id,
    WorkspaceId,
    Name,
    Location,
    Prefix,
    SecretHash,
    CreatedAt,
    CreatedBy,
    RevokedAt,
    LastContactAt,
    Version,
    AckedSeq,
    Buffered,
    Shed,
    LagMs,
    RateMilli,
    Instance,
    InstanceSeenAt,
    HeartbeatMonitorId,
}

const BY_HASH: &str = "probes_secret_hash";
const BY_WORKSPACE: &str = "probes_workspace_location";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Probes::Table)
                    .col(
                        ColumnDef::new(Probes::Id)
                            .string_len(32)
                            .not_null()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(Probes::WorkspaceId).string_len(32).not_null())
                    .col(ColumnDef::new(Probes::Name).string_len(200).not_null())
                    .col(ColumnDef::new(Probes::Location).string_len(100).not_null())
                    .col(ColumnDef::new(Probes::Prefix).string_len(16).not_null())
                    .col(ColumnDef::new(Probes::SecretHash).string_len(64).not_null())
                    .col(ColumnDef::new(Probes::CreatedAt).big_integer().not_null())
                    .col(ColumnDef::new(Probes::CreatedBy).string_len(32).null())
                    .col(ColumnDef::new(Probes::RevokedAt).big_integer().null())
                    .col(ColumnDef::new(Probes::LastContactAt).big_integer().null())
                    .col(ColumnDef::new(Probes::Version).string_len(64).null())
                    .col(
                        ColumnDef::new(Probes::AckedSeq)
                            .big_integer()
                            .not_null()
                            .default(0),
                    )
                    .col(
                        ColumnDef::new(Probes::Buffered)
                            .big_integer()
                            .not_null()
                            .default(0),
                    )
                    .col(
                        ColumnDef::new(Probes::Shed)
                            .big_integer()
                            .not_null()
                            .default(0),
                    )
                    .col(ColumnDef::new(Probes::LagMs).big_integer().null())
                    .col(
                        ColumnDef::new(Probes::RateMilli)
                            .big_integer()
                            .not_null()
                            .default(0),
                    )
                    .col(ColumnDef::new(Probes::Instance).string_len(64).null())
                    .col(ColumnDef::new(Probes::InstanceSeenAt).big_integer().null())
                    .col(
                        ColumnDef::new(Probes::HeartbeatMonitorId)
                            .string_len(32)
                            .null(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(BY_HASH)
                    .table(Probes::Table)
                    .col(Probes::SecretHash)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name(BY_WORKSPACE)
                    .table(Probes::Table)
                    .col(Probes::WorkspaceId)
                    .col(Probes::Location)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Probes::Table).to_owned())
            .await
    }
}
