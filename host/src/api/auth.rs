//! Bearer authentication and role checks for every `/v1` route.

use super::AppState;
use super::error::ApiError;
use crate::store::keys::{Principal, Role};
use axum::extract::{Request, State};
use axum::http::{Method, header::AUTHORIZATION};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Middleware: resolve the key, refuse what its role does not allow, and hand the
/// `Principal` to handlers through request extensions.
pub async fn require_key(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let header = req
        .headers()
        .get(AUTHORIZATION)
        .map(|v| v.to_str().map(str::to_owned));
    let principal = match authenticate(&state, header).await {
        Ok(p) => p,
        Err(e) => return e.into_response(),
    };
    if let Err(e) = authorize(principal.role, req.method()) {
        return e.into_response();
    }
    req.extensions_mut().insert(principal);
    next.run(req).await
}

/// `header` is the Authorization header, if any (Err when it is not visible ASCII).
async fn authenticate(
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

/// Whether `role` may use `method`.
pub fn authorize(role: Role, method: &Method) -> Result<(), ApiError> {
    let read_only = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
    if role == Role::Read && !read_only {
        return Err(ApiError::forbidden("This API key is read-only"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_keys_only_read() {
        assert!(authorize(Role::Read, &Method::GET).is_ok());
        assert_eq!(
            authorize(Role::Read, &Method::POST).map_err(|e| e.code),
            Err("FORBIDDEN")
        );
        assert_eq!(
            authorize(Role::Read, &Method::DELETE).map_err(|e| e.status.as_u16()),
            Err(403)
        );
        assert!(authorize(Role::Write, &Method::PATCH).is_ok());
        assert!(authorize(Role::Admin, &Method::DELETE).is_ok());
    }
}
