//! Accounts made and workspaces joined: the first owner's setup link, an invitation's
//! workspace joined, and the account behind a single sign-on identity (found or created,
//! its invitations accepted, its roles set from its groups). The API's `/v1/auth` routes
//! and the server's first start call these; they answer in the store's terms, and the
//! API words the refusals.

use super::oidc;
use crate::config::OidcProvider;
use crate::ids;
use crate::store::accounts::{InvitationGrant, TokenKind, TokenRow, UserRow, normalize_email};
use crate::store::audit::{self, Actor, Change};
use crate::store::{Store, StoreError, Tx};

/// Why single sign-on signs no one in.
#[derive(Debug)]
pub enum SsoRefusal {
    /// The provider has not verified the address (and is not trusted to without saying).
    Unverified(String),
    /// No account, no invitation and a domain that may not sign up.
    NoSignUp {
        email: String,
        provider: String,
    },
    /// Another account took the address in the meantime.
    EmailTaken(String),
    Store(StoreError),
}

impl From<StoreError> for SsoRefusal {
    fn from(e: StoreError) -> Self {
        SsoRefusal::Store(e)
    }
}

/// A new account's row, signed in now.
pub fn new_user(email: &str, name: &str, password_hash: Option<String>, now: i64) -> UserRow {
    UserRow {
        id: ids::new_id(ids::prefix::USER),
        email: email.to_string(),
        name: name.to_string(),
        password_hash,
        totp_secret: None,
        totp_pending: None,
        recovery_codes: None,
        created_at: now,
        updated_at: now,
        last_login_at: Some(now),
    }
}

/// The audit log's actor for a person acting on their own account.
pub fn user_actor(u: &UserRow, ip: &str) -> Actor {
    Actor {
        kind: "user",
        id: u.id.clone(),
        name: u.email.clone(),
        ip: Some(ip.to_string()),
    }
}

/// Join the workspace of a redeemed invitation: its role, capped by the inviter's role
/// now, never lowering a role the person already has there. None (and nothing done) when
/// the inviter has left. Notes the acceptance and any membership change for the audit log.
pub async fn join_by_invitation(
    tx: &Tx,
    token: &TokenRow,
    user: &UserRow,
    via: Option<&str>,
    now: i64,
) -> Result<Option<crate::store::members::MemberRow>, StoreError> {
    let role = match tx.invitation_grant(token).await? {
        InvitationGrant::Role(role) => role,
        InvitationGrant::InviterGone => return Ok(None),
    };
    let workspace_id = token.workspace_id.clone().unwrap_or_default();
    let (member, before) = tx
        .raise_membership(&workspace_id, &user.email, &user.name, &role, now)
        .await?;
    let mut accepted = serde_json::json!({"email": user.email, "role": member.role});
    if let Some(via) = via {
        accepted["via"] = via.into();
    }
    audit::note(
        Change::new(
            Some(&workspace_id),
            "invitation.accept",
            "invitation",
            Some(&token.id),
        )
        .after(accepted),
    );
    if before.as_deref() != Some(member.role.as_str()) {
        let after = serde_json::json!({"email": member.email, "role": member.role});
        audit::note_membership(&workspace_id, &member.id, before, after);
    }
    Ok(Some(member))
}

