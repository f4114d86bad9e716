//! Reminders: an alert policy's `repeat_every_minutes` (0 is off) sends an open incident's
//! DOWN again as a reminder until someone acknowledges or it resolves, at most
//! `repeat_limit` times. An incident keeps when its next reminder is due (`remind_at`) and
//! how many it has had (`reminders`).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum AlertPolicies {
    Table,
    RepeatEveryMinutes,
    RepeatLimit,
}

#[derive(DeriveIden)]
enum Incidents {
    Table,
    Status,
    RemindAt,
    Reminders,
}

const INDEX: &str = "idx_incidents_status_remind_at";

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        let columns = [
            (
                AlertPolicies::Table.into_iden(),
                ColumnDef::new(AlertPolicies::RepeatEveryMinutes)
                    .integer()
                    .not_null()
                    .default(0)
                    .to_owned(),
            ),
            (
                AlertPolicies::Table.into_iden(),
                ColumnDef::new(AlertPolicies::RepeatLimit)
                    .integer()
                    .not_null()
                    .default(10)
                    .to_owned(),
            ),
            (
                Incidents::Table.into_iden(),
                ColumnDef::new(Incidents::RemindAt)
                    .big_integer()
                    .null()
                    .to_owned(),
            ),
            (
                Incidents::Table.into_iden(),
                ColumnDef::new(Incidents::Reminders)
                    .integer()
                    .not_null()
                    .default(0)
                    .to_owned(),
            ),
        ];
        // One column a statement: SQLite adds one at a time.
        for (table, mut column) in columns {
            manager
                .alter_table(
                    Table::alter()
                        .table(table)
                        .add_column(&mut column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(Incidents::Table)
                    .col(Incidents::Status)
                    .col(Incidents::RemindAt)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_index(Index::drop().name(INDEX).table(Incidents::Table).to_owned())
            .await?;
        for (table, column) in [
            (Incidents::Table.into_iden(), Incidents::Reminders.into_iden()),
            (Incidents::Table.into_iden(), Incidents::RemindAt.into_iden()),
            (
                AlertPolicies::Table.into_iden(),
                AlertPolicies::RepeatLimit.into_iden(),
            ),
            (
                AlertPolicies::Table.into_iden(),
                AlertPolicies::RepeatEveryMinutes.into_iden(),
            ),
        ] {
            manager
                .alter_table(Table::alter().table(table).drop_column(column).to_owned())
                .await?;
        }
        Ok(())
    }
}
