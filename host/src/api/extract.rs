//! Extractors whose rejections speak the error envelope: bad JSON, a wrong content type,
//! an oversized body, a malformed query string or path. No input may carry a NUL
//! character: PostgreSQL text cannot store one, and no name, URL or id needs one.

use super::error::ApiError;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// A JSON body.
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let value = match axum::Json::<serde_json::Value>::from_request(req, state).await {
            Ok(axum::Json(value)) => value,
            Err(rejection) => return Err(json_rejection(rejection)),
        };
        if let Some(field) = nul_in(&value, "") {
            let field = if field.is_empty() {
                "body".into()
            } else {
                field
            };
            return Err(ApiError::validation(vec![super::error::FieldError::new(
                field,
                "must not contain NUL characters",
            )]));
        }
        serde_json::from_value(value)
            .map(ApiJson)
            .map_err(|e| ApiError::bad_request(format!("Invalid JSON: {e}")))
    }
}

/// The path (`a.b[2]`) of the first string or key holding a NUL character.
fn nul_in(value: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value;
    match value {
        Value::String(s) if s.contains('\0') => Some(at.to_string()),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, v)| nul_in(v, &format!("{at}[{i}]"))),
        Value::Object(o) => o.iter().find_map(|(k, v)| {
            let path = if at.is_empty() {
                k.clone()
            } else {
                format!("{at}.{k}")
            };
            if k.contains('\0') {
                Some(path.replace('\0', "\\0"))
            } else {
                nul_in(v, &path)
            }
        }),
        _ => None,
    }
}

/// A percent-encoded NUL in a path or query string.
fn refuse_nul(parts: &Parts) -> Result<(), ApiError> {
    let has = |s: &str| s.to_ascii_lowercase().contains("%00");
    if has(parts.uri.path()) || parts.uri.query().is_some_and(has) {
        return Err(ApiError::bad_request(
            "The path and query must not contain NUL characters (%00)",
        ));
    }
    Ok(())
}

fn json_rejection(r: JsonRejection) -> ApiError {
    match r {
        JsonRejection::MissingJsonContentType(_) => ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_CONTENT_TYPE",
            "The body must be JSON with `Content-Type: application/json`",
        ),
        JsonRejection::JsonSyntaxError(e) => {
            ApiError::bad_request(format!("Malformed JSON: {}", e.body_text()))
        }
        JsonRejection::JsonDataError(e) => {
            ApiError::bad_request(format!("Invalid JSON: {}", e.body_text()))
        }
        other if other.status() == StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            format!("The body is larger than {} KiB", MAX_BODY_BYTES / 1024),
        ),
        other => ApiError::bad_request(format!("Unreadable body: {}", other.body_text())),
    }
}

/// A JSON body that must be an object (create and update bodies, read field by field).
pub struct ApiObject(pub serde_json::Map<String, serde_json::Value>);

impl<S: Send + Sync> FromRequest<S> for ApiObject {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match ApiJson::<serde_json::Value>::from_request(req, state).await? {
            ApiJson(serde_json::Value::Object(object)) => Ok(ApiObject(object)),
            ApiJson(_) => Err(ApiError::bad_request("The body must be a JSON object")),
        }
    }
}

/// A query string.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        refuse_nul(parts)?;
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|r: QueryRejection| {
                ApiError::bad_request(format!("Invalid query string: {}", r.body_text()))
            })
    }
}

/// Path parameters.
pub struct ApiPath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for ApiPath<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        refuse_nul(parts)?;
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|r: PathRejection| {
                ApiError::bad_request(format!("Invalid path: {}", r.body_text()))
            })
    }
}
