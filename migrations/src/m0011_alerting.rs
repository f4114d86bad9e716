//! Quieter, wider alerting:
//! - heartbeat monitors: a job pings a secret URL (`monitors.ping_token`), and a missed
//!   deadline fails the monitor. `heartbeat_states` holds where each stands: the last ping,
//!   a run started and not yet finished, and the deadline the next ping must beat (in the
//!   database, so restarts and other nodes see it);
//! - dependencies (`monitors.depends_on`, a JSON list of monitor ids) and snoozes
//!   (`monitors.snoozed_until`, `tag_snoozes`);
//! - incidents whose notifications are held (`incidents.hold`, JSON: why and until when)
//!   and whether their opening was told to anyone yet (`incidents.notified`).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum HeartbeatStates {
    Table,
    MonitorId,
    LastPingAt,
    StartedAt,
    DeadlineAt,
}

#[derive(DeriveIden)]
enum Monitors {
    Table,
    PingToken,
    DependsOn,
    SnoozedUntil,
}

#[derive(DeriveIden)]
enum TagSnoozes {
    Table,
    WorkspaceId,
    Tag,
    Until,
}

#[derive(DeriveIden)]
enum Incidents {
    Table,
    Hold,
    Notified,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(HeartbeatStates::Table)
                    .col(string_len(HeartbeatStates::MonitorId, 32).primary_key())
                    .col(big_integer_null(HeartbeatStates::LastPingAt))
                    .col(big_integer_null(HeartbeatStates::StartedAt))
                    .col(big_integer_null(HeartbeatStates::DeadlineAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_heartbeat_states_deadline_at")
                    .table(HeartbeatStates::Table)
                    .col(HeartbeatStates::DeadlineAt)
                    .to_owned(),
            )
            .await?;
        // SQLite adds one column per ALTER TABLE.
        for column in [
            ColumnDef::new(Monitors::PingToken)
                .string_len(64)
                .null()
                .to_owned(),
            ColumnDef::new(Monitors::DependsOn)
                .text()
                .not_null()
                .default("[]")
                .to_owned(),
            ColumnDef::new(Monitors::SnoozedUntil)
                .big_integer()
                .null()
                .to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Monitors::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .create_index(
                Index::create()
                    .name("idx_monitors_ping_token")
                    .table(Monitors::Table)
                    .col(Monitors::PingToken)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(TagSnoozes::Table)
                    .col(string_len(TagSnoozes::WorkspaceId, 32))
                    .col(string_len(TagSnoozes::Tag, 64))
                    .col(big_integer(TagSnoozes::Until))
                    .primary_key(
                        Index::create()
                            .col(TagSnoozes::WorkspaceId)
                            .col(TagSnoozes::Tag),
                    )
                    .to_owned(),
            )
            .await?;
        for column in [
            ColumnDef::new(Incidents::Hold).text().null().to_owned(),
            ColumnDef::new(Incidents::Notified)
                .boolean()
                .not_null()
                .default(true)
                .to_owned(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Incidents::Table)
                        .add_column(column)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in [Incidents::Hold, Incidents::Notified] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Incidents::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .drop_table(Table::drop().table(TagSnoozes::Table).to_owned())
            .await?;
        manager
            .drop_index(
                Index::drop()
                    .name("idx_monitors_ping_token")
                    .table(Monitors::Table)
                    .to_owned(),
            )
            .await?;
        for column in [
            Monitors::PingToken,
            Monitors::DependsOn,
            Monitors::SnoozedUntil,
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(Monitors::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .drop_table(Table::drop().table(HeartbeatStates::Table).to_owned())
            .await
    }
}
