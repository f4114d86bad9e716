//! Each workspace's monitor count, kept by the writes that add and delete monitors, so a
//! page of the monitor list does not count 100,000 rows to say how many there are.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum MonitorCounts {
    Table,
    WorkspaceId,
    Total,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(MonitorCounts::Table)
                    .col(
                        ColumnDef::new(MonitorCounts::WorkspaceId)
                            .text()
                            .not_null()
                            .primary_key(),
                    )
                    .col(
                        ColumnDef::new(MonitorCounts::Total)
                            .big_integer()
                            .not_null()
                            .default(0),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "INSERT INTO monitor_counts (workspace_id, total) \
                 SELECT workspace_id, COUNT(*) FROM monitors GROUP BY workspace_id",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(MonitorCounts::Table).to_owned())
            .await
    }
}
