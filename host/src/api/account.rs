//! `/v1/auth`: signing in and out, the first owner's setup, invitations accepted, password
//! resets, two-factor enrolment, sessions, and single sign-on.
//!
//! Routes that start a session (login, setup, invitation, SSO) need no credentials; the
//! others act on the caller's own session. Failures to sign in read the same for an
//! unknown address and a wrong password and take the same time (the password check runs
//! against a decoy hash), and repeated failures wait longer each time
//! ([`crate::accounts::throttle`]).

use super::AppState;
use super::envelope::{NoContent, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError};
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::session::{self, ClientIp, Signed};
use crate::accounts::{self, password, sign_in, throttle, totp};
use crate::ids;
use crate::store::accounts::{SessionRow, TokenKind, UserRow, normalize_email};
use crate::store::audit::{self, Change};
use axum::Extension;
use axum::extract::State;
use axum::http::header::{LOCATION, SET_COOKIE, USER_AGENT};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::accounts::sign_up::{self, SsoRefusal, new_user, user_actor};
pub use crate::accounts::{INVITATION_DAYS, RESET_LINK_HOURS};
const HOUR_MS: i64 = 3_600_000;

// ---------------------------------------------------------------------------------------
// Views

/// The signed-in person.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserView {
    #[schema(example = "usr_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: String,
    pub email: String,
    pub name: String,
    pub two_factor_enabled: bool,
    /// False for accounts that only sign in with SSO.
    pub has_password: bool,
    pub created_at: String,
}

/// A workspace the person belongs to, with their role in it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MembershipView {
    pub id: String,
    pub name: String,
    /// `owner`, `admin`, `member` or `viewer`.
    pub role: String,
    pub require_two_factor: bool,
}

/// A session.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    #[schema(example = "ses_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: String,
    /// `password` or `oidc:<provider>`.
    pub method: String,
    pub ip: String,
    pub user_agent: String,
    pub created_at: String,
    pub last_seen_at: String,
    pub expires_at: String,
    /// Whether this is the session making the request.
    pub current: bool,
}

/// Who is signed in, where, and the CSRF token their writes must carry.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub user: UserView,
    pub session: SessionView,
    /// The selected workspace (requests without `X-Workspace` act in it).
    pub workspace: Option<MembershipView>,
    pub workspaces: Vec<MembershipView>,
    /// Send as `X-CSRF-Token` with every POST, PUT, PATCH and DELETE made with the cookie.
    pub csrf_token: String,
}

fn user_view(u: &UserRow) -> UserView {
    UserView {
        id: u.id.clone(),
        email: u.email.clone(),
        name: u.name.clone(),
        two_factor_enabled: u.totp_secret.is_some(),
        has_password: u.password_hash.is_some(),
        created_at: crate::time::format_ms(u.created_at),
    }
}

fn session_view(s: &SessionRow, current: &str) -> SessionView {
    SessionView {
        id: s.id.clone(),
        method: s.method.clone(),
        ip: s.ip.clone(),
        user_agent: s.user_agent.clone(),
        created_at: crate::time::format_ms(s.created_at),
        last_seen_at: crate::time::format_ms(s.last_seen_at),
        expires_at: crate::time::format_ms(s.expires_at),
        current: s.id == current,
    }
}

async fn session_info(
    state: &AppState,
    user: &UserRow,
    session: &SessionRow,
    token: &str,
) -> Result<SessionInfo, ApiError> {
    let workspaces: Vec<MembershipView> = state
        .store
        .memberships(&user.email)
        .await?
        .into_iter()
        .map(|(m, w)| MembershipView {
            id: w.id,
            name: w.name,
            role: m.role,
            require_two_factor: w.require_two_factor,
        })
        .collect();
    let selected = session
        .workspace_id
        .as_deref()
        .and_then(|id| workspaces.iter().position(|w| w.id == id))
        .or(if workspaces.is_empty() { None } else { Some(0) });
    let workspace = selected.map(|i| MembershipView {
        id: workspaces[i].id.clone(),
        name: workspaces[i].name.clone(),
        role: workspaces[i].role.clone(),
        require_two_factor: workspaces[i].require_two_factor,
    });
    Ok(SessionInfo {
        user: user_view(user),
        session: session_view(session, &session.id),
        workspace,
        workspaces,
        csrf_token: accounts::csrf_token(token),
    })
}

// ---------------------------------------------------------------------------------------
// Helpers

fn user_agent(headers: &HeaderMap) -> String {
    headers
        .get(USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .chars()
        .take(300)
        .collect()
}

/// 429 for a throttled sign-in or reset.
fn throttled(wait_ms: i64) -> ApiError {
    let secs = ((wait_ms + 999) / 1000).max(1);
    let mut e = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "RATE_LIMITED",
        format!("Too many failed attempts; try again in {secs} s"),
    );
    e.headers.push(("retry-after", secs.to_string()));
    e
}

fn wrong_credentials() -> ApiError {
    ApiError::unauthorized("Wrong e-mail address or password")
}

