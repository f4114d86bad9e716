//! Regional confirmation: a monitor may ask that a failure seen in one region be checked
//! again at once from another of its regions before it counts. `check_confirmations` holds
//! each open request (with the failed check it is about) until a node of the other region
//! answers it, or its deadline passes and the failure counts as it was.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Monitors {
    Table,
    RegionalConfirmation,
}

#[derive(DeriveIden)]
enum CheckResults {
    Table,
    Counted,
}

#[derive(DeriveIden)]
enum CheckConfirmations {
    Table,
    Id,
    MonitorId,
    Round,
    FromRegion,
    TargetRegion,
    RequestedAt,
    DeadlineAt,
    ClaimedBy,
    LeaseUntil,
    Original,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Monitors::Table)
                    .add_column(boolean(Monitors::RegionalConfirmation).default(false))
                    .to_owned(),
            )
            .await?;
        // A check kept as history only (the other half of a confirmed round) does not
        // count towards uptime.
        manager
            .alter_table(
                Table::alter()
                    .table(CheckResults::Table)
                    .add_column(boolean(CheckResults::Counted).default(true))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(CheckConfirmations::Table)
                    .col(string_len(CheckConfirmations::Id, 32).primary_key())
                    .col(string_len(CheckConfirmations::MonitorId, 32))
                    .col(big_integer(CheckConfirmations::Round))
                    .col(string_len(CheckConfirmations::FromRegion, 64))
                    .col(string_len(CheckConfirmations::TargetRegion, 64))
                    .col(big_integer(CheckConfirmations::RequestedAt))
                    .col(big_integer(CheckConfirmations::DeadlineAt))
                    .col(string_len_null(CheckConfirmations::ClaimedBy, 64))
                    .col(big_integer_null(CheckConfirmations::LeaseUntil))
                    .col(text(CheckConfirmations::Original))
                    .to_owned(),
            )
            .await?;
        // One request per round of a monitor, whoever asks.
        manager
            .create_index(
                Index::create()
                    .name("idx_check_confirmations_round")
                    .table(CheckConfirmations::Table)
                    .col(CheckConfirmations::MonitorId)
                    .col(CheckConfirmations::Round)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_check_confirmations_target")
                    .table(CheckConfirmations::Table)
                    .col(CheckConfirmations::TargetRegion)
                    .col(CheckConfirmations::RequestedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_check_confirmations_deadline")
                    .table(CheckConfirmations::Table)
                    .col(CheckConfirmations::DeadlineAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(CheckConfirmations::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(CheckResults::Table)
                    .drop_column(CheckResults::Counted)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Monitors::Table)
                    .drop_column(Monitors::RegionalConfirmation)
                    .to_owned(),
            )
            .await
    }
}