/// Find or create the account of an SSO identity and set its roles from its groups.
pub async fn sso_account(
    store: &Store,
    provider: &OidcProvider,
    identity: &oidc::Identity,
    ip: &str,
    now: i64,
) -> Result<UserRow, SsoRefusal> {
    let email = normalize_email(&identity.email);
    if !oidc::email_trusted(identity, provider) {
        // Anyone may claim any address at some providers: an unverified one reaches no
        // account, no invitation and no domain rule.
        return Err(SsoRefusal::Unverified(email));
    }
    let existing = store.user_by_email(&email).await?;
    let invitations = !store
        .token_for_email(TokenKind::Invitation, &email, now)
        .await?
        .is_empty();
    let domain_ok = oidc::domain_allowed(&email, &provider.allowed_domains);
    if existing.is_none() && !domain_ok && !invitations {
        return Err(SsoRefusal::NoSignUp {
            email,
            provider: provider.name.clone(),
        });
    }
    let created = existing.is_none();
    let name = identity
        .name
        .clone()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| email.split('@').next().unwrap_or_default().to_string());
    let user = existing
        .clone()
        .unwrap_or_else(|| new_user(&email, &name, None, now));
    let actor = user_actor(&user, ip);
    audit::scoped(actor, now, async {
        let tx = store.begin_write().await?;
        let first = tx
            .first_workspace()
            .await?
            .map(|w| w.id)
            .unwrap_or_default();
        let mut user = match existing {
            Some(u) => u,
            None => {
                let u = match tx.insert_user(user.clone()).await {
                    Err(e) if e.is_unique_violation() => {
                        return Err(SsoRefusal::EmailTaken(email));
                    }
                    other => other?,
                };
                audit::note(
                    Change::new(Some(&first), "user.create", "user", Some(&u.id))
                        .after(serde_json::json!({"email": email, "via": provider.name})),
                );
                u
            }
        };
        // Pending invitations for the address are accepted by signing in, as by their
        // link: capped by the inviter's role now, never lowering a role, and left alone
        // (unusable) when the inviter has left.
        let mut joined = 0;
        for token in tx.pending_invitations_for(&email, now).await? {
            if tx.invitation_grant(&token).await? == InvitationGrant::InviterGone {
                tracing::info!(invitation = %token.id, "invitation not accepted: its sender has left the workspace");
                continue;
            }
            if tx
                .redeem_token(TokenKind::Invitation, &token.token_hash, now)
                .await?
                .is_some()
            {
                join_by_invitation(&tx, &token, &user, Some(&provider.name), now).await?;
                joined += 1;
            }
        }
        if created && !domain_ok && joined == 0 {
            // Its only invitations were void: a new account outside the allowed domains.
            return Err(SsoRefusal::NoSignUp {
            email,
            provider: provider.name.clone(),
        });
        }
        let roles = oidc::roles_for(&provider.roles, &identity.groups, &first);
        for (ws, role) in &roles {
            // No group maps to this workspace: the membership, if any, came from an
            // invitation or an admin and stays as they set it.
            let Some(role) = role else {
                continue;
            };
            if role != "owner"
                && let Some(m) = tx.member_of(ws, &email).await?
                && m.role == "owner"
                && tx.count_members_with_role(ws, "owner").await? <= 1
            {
                // A group mapping never leaves a workspace without an owner.
                tracing::warn!(
                    workspace = %ws,
                    member = %m.id,
                    "single sign-on keeps the workspace's last owner an owner despite the group mapping to {role}"
                );
                continue;
            }
            let (m, before) = tx
                .grant_membership(ws, &email, &user.name, role, now)
                .await?;
            if before.as_deref() != Some(role.as_str()) {
                let after = serde_json::json!({"email": email, "role": role, "via": provider.name});
                audit::note_membership(ws, &m.id, before, after);
            }
        }
        if let Some(default_role) =
            oidc::default_role_for(&roles, &first, provider.default_role.as_deref())
            && tx.member_of(&first, &email).await?.is_none()
        {
            let (m, _) = tx
                .grant_membership(&first, &email, &user.name, default_role, now)
                .await?;
            audit::note(
                Change::new(Some(&first), "member.add", "member", Some(&m.id)).after(
                    serde_json::json!({"email": email, "role": default_role, "via": provider.name}),
                ),
            );
        }
        user.last_login_at = Some(now);
        user.updated_at = now;
        let user = tx.update_user(user).await?;
        tx.commit().await?;
        Ok::<_, SsoRefusal>(user)
    })
    .await
}

/// Issue the first owner's setup link when there is no account yet. Returns the link.
pub async fn issue_setup_link(
    store: &Store,
    public_url: &str,
    now: i64,
) -> Result<Option<String>, StoreError> {
    if store.count_users().await? > 0 {
        return Ok(None);
    }
    let token = super::new_token();
    store
        .insert_token(TokenRow {
            id: ids::new_id(ids::prefix::AUTH_TOKEN),
            kind: TokenKind::Setup.as_str().into(),
            token_hash: super::hash_token(&token),
            email: String::new(),
            workspace_id: None,
            role: Some("owner".into()),
            created_by: None,
            inviter_member_id: None,
            created_at: now,
            expires_at: now + super::SETUP_LINK_HOURS * 3_600_000,
            used_at: None,
        })
        .await?;
    Ok(Some(format!(
        "{}/setup?token={token}",
        public_url.trim_end_matches('/')
    )))
}