fn check_password_field(field: &str, password: &str) -> Result<(), ApiError> {
    password::check_policy(password)
        .map_err(|m| ApiError::validation(vec![FieldError::new(field, m)]))
}

/// Hash off the async threads (argon2id takes tens of milliseconds of CPU).
pub async fn hash_password(plain: String) -> Result<String, ApiError> {
    tokio::task::spawn_blocking(move || password::hash(&plain))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)
}

/// Start a session for `user` ([`sign_in::start_session`]) as this request's client.
async fn start_session(
    state: &AppState,
    user: &UserRow,
    method: &str,
    ip: &str,
    headers: &HeaderMap,
    workspace: Option<String>,
) -> Result<(SessionRow, String), ApiError> {
    let start = sign_in::Start {
        method,
        ip,
        user_agent: &user_agent(headers),
        workspace,
        now_ms: state.clock.now_ms(),
        lifetime_ms: i64::try_from(state.config.sessions.absolute.as_millis()).unwrap_or(i64::MAX),
    };
    Ok(sign_in::start_session(&state.store, user, start).await?)
}

/// The answer to a successful sign-in: the session and its cookie.
async fn signed_in_response(
    state: &AppState,
    user: &UserRow,
    session: &SessionRow,
    token: &str,
    status: StatusCode,
) -> Result<Response, ApiError> {
    let info = session_info(state, user, session, token).await?;
    let cookie = session::set_cookie(state, Some(token), state.config.sessions.absolute.as_secs());
    Ok(([(SET_COOKIE, cookie)], Success(status, info)).into_response())
}

// ---------------------------------------------------------------------------------------
// Sign in and out

/// `POST /v1/auth/login`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoginBody {
    pub email: String,
    pub password: String,
    /// The six-digit code of the authenticator app, when two-factor is on.
    pub totp_code: Option<String>,
    /// A recovery code instead (each works once).
    pub recovery_code: Option<String>,
}

/// Sign in with e-mail and password (and a two-factor code when enabled). Sets the
/// session cookie; the answer carries the CSRF token.
#[utoipa::path(post, path = "/v1/auth/login", tag = "auth", request_body = LoginBody,
    security(()),
    responses(
        (status = 200, description = "Signed in; `Set-Cookie: tocsin_session=...`", body = SuccessBody<SessionInfo>),
        (status = 401, description = "UNAUTHORIZED: wrong e-mail address or password; TWO_FACTOR_REQUIRED: send `totpCode` or `recoveryCode`", body = ErrorBody),
        (status = 429, description = "RATE_LIMITED: too many failures for this account or address", body = ErrorBody),
    ))]
pub async fn login(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    ApiJson(body): ApiJson<LoginBody>,
) -> Result<Response, ApiError> {
    let email = normalize_email(&body.email);
    let attempt = sign_in::Attempt {
        email: &email,
        password: &body.password,
        totp_code: body.totp_code.as_deref(),
        recovery_code: body.recovery_code.as_deref(),
        ip: &ip,
        now_ms: state.clock.now_ms(),
    };
    let user = sign_in::with_password(&state.store, &state.accounts.login, attempt)
        .await
        .map_err(refused_sign_in)?;
    let (session, token) = start_session(&state, &user, "password", &ip, &headers, None).await?;
    signed_in_response(&state, &user, &session, &token, StatusCode::OK).await
}

/// The answer to a refused sign-in.
fn refused_sign_in(refusal: sign_in::Refusal) -> ApiError {
    match refusal {
        sign_in::Refusal::Throttled { wait_ms } => throttled(wait_ms),
        sign_in::Refusal::WrongCredentials => wrong_credentials(),
        sign_in::Refusal::WrongCode => ApiError::unauthorized("Wrong two-factor code"),
        sign_in::Refusal::WrongRecoveryCode => {
            ApiError::unauthorized("Wrong or used recovery code")
        }
        sign_in::Refusal::TwoFactorRequired => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "TWO_FACTOR_REQUIRED",
            "Two-factor authentication is on: send the authenticator's code as `totpCode` (or a recovery code as `recoveryCode`)",
        ),
        sign_in::Refusal::Store(e) => e.into(),
    }
}

/// Sign out: end this session and clear the cookie.
#[utoipa::path(post, path = "/v1/auth/logout", tag = "auth",
    responses(
        (status = 204, description = "Signed out; the cookie is cleared"),
        (status = 401, description = "UNAUTHORIZED: no session", body = ErrorBody),
    ))]
pub async fn logout(
    State(state): State<AppState>,
    Extension(signed): Extension<Signed>,
) -> Result<Response, ApiError> {
    audit::note(Change::new(
        signed.session.workspace_id.as_deref(),
        "session.delete",
        "session",
        Some(&signed.session.id),
    ));
    state
        .store
        .delete_session(&signed.user.id, &signed.session.id)
        .await?;
    Ok((
        [(SET_COOKIE, session::set_cookie(&state, None, 0))],
        NoContent,
    )
        .into_response())
}

