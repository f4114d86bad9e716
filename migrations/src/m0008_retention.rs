//! Retention: old check results, deliveries and resolved incidents are deleted in small
//! batches, and a deleted monitor's history goes the same way afterwards
//! (`monitor_tombstones` lists monitors whose rows are still being removed). Indexes let
//! each batch find its rows by age. Daily rollups also keep response-time sums, so uptime
//! over long windows is read from them.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum CheckResults {
    Table,
    CheckedAt,
}

#[derive(DeriveIden)]
enum Deliveries {
    Table,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Incidents {
    Table,
    ResolvedAt,
}

#[derive(DeriveIden)]
enum DailyUptime {
    Table,
    ResponseMsSum,
    ResponseCount,
}

#[derive(DeriveIden)]
enum MonitorTombstones {
    Table,
    MonitorId,
    DeletedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (name, table, column) in [
            (
                "idx_check_results_checked_at",
                CheckResults::Table.into_iden(),
                CheckResults::CheckedAt.into_iden(),
            ),
            (
                "idx_deliveries_created_at",
                Deliveries::Table.into_iden(),
                Deliveries::CreatedAt.into_iden(),
            ),
            (
                "idx_incidents_resolved_at",
                Incidents::Table.into_iden(),
                Incidents::ResolvedAt.into_iden(),
            ),
        ] {
            manager
                .create_index(
                    Index::create()
                        .name(name)
                        .table(table)
                        .col(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(DailyUptime::Table)
                    .add_column(big_integer(DailyUptime::ResponseMsSum).default(0))
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(DailyUptime::Table)
                    .add_column(integer(DailyUptime::ResponseCount).default(0))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(MonitorTombstones::Table)
                    .col(string(MonitorTombstones::MonitorId).primary_key())
                    .col(big_integer(MonitorTombstones::DeletedAt))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(MonitorTombstones::Table).to_owned())
            .await?;
        for column in [
            DailyUptime::ResponseMsSum.into_iden(),
            DailyUptime::ResponseCount.into_iden(),
        ] {
            manager
                .alter_table(
                    Table::alter()
                        .table(DailyUptime::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        for (name, table) in [
            (
                "idx_check_results_checked_at",
                CheckResults::Table.into_iden(),
            ),
            ("idx_deliveries_created_at", Deliveries::Table.into_iden()),
            ("idx_incidents_resolved_at", Incidents::Table.into_iden()),
        ] {
            manager
                .drop_index(Index::drop().name(name).table(table).to_owned())
                .await?;
        }
        Ok(())
    }
}
