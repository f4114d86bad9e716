//! `ApiError`: every failure the API answers with, turned into the error envelope in one
//! place. Handlers return `Result<_, ApiError>` and never build error JSON themselves.

use super::meta::Meta;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// One invalid field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct FieldError {
    /// The field, e.g. `interval` or `headers.X-Token`.
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// A kind of resource the API can answer 404 for: its error code and what it is called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    pub code: &'static str,
    pub noun: &'static str,
}

impl Resource {
    pub const MONITOR: Resource = Resource::new("MONITOR_NOT_FOUND", "monitor");
    pub const INCIDENT: Resource = Resource::new("INCIDENT_NOT_FOUND", "incident");
    pub const ALERT_POLICY: Resource = Resource::new("ALERT_POLICY_NOT_FOUND", "alert policy");
    pub const CHANNEL: Resource = Resource::new("CHANNEL_NOT_FOUND", "channel");
    pub const DELIVERY: Resource = Resource::new("DELIVERY_NOT_FOUND", "delivery");
    pub const API_KEY: Resource = Resource::new("API_KEY_NOT_FOUND", "API key");
    pub const PROBE: Resource = Resource::new("PROBE_NOT_FOUND", "probe");
    pub const MEMBER: Resource = Resource::new("MEMBER_NOT_FOUND", "member");
    pub const STATUS_PAGE: Resource = Resource::new("STATUS_PAGE_NOT_FOUND", "status page");
    pub const STATUS_UPDATE: Resource = Resource::new("STATUS_UPDATE_NOT_FOUND", "status update");
    pub const SUBSCRIBER: Resource = Resource::new("SUBSCRIBER_NOT_FOUND", "subscriber");
    pub const MAINTENANCE_WINDOW: Resource =
        Resource::new("MAINTENANCE_WINDOW_NOT_FOUND", "maintenance window");

    const fn new(code: &'static str, noun: &'static str) -> Resource {
        Resource { code, noun }
    }

    /// 404: no such resource with this id (in the caller's workspace).
    pub fn not_found(self, id: &str) -> ApiError {
        ApiError::not_found(self.code, self.noun, id)
    }
}

/// Turn "not there" into the resource's 404.
pub trait OrNotFound<T> {
    fn or_not_found(self, resource: Resource, id: &str) -> Result<T, ApiError>;
}

impl<T> OrNotFound<T> for Option<T> {
    fn or_not_found(self, resource: Resource, id: &str) -> Result<T, ApiError> {
        self.ok_or_else(|| resource.not_found(id))
    }
}

/// The `error` object of a failure.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorDetail {
    /// Upper-case identifier, e.g. `VALIDATION_ERROR`.
    #[schema(example = "VALIDATION_ERROR")]
    pub code: String,
    pub message: String,
    /// Equal to the HTTP status.
    pub status_code: u16,
    /// Invalid fields, on validation errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Vec<FieldError>>,
}

/// A failed response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Always false.
    pub success: bool,
    pub error: ErrorDetail,
    pub meta: Meta,
}

/// A failure, with its status and code.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Option<Vec<FieldError>>,
    /// Extra headers, e.g. `Retry-After`.
    pub headers: Vec<(&'static str, String)>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            details: None,
            headers: Vec::new(),
        }
    }

    /// 400 `VALIDATION_ERROR` listing the invalid fields.
    pub fn validation(details: Vec<FieldError>) -> ApiError {
        let message = match details.as_slice() {
            [one] => format!("{} {}", one.field, one.message),
            _ => format!("{} fields are invalid", details.len()),
        };
        ApiError {
            details: Some(details),
            ..ApiError::new(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message)
        }
    }

    /// 400 `VALIDATION_ERROR` with a message only.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message)
    }

    /// 422 `UNPROCESSABLE_ENTITY`.
    pub fn unprocessable(message: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "UNPROCESSABLE_ENTITY",
            message,
        )
    }

    /// 404 with a resource-specific code.
    pub fn not_found(code: &'static str, what: &str, id: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            code,
            format!("No {what} with id `{id}`"),
        )
    }

    pub fn unauthorized(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message)
    }

    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "FORBIDDEN", message)
    }

    /// 500 without internals; the cause goes to the log.
    pub fn internal(cause: impl std::fmt::Display) -> ApiError {
        tracing::error!(error = %cause, request_id = %super::meta::current_request_id(), "internal error");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL_ERROR",
            "Something went wrong on our side; the request id identifies it in the server log",
        )
    }

    pub fn with_details(mut self, details: Vec<FieldError>) -> ApiError {
        self.details = Some(details);
        self
    }
}

/// A store result in which a unique-index violation means the `conflict` answer (409).
pub fn or_conflict<T>(
    result: Result<T, crate::store::StoreError>,
    conflict: impl FnOnce() -> ApiError,
) -> Result<T, ApiError> {
    match result {
        Err(e) if e.is_unique_violation() => Err(conflict()),
        other => other.map_err(ApiError::from),
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(e: crate::store::StoreError) -> Self {
        if e.is_unavailable() {
            tracing::warn!(error = %e, "the database is unavailable; answering 503");
            let mut unavailable = ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "SERVICE_UNAVAILABLE",
                "The database is unavailable right now; nothing was changed. Try again shortly",
            );
            unavailable.headers.push(("retry-after", "5".into()));
            return unavailable;
        }
        ApiError::internal(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            success: false,
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message,
                status_code: self.status.as_u16(),
                details: self.details,
            },
            meta: Meta::now(),
        };
        let mut response = (self.status, axum::Json(body)).into_response();
        for (name, value) in self.headers {
            if let Ok(v) = axum::http::HeaderValue::from_str(&value) {
                response.headers_mut().insert(name, v);
            }
        }
        response
    }
}

/// Fallback for unknown routes.
pub async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", "No such route")
}

/// Fallback for known routes called with the wrong method.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "METHOD_NOT_ALLOWED",
        "This route does not accept that method",
    )
}