/// Who is signed in, their workspaces, and the CSRF token.
#[utoipa::path(get, path = "/v1/auth/session", tag = "auth",
    responses(
        (status = 200, description = "The session", body = SuccessBody<SessionInfo>),
        (status = 401, description = "UNAUTHORIZED: no session, or it ended", body = ErrorBody),
    ))]
pub async fn get_session(
    State(state): State<AppState>,
    Extension(signed): Extension<Signed>,
) -> Result<Success<SessionInfo>, ApiError> {
    Ok(Success::ok(
        session_info(&state, &signed.user, &signed.session, &signed.token).await?,
    ))
}

/// `PATCH /v1/auth/session`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionUpdate {
    /// The workspace requests without `X-Workspace` act in.
    pub workspace_id: String,
}

/// Switch the session to another of the person's workspaces.
#[utoipa::path(patch, path = "/v1/auth/session", tag = "auth", request_body = SessionUpdate,
    responses(
        (status = 200, description = "The session", body = SuccessBody<SessionInfo>),
        (status = 403, description = "FORBIDDEN: not a member of that workspace", body = ErrorBody),
    ))]
pub async fn update_session(
    State(state): State<AppState>,
    Extension(mut signed): Extension<Signed>,
    ApiJson(body): ApiJson<SessionUpdate>,
) -> Result<Success<SessionInfo>, ApiError> {
    if state
        .store
        .membership(&signed.user.email, &body.workspace_id)
        .await?
        .is_none()
    {
        return Err(ApiError::forbidden(format!(
            "You are not a member of workspace `{}`",
            body.workspace_id
        )));
    }
    state
        .store
        .set_session_workspace(&signed.session.id, &body.workspace_id)
        .await?;
    signed.session.workspace_id = Some(body.workspace_id);
    get_session(State(state), Extension(signed)).await
}

/// The person's sessions (every browser and client signed in), newest first.
#[utoipa::path(get, path = "/v1/auth/sessions", tag = "auth",
    responses((status = 200, description = "Sessions", body = SuccessBody<Vec<SessionView>>)))]
pub async fn list_sessions(
    State(state): State<AppState>,
    Extension(signed): Extension<Signed>,
) -> Result<Success<Vec<SessionView>>, ApiError> {
    let rows = state
        .store
        .sessions_of(&signed.user.id, state.clock.now_ms())
        .await?;
    Ok(Success::ok(
        rows.iter()
            .map(|s| session_view(s, &signed.session.id))
            .collect(),
    ))
}

/// End one session; its next request gets 401.
#[utoipa::path(delete, path = "/v1/auth/sessions/{id}", tag = "auth",
    params(("id" = String, Path, description = "Session id")),
    responses(
        (status = 204, description = "Ended"),
        (status = 404, description = "SESSION_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn revoke_session(
    State(state): State<AppState>,
    Extension(signed): Extension<Signed>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    audit::note(Change::new(
        signed.session.workspace_id.as_deref(),
        "session.delete",
        "session",
        Some(&id),
    ));
    if state.store.delete_session(&signed.user.id, &id).await? {
        Ok(NoContent)
    } else {
        audit::discard();
        Err(ApiError::not_found("SESSION_NOT_FOUND", "session", &id))
    }
}

/// Sign out everywhere: end every session of the person, this one included.
#[utoipa::path(delete, path = "/v1/auth/sessions", tag = "auth",
    responses((status = 204, description = "Every session ended; the cookie is cleared")))]
pub async fn revoke_all_sessions(
    State(state): State<AppState>,
    Extension(signed): Extension<Signed>,
) -> Result<Response, ApiError> {
    audit::note(Change::new(
        signed.session.workspace_id.as_deref(),
        "session.delete_all",
        "user",
        Some(&signed.user.id),
    ));
    state
        .store
        .delete_sessions_of(&signed.user.id, None)
        .await?;
    Ok((
        [(SET_COOKIE, session::set_cookie(&state, None, 0))],
        NoContent,
    )
        .into_response())
}

/// `POST /v1/auth/password`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PasswordChange {
    /// Omitted only by accounts without a password (SSO only).
    pub current_password: Option<String>,
    pub new_password: String,
}

/// Change one's password. Every other session ends.
#[utoipa::path(post, path = "/v1/auth/password", tag = "auth", request_body = PasswordChange,
    responses(
        (status = 204, description = "Changed"),
        (status = 400, description = "VALIDATION_ERROR: too short or too long", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED: wrong current password", body = ErrorBody),
    ))]
pub async fn change_password(
    State(state): State<AppState>,
    Extension(signed): Extension<Signed>,
    ApiJson(body): ApiJson<PasswordChange>,
) -> Result<NoContent, ApiError> {
    check_password_field("newPassword", &body.new_password)?;
    if let Some(stored) = signed.user.password_hash.clone() {
        let current = body.current_password.clone().unwrap_or_default();
        if !sign_in::verify_password(current, Some(stored)).await {
            return Err(ApiError::unauthorized("Wrong current password"));
        }
    }
    let mut user = signed.user.clone();
    user.password_hash = Some(hash_password(body.new_password).await?);
    user.updated_at = state.clock.now_ms();
    audit::note(Change::new(
        signed.session.workspace_id.as_deref(),
        "user.password_change",
        "user",
        Some(&user.id),
    ));
    state.store.update_user(user).await?;
    state
        .store
        .delete_sessions_of(&signed.user.id, Some(&signed.session.id))
        .await?;
    Ok(NoContent)
}

