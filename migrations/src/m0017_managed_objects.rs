//! Monitors, alert policies, channels, status pages and maintenance windows carry a stable
//! `key` of their owner's choosing (unique per workspace and kind) and `managed_by`, the
//! tool that owns them (`tocsin apply` matches by the first and prunes by the second).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The tables that gain the two columns.
const TABLES: [&str; 5] = [
    "monitors",
    "alert_policies",
    "channels",
    "status_pages",
    "maintenance_windows",
];

#[derive(DeriveIden)]
enum Column {
    WorkspaceId,
    ApplyKey,
    ManagedBy,
}

fn index_name(table: &str) -> String {
    format!("idx_{table}_apply_key")
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in TABLES {
            // SQLite takes one column per ALTER TABLE.
            for column in [Column::ApplyKey, Column::ManagedBy] {
                manager
                    .alter_table(
                        Table::alter()
                            .table(Alias::new(table))
                            .add_column(ColumnDef::new(column).text().null())
                            .to_owned(),
                    )
                    .await?;
            }
            // NULLs are distinct in a unique index, on both databases: objects without a
            // key never collide.
            manager
                .create_index(
                    Index::create()
                        .name(index_name(table))
                        .table(Alias::new(table))
                        .col(Column::WorkspaceId)
                        .col(Column::ApplyKey)
                        .unique()
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in TABLES {
            manager
                .drop_index(
                    Index::drop()
                        .name(index_name(table))
                        .table(Alias::new(table))
                        .to_owned(),
                )
                .await?;
            for column in [Column::ApplyKey, Column::ManagedBy] {
                manager
                    .alter_table(
                        Table::alter()
                            .table(Alias::new(table))
                            .drop_column(column)
                            .to_owned(),
                    )
                    .await?;
            }
        }
        Ok(())
    }
}
