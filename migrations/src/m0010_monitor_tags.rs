//! Monitors carry tags (a JSON list of short strings) to group and filter them.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Monitors {
    Table,
    Tags,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Monitors::Table)
                    .add_column(text(Monitors::Tags).default("[]"))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Monitors::Table)
                    .drop_column(Monitors::Tags)
                    .to_owned(),
            )
            .await
    }
}
