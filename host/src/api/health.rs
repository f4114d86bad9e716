//! `/healthz` (the process answers) and `/readyz` (it can serve: the database answers).

use super::AppState;
use super::envelope::{Success, SuccessBody};
use super::error::{ApiError, ErrorBody};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

/// Health facts.
#[derive(Debug, Serialize, ToSchema)]
pub struct HealthView {
    /// `ok`.
    pub status: &'static str,
}

/// Liveness: answers while the process runs.
#[utoipa::path(get, path = "/healthz", tag = "health", security(()),
    responses((status = 200, description = "Alive", body = SuccessBody<HealthView>)))]
pub async fn healthz() -> Success<HealthView> {
    Success::ok(HealthView { status: "ok" })
}

/// Readiness: answers 200 when the database is reachable, 503 otherwise.
#[utoipa::path(get, path = "/readyz", tag = "health", security(()),
    responses(
        (status = 200, description = "Ready", body = SuccessBody<HealthView>),
        (status = 503, description = "The database does not answer", body = ErrorBody),
    ))]
pub async fn readyz(State(state): State<AppState>) -> Result<Success<HealthView>, ApiError> {
    if state.store.ping().await {
        Ok(Success::ok(HealthView { status: "ok" }))
    } else {
        Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "NOT_READY",
            "The database does not answer",
        ))
    }
}