// ---------------------------------------------------------------------------------------
// Setup, invitations, resets

/// `POST /v1/auth/setup`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetupBody {
    /// From the setup link the server printed at first start.
    pub token: String,
    pub name: String,
    pub email: String,
    pub password: String,
}

fn check_name(name: &str) -> Result<String, ApiError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 200 {
        return Err(ApiError::validation(vec![FieldError::new(
            "name",
            "must be 1 to 200 characters",
        )]));
    }
    Ok(name.to_string())
}

fn check_email(email: &str) -> Result<String, ApiError> {
    let email = normalize_email(email);
    if !accounts::is_email(&email) {
        return Err(ApiError::validation(vec![FieldError::new(
            "email",
            "must be an e-mail address",
        )]));
    }
    Ok(email)
}

fn email_taken(email: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "CONFLICT",
        format!("An account with `{email}` already exists; sign in instead"),
    )
}

fn bad_link(what: &str) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "INVALID_TOKEN",
        format!("This {what} link is unknown, used or expired"),
    )
}

/// Create the first owner account with the one-time setup link, and sign in.
#[utoipa::path(post, path = "/v1/auth/setup", tag = "auth", request_body = SetupBody,
    security(()),
    responses(
        (status = 201, description = "The owner's account, signed in", body = SuccessBody<SessionInfo>),
        (status = 400, description = "INVALID_TOKEN: unknown, used or expired link; VALIDATION_ERROR", body = ErrorBody),
        (status = 409, description = "CONFLICT: the e-mail address has an account", body = ErrorBody),
    ))]
pub async fn setup(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    ApiJson(body): ApiJson<SetupBody>,
) -> Result<Response, ApiError> {
    let name = check_name(&body.name)?;
    let email = check_email(&body.email)?;
    check_password_field("password", &body.password)?;
    let now = state.clock.now_ms();
    let hash = accounts::hash_token(body.token.trim());
    if state
        .store
        .token(TokenKind::Setup, &hash, now)
        .await?
        .is_none()
    {
        return Err(bad_link("setup"));
    }
    if state.store.user_by_email(&email).await?.is_some() {
        return Err(email_taken(&email));
    }
    let password_hash = hash_password(body.password).await?;
    let user = new_user(&email, &name, Some(password_hash), now);
    let actor = user_actor(&user, &ip);
    let (user, workspace_id) = audit::scoped(actor, now, async {
        let tx = state.store.begin_write().await?;
        if tx
            .redeem_token(TokenKind::Setup, &hash, now)
            .await?
            .is_none()
        {
            return Err(bad_link("setup"));
        }
        let ws = tx
            .first_workspace()
            .await?
            .ok_or_else(|| ApiError::internal("no workspace to set up"))?;
        let user = super::error::or_conflict(tx.insert_user(user).await, || email_taken(&email))?;
        let (member, _) = tx
            .grant_membership(&ws.id, &email, &name, "owner", now)
            .await?;
        audit::note(
            Change::new(Some(&ws.id), "user.setup", "user", Some(&user.id))
                .after(serde_json::json!({"email": email, "name": name})),
        );
        audit::note(
            Change::new(Some(&ws.id), "member.add", "member", Some(&member.id))
                .after(serde_json::json!({"email": email, "role": "owner"})),
        );
        tx.commit().await?;
        Ok::<_, ApiError>((user, ws.id))
    })
    .await?;
    let (session, token) =
        start_session(&state, &user, "password", &ip, &headers, Some(workspace_id)).await?;
    signed_in_response(&state, &user, &session, &token, StatusCode::CREATED).await
}

/// `POST /v1/auth/invitations/accept`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AcceptBody {
    /// From the invitation e-mail.
    pub token: String,
    /// For a new account: the name (default: the part of the address before `@`).
    pub name: Option<String>,
    /// For a new account: its password. People with an account already just join.
    pub password: Option<String>,
}

/// What accepting an invitation did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    pub workspace_id: String,
    /// The person's role in the workspace now: the invitation's, but no more than its
    /// sender's role at this moment; a higher role the person had already stays.
    pub role: String,
    /// True when the account was created now (and a session started).
    pub account_created: bool,
}

/// Accept an invitation. A new account gets its password and is signed in; an existing
/// account joins the workspace and signs in as usual. The role granted is never more than
/// the inviting member's role now, and never lowers a role the person already has.
#[utoipa::path(post, path = "/v1/auth/invitations/accept", tag = "auth", request_body = AcceptBody,
    security(()),
    responses(
        (status = 201, description = "Joined (`Set-Cookie` when the account is new)", body = SuccessBody<Accepted>),
        (status = 400, description = "INVALID_TOKEN: unknown, used or expired link, or its sender has left the workspace; VALIDATION_ERROR: a new account needs a password", body = ErrorBody),
    ))]
