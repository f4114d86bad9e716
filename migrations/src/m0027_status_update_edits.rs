//! A status-page update can be corrected after it is posted: `updated_at` says when it was
//! last edited (none for an update never edited), so visitors see that the text changed.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum StatusUpdates {
    Table,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(StatusUpdates::Table)
                    .add_column(ColumnDef::new(StatusUpdates::UpdatedAt).big_integer().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(StatusUpdates::Table)
                    .drop_column(StatusUpdates::UpdatedAt)
                    .to_owned(),
            )
            .await
    }
}
