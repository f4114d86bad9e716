//! Workspaces, API keys, monitors and check results.
//!
//! Times are stored as milliseconds since the Unix epoch (BIGINT) on both backends, so
//! ordering and range queries behave the same everywhere.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Workspaces {
    Table,
    Id,
    Name,
    Plan,
    WebhookSecret,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
    WorkspaceId,
    Name,
    Role,
    Prefix,
    SecretHash,
    CreatedAt,
    LastUsedAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum Monitors {
    Table,
    Id,
    WorkspaceId,
    Name,
    Kind,
    Config,
    IntervalSecs,
    TimeoutSecs,
    AlertPolicyId,
    Regions,
    Status,
    CreatedAt,
    UpdatedAt,
    LastCheckedAt,
    LastResponseTimeMs,
    ConsecutiveFailures,
    ConsecutiveSuccesses,
    RegionCursor,
}

#[derive(DeriveIden)]
enum CheckResults {
    Table,
    Id,
    MonitorId,
    WorkspaceId,
    CheckedAt,
    Ok,
    Reason,
    StatusCode,
    ResponseTimeMs,
    Region,
    Details,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Workspaces::Table)
                    .col(string_len(Workspaces::Id, 32).primary_key())
                    .col(string_len(Workspaces::Name, 200))
                    .col(string_len(Workspaces::Plan, 16))
                    .col(string_len(Workspaces::WebhookSecret, 64))
                    .col(big_integer(Workspaces::CreatedAt))
                    .col(big_integer(Workspaces::UpdatedAt))
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(ApiKeys::Table)
                    .col(string_len(ApiKeys::Id, 32).primary_key())
                    .col(string_len(ApiKeys::WorkspaceId, 32))
                    .col(string_len(ApiKeys::Name, 200))
                    .col(string_len(ApiKeys::Role, 16))
                    .col(string_len(ApiKeys::Prefix, 16))
                    .col(string_len_uniq(ApiKeys::SecretHash, 64))
                    .col(big_integer(ApiKeys::CreatedAt))
                    .col(big_integer_null(ApiKeys::LastUsedAt))
                    .col(big_integer_null(ApiKeys::RevokedAt))
                    .foreign_key(
                        ForeignKey::create()
                            .from(ApiKeys::Table, ApiKeys::WorkspaceId)
                            .to(Workspaces::Table, Workspaces::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Monitors::Table)
                    .col(string_len(Monitors::Id, 32).primary_key())
                    .col(string_len(Monitors::WorkspaceId, 32))
                    .col(string_len(Monitors::Name, 200))
                    .col(string_len(Monitors::Kind, 32))
                    .col(text(Monitors::Config))
                    .col(integer(Monitors::IntervalSecs))
                    .col(integer(Monitors::TimeoutSecs))
                    .col(string_len_null(Monitors::AlertPolicyId, 32))
                    .col(text(Monitors::Regions))
                    .col(string_len(Monitors::Status, 16))
                    .col(big_integer(Monitors::CreatedAt))
                    .col(big_integer(Monitors::UpdatedAt))
                    .col(big_integer_null(Monitors::LastCheckedAt))
                    .col(integer_null(Monitors::LastResponseTimeMs))
                    .col(integer(Monitors::ConsecutiveFailures).default(0))
                    .col(integer(Monitors::ConsecutiveSuccesses).default(0))
                    .col(integer(Monitors::RegionCursor).default(0))
                    .foreign_key(
                        ForeignKey::create()
                            .from(Monitors::Table, Monitors::WorkspaceId)
                            .to(Workspaces::Table, Workspaces::Id)
                            .on_delete(ForeignKeyAction::Cascade),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_monitors_workspace_created")
                    .table(Monitors::Table)
                    .col(Monitors::WorkspaceId)
                    .col(Monitors::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_monitors_updated")
                    .table(Monitors::Table)
                    .col(Monitors::UpdatedAt)
                    .to_owned(),
            )
            .await?;

        // No foreign key to monitors: results are written in batches that may race a
        // delete, and a deleted monitor's results are removed with it by the store.
        manager
            .create_table(
                Table::create()
                    .table(CheckResults::Table)
                    .col(string_len(CheckResults::Id, 32).primary_key())
                    .col(string_len(CheckResults::MonitorId, 32))
                    .col(string_len(CheckResults::WorkspaceId, 32))
                    .col(big_integer(CheckResults::CheckedAt))
                    .col(boolean(CheckResults::Ok))
                    .col(text_null(CheckResults::Reason))
                    .col(integer_null(CheckResults::StatusCode))
                    .col(integer_null(CheckResults::ResponseTimeMs))
                    .col(string_len(CheckResults::Region, 64))
                    .col(text(CheckResults::Details))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_check_results_monitor_time")
                    .table(CheckResults::Table)
                    .col(CheckResults::MonitorId)
                    .col(CheckResults::CheckedAt)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }
}