pub async fn accept_invitation(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    ApiJson(body): ApiJson<AcceptBody>,
) -> Result<Response, ApiError> {
    let now = state.clock.now_ms();
    let hash = accounts::hash_token(body.token.trim());
    let invitation = state
        .store
        .token(TokenKind::Invitation, &hash, now)
        .await?
        .ok_or_else(|| bad_link("invitation"))?;
    let existing = state.store.user_by_email(&invitation.email).await?;
    let new_account = match &existing {
        Some(_) => None,
        None => {
            let password = body.password.clone().ok_or_else(|| {
                ApiError::validation(vec![FieldError::new(
                    "password",
                    "is required to create your account",
                )])
            })?;
            check_password_field("password", &password)?;
            let name = match &body.name {
                Some(n) => check_name(n)?,
                None => invitation
                    .email
                    .split('@')
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            };
            Some(new_user(
                &invitation.email,
                &name,
                Some(hash_password(password).await?),
                now,
            ))
        }
    };
    let user_for_actor = existing.clone().or_else(|| new_account.clone());
    let Some(actor_user) = user_for_actor else {
        return Err(ApiError::internal("no account for the invitation"));
    };
    let (user, accepted) = audit::scoped(user_actor(&actor_user, &ip), now, async {
        let tx = state.store.begin_write().await?;
        let token = tx
            .redeem_token(TokenKind::Invitation, &hash, now)
            .await?
            .ok_or_else(|| bad_link("invitation"))?;
        let user = match new_account.clone() {
            Some(u) => {
                super::error::or_conflict(tx.insert_user(u).await, || email_taken(&token.email))?
            }
            None => actor_user.clone(),
        };
        let workspace_id = token.workspace_id.clone().unwrap_or_default();
        let Some(member) = sign_up::join_by_invitation(&tx, &token, &user, None, now).await? else {
            return Err(inviter_gone());
        };
        tx.commit().await?;
        Ok::<_, ApiError>((
            user,
            Accepted {
                workspace_id,
                role: member.role,
                account_created: new_account.is_some(),
            },
        ))
    })
    .await?;
    if accepted.account_created {
        let (_, token) = start_session(
            &state,
            &user,
            "password",
            &ip,
            &headers,
            Some(accepted.workspace_id.clone()),
        )
        .await?;
        let cookie = session::set_cookie(
            &state,
            Some(&token),
            state.config.sessions.absolute.as_secs(),
        );
        return Ok(([(SET_COOKIE, cookie)], Success::created(accepted)).into_response());
    }
    Ok(Success::created(accepted).into_response())
}

/// An invitation whose sender has left the workspace.
fn inviter_gone() -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "INVALID_TOKEN",
        "This invitation no longer works: the person who sent it has left the workspace. \
         Ask a member of the workspace for a new one",
    )
}

/// `POST /v1/auth/password-reset`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResetRequest {
    pub email: String,
}

/// Always the same answer, whether or not the address has an account.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResetRequested {
    pub message: String,
}

/// Ask for a password reset link by e-mail (valid 1 h, once). The answer never tells
/// whether the address has an account.
#[utoipa::path(post, path = "/v1/auth/password-reset", tag = "auth", request_body = ResetRequest,
    security(()),
    responses(
        (status = 202, description = "If the address has an account, a link is on its way", body = SuccessBody<ResetRequested>),
        (status = 429, description = "RATE_LIMITED", body = ErrorBody),
    ))]
pub async fn request_reset(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    ApiJson(body): ApiJson<ResetRequest>,
) -> Result<Success<ResetRequested>, ApiError> {
    let email = normalize_email(&body.email);
    let now = state.clock.now_ms();
    let account_key = format!("reset:{email}");
    let address_key = format!("reset-ip:{ip}");
    // Every request counts: a reset sends mail, so asking often is what is limited.
    if let Some(wait) = state.accounts.reset.wait_ms(
        &[
            (&account_key, throttle::FREE_FAILURES_PER_ACCOUNT),
            (&address_key, throttle::FREE_FAILURES_PER_ADDRESS),
        ],
        now,
    ) {
        return Err(throttled(wait));
    }
    state
        .accounts
        .reset
        .fail(&[&account_key, &address_key], now);
    let answer = Success(
        StatusCode::ACCEPTED,
        ResetRequested {
            message: "If this address has an account, a reset link is on its way".into(),
        },
    );
    let Some(user) = state.store.user_by_email(&email).await? else {
        return Ok(answer);
    };
    let token = accounts::new_token();
    state
        .store
        .insert_token(crate::store::accounts::TokenRow {
            id: ids::new_id(ids::prefix::AUTH_TOKEN),
            kind: TokenKind::Reset.as_str().into(),
            token_hash: accounts::hash_token(&token),
            email: user.email.clone(),
            workspace_id: None,
            role: None,
            created_by: None,
            inviter_member_id: None,
            created_at: now,
            expires_at: now + RESET_LINK_HOURS * HOUR_MS,
            used_at: None,
        })
        .await?;
    let link = format!("{}/reset-password?token={token}", state.config.public_url);
    let text = format!(
        "Hello {},\n\nSomeone (hopefully you) asked to reset the password of your Tocsin account.\n\nSet a new password here (the link works once, for one hour):\n\n{link}\n\nIf it was not you, ignore this message: your password stays as it is.\n",
        user.name
    );
    // Sent in the background: the answer must not take longer when the account exists.
    let plugins = state.plugins.clone();
    tokio::spawn(async move {
        if let Err(e) = plugins
            .send_mail(&user.email, "Reset your Tocsin password", &text)
            .await
        {
            tracing::warn!(error = %e, "could not send a password reset e-mail");
        }
    });
    Ok(answer)
}

