//! One-click links in alerts: every DOWN, reminder and flapping message about an open
//! incident carries links to acknowledge it, snooze its monitor or resolve it. Each link is
//! a row here, keyed by the SHA-256 of its random token: bound to one incident, one action
//! and the channel it was sent to, usable once (`used_at`), and only for a while after
//! `created_at` (the server's `action_link_lifetime`). A workspace's `time_zone` says when
//! "until 09:00" is.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Workspaces {
    Table,
    TimeZone,
}

#[derive(DeriveIden)]
enum Incidents {
    Table,
    Id,
}

#[derive(DeriveIden)]
enum ActionLinks {
    Table,
    TokenHash,
    WorkspaceId,
    IncidentId,
    DeliveryId,
    ChannelId,
    ChannelKind,
    Action,
    CreatedAt,
    UsedAt,
    UsedBy,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Workspaces::Table)
                    .add_column(ColumnDef::new(Workspaces::TimeZone).string_len(64).null())
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ActionLinks::Table)
                    .col(
                        ColumnDef::new(ActionLinks::TokenHash)
                            .string_len(64)
                            .not_null()
                            .primary_key(),
                    )
                    .col(
                        ColumnDef::new(ActionLinks::WorkspaceId)
                            .string_len(32)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(ActionLinks::IncidentId)
                            .string_len(32)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(ActionLinks::DeliveryId)
                            .string_len(32)
                            .not_null(),
                    )
                    .col(ColumnDef::new(ActionLinks::ChannelId).string_len(32).null())
                    .col(
                        ColumnDef::new(ActionLinks::ChannelKind)
                            .string_len(64)
                            .not_null(),
                    )
                    .col(ColumnDef::new(ActionLinks::Action).string_len(32).not_null())
                    .col(
                        ColumnDef::new(ActionLinks::CreatedAt)
                            .big_integer()
                            .not_null(),
                    )
                    .col(ColumnDef::new(ActionLinks::UsedAt).big_integer().null())
                    .col(ColumnDef::new(ActionLinks::UsedBy).string_len(320).null())
                    .foreign_key(
                        ForeignKey::create()
                            .from(ActionLinks::Table, ActionLinks::IncidentId)
                            .to(Incidents::Table, Incidents::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_action_links_created")
                    .table(ActionLinks::Table)
                    .col(ActionLinks::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_action_links_incident")
                    .table(ActionLinks::Table)
                    .col(ActionLinks::IncidentId)
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(ActionLinks::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Workspaces::Table)
                    .drop_column(Workspaces::TimeZone)
                    .to_owned(),
            )
            .await
    }
}
