//! Escalation as a list of steps (after N minutes, these channels), repeated until
//! acknowledged if the policy says so. An incident's `escalation_step` counts the steps
//! sent; `escalate_at` is when the next one is due (null: none). Incidents escalated under
//! the one-step escalation count one step and wait for nothing more.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Incidents {
    Table,
    EscalationStep,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Incidents::Table)
                    .add_column(
                        ColumnDef::new(Incidents::EscalationStep)
                            .integer()
                            .not_null()
                            .default(0),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "UPDATE incidents SET escalation_step = 1, escalate_at = NULL \
                 WHERE escalated_at IS NOT NULL",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Incidents::Table)
                    .drop_column(Incidents::EscalationStep)
                    .to_owned(),
            )
            .await
    }
}