/// `POST /v1/auth/password-reset/confirm`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResetConfirm {
    pub token: String,
    pub password: String,
}

/// Set a new password with a reset link. Every session of the account ends.
#[utoipa::path(post, path = "/v1/auth/password-reset/confirm", tag = "auth", request_body = ResetConfirm,
    security(()),
    responses(
        (status = 204, description = "The password is set; sign in with it"),
        (status = 400, description = "INVALID_TOKEN; VALIDATION_ERROR", body = ErrorBody),
    ))]
pub async fn confirm_reset(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    ApiJson(body): ApiJson<ResetConfirm>,
) -> Result<NoContent, ApiError> {
    check_password_field("password", &body.password)?;
    let now = state.clock.now_ms();
    let hash = accounts::hash_token(body.token.trim());
    let token = state
        .store
        .token(TokenKind::Reset, &hash, now)
        .await?
        .ok_or_else(|| bad_link("password reset"))?;
    let mut user = state
        .store
        .user_by_email(&token.email)
        .await?
        .ok_or_else(|| bad_link("password reset"))?;
    user.password_hash = Some(hash_password(body.password).await?);
    user.updated_at = now;
    audit::scoped(user_actor(&user, &ip), now, async {
        let tx = state.store.begin_write().await?;
        if tx
            .redeem_token(TokenKind::Reset, &hash, now)
            .await?
            .is_none()
        {
            return Err(bad_link("password reset"));
        }
        tx.delete_sessions_of(&user.id).await?;
        audit::note(Change::new(
            None,
            "user.password_reset",
            "user",
            Some(&user.id),
        ));
        tx.update_user(user.clone()).await?;
        tx.commit().await?;
        Ok::<_, ApiError>(())
    })
    .await?;
    state
        .accounts
        .login
        .clear(&sign_in::account_key(&user.email));
    Ok(NoContent)
}

// ---------------------------------------------------------------------------------------
// Two-factor

/// A secret to add to an authenticator app.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Enrolment {
    /// Base32, for typing into the app.
    pub secret: String,
    pub otpauth_url: String,
    /// The QR code of `otpauthUrl`, as an SVG document.
    pub qr_svg: String,
}

/// Begin two-factor enrolment: a new secret, its `otpauth://` URL and QR code. Nothing
/// changes until a code from the app confirms it.
#[utoipa::path(post, path = "/v1/auth/totp/enroll", tag = "auth",
    responses(
        (status = 200, description = "The secret to scan", body = SuccessBody<Enrolment>),
        (status = 409, description = "CONFLICT: two-factor is already on", body = ErrorBody),
    ))]
pub async fn totp_enroll(
    State(state): State<AppState>,
    Extension(signed): Extension<Signed>,
) -> Result<Success<Enrolment>, ApiError> {
    if signed.user.totp_secret.is_some() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "CONFLICT",
            "Two-factor authentication is already on; turn it off first to enrol a new device",
        ));
    }
    let secret = totp::new_secret();
    let url = totp::provisioning_url(&secret, &signed.user.email)
        .ok_or_else(|| ApiError::internal("cannot build the TOTP URL"))?;
    let svg = totp::qr_svg(&url).ok_or_else(|| ApiError::internal("cannot draw the QR code"))?;
    let mut user = signed.user.clone();
    user.totp_pending = Some(secret.clone());
    user.updated_at = state.clock.now_ms();
    state.store.update_user(user).await?;
    Ok(Success::ok(Enrolment {
        secret,
        otpauth_url: url,
        qr_svg: svg,
    }))
}

/// `POST /v1/auth/totp/confirm`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TotpConfirm {
    pub code: String,
}

/// Recovery codes, shown once.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryCodes {
    /// Ten codes; each signs in once instead of the app's code. Store them safely.
    pub recovery_codes: Vec<String>,
}

/// Confirm enrolment with a code from the app: two-factor is on from now, and ten
/// recovery codes are issued.
#[utoipa::path(post, path = "/v1/auth/totp/confirm", tag = "auth", request_body = TotpConfirm,
    responses(
        (status = 200, description = "On; the recovery codes (shown once)", body = SuccessBody<RecoveryCodes>),
        (status = 400, description = "VALIDATION_ERROR: wrong code, or no enrolment started", body = ErrorBody),
    ))]
