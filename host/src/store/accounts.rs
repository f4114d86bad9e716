//! People: accounts, their memberships (the member rows of each workspace, matched by
//! e-mail address in lower case), sessions, one-time tokens (setup link, invitation,
//! password reset) and OpenID Connect sign-ins in progress.

use super::Owned;
use super::entities::{member, workspace};
use super::{Store, StoreError, Tx};
use crate::clock::Millis;
use crate::ids::{self, prefix};
use sea_orm::sea_query::{Expr, ExprTrait, Func};
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, IntoActiveModel, PaginatorTrait,
    QueryFilter, QueryOrder,
};

// People's accounts.
own_row! {
    pub struct UserRow in user "users" {
        key {
            pub id: String,
        }
        /// In lower case.
        pub email: String,
        pub name: String,
        /// Argon2id in PHC form; none for accounts that only sign in with SSO.
        pub password_hash: Option<String>,
        /// Base32 TOTP secret, once enrolment is confirmed.
        pub totp_secret: Option<String>,
        /// A secret shown for enrolment, not yet confirmed with a code.
        pub totp_pending: Option<String>,
        /// JSON list of SHA-256 hashes of the unused recovery codes.
        pub recovery_codes: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
        pub last_login_at: Option<i64>,
    }
}
// Signed-in sessions (the cookie's token only as a hash).
own_row! {
    pub struct SessionRow in session "sessions" {
        key {
            pub id: String,
        }
        pub user_id: String,
        pub token_hash: String,
        pub workspace_id: Option<String>,
        /// `password` or `oidc:<provider>`.
        pub method: String,
        pub ip: String,
        pub user_agent: String,
        pub created_at: i64,
        pub last_seen_at: i64,
        pub expires_at: i64,
    }
}
// One-time tokens: setup links, invitations, password resets.
own_row! {
    pub struct TokenRow in auth_token "auth_tokens" {
        key {
            pub id: String,
        }
        pub kind: String,
        pub token_hash: String,
        pub email: String,
        pub workspace_id: Option<String>,
        pub role: Option<String>,
        /// Who made the token, as a name to show (an e-mail address or a key's name).
        pub created_by: Option<String>,
        /// For an invitation: the member who sent it (none: an operator's key). Accepting
        /// grants no more than that member's role then, and nothing once they have left.
        pub inviter_member_id: Option<String>,
        pub created_at: i64,
        pub expires_at: i64,
        pub used_at: Option<i64>,
    }
}
// OpenID Connect sign-ins between the redirect to the provider and its callback.
own_row! {
    /// An OpenID Connect sign-in waiting for its callback.
    pub struct OidcLoginRow in oidc_login "oidc_logins" {
        key {
            /// SHA-256 of the `state` parameter.
            pub state: String,
        }
        pub provider: String,
        pub pkce_verifier: String,
        pub nonce: String,
        pub expires_at: i64,
    }
}
use super::keys::WorkspaceRow;
use super::members::MemberRow;

/// What a one-time token is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// The first owner's account (no e-mail address yet).
    Setup,
    /// Join a workspace with a role.
    Invitation,
    /// Set a new password.
    Reset,
}

impl TokenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TokenKind::Setup => "setup",
            TokenKind::Invitation => "invitation",
            TokenKind::Reset => "reset",
        }
    }
}

/// A member role's rank: owner > admin > member > viewer (anything else ranks lowest).
pub fn member_rank(role: &str) -> u8 {
    match role {
        "owner" => 3,
        "admin" => 2,
        "member" => 1,
        _ => 0,
    }
}

/// The lesser of two member roles.
pub fn lesser_role<'a>(a: &'a str, b: &'a str) -> &'a str {
    if member_rank(a) <= member_rank(b) {
        a
    } else {
        b
    }
}

/// What accepting an invitation grants now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InvitationGrant {
    /// This member role: the invitation's, capped by its inviter's current role.
    Role(String),
    /// The member who sent the invitation has left the workspace: it grants nothing.
    InviterGone,
}

/// E-mail addresses are compared in lower case.
pub fn normalize_email(email: &str) -> String {
    email.trim().to_lowercase()
}

fn lower_email() -> sea_orm::sea_query::SimpleExpr {
    Func::lower(Expr::col((member::Entity, member::Column::Email))).into()
}

