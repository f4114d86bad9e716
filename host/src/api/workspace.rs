//! `/v1/workspace`: the caller's workspace and its webhook signing secret.

use super::AppState;
use super::envelope::{Success, SuccessBody};
use super::error::{ApiError, ErrorBody};
use crate::store::keys::{Principal, Role};
use axum::Extension;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

/// A workspace.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkspaceView {
    pub id: String,
    pub name: String,
    /// `free`, `pro`, `business` or `enterprise`.
    pub plan: String,
    pub created_at: String,
}

/// The webhook signing secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct WebhookSecretView {
    /// `whsec_...`: the HMAC-SHA256 key of `X-Service-Signature`.
    pub secret: String,
}

fn admin_only(p: &Principal) -> Result<(), ApiError> {
    if p.role == Role::Admin {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "Only admin keys may see or rotate the webhook secret",
        ))
    }
}

/// The caller's workspace.
#[utoipa::path(get, path = "/v1/workspace", tag = "workspace",
    responses((status = 200, description = "The workspace", body = SuccessBody<WorkspaceView>)))]
pub async fn get_workspace(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
) -> Result<Success<WorkspaceView>, ApiError> {
    let ws = state
        .store
        .workspace(&p.workspace_id)
        .await?
        .ok_or_else(|| ApiError::internal("workspace vanished"))?;
    Ok(Success::ok(WorkspaceView {
        id: ws.id,
        name: ws.name,
        plan: ws.plan,
        created_at: crate::time::format_ms(ws.created_at),
    }))
}

/// The webhook signing secret (admin keys only).
#[utoipa::path(get, path = "/v1/workspace/webhook-secret", tag = "workspace",
    responses(
        (status = 200, description = "The secret", body = SuccessBody<WebhookSecretView>),
        (status = 403, description = "FORBIDDEN: not an admin key", body = ErrorBody),
    ))]
pub async fn get_webhook_secret(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
) -> Result<Success<WebhookSecretView>, ApiError> {
    admin_only(&p)?;
    let ws = state
        .store
        .workspace(&p.workspace_id)
        .await?
        .ok_or_else(|| ApiError::internal("workspace vanished"))?;
    Ok(Success::ok(WebhookSecretView {
        secret: ws.webhook_secret,
    }))
}

/// Replace the webhook signing secret (admin keys only). Deliveries signed from now on use
/// the new secret, retries of older ones included.
#[utoipa::path(post, path = "/v1/workspace/webhook-secret/rotate", tag = "workspace",
    responses(
        (status = 200, description = "The new secret", body = SuccessBody<WebhookSecretView>),
        (status = 403, description = "FORBIDDEN: not an admin key", body = ErrorBody),
    ))]
pub async fn rotate_webhook_secret(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
) -> Result<Success<WebhookSecretView>, ApiError> {
    admin_only(&p)?;
    let ws = state
        .store
        .rotate_webhook_secret(&p.workspace_id, state.clock.now_ms())
        .await?
        .ok_or_else(|| ApiError::internal("workspace vanished"))?;
    Ok(Success::ok(WebhookSecretView {
        secret: ws.webhook_secret,
    }))
}
