//! Check claims made cheap on PostgreSQL, where a clustered node writes one for every
//! round it runs (1,667 a second at 100,000 monitors on a 60 s interval).
//!
//! - The table is `UNLOGGED`: a claim is worth something only while the rounds it
//!   covers are due, so it need not survive a crash of the database server. Such a
//!   crash (or a fail-over to a standby, which does not get unlogged tables) empties
//!   the table, and at worst a round that was running then is run by a second node.
//! - The index that pruning reads by age is a BRIN index: claims are appended in
//!   time order, so a block range summary finds old ones as well as a B-tree while
//!   costing almost nothing per insert.
//!
//! SQLite has one node only and never claims, so nothing changes there.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::DbBackend;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DbBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        db.execute_unprepared("ALTER TABLE check_claims SET UNLOGGED")
            .await?;
        db.execute_unprepared("DROP INDEX IF EXISTS idx_check_claims_claimed_at")
            .await?;
        db.execute_unprepared(
            "CREATE INDEX idx_check_claims_claimed_at ON check_claims USING brin (claimed_at)",
        )
        .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        if manager.get_database_backend() != DbBackend::Postgres {
            return Ok(());
        }
        let db = manager.get_connection();
        db.execute_unprepared("DROP INDEX IF EXISTS idx_check_claims_claimed_at")
            .await?;
        db.execute_unprepared(
            "CREATE INDEX idx_check_claims_claimed_at ON check_claims (claimed_at)",
        )
        .await?;
        db.execute_unprepared("ALTER TABLE check_claims SET LOGGED")
            .await?;
        Ok(())
    }
}