impl Store {
    pub async fn user(&self, id: &str) -> Result<Option<UserRow>, StoreError> {
        Ok(user::Entity::find_by_id(id.to_string())
            .one(self.db())
            .await?
            .owned())
    }

    pub async fn user_by_email(&self, email: &str) -> Result<Option<UserRow>, StoreError> {
        Ok(user::Entity::find()
            .filter(user::Column::Email.eq(normalize_email(email)))
            .one(self.db())
            .await?
            .owned())
    }

    pub async fn count_users(&self) -> Result<u64, StoreError> {
        Ok(user::Entity::find().count(self.db()).await?)
    }

    pub async fn update_user(&self, row: UserRow) -> Result<UserRow, StoreError> {
        Ok(self
            .update_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    /// The workspaces `email` is a member of, with the member rows, oldest first.
    pub async fn memberships(
        &self,
        email: &str,
    ) -> Result<Vec<(MemberRow, WorkspaceRow)>, StoreError> {
        let members = member::Entity::find()
            .filter(Expr::expr(lower_email()).eq(normalize_email(email)))
            .order_by_asc(member::Column::CreatedAt)
            .all(self.db())
            .await?;
        let ids: Vec<String> = members.iter().map(|m| m.workspace_id.clone()).collect();
        let workspaces = workspace::Entity::find()
            .filter(workspace::Column::Id.is_in(ids))
            .all(self.db())
            .await?;
        Ok(members
            .into_iter()
            .filter_map(|m| {
                let ws = workspaces.iter().find(|w| w.id == m.workspace_id)?.clone();
                Some((m.into(), ws.into()))
            })
            .collect())
    }

    /// `email`'s member row in a workspace.
    pub async fn membership(
        &self,
        email: &str,
        workspace_id: &str,
    ) -> Result<Option<MemberRow>, StoreError> {
        Ok(member::Entity::find()
            .filter(member::Column::WorkspaceId.eq(workspace_id))
            .filter(Expr::expr(lower_email()).eq(normalize_email(email)))
            .one(self.db())
            .await?
            .owned())
    }

    /// Start a session.
    pub async fn insert_session(&self, row: SessionRow) -> Result<SessionRow, StoreError> {
        Ok(self
            .insert_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    /// The live session behind a token's hash (not past either lifetime).
    pub async fn session_by_token(
        &self,
        token_hash: &str,
        now: Millis,
        idle_ms: i64,
    ) -> Result<Option<SessionRow>, StoreError> {
        Ok(session::Entity::find()
            .filter(session::Column::TokenHash.eq(token_hash))
            .filter(session::Column::ExpiresAt.gt(now))
            .filter(session::Column::LastSeenAt.gt(now - idle_ms))
            .one(self.db())
            .await?
            .owned())
    }

    /// Record that a session was used (callers do it at most once a minute).
    pub async fn touch_session(&self, id: &str, now: Millis) -> Result<(), StoreError> {
        let tx = self.begin_write().await?;
        session::Entity::update_many()
            .col_expr(session::Column::LastSeenAt, Expr::value(now))
            .filter(session::Column::Id.eq(id))
            .exec(tx.conn())
            .await?;
        tx.commit().await
    }

    /// Switch a session to another workspace.
    pub async fn set_session_workspace(
        &self,
        id: &str,
        workspace_id: &str,
    ) -> Result<(), StoreError> {
        let tx = self.begin_write().await?;
        session::Entity::update_many()
            .col_expr(session::Column::WorkspaceId, Expr::value(workspace_id))
            .filter(session::Column::Id.eq(id))
            .exec(tx.conn())
            .await?;
        tx.commit().await
    }

    /// A person's sessions, newest first.
    pub async fn sessions_of(
        &self,
        user_id: &str,
        now: Millis,
    ) -> Result<Vec<SessionRow>, StoreError> {
        Ok(session::Entity::find()
            .filter(session::Column::UserId.eq(user_id))
            .filter(session::Column::ExpiresAt.gt(now))
            .order_by_desc(session::Column::CreatedAt)
            .all(self.db())
            .await?
            .owned())
    }

    /// End one of a person's sessions. Returns whether it existed.
    pub async fn delete_session(&self, user_id: &str, id: &str) -> Result<bool, StoreError> {
        let tx = self.begin_write().await?;
        let done = session::Entity::delete_many()
            .filter(session::Column::UserId.eq(user_id))
            .filter(session::Column::Id.eq(id))
            .exec(tx.conn())
            .await?;
        tx.commit_if(done.rows_affected > 0).await
    }

    /// End all of a person's sessions but `except`. Returns how many ended.
    pub async fn delete_sessions_of(
        &self,
        user_id: &str,
        except: Option<&str>,
    ) -> Result<u64, StoreError> {
        let tx = self.begin_write().await?;
        let mut delete = session::Entity::delete_many().filter(session::Column::UserId.eq(user_id));
        if let Some(keep) = except {
            delete = delete.filter(session::Column::Id.ne(keep));
        }
        let done = delete.exec(tx.conn()).await?;
        tx.commit().await?;
        Ok(done.rows_affected)
    }

    /// Store a one-time token.
    pub async fn insert_token(&self, row: TokenRow) -> Result<TokenRow, StoreError> {
        Ok(self
            .insert_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    /// A usable token (unused, not expired) of `kind`.
    pub async fn token(
        &self,
        kind: TokenKind,
        token_hash: &str,
        now: Millis,
    ) -> Result<Option<TokenRow>, StoreError> {
        Ok(auth_token::Entity::find()
            .filter(auth_token::Column::Kind.eq(kind.as_str()))
            .filter(auth_token::Column::TokenHash.eq(token_hash))
            .filter(auth_token::Column::UsedAt.is_null())
            .filter(auth_token::Column::ExpiresAt.gt(now))
            .one(self.db())
            .await?
            .owned())
    }

    /// Pending invitations of a workspace, newest first.
    pub async fn invitations(
        &self,
        workspace_id: &str,
        now: Millis,
    ) -> Result<Vec<TokenRow>, StoreError> {
        Ok(auth_token::Entity::find()
            .filter(auth_token::Column::Kind.eq(TokenKind::Invitation.as_str()))
            .filter(auth_token::Column::WorkspaceId.eq(workspace_id))
            .filter(auth_token::Column::UsedAt.is_null())
            .filter(auth_token::Column::ExpiresAt.gt(now))
            .order_by_desc(auth_token::Column::CreatedAt)
            .all(self.db())
            .await?
            .owned())
    }

    /// Withdraw a pending invitation. Returns whether there was one.
    pub async fn delete_invitation(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let tx = self.begin_write().await?;
        let done = auth_token::Entity::delete_many()
            .filter(auth_token::Column::Kind.eq(TokenKind::Invitation.as_str()))
            .filter(auth_token::Column::WorkspaceId.eq(workspace_id))
            .filter(auth_token::Column::Id.eq(id))
            .filter(auth_token::Column::UsedAt.is_null())
            .exec(tx.conn())
            .await?;
        tx.commit_if(done.rows_affected > 0).await
    }

    /// Usable tokens of `kind` for an e-mail address.
    pub async fn token_for_email(
        &self,
        kind: TokenKind,
        email: &str,
        now: Millis,
    ) -> Result<Vec<TokenRow>, StoreError> {
        Ok(auth_token::Entity::find()
            .filter(auth_token::Column::Kind.eq(kind.as_str()))
            .filter(auth_token::Column::Email.eq(normalize_email(email)))
            .filter(auth_token::Column::UsedAt.is_null())
            .filter(auth_token::Column::ExpiresAt.gt(now))
            .all(self.db())
            .await?
            .owned())
    }

    /// Whether an unused setup token exists (the first owner has not signed up yet).
    pub async fn has_setup_token(&self, now: Millis) -> Result<bool, StoreError> {
        Ok(auth_token::Entity::find()
            .filter(auth_token::Column::Kind.eq(TokenKind::Setup.as_str()))
            .filter(auth_token::Column::UsedAt.is_null())
            .filter(auth_token::Column::ExpiresAt.gt(now))
            .count(self.db())
            .await?
            > 0)
    }

    /// Remember an OpenID Connect sign-in until its callback.
    pub async fn insert_oidc_login(&self, row: OidcLoginRow) -> Result<(), StoreError> {
        self.insert_one(oidc_login::Model::from(row).into_active_model().reset_all())
            .await?;
        Ok(())
    }

    /// Take (and forget) the sign-in a callback's `state` names, if it has not expired.
    pub async fn take_oidc_login(
        &self,
        state_hash: &str,
        now: Millis,
    ) -> Result<Option<OidcLoginRow>, StoreError> {
        let tx = self.begin_write().await?;
        let found = oidc_login::Entity::find_by_id(state_hash.to_string())
            .one(tx.conn())
            .await?;
        if found.is_some() {
            oidc_login::Entity::delete_by_id(state_hash.to_string())
                .exec(tx.conn())
                .await?;
        }
        tx.commit().await?;
        Ok(found.filter(|l| l.expires_at > now).map(OidcLoginRow::from))
    }

    /// Delete expired sessions, tokens and sign-ins. Returns how many rows went.
    pub async fn prune_expired_credentials(&self, now: Millis) -> Result<u64, StoreError> {
        let tx = self.begin_write().await?;
        let mut gone = session::Entity::delete_many()
            .filter(session::Column::ExpiresAt.lte(now))
            .exec(tx.conn())
            .await?
            .rows_affected;
        gone += auth_token::Entity::delete_many()
            .filter(auth_token::Column::ExpiresAt.lte(now - 30 * 86_400_000))
            .exec(tx.conn())
            .await?
            .rows_affected;
        gone += oidc_login::Entity::delete_many()
            .filter(oidc_login::Column::ExpiresAt.lte(now))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit().await?;
        Ok(gone)
    }
}

/// Account changes that must happen together (an account and its membership, a token and
/// what it grants).
impl Tx {
    /// Mark a usable token used, once: a second caller gets `None`.
    pub async fn redeem_token(
        &self,
        kind: TokenKind,
        token_hash: &str,
        now: Millis,
    ) -> Result<Option<TokenRow>, StoreError> {
        let found = auth_token::Entity::find()
            .filter(auth_token::Column::Kind.eq(kind.as_str()))
            .filter(auth_token::Column::TokenHash.eq(token_hash))
            .filter(auth_token::Column::UsedAt.is_null())
            .filter(auth_token::Column::ExpiresAt.gt(now))
            .one(self.conn())
            .await?;
        let Some(found) = found else { return Ok(None) };
        let done = auth_token::Entity::update_many()
            .col_expr(auth_token::Column::UsedAt, Expr::value(now))
            .filter(auth_token::Column::Id.eq(found.id.as_str()))
            .filter(auth_token::Column::UsedAt.is_null())
            .exec(self.conn())
            .await?;
        Ok((done.rows_affected == 1).then_some(found.into()))
    }

    /// Create an account.
    pub async fn insert_user(&self, row: UserRow) -> Result<UserRow, StoreError> {
        Ok(row
            .into_active_model()
            .reset_all()
            .insert(self.conn())
            .await?
            .into())
    }

    /// Save an account's changed fields.
    pub async fn update_user(&self, row: UserRow) -> Result<UserRow, StoreError> {
        Ok(row
            .into_active_model()
            .reset_all()
            .update(self.conn())
            .await?
            .into())
    }

    /// Give `email` `role` in a workspace: a new member row, or the existing one's role
    /// changed. Returns the row and its role before (None when new).
    pub async fn grant_membership(
        &self,
        workspace_id: &str,
        email: &str,
        name: &str,
        role: &str,
        now: Millis,
    ) -> Result<(MemberRow, Option<String>), StoreError> {
        let existing = member::Entity::find()
            .filter(member::Column::WorkspaceId.eq(workspace_id))
            .filter(Expr::expr(lower_email()).eq(normalize_email(email)))
            .one(self.conn())
            .await?;
        if let Some(m) = existing {
            let before = m.role.clone();
            if before == role {
                return Ok((m.into(), Some(before)));
            }
            let mut active: member::ActiveModel = m.into();
            active.role = Set(role.to_string());
            active.updated_at = Set(now);
            return Ok((active.update(self.conn()).await?.into(), Some(before)));
        }
        let row = member::ActiveModel {
            id: Set(ids::new_id(prefix::MEMBER)),
            workspace_id: Set(workspace_id.to_string()),
            email: Set(normalize_email(email)),
            name: Set(name.to_string()),
            role: Set(role.to_string()),
            created_at: Set(now),
            updated_at: Set(now),
        };
        Ok((row.insert(self.conn()).await?.into(), None))
    }

    /// What `invitation` grants now: its role, but never more than the member who sent it
    /// has at this moment (an owner invitation needs an owner still), and nothing once that
    /// member has left. An operator's invitation (no inviting member) keeps its role.
    pub async fn invitation_grant(
        &self,
        invitation: &TokenRow,
    ) -> Result<InvitationGrant, StoreError> {
        let granted = invitation.role.as_deref().unwrap_or("viewer");
        let Some(inviter) = &invitation.inviter_member_id else {
            return Ok(InvitationGrant::Role(granted.to_string()));
        };
        let workspace_id = invitation.workspace_id.as_deref().unwrap_or_default();
        let inviter = member::Entity::find_by_id(inviter.clone())
            .filter(member::Column::WorkspaceId.eq(workspace_id))
            .one(self.conn())
            .await?;
        Ok(match inviter {
            Some(m) => InvitationGrant::Role(lesser_role(granted, &m.role).to_string()),
            None => InvitationGrant::InviterGone,
        })
    }

    /// Give `email` at least `role` in a workspace: a new member row, or the existing
    /// one's role raised, never lowered (an invitation does not demote an owner). Returns
    /// the row and its role before (None when new).
    pub async fn raise_membership(
        &self,
        workspace_id: &str,
        email: &str,
        name: &str,
        role: &str,
        now: Millis,
    ) -> Result<(MemberRow, Option<String>), StoreError> {
        if let Some(m) = self.member_of(workspace_id, email).await?
            && member_rank(&m.role) >= member_rank(role)
        {
            let before = m.role.clone();
            return Ok((m, Some(before)));
        }
        self.grant_membership(workspace_id, email, name, role, now)
            .await
    }

    /// How many members of a workspace have `role`.
    pub async fn count_members_with_role(
        &self,
        workspace_id: &str,
        role: &str,
    ) -> Result<u64, StoreError> {
        Ok(member::Entity::find()
            .filter(member::Column::WorkspaceId.eq(workspace_id))
            .filter(member::Column::Role.eq(role))
            .count(self.conn())
            .await?)
    }

    /// Pending invitations for an e-mail address.
    pub async fn pending_invitations_for(
        &self,
        email: &str,
        now: Millis,
    ) -> Result<Vec<TokenRow>, StoreError> {
        Ok(auth_token::Entity::find()
            .filter(auth_token::Column::Kind.eq(TokenKind::Invitation.as_str()))
            .filter(auth_token::Column::Email.eq(normalize_email(email)))
            .filter(auth_token::Column::UsedAt.is_null())
            .filter(auth_token::Column::ExpiresAt.gt(now))
            .all(self.conn())
            .await?
            .owned())
    }

    /// `email`'s member row in a workspace.
    pub async fn member_of(
        &self,
        workspace_id: &str,
        email: &str,
    ) -> Result<Option<MemberRow>, StoreError> {
        Ok(member::Entity::find()
            .filter(member::Column::WorkspaceId.eq(workspace_id))
            .filter(Expr::expr(lower_email()).eq(normalize_email(email)))
            .one(self.conn())
            .await?
            .owned())
    }

    /// End every session of a person (after a password reset).
    pub async fn delete_sessions_of(&self, user_id: &str) -> Result<u64, StoreError> {
        Ok(session::Entity::delete_many()
            .filter(session::Column::UserId.eq(user_id))
            .exec(self.conn())
            .await?
            .rows_affected)
    }

    /// The first workspace (the one the bootstrap created).
    pub async fn first_workspace(&self) -> Result<Option<WorkspaceRow>, StoreError> {
        Ok(workspace::Entity::find()
            .order_by_asc(workspace::Column::CreatedAt)
            .one(self.conn())
            .await?
            .owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_roles_rank_owner_admin_member_viewer() {
        assert_eq!(lesser_role("owner", "admin"), "admin");
        assert_eq!(lesser_role("admin", "owner"), "admin");
        assert_eq!(lesser_role("member", "viewer"), "viewer");
        assert_eq!(lesser_role("owner", "owner"), "owner");
        assert_eq!(lesser_role("admin", "unknown"), "unknown");
    }
}