pub async fn totp_confirm(
    State(state): State<AppState>,
    Extension(signed): Extension<Signed>,
    ApiJson(body): ApiJson<TotpConfirm>,
) -> Result<Success<RecoveryCodes>, ApiError> {
    let Some(pending) = signed.user.totp_pending.clone() else {
        return Err(ApiError::bad_request(
            "No enrolment in progress: POST /v1/auth/totp/enroll first",
        ));
    };
    let now = state.clock.now_ms();
    if !totp::check(&pending, &body.code, (now / 1000) as u64) {
        return Err(ApiError::validation(vec![FieldError::new(
            "code",
            "is not the current code of the enrolled secret",
        )]));
    }
    let codes = totp::new_recovery_codes();
    let hashes: Vec<String> = codes
        .iter()
        .map(|c| accounts::hash_token(&totp::normalize_recovery_code(c)))
        .collect();
    let mut user = signed.user.clone();
    user.totp_secret = Some(pending);
    user.totp_pending = None;
    user.recovery_codes = Some(serde_json::to_string(&hashes).map_err(ApiError::internal)?);
    user.updated_at = now;
    audit::note(Change::new(
        signed.session.workspace_id.as_deref(),
        "user.totp_enable",
        "user",
        Some(&user.id),
    ));
    state.store.update_user(user).await?;
    Ok(Success::ok(RecoveryCodes {
        recovery_codes: codes,
    }))
}

/// `DELETE /v1/auth/totp`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TotpDisable {
    /// The current code (or a recovery code), proving the device is at hand.
    pub code: String,
}

/// Turn two-factor off (needs a current code or a recovery code).
#[utoipa::path(delete, path = "/v1/auth/totp", tag = "auth", request_body = TotpDisable,
    responses(
        (status = 204, description = "Off"),
        (status = 400, description = "VALIDATION_ERROR: wrong code", body = ErrorBody),
        (status = 409, description = "CONFLICT: a workspace of yours requires two-factor", body = ErrorBody),
    ))]
pub async fn totp_disable(
    State(state): State<AppState>,
    Extension(signed): Extension<Signed>,
    ApiJson(body): ApiJson<TotpDisable>,
) -> Result<NoContent, ApiError> {
    let Some(secret) = signed.user.totp_secret.clone() else {
        return Ok(NoContent);
    };
    let now = state.clock.now_ms();
    let mut user = signed.user.clone();
    let ok = totp::check(&secret, &body.code, (now / 1000) as u64)
        || sign_in::use_recovery_code(&state.store, &mut user, &body.code, now).await?;
    if !ok {
        return Err(ApiError::validation(vec![FieldError::new(
            "code",
            "is neither the current code nor an unused recovery code",
        )]));
    }
    let requiring: Vec<String> = state
        .store
        .memberships(&user.email)
        .await?
        .into_iter()
        .filter(|(_, w)| w.require_two_factor)
        .map(|(_, w)| w.name)
        .collect();
    if !requiring.is_empty() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "CONFLICT",
            format!(
                "These workspaces require two-factor authentication: {}",
                requiring.join(", ")
            ),
        ));
    }
    user.totp_secret = None;
    user.totp_pending = None;
    user.recovery_codes = None;
    user.updated_at = now;
    audit::note(Change::new(
        signed.session.workspace_id.as_deref(),
        "user.totp_disable",
        "user",
        Some(&user.id),
    ));
    state.store.update_user(user).await?;
    Ok(NoContent)
}

// ---------------------------------------------------------------------------------------
// Single sign-on

/// A configured identity provider.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderView {
    pub name: String,
    pub display_name: String,
    /// Send the browser here to sign in.
    pub start_url: String,
}

/// The single sign-on providers (for a sign-in page).
#[utoipa::path(get, path = "/v1/auth/providers", tag = "auth", security(()),
    responses((status = 200, description = "Providers", body = SuccessBody<Vec<ProviderView>>)))]
pub async fn list_providers(State(state): State<AppState>) -> Success<Vec<ProviderView>> {
    Success::ok(
        state
            .accounts
            .sso
            .providers()
            .iter()
            .map(|p| ProviderView {
                name: p.name.clone(),
                display_name: p.display_name.clone().unwrap_or_else(|| p.name.clone()),
                start_url: format!("{}/v1/auth/oidc/{}/start", state.config.public_url, p.name),
            })
            .collect(),
    )
}

/// How long a sign-in may stay at the provider.
const OIDC_LOGIN_TTL_MS: i64 = 10 * 60_000;

/// Begin single sign-on: redirect to the provider.
#[utoipa::path(get, path = "/v1/auth/oidc/{provider}/start", tag = "auth", security(()),
    params(("provider" = String, Path, description = "Provider name")),
    responses(
        (status = 302, description = "To the provider's sign-in page"),
        (status = 404, description = "PROVIDER_NOT_FOUND: no such provider", body = ErrorBody),
        (status = 502, description = "BAD_GATEWAY: the provider cannot be reached", body = ErrorBody),
    ))]
