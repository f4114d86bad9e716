//! Extractors whose rejections speak the error envelope: bad JSON, a wrong content type,
//! an oversized body, a malformed query string or path. No input may carry a NUL
//! character: PostgreSQL text cannot store one, and no name, URL or id needs one.

use super::error::ApiError;
use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
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

/// Longest framework text kept as an envelope's message.
const MAX_FRAMEWORK_MESSAGE: usize = 300;

/// Middleware: every failure leaves in the error envelope, whatever made it. Rejections of
/// extractors that are not ours (a body read as bytes, a path parameter that is not
/// UTF-8, a form) answer in plain text; they are rewritten here with their status (415
/// becomes 400 `INVALID_CONTENT_TYPE`, as the contract says), keeping their headers. HTML
/// error pages (the dashboard, public status pages) stay pages. A body cut off by its
/// deadline ([`super::serve::BodyDeadline`]) answers 408 `REQUEST_TIMEOUT` and closes the
/// connection, whatever the handler made of the missing bytes.
pub async fn envelope_failures(req: Request, next: axum::middleware::Next) -> Response {
    let deadline = req
        .extensions()
        .get::<super::serve::BodyDeadline>()
        .cloned();
    let response = next.run(req).await;
    if let Some(deadline) = deadline.filter(super::serve::BodyDeadline::passed) {
        let mut timeout = ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "REQUEST_TIMEOUT",
            format!(
                "The request body did not arrive within {} s",
                deadline.after.as_secs()
            ),
        )
        .into_response();
        timeout
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return timeout;
    }
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let plain = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_none_or(|t| t.to_str().is_ok_and(|t| t.starts_with("text/plain")));
    if !plain {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    let mut enveloped = framework_failure(status, &text).into_response();
    let mut headers = parts.headers;
    headers.remove(header::CONTENT_TYPE);
    headers.remove(header::CONTENT_LENGTH);
    for (name, value) in enveloped.headers() {
        headers.insert(name, value.clone());
    }
    *enveloped.headers_mut() = headers;
    enveloped
}

/// The envelope for a plain-text failure of `status` saying `text`.
fn framework_failure(status: StatusCode, text: &str) -> ApiError {
    let message = if text.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("Request failed")
            .to_string()
    } else {
        text.chars().take(MAX_FRAMEWORK_MESSAGE).collect()
    };
    let code = match status {
        StatusCode::PAYLOAD_TOO_LARGE => {
            return ApiError::new(
                status,
                "PAYLOAD_TOO_LARGE",
                format!("The body is larger than {} KiB", MAX_BODY_BYTES / 1024),
            );
        }
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            return ApiError::new(StatusCode::BAD_REQUEST, "INVALID_CONTENT_TYPE", message);
        }
        StatusCode::UNAUTHORIZED => "UNAUTHORIZED",
        StatusCode::FORBIDDEN => "FORBIDDEN",
        StatusCode::NOT_FOUND => "NOT_FOUND",
        StatusCode::METHOD_NOT_ALLOWED => "METHOD_NOT_ALLOWED",
        StatusCode::REQUEST_TIMEOUT => "REQUEST_TIMEOUT",
        StatusCode::CONFLICT => "CONFLICT",
        StatusCode::UNPROCESSABLE_ENTITY => "UNPROCESSABLE_ENTITY",
        StatusCode::TOO_MANY_REQUESTS => "RATE_LIMITED",
        StatusCode::BAD_GATEWAY => "BAD_GATEWAY",
        StatusCode::SERVICE_UNAVAILABLE => "SERVICE_UNAVAILABLE",
        s if s.is_server_error() => {
            // Plain text from deep inside may name internals: log it, say nothing.
            return ApiError::internal(format!("{status}: {message}"));
        }
        _ => "VALIDATION_ERROR",
    };
    ApiError::new(status, code, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framework_failures_get_the_contract_codes() {
        let e = framework_failure(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Failed to buffer the request body: length limit exceeded",
        );
        assert_eq!((e.status.as_u16(), e.code), (413, "PAYLOAD_TOO_LARGE"));
        assert!(!e.message.contains("buffer"), "{}", e.message);
        let e = framework_failure(StatusCode::UNSUPPORTED_MEDIA_TYPE, "Expected JSON");
        assert_eq!((e.status.as_u16(), e.code), (400, "INVALID_CONTENT_TYPE"));
        let e = framework_failure(StatusCode::BAD_REQUEST, "Invalid URL: bad UTF-8");
        assert_eq!(
            (e.code, e.message.as_str()),
            ("VALIDATION_ERROR", "Invalid URL: bad UTF-8")
        );
        let e = framework_failure(StatusCode::INTERNAL_SERVER_ERROR, "db at 10.0.0.5 refused");
        assert_eq!(e.code, "INTERNAL_ERROR");
        assert!(!e.message.contains("10.0.0.5"), "{}", e.message);
        let e = framework_failure(StatusCode::BAD_REQUEST, "");
        assert_eq!(e.message, "Bad Request");
    }
}
