//! API keys gain the `owner` role and remember the member who made them (`created_by`):
//! a key never has more rights than that member has now, and stops working when the
//! member leaves. Keys made before this migration have no maker (they stand for the
//! operator). The first start's key, made with its workspace, becomes an `owner` key:
//! until now every admin key acted as an owner, and the bootstrap key is the operator's.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    CreatedBy,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(ApiKeys::Table)
                    .add_column(ColumnDef::new(ApiKeys::CreatedBy).string_len(32).null())
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "UPDATE api_keys SET role = 'owner' \
                 WHERE name = 'bootstrap admin' AND role = 'admin' AND created_by IS NULL \
                 AND created_at = (SELECT w.created_at FROM workspaces w WHERE w.id = api_keys.workspace_id)",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .get_connection()
            .execute_unprepared("UPDATE api_keys SET role = 'admin' WHERE role = 'owner'")
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(ApiKeys::Table)
                    .drop_column(ApiKeys::CreatedBy)
                    .to_owned(),
            )
            .await
    }
}
