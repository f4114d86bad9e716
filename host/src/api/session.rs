//! Sessions of signed-in people: the cookie, its CSRF token, and turning a session into a
//! [`Principal`] for the workspace it selected.
//!
//! The cookie `tocsin_session` holds a random token; the database keeps only its SHA-256,
//! so a stolen database does not sign anyone in, a restart keeps people signed in and
//! deleting the row ends the session at once. Writes authenticated by the cookie must
//! carry `X-CSRF-Token`, derived from the token (see [`crate::accounts::csrf_token`]): a
//! page on another site can make the browser send the cookie, not read the token.

use super::AppState;
use super::error::ApiError;
use crate::accounts;
use crate::store::accounts::{SessionRow, UserRow};
use crate::store::keys::{Principal, Role, SessionPrincipal};
use axum::http::{HeaderMap, HeaderValue, Method};

pub const COOKIE: &str = "tocsin_session";
pub const CSRF_HEADER: &str = "x-csrf-token";
pub const WORKSPACE_HEADER: &str = "x-workspace";
/// A session's last use is written at most this often.
const TOUCH_EVERY_MS: i64 = 60_000;

/// The session token in the request's cookies, if any.
pub fn cookie_token(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim().to_string())
        .filter(|v| !v.is_empty() && v.len() <= 128)
}

/// `Set-Cookie` for a new session (`max_age_secs`), or to clear it (`None`).
pub fn set_cookie(state: &AppState, token: Option<&str>, max_age_secs: u64) -> HeaderValue {
    let secure = if state.config.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    let text = match token {
        Some(t) => {
            format!("{COOKIE}={t}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_secs}{secure}")
        }
        None => format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}"),
    };
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The member role's rights, as a key role.
pub fn rights(member_role: &str) -> Role {
    Role::of_member(member_role)
}

/// A live session and its person.
#[derive(Debug, Clone)]
pub struct Signed {
    pub session: SessionRow,
    pub user: UserRow,
    pub token: String,
}

/// Find the session behind the request's cookie; 401 when it is missing, unknown,
/// revoked or expired.
pub async fn signed_in(state: &AppState, headers: &HeaderMap) -> Result<Signed, ApiError> {
    look_up(state, headers, true).await
}

/// Whether the request's session is still signed in, without counting this as activity
/// (a stream open in a tab does not keep its session from idling out).
pub async fn still_signed_in(state: &AppState, headers: &HeaderMap) -> Result<Signed, ApiError> {
    look_up(state, headers, false).await
}

async fn look_up(state: &AppState, headers: &HeaderMap, touch: bool) -> Result<Signed, ApiError> {
    let token = cookie_token(headers)
        .ok_or_else(|| ApiError::unauthorized("Sign in first: no session cookie"))?;
    let now = state.clock.now_ms();
    let idle = state.config.sessions.idle.as_millis() as i64;
    let session = state
        .store
        .session_by_token(&accounts::hash_token(&token), now, idle)
        .await?
        .ok_or_else(|| ApiError::unauthorized("Your session has ended; sign in again"))?;
    let user = state
        .store
        .user(&session.user_id)
        .await?
        .ok_or_else(|| ApiError::unauthorized("Your session has ended; sign in again"))?;
    if touch && now - session.last_seen_at >= TOUCH_EVERY_MS {
        state.store.touch_session(&session.id, now).await?;
    }
    Ok(Signed {
        session,
        user,
        token,
    })
}

/// Refuse a cookie-authenticated write without the session's CSRF token.
pub fn check_csrf(method: &Method, headers: &HeaderMap, token: &str) -> Result<(), ApiError> {
    if matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return Ok(());
    }
    let sent = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    match sent {
        Some(s) if constant_eq(s.as_bytes(), accounts::csrf_token(token).as_bytes()) => Ok(()),
        Some(_) => Err(ApiError::forbidden(
            "The X-CSRF-Token header does not match this session",
        )),
        None => Err(ApiError::forbidden(
            "A change made with a session cookie needs the X-CSRF-Token header (from GET /v1/auth/session)",
        )),
    }
}

pub fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The principal of a signed-in person in the workspace the request selects
/// (`X-Workspace`, else the session's current one, else the person's first).
pub async fn principal(
    state: &AppState,
    headers: &HeaderMap,
    signed: &Signed,
) -> Result<Principal, ApiError> {
    let wanted = headers
        .get(WORKSPACE_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
        .or_else(|| signed.session.workspace_id.clone());
    let member = match &wanted {
        Some(ws) => state.store.membership(&signed.user.email, ws).await?,
        None => None,
    };
    let member = match (member, wanted) {
        (Some(m), _) => m,
        (None, Some(ws)) if headers.contains_key(WORKSPACE_HEADER) => {
            return Err(ApiError::forbidden(format!(
                "You are not a member of workspace `{ws}`"
            )));
        }
        _ => state
            .store
            .memberships(&signed.user.email)
            .await?
            .into_iter()
            .next()
            .map(|(m, _)| m)
            .ok_or_else(|| ApiError::forbidden("You are not a member of any workspace"))?,
    };
    let workspace = state
        .store
        .workspace(&member.workspace_id)
        .await?
        .ok_or_else(|| ApiError::forbidden("You are not a member of any workspace"))?;
    if workspace.require_two_factor && signed.user.totp_secret.is_none() {
        return Err(ApiError::forbidden(format!(
            "Workspace `{}` requires two-factor authentication: enable it first (POST /v1/auth/totp/enroll)",
            workspace.name
        )));
    }
    Ok(Principal {
        key_id: signed.user.id.clone(),
        key_name: signed.user.email.clone(),
        workspace_id: member.workspace_id.clone(),
        role: rights(&member.role),
        session: Some(SessionPrincipal {
            session_id: signed.session.id.clone(),
            user_id: signed.user.id.clone(),
            member_id: member.id,
            member_role: member.role,
        }),
        made_by: None,
    })
}

/// The client's address (the connection's peer; forwarding headers are not trusted).
pub struct ClientIp(pub String);

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(ClientIp(peer_ip(&parts.extensions)))
    }
}

/// The connection's peer address, as rate limits and the audit log see it.
pub fn peer_ip(extensions: &axum::http::Extensions) -> String {
    extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map_or_else(|| "unknown".to_string(), |c| c.0.ip().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            axum::http::header::COOKIE,
            HeaderValue::from_static("a=1; tocsin_session=abc ; b=2"),
        );
        assert_eq!(cookie_token(&h).as_deref(), Some("abc"));
        assert_eq!(cookie_token(&HeaderMap::new()), None);
    }

    #[test]
    fn csrf_only_for_writes() {
        let token = "tok";
        let mut h = HeaderMap::new();
        assert!(check_csrf(&Method::GET, &h, token).is_ok());
        assert!(check_csrf(&Method::POST, &h, token).is_err());
        h.insert(CSRF_HEADER, HeaderValue::from_static("wrong"));
        assert!(check_csrf(&Method::DELETE, &h, token).is_err());
        h.insert(
            CSRF_HEADER,
            HeaderValue::from_str(&accounts::csrf_token(token)).expect("header"),
        );
        assert!(check_csrf(&Method::PATCH, &h, token).is_ok());
        assert_eq!(rights("owner"), Role::Owner);
        assert_eq!(rights("admin"), Role::Admin);
        assert_eq!(rights("member"), Role::Write);
        assert_eq!(rights("viewer"), Role::Read);
    }
}
