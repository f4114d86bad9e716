//! The `meta` every response carries, success or error: the request id (also sent as
//! `X-Request-Id`) and when the response was made.

use serde::Serialize;
use utoipa::ToSchema;

tokio::task_local! {
    /// The id of the request being served.
    pub static REQUEST_ID: String;
}

/// The current request id, or a fresh one outside a request.
pub fn current_request_id() -> String {
    REQUEST_ID
        .try_with(Clone::clone)
        .unwrap_or_else(|_| crate::ids::new_id(crate::ids::prefix::REQUEST))
}

/// Facts about the response.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// `req_...`, also sent as the `X-Request-Id` header.
    #[schema(example = "req_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub request_id: String,
    /// When the response was made.
    #[schema(example = "2026-11-21T09:30:00.000Z")]
    pub timestamp: String,
}

impl Meta {
    pub fn now() -> Meta {
        Meta {
            request_id: current_request_id(),
            timestamp: crate::time::now_string(),
        }
    }
}
