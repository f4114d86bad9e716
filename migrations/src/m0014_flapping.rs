//! Flapping: an alert policy may say that a monitor changing state more than
//! `flap_changes` times within `flap_window_minutes` is flapping. A monitor's recent
//! changes and whether it is flapping are kept in `flap_states`.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum FlapStates {
    Table,
    MonitorId,
    WorkspaceId,
    Changes,
    FlappingSince,
    FlapCount,
    LastChange,
}

#[derive(DeriveIden)]
enum AlertPolicies {
    Table,
    FlapChanges,
    FlapWindowMinutes,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(FlapStates::Table)
                    .col(string_len(FlapStates::MonitorId, 32).primary_key())
                    .col(string_len(FlapStates::WorkspaceId, 32))
                    .col(text(FlapStates::Changes).default("[]"))
                    .col(big_integer_null(FlapStates::FlappingSince))
                    .col(integer(FlapStates::FlapCount).default(0))
                    .col(big_integer(FlapStates::LastChange))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_flap_states_flapping_since")
                    .table(FlapStates::Table)
                    .col(FlapStates::FlappingSince)
                    .to_owned(),
            )
            .await?;
        for column in [AlertPolicies::FlapChanges, AlertPolicies::FlapWindowMinutes] {
            manager
                .alter_table(
                    Table::alter()
                        .table(AlertPolicies::Table)
                        .add_column(
                            ColumnDef::new(column)
                                .integer()
                                .not_null()
                                .default(0)
                                .to_owned(),
                        )
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [AlertPolicies::FlapChanges, AlertPolicies::FlapWindowMinutes] {
            manager
                .alter_table(
                    Table::alter()
                        .table(AlertPolicies::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .drop_table(Table::drop().table(FlapStates::Table).to_owned())
            .await
    }
}
