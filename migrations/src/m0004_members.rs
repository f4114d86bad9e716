//! The people of a workspace, with their roles. An e-mail address appears once per
//! workspace (a unique index, so two concurrent adds cannot both win).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Members {
    Table,
    Id,
    WorkspaceId,
    Email,
    Name,
    Role,
    CreatedAt,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Members::Table)
                    .col(string_len(Members::Id, 32).primary_key())
                    .col(string_len(Members::WorkspaceId, 32))
                    .col(string_len(Members::Email, 254))
                    .col(string_len(Members::Name, 200))
                    .col(string_len(Members::Role, 16))
                    .col(big_integer(Members::CreatedAt))
                    .col(big_integer(Members::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_members_workspace_email")
                    .table(Members::Table)
                    .col(Members::WorkspaceId)
                    .col(Members::Email)
                    .unique()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(Members::Table).to_owned())
            .await
    }
}