pub async fn oidc_start(
    State(state): State<AppState>,
    ApiPath(provider): ApiPath<String>,
) -> Result<Response, ApiError> {
    let start = state
        .accounts
        .sso
        .start(&provider)
        .await
        .map_err(sso_error)?;
    state
        .store
        .insert_oidc_login(crate::store::accounts::OidcLoginRow {
            state: accounts::hash_token(&start.state),
            provider: provider.clone(),
            pkce_verifier: start.pkce_verifier,
            nonce: start.nonce,
            expires_at: state.clock.now_ms() + OIDC_LOGIN_TTL_MS,
        })
        .await?;
    redirect(&start.url)
}

fn redirect(to: &str) -> Result<Response, ApiError> {
    let location = HeaderValue::from_str(to).map_err(ApiError::internal)?;
    Ok((StatusCode::FOUND, [(LOCATION, location)]).into_response())
}

fn sso_error(e: accounts::oidc::SsoError) -> ApiError {
    use accounts::oidc::SsoError;
    match e {
        SsoError::UnknownProvider(_) => {
            ApiError::new(StatusCode::NOT_FOUND, "PROVIDER_NOT_FOUND", e.to_string())
        }
        SsoError::Provider(_) => {
            tracing::warn!(error = %e, "single sign-on provider failed");
            ApiError::new(StatusCode::BAD_GATEWAY, "BAD_GATEWAY", e.to_string())
        }
        SsoError::Refused(_) => {
            tracing::warn!(error = %e, "single sign-on answer refused");
            ApiError::unauthorized(e.to_string())
        }
    }
}

/// The provider's redirect back.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CallbackQuery {
    pub code: Option<String>,
    pub state: Option<String>,
    pub error: Option<String>,
    pub error_description: Option<String>,
    /// Some providers add the issuer (RFC 9207).
    pub iss: Option<String>,
    pub session_state: Option<String>,
}

/// Finish single sign-on: verify the provider's answer, create or update the account,
/// apply the group roles, start a session and go to the dashboard.
#[utoipa::path(get, path = "/v1/auth/oidc/{provider}/callback", tag = "auth", security(()),
    params(("provider" = String, Path, description = "Provider name"), CallbackQuery),
    responses(
        (status = 302, description = "Signed in; to the dashboard (`Set-Cookie`)"),
        (status = 400, description = "INVALID_TOKEN: unknown or expired sign-in", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED: the provider refused, or this account may not sign in", body = ErrorBody),
    ))]
pub async fn oidc_callback(
    State(state): State<AppState>,
    ClientIp(ip): ClientIp,
    headers: HeaderMap,
    ApiPath(provider): ApiPath<String>,
    ApiQuery(q): ApiQuery<CallbackQuery>,
) -> Result<Response, ApiError> {
    let now = state.clock.now_ms();
    if let Some(error) = q.error {
        return Err(ApiError::unauthorized(format!(
            "The identity provider refused the sign-in: {error}{}",
            q.error_description
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )));
    }
    let (Some(code), Some(st)) = (q.code, q.state) else {
        return Err(ApiError::bad_request("`code` and `state` are required"));
    };
    let login = state
        .store
        .take_oidc_login(&accounts::hash_token(&st), now)
        .await?
        .filter(|l| l.provider == provider)
        .ok_or_else(|| bad_link("sign-in"))?;
    let identity = state
        .accounts
        .sso
        .finish(&provider, &code, &login.pkce_verifier, &login.nonce)
        .await
        .map_err(sso_error)?;
    let config = state
        .accounts
        .sso
        .provider(&provider)
        .map_err(sso_error)?
        .clone();
    let user = sign_up::sso_account(&state.store, &config, &identity, &ip, now)
        .await
        .map_err(refused)?;
    let method = format!("oidc:{provider}");
    let (_, token) = start_session(&state, &user, &method, &ip, &headers, None).await?;
    let cookie = session::set_cookie(
        &state,
        Some(&token),
        state.config.sessions.absolute.as_secs(),
    );
    let location = HeaderValue::from_str(&format!("{}/", state.config.public_url))
        .map_err(ApiError::internal)?;
    Ok((
        StatusCode::FOUND,
        [(SET_COOKIE, cookie), (LOCATION, location)],
    )
        .into_response())
}

/// Why single sign-on signed no one in, as the API says it.
fn refused(refusal: SsoRefusal) -> ApiError {
    match refusal {
        SsoRefusal::Unverified(email) => ApiError::unauthorized(format!(
            "The identity provider has not verified `{email}`, so it cannot sign in here; \
             verify the address with the provider first"
        )),
        SsoRefusal::NoSignUp { email, provider } => ApiError::unauthorized(format!(
            "`{email}` has no account here and its domain may not sign up through {provider}"
        )),
        SsoRefusal::EmailTaken(email) => email_taken(&email),
        SsoRefusal::Store(e) => e.into(),
    }
}
