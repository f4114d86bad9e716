//! `/v1/webhook-deliveries`: the outbox, its attempts, and redelivery by hand.

use super::AppState;
use super::envelope::{ListBody, Paged, Pagination, Success, SuccessBody, raw_json};
use super::error::{ApiError, ErrorBody, OrNotFound, Resource};
use super::extract::{ApiPath, ApiQuery};
use super::paging::{self, PageParams};
use crate::store::keys::Principal;
use crate::store::{AttemptRow, DeliveryRow, DeliveryState, Redelivery, State as _};
use axum::Extension;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};

/// One notification to one channel.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryView {
    /// `whd_...`; also the payload's `webhookId` and the `X-Service-Webhook-ID` header.
    pub id: String,
    /// The same as `id`.
    pub webhook_id: String,
    pub event: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    pub channel_id: Option<String>,
    pub channel_type: String,
    pub incident_id: Option<String>,
    pub monitor_id: Option<String>,
    pub attempts: u32,
    pub next_attempt_at: Option<String>,
    pub last_error: Option<String>,
    pub created_at: String,
    pub delivered_at: Option<String>,
    /// The event payload as sent.
    #[schema(value_type = Object)]
    pub payload: Box<RawValue>,
    /// Every attempt (on `GET /{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempt_log: Option<Vec<AttemptView>>,
}

/// One attempt.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptView {
    pub attempt: u32,
    pub at: String,
    pub ok: bool,
    pub status_code: Option<i32>,
    pub error: Option<String>,
    pub duration_ms: i32,
}

/// Filters of the delivery list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct DeliveryListParams {
    pub channel_id: Option<String>,
    /// `pending`, `succeeded` or `failed`.
    pub status: Option<String>,
    pub incident_id: Option<String>,
}

/// The API view of a delivery.
pub fn view(d: &DeliveryRow, attempts: Option<&[AttemptRow]>) -> DeliveryView {
    DeliveryView {
        id: d.id.clone(),
        webhook_id: d.id.clone(),
        event: d.event.clone(),
        status: d.status.name().to_string(),
        channel_id: d.channel_id.clone(),
        channel_type: d.channel_kind.clone(),
        incident_id: d.incident_id.clone(),
        monitor_id: d.monitor_id.clone(),
        attempts: u32::try_from(d.attempts).unwrap_or(0),
        next_attempt_at: (d.status == DeliveryState::Pending)
            .then(|| crate::time::format_ms(d.next_attempt_at)),
        last_error: d.last_error.clone(),
        created_at: crate::time::format_ms(d.created_at),
        delivered_at: d.delivered_at.map(crate::time::format_ms),
        payload: raw_json(&d.payload),
        attempt_log: attempts.map(|list| {
            list.iter()
                .map(|a| AttemptView {
                    attempt: u32::try_from(a.attempt).unwrap_or(0),
                    at: crate::time::format_ms(a.at),
                    ok: a.ok,
                    status_code: a.status_code,
                    error: a.error.clone(),
                    duration_ms: a.duration_ms,
                })
                .collect()
        }),
    }
}

/// List deliveries, newest first.
#[utoipa::path(get, path = "/v1/webhook-deliveries", tag = "deliveries", params(PageParams, PageParams, DeliveryListParams),
    responses(
        (status = 200, description = "A page of deliveries", body = ListBody<DeliveryView>),
        (status = 400, description = "Invalid parameters", body = ErrorBody),
    ))]
pub async fn list_deliveries(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(pg): ApiQuery<PageParams>,
    ApiQuery(q): ApiQuery<DeliveryListParams>,
) -> Result<Paged<DeliveryView>, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    let status = paging::state::<DeliveryState>("status", q.status.as_deref(), &mut errors);
    paging::finish(errors)?;
    let (rows, total) = state
        .store
        .list_deliveries(
            &p.workspace_id,
            q.channel_id.as_deref(),
            status,
            q.incident_id.as_deref(),
            page,
        )
        .await?;
    Ok(Paged {
        items: rows.iter().map(|d| view(d, None)).collect(),
        pagination: Pagination::new(page, total),
    })
}

/// Get a delivery with every attempt.
#[utoipa::path(get, path = "/v1/webhook-deliveries/{id}", tag = "deliveries", params(("id" = String, Path, description = "Delivery id")),
    responses(
        (status = 200, description = "The delivery", body = SuccessBody<DeliveryView>),
        (status = 404, description = "DELIVERY_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn get_delivery(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<DeliveryView>, ApiError> {
    let d = state
        .store
        .delivery(&p.workspace_id, &id)
        .await?
        .or_not_found(Resource::DELIVERY, &id)?;
    let attempts = state.store.delivery_attempts(&d.id).await?;
    Ok(Success::ok(view(&d, Some(&attempts))))
}

/// Send a delivery again now, with the same `webhookId` (one more attempt).
#[utoipa::path(post, path = "/v1/webhook-deliveries/{id}/redeliver", tag = "deliveries", params(("id" = String, Path, description = "Delivery id")),
    responses(
        (status = 200, description = "The delivery, pending again", body = SuccessBody<DeliveryView>),
        (status = 404, description = "DELIVERY_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: an attempt is under way; redeliver after it ends", body = ErrorBody),
    ))]
pub async fn redeliver(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<DeliveryView>, ApiError> {
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "delivery.redeliver",
        "delivery",
        Some(&id),
    ));
    let d = match state
        .store
        .redeliver(&p.workspace_id, &id, state.clock.now_ms())
        .await?
    {
        Redelivery::Queued(d) => d,
        Redelivery::NotFound => return Err(Resource::DELIVERY.not_found(&id)),
        Redelivery::InFlight(_) => {
            return Err(ApiError::new(
                axum::http::StatusCode::CONFLICT,
                "CONFLICT",
                format!(
                    "Delivery {id} is being attempted right now; redeliver it after this attempt ends"
                ),
            ));
        }
    };
    state.engine.outbox_wakeup.notify_one();
    Ok(Success::ok(view(&d, None)))
}
