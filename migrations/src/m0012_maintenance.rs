//! Maintenance windows: times (one-off, or recurring by an RFC 5545 rule or a cron schedule
//! with a duration and a time zone) in which a workspace's monitors, some of them (by id or
//! tag) or all of them, are checked and recorded but open no incident and notify nobody.
//! Checks taken in a window are marked (`check_results.maintenance`).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum MaintenanceWindows {
    Table,
    Id,
    WorkspaceId,
    Name,
    Description,
    StartsAt,
    EndsAt,
    Rrule,
    Cron,
    DurationMinutes,
    Timezone,
    MonitorIds,
    Tags,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum CheckResults {
    Table,
    Maintenance,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(MaintenanceWindows::Table)
                    .col(string_len(MaintenanceWindows::Id, 32).primary_key())
                    .col(string_len(MaintenanceWindows::WorkspaceId, 32))
                    .col(string_len(MaintenanceWindows::Name, 200))
                    .col(text(MaintenanceWindows::Description).default(""))
                    .col(big_integer(MaintenanceWindows::StartsAt))
                    .col(big_integer_null(MaintenanceWindows::EndsAt))
                    .col(text_null(MaintenanceWindows::Rrule))
                    .col(string_len_null(MaintenanceWindows::Cron, 200))
                    .col(integer_null(MaintenanceWindows::DurationMinutes))
                    .col(string_len(MaintenanceWindows::Timezone, 64).default("UTC"))
                    .col(text(MaintenanceWindows::MonitorIds).default("[]"))
                    .col(text(MaintenanceWindows::Tags).default("[]"))
                    .col(big_integer(MaintenanceWindows::CreatedAt))
                    .col(big_integer(MaintenanceWindows::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_maintenance_windows_workspace_id")
                    .table(MaintenanceWindows::Table)
                    .col(MaintenanceWindows::WorkspaceId)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(CheckResults::Table)
                    .add_column(
                        ColumnDef::new(CheckResults::Maintenance)
                            .boolean()
                            .not_null()
                            .default(false)
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
                    .table(CheckResults::Table)
                    .drop_column(CheckResults::Maintenance)
                    .to_owned(),
            )
            .await?;
        manager
            .drop_table(Table::drop().table(MaintenanceWindows::Table).to_owned())
            .await
    }
}
