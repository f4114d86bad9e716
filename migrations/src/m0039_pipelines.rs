//! The alert pipeline: an alert policy's steps (`alert_policies.pipeline`, a JSON list of
//! `{"plugin", "config"}`, NULL for none), and how far each delivery has come through them
//! (`deliveries.pipeline`, JSON written by the outbox; NULL until the outbox first takes
//! the delivery). A delivery a step routed elsewhere or dropped keeps its row, in the new
//! states `routed` and `dropped`, so nothing a step did is without a trace.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum AlertPolicies {
    Table,
    Pipeline,
}

#[derive(DeriveIden)]
enum Deliveries {
    Table,
    Pipeline,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(AlertPolicies::Table)
                    .add_column(ColumnDef::new(AlertPolicies::Pipeline).text().null())
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(Deliveries::Table)
                    .add_column(ColumnDef::new(Deliveries::Pipeline).text().null())
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Deliveries::Table)
                    .drop_column(Deliveries::Pipeline)
                    .to_owned(),
            )
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(AlertPolicies::Table)
                    .drop_column(AlertPolicies::Pipeline)
                    .to_owned(),
            )
            .await
    }
}
