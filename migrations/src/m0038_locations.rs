//! Locations: whether a workspace's private location is online, as its probes last
//! showed. A row is made the first time one of the location's probes is heard from;
//! `offline_since` is set when all of them have gone silent and cleared when one is heard
//! again. Each change is a conditional update in the transaction that queues the
//! location's alert (`location.offline`, `location.online`), so a second node or a
//! restart never sends one twice.
//!
//! A probe's row also says whether the probe answers confirmation requests (probes of
//! earlier releases do not): only such a probe's location is asked to confirm a failure.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Locations {
    Table,
    WorkspaceId,
    Name,
    OfflineSince,
    ChangedAt,
}

#[derive(DeriveIden)]
enum Probes {
    Table,
    AnswersConfirmations,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Locations::Table)
                    .col(
                        ColumnDef::new(Locations::WorkspaceId)
                            .string_len(32)
                            .not_null(),
                    )
                    .col(ColumnDef::new(Locations::Name).string_len(100).not_null())
                    .col(ColumnDef::new(Locations::OfflineSince).big_integer().null())
                    .col(ColumnDef::new(Locations::ChangedAt).big_integer().not_null())
                    .primary_key(
                        Index::create()
                            .col(Locations::WorkspaceId)
                            .col(Locations::Name),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Probes::Table)
                    .add_column(
                        ColumnDef::new(Probes::AnswersConfirmations)
                            .boolean()
                            .not_null()
                            .default(false),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Probes::Table)
                    .drop_column(Probes::AnswersConfirmations)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(Locations::Table).to_owned())
            .await
    }
}
