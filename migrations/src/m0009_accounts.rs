//! People sign in: accounts (one per e-mail address on the server, compared in lower
//! case), their sessions (only a hash of the cookie's token is kept), one-time tokens for
//! the setup link, invitations and password resets, OpenID Connect sign-ins in progress,
//! the audit log, and a workspace's two-factor requirement.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Users {
    Table,
    Id,
    Email,
    Name,
    PasswordHash,
    TotpSecret,
    TotpPending,
    RecoveryCodes,
    CreatedAt,
    UpdatedAt,
    LastLoginAt,
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    Id,
    UserId,
    TokenHash,
    WorkspaceId,
    Method,
    Ip,
    UserAgent,
    CreatedAt,
    LastSeenAt,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum AuthTokens {
    Table,
    Id,
    Kind,
    TokenHash,
    Email,
    WorkspaceId,
    Role,
    CreatedBy,
    CreatedAt,
    ExpiresAt,
    UsedAt,
}

#[derive(DeriveIden)]
enum OidcLogins {
    Table,
    State,
    Provider,
    PkceVerifier,
    Nonce,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum AuditLog {
    Table,
    Id,
    WorkspaceId,
    ActorType,
    ActorId,
    ActorName,
    Action,
    ResourceType,
    ResourceId,
    Ip,
    Before,
    After,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Workspaces {
    Table,
    RequireTwoFactor,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(Users::Table)
                    .col(string_len(Users::Id, 32).primary_key())
                    .col(string_len(Users::Email, 254))
                    .col(string_len(Users::Name, 200))
                    .col(text_null(Users::PasswordHash))
                    .col(text_null(Users::TotpSecret))
                    .col(text_null(Users::TotpPending))
                    .col(text_null(Users::RecoveryCodes))
                    .col(big_integer(Users::CreatedAt))
                    .col(big_integer(Users::UpdatedAt))
                    .col(big_integer_null(Users::LastLoginAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_users_email")
                    .table(Users::Table)
                    .col(Users::Email)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Sessions::Table)
                    .col(string_len(Sessions::Id, 32).primary_key())
                    .col(string_len(Sessions::UserId, 32))
                    .col(string_len(Sessions::TokenHash, 64))
                    .col(string_len_null(Sessions::WorkspaceId, 32))
                    .col(string_len(Sessions::Method, 80))
                    .col(string_len(Sessions::Ip, 64))
                    .col(string_len(Sessions::UserAgent, 300))
                    .col(big_integer(Sessions::CreatedAt))
                    .col(big_integer(Sessions::LastSeenAt))
                    .col(big_integer(Sessions::ExpiresAt))
                    .to_owned(),
            )
            .await?;
        for (name, column, unique) in [
            ("idx_sessions_token_hash", Sessions::TokenHash, true),
            ("idx_sessions_user_id", Sessions::UserId, false),
        ] {
            let mut index = Index::create();
            index.name(name).table(Sessions::Table).col(column);
            if unique {
                index.unique();
            }
            manager.create_index(index.to_owned()).await?;
        }
        manager
            .create_table(
                Table::create()
                    .table(AuthTokens::Table)
                    .col(string_len(AuthTokens::Id, 32).primary_key())
                    .col(string_len(AuthTokens::Kind, 16))
                    .col(string_len(AuthTokens::TokenHash, 64))
                    .col(string_len(AuthTokens::Email, 254))
                    .col(string_len_null(AuthTokens::WorkspaceId, 32))
                    .col(string_len_null(AuthTokens::Role, 16))
                    .col(string_len_null(AuthTokens::CreatedBy, 200))
                    .col(big_integer(AuthTokens::CreatedAt))
                    .col(big_integer(AuthTokens::ExpiresAt))
                    .col(big_integer_null(AuthTokens::UsedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("idx_auth_tokens_token_hash")
                    .table(AuthTokens::Table)
                    .col(AuthTokens::TokenHash)
                    .unique()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(OidcLogins::Table)
                    .col(string_len(OidcLogins::State, 64).primary_key())
                    .col(string_len(OidcLogins::Provider, 64))
                    .col(text(OidcLogins::PkceVerifier))
                    .col(text(OidcLogins::Nonce))
                    .col(big_integer(OidcLogins::ExpiresAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(AuditLog::Table)
                    .col(string_len(AuditLog::Id, 32).primary_key())
                    .col(string_len_null(AuditLog::WorkspaceId, 32))
                    .col(string_len(AuditLog::ActorType, 16))
                    .col(string_len(AuditLog::ActorId, 32))
                    .col(string_len(AuditLog::ActorName, 254))
                    .col(string_len(AuditLog::Action, 64))
                    .col(string_len(AuditLog::ResourceType, 32))
                    .col(string_len_null(AuditLog::ResourceId, 32))
                    .col(string_len_null(AuditLog::Ip, 64))
                    .col(text_null(AuditLog::Before))
                    .col(text_null(AuditLog::After))
                    .col(big_integer(AuditLog::CreatedAt))
                    .to_owned(),
            )
            .await?;
        for (name, column) in [
            ("idx_audit_log_workspace_created", AuditLog::WorkspaceId),
            ("idx_audit_log_created", AuditLog::CreatedAt),
        ] {
            let mut index = Index::create();
            index.name(name).table(AuditLog::Table).col(column);
            if name == "idx_audit_log_workspace_created" {
                index.col(AuditLog::CreatedAt);
            }
            manager.create_index(index.to_owned()).await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Workspaces::Table)
                    .add_column(boolean(Workspaces::RequireTwoFactor).default(false))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            Users::Table.into_iden(),
            Sessions::Table.into_iden(),
            AuthTokens::Table.into_iden(),
            OidcLogins::Table.into_iden(),
            AuditLog::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).to_owned())
                .await?;
        }
        manager
            .alter_table(
                Table::alter()
                    .table(Workspaces::Table)
                    .drop_column(Workspaces::RequireTwoFactor)
                    .to_owned(),
            )
            .await
    }
}
