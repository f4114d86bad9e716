//! Invitations remember the member who sent them (`inviter_member_id`): accepting one
//! grants no more than that member's role at the time of acceptance, and nothing once the
//! member has left. Invitations sent by an operator's key have none and keep their role.
//! Pending invitations sent before this migration from a person's session are matched to
//! that person's membership by the e-mail address they recorded as the sender.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum AuthTokens {
    Table,
    InviterMemberId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(AuthTokens::Table)
                    .add_column(
                        ColumnDef::new(AuthTokens::InviterMemberId)
                            .string_len(32)
                            .null(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .get_connection()
            .execute_unprepared(
                "UPDATE auth_tokens SET inviter_member_id = \
                 (SELECT m.id FROM members m WHERE m.workspace_id = auth_tokens.workspace_id \
                  AND lower(m.email) = lower(auth_tokens.created_by)) \
                 WHERE kind = 'invitation' AND used_at IS NULL",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(AuthTokens::Table)
                    .drop_column(AuthTokens::InviterMemberId)
                    .to_owned(),
            )
            .await
    }
}
