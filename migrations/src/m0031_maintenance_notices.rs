//! Maintenance notices to status-page subscribers: a window's `subscriber_notice_minutes`
//! (0: none; default a day) says how long before an occurrence starts the subscribers of
//! the public pages showing a monitor it covers are told of it; they are told again when
//! it ends. `maintenance_notices` holds the notices given, one per occurrence and phase
//! (`scheduled`, `ended`), so each is given once across restarts and nodes.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum MaintenanceWindows {
    Table,
    Id,
    SubscriberNoticeMinutes,
}

#[derive(DeriveIden)]
enum MaintenanceNotices {
    Table,
    WindowId,
    StartsAt,
    Phase,
    SentAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(MaintenanceWindows::Table)
                    .add_column(
                        ColumnDef::new(MaintenanceWindows::SubscriberNoticeMinutes)
                            .integer()
                            .not_null()
                            .default(1440),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(MaintenanceNotices::Table)
                    .col(
                        ColumnDef::new(MaintenanceNotices::WindowId)
                            .string_len(32)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(MaintenanceNotices::StartsAt)
                            .big_integer()
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(MaintenanceNotices::Phase)
                            .string_len(16)
                            .not_null(),
                    )
                    .col(
                        ColumnDef::new(MaintenanceNotices::SentAt)
                            .big_integer()
                            .not_null(),
                    )
                    .primary_key(
                        Index::create()
                            .col(MaintenanceNotices::WindowId)
                            .col(MaintenanceNotices::StartsAt)
                            .col(MaintenanceNotices::Phase),
                    )
                    .foreign_key(
                        ForeignKey::create()
                            .from(MaintenanceNotices::Table, MaintenanceNotices::WindowId)
                            .to(MaintenanceWindows::Table, MaintenanceWindows::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(MaintenanceNotices::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(MaintenanceWindows::Table)
                    .drop_column(MaintenanceWindows::SubscriberNoticeMinutes)
                    .to_owned(),
            )
            .await
    }
}
