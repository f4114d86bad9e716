//! Bearer authentication and role checks for every `/v1` route.

use super::AppState;
use super::error::ApiError;
use super::ratelimit::Decision;
use super::session;
use crate::store::audit::{self, Actor};
use crate::store::keys::{Principal, Role};
use axum::extract::{Request, State};
use axum::http::Method;
use axum::http::header::{AUTHORIZATION, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Middleware: resolve the key (or the session cookie), refuse what its role does not
/// allow, and hand the `Principal` to handlers through request extensions. A request
/// spends from its key's (or person's) bucket and its workspace's; a request with bad
/// credentials from its client address's. Handlers run in an audit scope naming the
/// caller.
pub async fn require_key(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let header = req
        .headers()
        .get(AUTHORIZATION)
        .map(|v| v.to_str().map(str::to_owned));
    let now = state.clock.now_ms();
    let by_session = header.is_none() && session::cookie_token(req.headers()).is_some();
    let found = if by_session {
        session_principal(&state, req.method().clone(), req.headers().clone()).await
    } else {
        authenticate(&state, header).await
    };
    let principal = match found {
        Ok(p) => p,
        Err(e) => {
            // Guessing keys costs the guesser: bad keys spend from the address's bucket.
            let decision = state.limits.addresses.check(&client_address(&req), now);
            return with_headers(
                if decision.allowed {
                    e.into_response()
                } else {
                    too_many(&decision, "This client address")
                },
                &decision,
            );
        }
    };
    if principal.session.is_none() {
        state.key_usage.record(&principal.key_id, now);
    }
    let by_key = state.limits.keys.check(&principal.key_id, now);
    let by_workspace = state.limits.workspaces.check(&principal.workspace_id, now);
    let decision = by_key.tighter(by_workspace);
    let response = if !by_key.allowed {
        too_many(&by_key, "This API key")
    } else if !by_workspace.allowed {
        too_many(&by_workspace, "This workspace (all its keys together)")
    } else if let Err(e) = authorize(principal.role, req.method(), req.uri().path()) {
        e.into_response()
    } else {
        let actor = principal.actor(Some(client_address(&req)));
        req.extensions_mut().insert(principal);
        audit::scoped(actor, now, next.run(req)).await
    };
    with_headers(response, &decision)
}

/// The principal of a session cookie, CSRF token checked for writes.
async fn session_principal(
    state: &AppState,
    method: Method,
    headers: axum::http::HeaderMap,
) -> Result<Principal, ApiError> {
    let signed = session::signed_in(state, &headers).await?;
    session::check_csrf(&method, &headers, &signed.token)?;
    session::principal(state, &headers, &signed).await
}

/// Middleware for a person's own routes (`/v1/auth/session`, sessions, password,
/// two-factor): a session cookie is required (API keys are not people), writes need the
/// CSRF token, and the person's bucket is spent.
pub async fn require_session(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let now = state.clock.now_ms();
    let ip = client_address(&req);
    let method = req.method().clone();
    let headers = req.headers().clone();
    let signed = match session::signed_in(&state, &headers).await.and_then(|s| {
        session::check_csrf(&method, &headers, &s.token)?;
        Ok(s)
    }) {
        Ok(s) => s,
        Err(e) => {
            let decision = state.limits.addresses.check(&ip, now);
            return with_headers(
                if decision.allowed {
                    e.into_response()
                } else {
                    too_many(&decision, "This client address")
                },
                &decision,
            );
        }
    };
    let decision = state.limits.keys.check(&signed.user.id, now);
    if !decision.allowed {
        return with_headers(too_many(&decision, "Your account"), &decision);
    }
    let actor = Actor {
        kind: "user",
        id: signed.user.id.clone(),
        name: signed.user.email.clone(),
        ip: Some(ip),
    };
    req.extensions_mut().insert(signed);
    let response = audit::scoped(actor, now, next.run(req)).await;
    with_headers(response, &decision)
}

/// Middleware for unauthenticated pages: public status pages and sign-in spend from a
/// bucket per client address, badges from a larger one of their own. Health checks (`/healthz`, `/readyz`) are not limited: load balancers
/// and orchestrators poll them.
pub async fn limit_by_address(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let path = req.uri().path();
    if !path.starts_with("/status/")
        && !path.starts_with("/act/")
        && !path.starts_with("/v1/auth/")
        && !path.starts_with("/badge/")
    {
        return next.run(req).await;
    }
    let bucket = if path.starts_with("/badge/") {
        &state.limits.badges
    } else {
        &state.limits.addresses
    };
    let decision = bucket.check(&client_address(&req), state.clock.now_ms());
    let response = if decision.allowed {
        next.run(req).await
    } else {
        too_many(&decision, "This client address")
    };
    with_headers(response, &decision)
}

/// The peer address of the connection (proxies' forwarding headers are not trusted).
pub(super) fn client_address(req: &Request) -> String {
    session::peer_ip(req.extensions())
}

/// A credential refused outside the middlewares (`/metrics`' key, a ping URL's token, a
/// dashboard session): the attempt spends from the client address's bucket, as a bad key
/// on `/v1` does, and once that is empty the answer is 429 instead of `failure`.
pub fn refused_credential(state: &AppState, ip: &str, failure: Response) -> Response {
    let decision = state.limits.addresses.check(ip, state.clock.now_ms());
    with_headers(
        if decision.allowed {
            failure
        } else {
            too_many(&decision, "This client address")
        },
        &decision,
    )
}

/// Middleware for the dashboard's pages: a session cookie they refuse (unknown, revoked,
/// ended) spends from the client address's bucket like a bad key; over it, 429. The page
/// itself then shows the sign-in form as before.
pub async fn count_refused_sessions(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if session::cookie_token(req.headers()).is_none() {
        return next.run(req).await;
    }
    match session::signed_in(&state, req.headers()).await {
        Err(e) if e.status == axum::http::StatusCode::UNAUTHORIZED => {
            let ip = client_address(&req);
            let decision = state.limits.addresses.check(&ip, state.clock.now_ms());
            if !decision.allowed {
                return with_headers(too_many(&decision, "This client address"), &decision);
            }
            with_headers(next.run(req).await, &decision)
        }
        _ => next.run(req).await,
    }
}

/// 429 in the envelope, naming who is over which limit.
fn too_many(decision: &Decision, who: &str) -> Response {
    decision.refusal(who).into_response()
}

fn with_headers(mut response: Response, decision: &Decision) -> Response {
    let h = response.headers_mut();
    h.insert("x-ratelimit-limit", HeaderValue::from(decision.limit));
    h.insert(
        "x-ratelimit-remaining",
        HeaderValue::from(decision.remaining),
    );
    h.insert("x-ratelimit-reset", HeaderValue::from(decision.reset_secs));
    response
}

/// `header` is the Authorization header, if any (Err when it is not visible ASCII).
pub(super) async fn authenticate(
    state: &AppState,
    header: Option<Result<String, axum::http::header::ToStrError>>,
) -> Result<Principal, ApiError> {
    let header = header.ok_or_else(|| {
        ApiError::unauthorized("Missing `Authorization: Bearer <API key>` header")
    })?;
    let value = header.map_err(|_| ApiError::unauthorized("Malformed Authorization header"))?;
    let secret = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
        .ok_or_else(|| {
            ApiError::unauthorized("The Authorization header must use the Bearer scheme")
        })?;
    state
        .store
        .authenticate(secret)
        .await?
        .ok_or_else(|| ApiError::unauthorized("Unknown or revoked API key"))
}

/// Whether `path` is `prefix` or below it.
fn under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether `role` may use `method` on `path`: API keys and the webhook secret are for
/// `admin` (and `owner`) keys only; `read` keys only read; `write` keys do everything
/// else but change members. What only owners do is decided by the handlers
/// ([`Principal::is_owner`](crate::store::keys::Principal::is_owner)).
pub fn authorize(role: Role, method: &Method, path: &str) -> Result<(), ApiError> {
    if role.is_admin() {
        return Ok(());
    }
    if under(path, "/v1/api-keys") {
        return Err(ApiError::forbidden("Only admin keys may manage API keys"));
    }
    // A probe's token reads its location's monitors with their write-only secrets: only
    // an admin may make one, and only an admin may see them.
    if under(path, "/v1/probes") {
        return Err(ApiError::forbidden("Only admins may manage probes"));
    }
    if under(path, "/v1/audit-log") || under(path, "/v1/workspace/invitations") {
        return Err(ApiError::forbidden(
            "Only admins may see the audit log and manage invitations",
        ));
    }
    if under(path, "/v1/workspace/webhook-secret") {
        return Err(ApiError::forbidden(
            "Only admin keys may see or rotate the webhook secret",
        ));
    }
    let read_only = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    match role {
        Role::Read if !read_only => Err(ApiError::forbidden("This API key is read-only")),
        Role::Write if !read_only && under(path, "/v1/workspace/members") => {
            Err(ApiError::forbidden("Only admin keys may change members"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_keys_only_read() {
        assert!(authorize(Role::Read, &Method::GET, "/v1/monitors").is_ok());
        assert_eq!(
            authorize(Role::Read, &Method::POST, "/v1/monitors").map_err(|e| e.code),
            Err("FORBIDDEN")
        );
        assert_eq!(
            authorize(Role::Read, &Method::DELETE, "/v1/monitors/x").map_err(|e| e.status.as_u16()),
            Err(403)
        );
        assert!(authorize(Role::Write, &Method::PATCH, "/v1/monitors/x").is_ok());
        assert!(authorize(Role::Admin, &Method::DELETE, "/v1/api-keys/x").is_ok());
    }

    #[test]
    fn write_keys_neither_manage_keys_nor_change_members() {
        for (method, path) in [
            (Method::GET, "/v1/api-keys"),
            (Method::POST, "/v1/api-keys"),
            (Method::DELETE, "/v1/api-keys/key_1"),
            (Method::POST, "/v1/workspace/members"),
            (Method::PATCH, "/v1/workspace/members/mem_1"),
        ] {
            assert!(
                authorize(Role::Write, &method, path).is_err(),
                "{method} {path}"
            );
            assert!(
                authorize(Role::Admin, &method, path).is_ok(),
                "{method} {path}"
            );
        }
        assert!(authorize(Role::Write, &Method::GET, "/v1/workspace/members").is_ok());
        for role in [Role::Read, Role::Write] {
            assert!(authorize(role, &Method::GET, "/v1/api-keys").is_err());
            assert!(authorize(role, &Method::GET, "/v1/workspace/webhook-secret").is_err());
        }
        assert!(authorize(Role::Read, &Method::GET, "/v1/api-keysx").is_ok());
        assert!(authorize(Role::Write, &Method::PATCH, "/v1/workspace").is_ok());
    }
}
