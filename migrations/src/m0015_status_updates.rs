//! Status-page updates (what a workspace tells visitors about an incident: investigating,
//! identified, monitoring, resolved) and the page's subscribers (e-mail, confirmed by a
//! link, or webhook), who receive each update and each state change of the page's monitors.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum StatusUpdates {
    Table,
    Id,
    WorkspaceId,
    PageId,
    IncidentId,
    Status,
    Body,
    CreatedAt,
}

#[derive(DeriveIden)]
enum StatusSubscribers {
    Table,
    Id,
    WorkspaceId,
    PageId,
    Kind,
    Target,
    Token,
    Confirmed,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(StatusUpdates::Table)
                    .col(string_len(StatusUpdates::Id, 32).primary_key())
                    .col(string_len(StatusUpdates::WorkspaceId, 32))
                    .col(string_len(StatusUpdates::PageId, 32))
                    .col(string_len_null(StatusUpdates::IncidentId, 32))
                    .col(string_len(StatusUpdates::Status, 16))
                    .col(text(StatusUpdates::Body))
                    .col(big_integer(StatusUpdates::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_status_updates_page_created")
                    .table(StatusUpdates::Table)
                    .col(StatusUpdates::PageId)
                    .col(StatusUpdates::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(StatusSubscribers::Table)
                    .col(string_len(StatusSubscribers::Id, 32).primary_key())
                    .col(string_len(StatusSubscribers::WorkspaceId, 32))
                    .col(string_len(StatusSubscribers::PageId, 32))
                    .col(string_len(StatusSubscribers::Kind, 16))
                    .col(string_len(StatusSubscribers::Target, 2048))
                    .col(string_len(StatusSubscribers::Token, 64).unique_key())
                    .col(boolean(StatusSubscribers::Confirmed).default(false))
                    .col(big_integer(StatusSubscribers::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_status_subscribers_page")
                    .table(StatusSubscribers::Table)
                    .col(StatusSubscribers::PageId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(StatusSubscribers::Table).to_owned())
            .await?;
        manager
            .drop_table(Table::drop().table(StatusUpdates::Table).to_owned())
            .await
    }
}
