//! Grouped notifications: an alert policy's `group_window_secs` gathers the incidents it
//! opens within that many seconds into one e-mail or Telegram message per channel. A group
//! (`alert_groups`) closes at `closes_at`; the deliveries it sends then are listed in it,
//! and each incident in it names it (`incidents.group_id`, shown to webhooks as `groupId`).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum AlertGroups {
    Table,
    Id,
    WorkspaceId,
    PolicyId,
    StartedAt,
    ClosesAt,
    DeliveryIds,
}

#[derive(DeriveIden)]
enum AlertPolicies {
    Table,
    GroupWindowSecs,
}

#[derive(DeriveIden)]
enum Incidents {
    Table,
    GroupId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AlertGroups::Table)
                    .col(string_len(AlertGroups::Id, 32).primary_key())
                    .col(string_len(AlertGroups::WorkspaceId, 32))
                    .col(string_len(AlertGroups::PolicyId, 32))
                    .col(big_integer(AlertGroups::StartedAt))
                    .col(big_integer(AlertGroups::ClosesAt))
                    .col(text(AlertGroups::DeliveryIds).default("[]"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_alert_groups_policy_closes")
                    .table(AlertGroups::Table)
                    .col(AlertGroups::PolicyId)
                    .col(AlertGroups::ClosesAt)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AlertPolicies::Table)
                    .add_column(
                        ColumnDef::new(AlertPolicies::GroupWindowSecs)
                            .integer()
                            .not_null()
                            .default(0)
                            .to_owned(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Incidents::Table)
                    .add_column(
                        ColumnDef::new(Incidents::GroupId)
                            .string_len(32)
                            .null()
                            .to_owned(),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Incidents::Table)
                    .drop_column(Incidents::GroupId)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AlertPolicies::Table)
                    .drop_column(AlertPolicies::GroupWindowSecs)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(AlertGroups::Table).to_owned())
            .await
    }
}
