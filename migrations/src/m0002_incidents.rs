//! Alert policies, stored channels, incidents with their timeline, and the delivery outbox.
//!
//! At most one unresolved incident per monitor is a database rule, not a hope: `open_key`
//! holds the monitor id while the incident is unresolved and NULL afterwards, under a
//! unique index (NULLs never collide on SQLite or PostgreSQL).

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum AlertPolicies {
    Table,
    Id,
    WorkspaceId,
    Name,
    FailureThreshold,
    RecoveryThreshold,
    NotifyOnRecovery,
    Channels,
    Escalation,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Channels {
    Table,
    Id,
    WorkspaceId,
    Name,
    Kind,
    Config,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum Incidents {
    Table,
    Id,
    WorkspaceId,
    MonitorId,
    PolicyId,
    Status,
    OpenKey,
    CreatedAt,
    AcknowledgedAt,
    AcknowledgedBy,
    ResolvedAt,
    EscalateAt,
    EscalatedAt,
    Failure,
    Monitor,
}

#[derive(DeriveIden)]
enum IncidentEvents {
    Table,
    Id,
    IncidentId,
    At,
    Kind,
    Details,
}

#[derive(DeriveIden)]
enum Deliveries {
    Table,
    Id,
    WorkspaceId,
    IncidentId,
    MonitorId,
    ChannelId,
    ChannelKind,
    ChannelConfig,
    Event,
    Payload,
    Status,
    Attempts,
    NextAttemptAt,
    LeaseUntil,
    LastError,
    CreatedAt,
    UpdatedAt,
    DeliveredAt,
}

#[derive(DeriveIden)]
enum DeliveryAttempts {
    Table,
    Id,
    DeliveryId,
    Attempt,
    At,
    Ok,
    StatusCode,
    Error,
    DurationMs,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(AlertPolicies::Table)
                    .col(string_len(AlertPolicies::Id, 32).primary_key())
                    .col(string_len(AlertPolicies::WorkspaceId, 32))
                    .col(string_len(AlertPolicies::Name, 200))
                    .col(integer(AlertPolicies::FailureThreshold))
                    .col(integer(AlertPolicies::RecoveryThreshold))
                    .col(boolean(AlertPolicies::NotifyOnRecovery))
                    .col(text(AlertPolicies::Channels))
                    .col(text_null(AlertPolicies::Escalation))
                    .col(big_integer(AlertPolicies::CreatedAt))
                    .col(big_integer(AlertPolicies::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_alert_policies_workspace")
                    .table(AlertPolicies::Table)
                    .col(AlertPolicies::WorkspaceId)
                    .col(AlertPolicies::CreatedAt)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Channels::Table)
                    .col(string_len(Channels::Id, 32).primary_key())
                    .col(string_len(Channels::WorkspaceId, 32))
                    .col(string_len(Channels::Name, 200))
                    .col(string_len(Channels::Kind, 32))
                    .col(text(Channels::Config))
                    .col(big_integer(Channels::CreatedAt))
                    .col(big_integer(Channels::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_channels_workspace_name")
                    .table(Channels::Table)
                    .col(Channels::WorkspaceId)
                    .col(Channels::Name)
                    .unique()
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Incidents::Table)
                    .col(string_len(Incidents::Id, 32).primary_key())
                    .col(string_len(Incidents::WorkspaceId, 32))
                    .col(string_len(Incidents::MonitorId, 32))
                    .col(string_len_null(Incidents::PolicyId, 32))
                    .col(string_len(Incidents::Status, 16))
                    .col(string_len_null(Incidents::OpenKey, 32))
                    .col(big_integer(Incidents::CreatedAt))
                    .col(big_integer_null(Incidents::AcknowledgedAt))
                    .col(string_len_null(Incidents::AcknowledgedBy, 200))
                    .col(big_integer_null(Incidents::ResolvedAt))
                    .col(big_integer_null(Incidents::EscalateAt))
                    .col(big_integer_null(Incidents::EscalatedAt))
                    .col(text(Incidents::Failure))
                    .col(text(Incidents::Monitor))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_incidents_open_key")
                    .table(Incidents::Table)
                    .col(Incidents::OpenKey)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_incidents_workspace_created")
                    .table(Incidents::Table)
                    .col(Incidents::WorkspaceId)
                    .col(Incidents::CreatedAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_incidents_escalate")
                    .table(Incidents::Table)
                    .col(Incidents::Status)
                    .col(Incidents::EscalateAt)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(IncidentEvents::Table)
                    .col(string_len(IncidentEvents::Id, 32).primary_key())
                    .col(string_len(IncidentEvents::IncidentId, 32))
                    .col(big_integer(IncidentEvents::At))
                    .col(string_len(IncidentEvents::Kind, 32))
                    .col(text(IncidentEvents::Details))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_incident_events_incident")
                    .table(IncidentEvents::Table)
                    .col(IncidentEvents::IncidentId)
                    .col(IncidentEvents::At)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(Deliveries::Table)
                    .col(string_len(Deliveries::Id, 32).primary_key())
                    .col(string_len(Deliveries::WorkspaceId, 32))
                    .col(string_len_null(Deliveries::IncidentId, 32))
                    .col(string_len_null(Deliveries::MonitorId, 32))
                    .col(string_len_null(Deliveries::ChannelId, 32))
                    .col(string_len(Deliveries::ChannelKind, 32))
                    .col(text(Deliveries::ChannelConfig))
                    .col(string_len(Deliveries::Event, 64))
                    .col(text(Deliveries::Payload))
                    .col(string_len(Deliveries::Status, 16))
                    .col(integer(Deliveries::Attempts).default(0))
                    .col(big_integer(Deliveries::NextAttemptAt))
                    .col(big_integer_null(Deliveries::LeaseUntil))
                    .col(text_null(Deliveries::LastError))
                    .col(big_integer(Deliveries::CreatedAt))
                    .col(big_integer(Deliveries::UpdatedAt))
                    .col(big_integer_null(Deliveries::DeliveredAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_deliveries_due")
                    .table(Deliveries::Table)
                    .col(Deliveries::Status)
                    .col(Deliveries::NextAttemptAt)
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_deliveries_workspace_created")
                    .table(Deliveries::Table)
                    .col(Deliveries::WorkspaceId)
                    .col(Deliveries::CreatedAt)
                    .to_owned(),
            )
            .await?;

        manager
            .create_table(
                Table::create()
                    .table(DeliveryAttempts::Table)
                    .col(string_len(DeliveryAttempts::Id, 32).primary_key())
                    .col(string_len(DeliveryAttempts::DeliveryId, 32))
                    .col(integer(DeliveryAttempts::Attempt))
                    .col(big_integer(DeliveryAttempts::At))
                    .col(boolean(DeliveryAttempts::Ok))
                    .col(integer_null(DeliveryAttempts::StatusCode))
                    .col(text_null(DeliveryAttempts::Error))
                    .col(integer(DeliveryAttempts::DurationMs))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_delivery_attempts_delivery")
                    .table(DeliveryAttempts::Table)
                    .col(DeliveryAttempts::DeliveryId)
                    .col(DeliveryAttempts::Attempt)
                    .to_owned(),
            )
            .await?;
        Ok(())
    }
}
