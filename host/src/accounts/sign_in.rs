//! Signing in: a password with its second factor (a TOTP code or a recovery code), behind
//! the brute-force throttle, and the session every way of signing in starts. The API's
//! routes turn a [`Refusal`] into their answer; nothing here speaks HTTP.
//!
//! A failure reads the same for an unknown address and a wrong password and takes the same
//! time: the password is checked against a decoy hash when there is no account.

use super::{password, throttle, totp};
use crate::ids;
use crate::store::accounts::{SessionRow, UserRow};
use crate::store::audit::{self, Change};
use crate::store::{Store, StoreError};

/// Why a sign-in was refused.
#[derive(Debug)]
pub enum Refusal {
    /// Too many failures for the account or the address: wait this long.
    Throttled { wait_ms: i64 },
    /// Wrong e-mail address or password (never says which).
    WrongCredentials,
    /// Two-factor is on and neither a code nor a recovery code came.
    TwoFactorRequired,
    /// The authenticator's code is wrong.
    WrongCode,
    /// The recovery code is wrong or was used.
    WrongRecoveryCode,
    /// The database failed.
    Store(StoreError),
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        Refusal::Store(e)
    }
}

/// One attempt to sign in with a password.
pub struct Attempt<'a> {
    /// Normalised (see `store::accounts::normalize_email`).
    pub email: &'a str,
    pub password: &'a str,
    pub totp_code: Option<&'a str>,
    pub recovery_code: Option<&'a str>,
    /// The client's address, throttled apart from the account.
    pub ip: &'a str,
    pub now_ms: i64,
}

/// The sign-in throttle's key for an account.
pub fn account_key(email: &str) -> String {
    format!("login:{email}")
}

/// Check an attempt: the account and its password, then its second factor. A failure
/// counts against both the account and the address; success clears the account's count
/// and records the sign-in time.
pub async fn with_password(
    store: &Store,
    throttle: &throttle::Throttle,
    attempt: Attempt<'_>,
) -> Result<UserRow, Refusal> {
    let now = attempt.now_ms;
    let account = account_key(attempt.email);
    let address = format!("login-ip:{}", attempt.ip);
    if let Some(wait_ms) = throttle.wait_ms(
        &[
            (&account, throttle::FREE_FAILURES_PER_ACCOUNT),
            (&address, throttle::FREE_FAILURES_PER_ADDRESS),
        ],
        now,
    ) {
        return Err(Refusal::Throttled { wait_ms });
    }
    let fail = |refusal: Refusal| {
        throttle.fail(&[&account, &address], now);
        Err(refusal)
    };
    let user = store.user_by_email(attempt.email).await?;
    let stored = user.as_ref().and_then(|u| u.password_hash.clone());
    if attempt.password.len() > password::MAX_LENGTH * 4
        || !verify_password(attempt.password.to_string(), stored).await
    {
        return fail(Refusal::WrongCredentials);
    }
    let Some(mut user) = user else {
        return fail(Refusal::WrongCredentials);
    };
    if let Some(secret) = user.totp_secret.clone() {
        match (attempt.totp_code, attempt.recovery_code) {
            (Some(code), _) => {
                if !totp::check(&secret, code, u64::try_from(now / 1000).unwrap_or(0)) {
                    return fail(Refusal::WrongCode);
                }
            }
            (None, Some(code)) => {
                if !use_recovery_code(store, &mut user, code, now).await? {
                    return fail(Refusal::WrongRecoveryCode);
                }
            }
            (None, None) => return Err(Refusal::TwoFactorRequired),
        }
    }
    throttle.clear(&account);
    user.last_login_at = Some(now);
    Ok(store.update_user(user).await?)
}

/// Whether `plain` matches the stored hash (a decoy when there is none), off the async
/// threads: argon2id takes tens of milliseconds of CPU.
pub async fn verify_password(plain: String, stored: Option<String>) -> bool {
    tokio::task::spawn_blocking(move || password::verify(&plain, stored.as_deref()))
        .await
        .unwrap_or(false)
}

/// Use up one of `user`'s recovery codes. Returns whether it was one of the unused ones;
/// `user` is the updated row when it was.
pub async fn use_recovery_code(
    store: &Store,
    user: &mut UserRow,
    code: &str,
    now_ms: i64,
) -> Result<bool, StoreError> {
    let hash = super::hash_token(&totp::normalize_recovery_code(code));
    let mut codes: Vec<String> = user
        .recovery_codes
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default();
    let Some(i) = codes.iter().position(|c| *c == hash) else {
        return Ok(false);
    };
    codes.remove(i);
    user.recovery_codes =
        Some(serde_json::to_string(&codes).map_err(|e| StoreError::Invalid(e.to_string()))?);
    user.updated_at = now_ms;
    *user = store.update_user(user.clone()).await?;
    Ok(true)
}

/// Where and how a session starts.
pub struct Start<'a> {
    /// `password`, or the single sign-on provider's method.
    pub method: &'a str,
    pub ip: &'a str,
    /// As the client sent it; kept to 300 characters.
    pub user_agent: &'a str,
    /// The workspace it opens in; None for the person's first membership.
    pub workspace: Option<String>,
    pub now_ms: i64,
    /// How long it may last at most.
    pub lifetime_ms: i64,
}

/// Start a session for `user`: its row (audited as `session.create`) and the cookie's
/// token, which is stored only as a hash.
pub async fn start_session(
    store: &Store,
    user: &UserRow,
    start: Start<'_>,
) -> Result<(SessionRow, String), StoreError> {
    let now = start.now_ms;
    let token = super::new_token();
    let workspace = match start.workspace {
        Some(w) => Some(w),
        None => store
            .memberships(&user.email)
            .await?
            .into_iter()
            .next()
            .map(|(m, _)| m.workspace_id),
    };
    let row = SessionRow {
        id: ids::new_id(ids::prefix::SESSION),
        user_id: user.id.clone(),
        token_hash: super::hash_token(&token),
        workspace_id: workspace.clone(),
        method: start.method.to_string(),
        ip: start.ip.to_string(),
        user_agent: start.user_agent.chars().take(300).collect(),
        created_at: now,
        last_seen_at: now,
        expires_at: now + start.lifetime_ms,
    };
    let saved = audit::scoped(super::sign_up::user_actor(user, start.ip), now, async {
        audit::note(
            Change::new(
                workspace.as_deref(),
                "session.create",
                "session",
                Some(&row.id),
            )
            .after(serde_json::json!({"method": start.method})),
        );
        store.insert_session(row).await
    })
    .await?;
    Ok((saved, token))
}
