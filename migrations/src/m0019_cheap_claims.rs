//! Check claims without WAL on PostgreSQL, where a clustered node writes one for every
//! round it runs (1,667 a second at 100,000 monitors on a 60 s interval).
//!
//! The table is `UNLOGGED`: a claim is worth something only while the round it covers
//! is due, so it need not survive a crash of the database server. Such a crash (or a
//! fail-over to a standby, which does not get unlogged tables) empties the table, and
//! at worst a round that was running then is run by a second node.
//!
//! SQLite has one node only and never claims, so nothing changes there.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// `ALTER TABLE check_claims SET {how}` on PostgreSQL; nothing on SQLite.
async fn set(manager: &SchemaManager<'_>, how: &str) -> Result<(), DbErr> {
    if manager.get_database_backend() != DbBackend::Postgres {
        return Ok(());
    }
    manager
        .get_connection()
        .execute_unprepared(&format!("ALTER TABLE check_claims SET {how}"))
        .await?;
    Ok(())
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        set(manager, "UNLOGGED").await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        set(manager, "LOGGED").await
    }
}
