//! `tocsin user create`: an account and its membership, offline, for operators who
//! script. With a password read from standard input the account can sign in at once;
//! without one, a link to set the password is printed (valid 24 hours, once).

use crate::accounts::{self, password};
use crate::ids;
use crate::store::Store;
use crate::store::accounts::{TokenKind, TokenRow, UserRow, normalize_email};
use crate::store::audit::{self, Actor, Change};

/// What was created.
pub struct Created {
    pub user_id: String,
    /// Set when no password was given.
    pub password_link: Option<String>,
}

/// What `tocsin user create` was asked for.
pub struct NewUser<'a> {
    pub email: &'a str,
    pub name: Option<&'a str>,
    pub workspace_id: &'a str,
    pub role: &'a str,
    pub password: Option<&'a str>,
}

/// Create (or reuse) the account of `email` and give it `role` in `workspace_id`.
pub async fn create_user(
    store: &Store,
    public_url: &str,
    new: NewUser<'_>,
    now: i64,
) -> anyhow::Result<Created> {
    let NewUser {
        email,
        name,
        workspace_id,
        role,
        password: plain_password,
    } = new;
    let email = normalize_email(email);
    anyhow::ensure!(
        accounts::is_email(&email),
        "`{email}` is not an e-mail address"
    );
    anyhow::ensure!(
        accounts::MEMBER_ROLES.contains(&role),
        "unknown role `{role}`: use owner, admin, member or viewer"
    );
    anyhow::ensure!(
        store.workspace(workspace_id).await?.is_some(),
        "no workspace with id `{workspace_id}`"
    );
    let password_hash = match plain_password {
        Some(p) => {
            password::check_policy(p).map_err(|m| anyhow::anyhow!("the password {m}"))?;
            Some(password::hash(p).map_err(anyhow::Error::msg)?)
        }
        None => None,
    };
    let name = name
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .unwrap_or_else(|| email.split('@').next().unwrap_or_default().to_string());
    let existing = store.user_by_email(&email).await?;
    let actor = Actor {
        kind: "system",
        id: "cli".into(),
        name: "tocsin user create".into(),
        ip: None,
    };
    let link_token = password_hash
        .is_none()
        .then(accounts::new_token)
        .filter(|_| existing.as_ref().is_none_or(|u| u.password_hash.is_none()));
    let user_id = audit::scoped(actor, now, async {
        let tx = store.begin_write().await?;
        let user = match existing {
            Some(mut u) => {
                if let Some(h) = password_hash {
                    u.password_hash = Some(h);
                    u.updated_at = now;
                    u = tx.update_user(u).await?;
                }
                u
            }
            None => {
                let u = tx
                    .insert_user(UserRow {
                        // Made from the command line: not signed in yet.
                        last_login_at: None,
                        ..crate::accounts::sign_up::new_user(&email, &name, password_hash, now)
                    })
                    .await?;
                audit::note(
                    Change::new(Some(workspace_id), "user.create", "user", Some(&u.id))
                        .after(serde_json::json!({"email": email, "name": name})),
                );
                u
            }
        };
        let (member, before) = tx
            .grant_membership(workspace_id, &email, &name, role, now)
            .await?;
        let after = serde_json::json!({"email": email, "role": role});
        audit::note_membership(workspace_id, &member.id, before, after);
        tx.commit().await?;
        anyhow::Ok(user.id)
    })
    .await?;
    let password_link = match link_token {
        Some(token) => {
            store
                .insert_token(TokenRow {
                    id: ids::new_id(ids::prefix::AUTH_TOKEN),
                    kind: TokenKind::Reset.as_str().into(),
                    token_hash: accounts::hash_token(&token),
                    email: email.clone(),
                    workspace_id: None,
                    role: None,
                    created_by: Some("tocsin user create".into()),
                    inviter_member_id: None,
                    created_at: now,
                    expires_at: now + 24 * 3_600_000,
                    used_at: None,
                })
                .await?;
            Some(format!(
                "{}/reset-password?token={token}",
                public_url.trim_end_matches('/')
            ))
        }
        None => None,
    };
    Ok(Created {
        user_id,
        password_link,
    })
}
