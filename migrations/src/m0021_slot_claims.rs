//! Claims by slot instead of by round: `check_slot_claims`, one row per region, bucket of
//! monitors and second of the schedule, instead of one per monitor and round.
//!
//! A clustered node claims before it runs a check, so each round runs on one node. With
//! a row per round, 100,000 monitors on a 60 s interval wrote 1,667 rows a second, and
//! that row was most of PostgreSQL's work per check. A slot claim covers every round of
//! one bucket (a sixteenth of the monitors, by a hash of their id) that starts within
//! one second of the schedule, in one region: at most sixteen rows a second per region,
//! whatever the number of monitors. The primary key still decides who runs what.
//!
//! The table is `UNLOGGED` on PostgreSQL, as `check_claims` became in m0019: a claim is
//! worth something only while its second is due. `check_claims` stays, unwritten, until
//! nodes of the version before have stopped (they still claim there during a rolling
//! upgrade); its rows are pruned as before.

use sea_orm_migration::sea_orm::DbBackend;
use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum CheckSlotClaims {
    Table,
    Region,
    Bucket,
    Slot,
    NodeId,
    ClaimedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(CheckSlotClaims::Table)
                    .col(string_len(CheckSlotClaims::Region, 64))
                    .col(integer(CheckSlotClaims::Bucket))
                    .col(big_integer(CheckSlotClaims::Slot))
                    .col(string_len(CheckSlotClaims::NodeId, 64))
                    .col(big_integer(CheckSlotClaims::ClaimedAt))
                    .primary_key(
                        Index::create()
                            .col(CheckSlotClaims::Region)
                            .col(CheckSlotClaims::Bucket)
                            .col(CheckSlotClaims::Slot),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_check_slot_claims_claimed_at")
                    .table(CheckSlotClaims::Table)
                    .col(CheckSlotClaims::ClaimedAt)
                    .to_owned(),
            )
            .await?;
        if manager.get_database_backend() == DbBackend::Postgres {
            manager
                .get_connection()
                .execute_unprepared("ALTER TABLE check_slot_claims SET UNLOGGED")
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(CheckSlotClaims::Table).to_owned())
            .await
    }
}
