//! What `/metrics` keeps between scrapes. A scrape writes every monitor's name, type, tags
//! and workspace; at a million monitors reading them took most of a scrape's 14 s, though
//! they change only when someone edits a monitor. On SQLite (one process owns the file)
//! `monitor_labels_version` counts the writes that change them: triggers add one on every
//! insert and delete of a monitor and every update of those columns (a state change or a
//! snooze does not count). A scrape keeps the labels it read under the count it read them
//! at, and reads them again only once the count moved. The monitors' states are read
//! fresh at every scrape, through an index on `status` (nearly all are `up`; only the
//! others are read).
//!
//! PostgreSQL has the index only: several nodes write there, and a scrape reads as before.
//! A later migration that rebuilds `monitors` on SQLite (create, copy, drop, rename) must
//! create the three triggers again (a test of the kept labels fails without them).

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

const INDEX: &str = "idx_monitors_status";

/// The counter and the three triggers that move it (SQLite).
const SQLITE_UP: [&str; 5] = [
    "CREATE TABLE monitor_labels_version (id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL)",
    "INSERT INTO monitor_labels_version (id, version) VALUES (1, 0)",
    "CREATE TRIGGER monitor_labels_inserted AFTER INSERT ON monitors \
     BEGIN UPDATE monitor_labels_version SET version = version + 1 WHERE id = 1; END",
    "CREATE TRIGGER monitor_labels_deleted AFTER DELETE ON monitors \
     BEGIN UPDATE monitor_labels_version SET version = version + 1 WHERE id = 1; END",
    "CREATE TRIGGER monitor_labels_updated \
     AFTER UPDATE OF id, workspace_id, name, kind, tags, config ON monitors \
     BEGIN UPDATE monitor_labels_version SET version = version + 1 WHERE id = 1; END",
];

const SQLITE_DOWN: [&str; 4] = [
    "DROP TRIGGER monitor_labels_updated",
    "DROP TRIGGER monitor_labels_deleted",
    "DROP TRIGGER monitor_labels_inserted",
    "DROP TABLE monitor_labels_version",
];

#[derive(DeriveIden)]
enum Monitors {
    Table,
    Status,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_index(
                Index::create()
                    .name(INDEX)
                    .table(Monitors::Table)
                    .col(Monitors::Status)
                    .to_owned(),
            )
            .await?;
        if manager.get_database_backend() == DbBackend::Sqlite {
            let db = manager.get_connection();
            for statement in SQLITE_UP {
                db.execute_unprepared(statement).await?;
            }
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() == DbBackend::Sqlite {
            let db = manager.get_connection();
            for statement in SQLITE_DOWN {
                db.execute_unprepared(statement).await?;
            }
        }
        manager
            .drop_index(Index::drop().name(INDEX).table(Monitors::Table).to_owned())
            .await
    }
}
