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
    /// `pending`, `succeeded` or `failed`; or, when a step of the policy's alert pipeline
    /// took it, `routed` (sent to other channels, or in a summary) or `dropped`
    /// (`lastError` says which and why).
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
    /// The event payload as sent, except that the token of a status-page subscriber's
    /// `confirmUrl` and `unsubscribeUrl` is `[redacted]` for everyone (they belong to the
    /// subscriber), and a read key or viewer sees a heartbeat ping URL's token `[redacted]`
    /// too.
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
    /// `pending`, `succeeded`, `failed`, `routed` or `dropped`.
    pub status: Option<String>,
    pub incident_id: Option<String>,
}

/// Which links' tokens a payload shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Links {
    /// Everyone's view: a status-page subscriber's links (confirm and unsubscribe, which
    /// share its token) lose their token. Only the mailbox a confirmation was sent to may
    /// confirm (no member can, see the approve route), and members remove subscribers with
    /// `DELETE .../subscribers/{id}`, not with their links.
    SubscriberHidden,
    /// A read principal's view: heartbeat ping URLs (which change a monitor's state) lose
    /// their tokens too.
    AllHidden,
}

/// A URL's token replaced by [`super::redact::REDACTED`] if it is a link `links` hides:
/// `.../status/{slug}/confirm/{token}`, `.../status/{slug}/unsubscribe/{token}` and an
/// alert's one-click `.../act/{token}` always (they are the recipient's, and act as the
/// recipient), `.../ping/{token}[/signal]` for read principals.
fn redact_link(text: &str, links: Links) -> Option<String> {
    let mut url = url::Url::parse(text).ok()?;
    let segments: Vec<String> = url.path_segments()?.map(str::to_string).collect();
    let n = segments.len();
    let subscriber = n >= 4
        && segments[n - 4] == "status"
        && (segments[n - 2] == "confirm" || segments[n - 2] == "unsubscribe");
    let alert = n >= 2 && segments[n - 2] == "act";
    let token_at = if subscriber || alert {
        Some(n - 1)
    } else if links == Links::AllHidden {
        // The ping token, with or without a signal after it.
        (n.saturating_sub(3)..n.saturating_sub(1))
            .rev()
            .find(|&i| segments[i] == "ping")
            .map(|i| i + 1)
    } else {
        None
    }?;
    if segments[token_at].is_empty() || segments[token_at] == super::redact::REDACTED {
        return None;
    }
    let mut redacted = segments;
    redacted[token_at] = super::redact::REDACTED.to_string();
    url.path_segments_mut().ok()?.clear().extend(&redacted);
    Some(url.to_string())
}

/// Hide the tokens `links` hides anywhere in `value`; true when one was.
fn redact_links(value: &mut serde_json::Value, links: Links) -> bool {
    use serde_json::Value;
    match value {
        Value::String(text) => match redact_link(text, links) {
            Some(r) => {
                *text = r;
                true
            }
            None => false,
        },
        Value::Array(items) => {
            let mut any = false;
            for v in items {
                any |= redact_links(v, links);
            }
            any
        }
        Value::Object(o) => {
            let mut any = false;
            for v in o.values_mut() {
                any |= redact_links(v, links);
            }
            any
        }
        _ => false,
    }
}

/// A stored payload as `links` may see it (the stored text itself when nothing is hidden).
fn payload_for(payload: &str, links: Links) -> Box<RawValue> {
    if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(payload)
        && redact_links(&mut v, links)
    {
        return raw_json(&v.to_string());
    }
    raw_json(payload)
}

/// The API view of a delivery for `p`: nobody sees the token of a status-page subscriber's
/// confirm or unsubscribe link, and a read principal (a read key, a viewer) not that of a
/// heartbeat ping URL either.
pub fn view_for(p: &Principal, d: &DeliveryRow, attempts: Option<&[AttemptRow]>) -> DeliveryView {
    let mut v = view(d, attempts);
    if super::redact::applies(p) {
        v.payload = payload_for(&d.payload, Links::AllHidden);
    }
    v
}

/// The API view of a delivery (subscribers' link tokens hidden).
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
        payload: payload_for(&d.payload, Links::SubscriberHidden),
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
        items: rows.iter().map(|d| view_for(&p, d, None)).collect(),
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
    Ok(Success::ok(view_for(&p, &d, Some(&attempts))))
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
    Ok(Success::ok(view_for(&p, &d, None)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_tokens_are_hidden_as_the_viewer_may_see_them() {
        let payload = serde_json::json!({
            "confirmUrl": "https://t.example/status/acme/confirm/Tok3n",
            "unsubscribeUrl": "https://t.example/base/status/acme/unsubscribe/Tok3n",
            "nested": [{"ping": "https://t.example/ping/Tok3n/fail"}, "https://t.example/ping/Tok3n"],
            "page": {"url": "https://t.example/status/acme"},
            "monitor": {"url": "https://app.example/confirm/keep"},
        })
        .to_string();
        let all: serde_json::Value =
            serde_json::from_str(payload_for(&payload, Links::AllHidden).get()).expect("json");
        assert_eq!(
            all,
            serde_json::json!({
                "confirmUrl": "https://t.example/status/acme/confirm/[redacted]",
                "unsubscribeUrl": "https://t.example/base/status/acme/unsubscribe/[redacted]",
                "nested": [{"ping": "https://t.example/ping/[redacted]/fail"}, "https://t.example/ping/[redacted]"],
                "page": {"url": "https://t.example/status/acme"},
                "monitor": {"url": "https://app.example/confirm/keep"},
            })
        );
        let members: serde_json::Value =
            serde_json::from_str(payload_for(&payload, Links::SubscriberHidden).get())
                .expect("json");
        assert_eq!(
            members["confirmUrl"],
            "https://t.example/status/acme/confirm/[redacted]"
        );
        assert_eq!(
            members["unsubscribeUrl"],
            "https://t.example/base/status/acme/unsubscribe/[redacted]"
        );
        assert_eq!(members["nested"][1], "https://t.example/ping/Tok3n");
        // An alert's one-click links are the recipient's: hidden from every member.
        let alert = serde_json::json!({"actions": {"acknowledge": "https://t.example/act/Tok3n"},
                                       "monitor": {"url": "https://app.example/act/keep/this"}})
        .to_string();
        let shown: serde_json::Value =
            serde_json::from_str(payload_for(&alert, Links::SubscriberHidden).get()).expect("json");
        assert_eq!(
            shown["actions"]["acknowledge"],
            "https://t.example/act/[redacted]"
        );
        assert_eq!(shown["monitor"]["url"], "https://app.example/act/keep/this");
        // Not JSON: shown as stored.
        assert_eq!(payload_for("{", Links::AllHidden).get(), "null");
        // Nothing hidden: the stored text as it is.
        let plain = r#"{"b": 1.50, "a": "https://t.example/status/acme"}"#;
        assert_eq!(payload_for(plain, Links::AllHidden).get(), plain);
    }
}
