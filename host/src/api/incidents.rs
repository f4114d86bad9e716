//! `/v1/incidents`: list, view, acknowledge and resolve.

use super::AppState;
use super::envelope::{ListBody, Paged, Pagination, Success, SuccessBody, raw_json};
use super::error::{ApiError, ErrorBody, FieldError, OrNotFound, Resource};
use super::extract::{ApiPath, ApiQuery};
use super::paging::{self, PageParams};
use crate::engine::actions::{self, ActionError};
use crate::store::incidents::IncidentFilter;
use crate::store::keys::Principal;
use crate::store::{IncidentEventRow, IncidentRow, IncidentState, State as _};
use axum::Extension;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header::CONTENT_TYPE};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::{IntoParams, ToSchema};

/// An incident.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IncidentView {
    #[schema(example = "inc_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: String,
    /// Dashboard link.
    pub url: String,
    /// `open`, `acknowledged`, `suppressed` (a monitor it depends on is down) or `resolved`.
    pub status: String,
    /// Why its notifications are held, while they are: `{"reason": "dependency",
    /// "monitorId", "monitorName"}` or `{"reason": "snoozed", "until"}`; null otherwise.
    #[schema(value_type = Option<Object>)]
    pub hold: Option<serde_json::Value>,
    /// Whether its opening was notified (false while held, and for an incident that
    /// resolved before anyone was told; such an incident resolves silently).
    pub notified: bool,
    /// The notification group it went out in, when its policy has a `groupWindowSeconds`
    /// (webhook payloads carry it as `incident.groupId`).
    pub group_id: Option<String>,
    pub created_at: String,
    pub acknowledged_at: Option<String>,
    pub resolved_at: Option<String>,
    pub duration_seconds: Option<i64>,
    pub monitor_id: String,
    /// The monitor as event payloads describe it.
    #[schema(value_type = Object)]
    pub monitor: Box<RawValue>,
    /// The failure that opened it.
    #[schema(value_type = Object)]
    pub failure: Box<RawValue>,
    /// Name of the API key that acknowledged it.
    pub acknowledged_by: Option<String>,
    pub escalated_at: Option<String>,
    /// Escalation steps sent so far (`escalatedAt` is the latest).
    pub escalation_step: i32,
    /// Reminders sent for it (its policy's `repeatEvery`).
    pub reminders: i32,
    /// When its next reminder is due, while one is.
    pub next_reminder_at: Option<String>,
    /// What happened, oldest first (on `GET /{id}` and actions).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Vec<TimelineEntry>>,
}

/// One entry of an incident's timeline.
#[derive(Debug, Serialize, ToSchema)]
pub struct TimelineEntry {
    /// `created`, `held`, `released`, `notified`, `escalated`, `reminded`, `snoozed` (from an
    /// alert's link), `acknowledged` or `resolved`; and what the policy's alert pipeline
    /// did to a notification: `routed`, `delayed`, `summarised`, `dropped`, or
    /// `pipeline_failed` (a step that failed counted as absent). A pipeline entry's
    /// details name the `step` (its index), `plugin`, `event` and `channel`.
    pub kind: String,
    pub at: String,
    #[schema(value_type = Object)]
    pub details: Box<RawValue>,
}

/// Filters of the incident list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct IncidentListParams {
    /// Created at or after (ISO 8601).
    pub from: Option<String>,
    /// Created at or before (ISO 8601).
    pub to: Option<String>,
    /// `open`, `acknowledged`, `suppressed` or `resolved`.
    pub status: Option<String>,
    pub monitor_id: Option<String>,
    /// `createdAt` (default) or `resolvedAt`.
    pub sort_by: Option<String>,
    /// `asc` or `desc` (default).
    pub order: Option<String>,
}

/// Optional body of the acknowledgement.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AcknowledgeBody {
    /// A note for the timeline.
    pub note: Option<String>,
}

fn view(state: &AppState, i: &IncidentRow, timeline: Option<&[IncidentEventRow]>) -> IncidentView {
    IncidentView {
        id: i.id.clone(),
        url: format!("{}/incidents/{}", state.config.public_url, i.id),
        status: i.status.name().to_string(),
        hold: crate::engine::hold::Hold::parse(i.hold.as_deref()).map(|h| h.view()),
        notified: i.notified,
        group_id: i.group_id.clone(),
        created_at: crate::time::format_ms(i.created_at),
        acknowledged_at: i.acknowledged_at.map(crate::time::format_ms),
        resolved_at: i.resolved_at.map(crate::time::format_ms),
        duration_seconds: i.resolved_at.map(|r| (r - i.created_at) / 1000),
        monitor_id: i.monitor_id.clone(),
        monitor: raw_json(&i.monitor),
        failure: raw_json(&i.failure),
        acknowledged_by: i.acknowledged_by.clone(),
        escalated_at: i.escalated_at.map(crate::time::format_ms),
        escalation_step: i.escalation_step,
        reminders: i.reminders,
        next_reminder_at: i
            .remind_at
            .filter(|_| i.status == crate::store::IncidentState::Open)
            .map(crate::time::format_ms),
        timeline: timeline.map(|t| {
            t.iter()
                .map(|e| TimelineEntry {
                    kind: e.kind.clone(),
                    at: crate::time::format_ms(e.at),
                    details: raw_json(&e.details),
                })
                .collect()
        }),
    }
}

async fn with_timeline(state: &AppState, i: &IncidentRow) -> Result<IncidentView, ApiError> {
    let timeline = state.store.incident_timeline(&i.id).await?;
    Ok(view(state, i, Some(&timeline)))
}

fn action_error(e: ActionError, id: &str) -> ApiError {
    match e {
        ActionError::NotFound => Resource::INCIDENT.not_found(id),
        ActionError::Resolved => ApiError::new(
            StatusCode::CONFLICT,
            "INCIDENT_RESOLVED",
            "The incident is already resolved",
        ),
        ActionError::Store(e) => e.into(),
    }
}

/// List incidents.
#[utoipa::path(get, path = "/v1/incidents", tag = "incidents", params(PageParams, PageParams, IncidentListParams),
    responses(
        (status = 200, description = "A page of incidents", body = ListBody<IncidentView>),
        (status = 400, description = "Invalid parameters", body = ErrorBody),
    ))]
pub async fn list_incidents(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(pg): ApiQuery<PageParams>,
    ApiQuery(q): ApiQuery<IncidentListParams>,
) -> Result<Paged<IncidentView>, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    let order = paging::order(q.order.as_deref(), &mut errors);
    let from = paging::timestamp("from", q.from.as_deref(), &mut errors);
    let to = paging::timestamp("to", q.to.as_deref(), &mut errors);
    let status = paging::state::<IncidentState>("status", q.status.as_deref(), &mut errors);
    let by_resolved = match q.sort_by.as_deref() {
        None | Some("createdAt") => false,
        Some("resolvedAt") => true,
        Some(_) => {
            errors.push(FieldError::new("sortBy", "must be createdAt or resolvedAt"));
            false
        }
    };
    paging::finish(errors)?;
    let filter = IncidentFilter {
        from,
        to,
        status,
        monitor_id: q.monitor_id,
        by_resolved,
    };
    let (rows, total) = state
        .store
        .list_incidents(&p.workspace_id, &filter, order, page)
        .await?;
    Ok(Paged {
        items: rows.iter().map(|i| view(&state, i, None)).collect(),
        pagination: Pagination::new(page, total),
    })
}

/// Get an incident with its timeline.
#[utoipa::path(get, path = "/v1/incidents/{id}", tag = "incidents", params(("id" = String, Path, description = "Incident id")),
    responses(
        (status = 200, description = "The incident", body = SuccessBody<IncidentView>),
        (status = 404, description = "INCIDENT_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn get_incident(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<IncidentView>, ApiError> {
    let i = state
        .store
        .incident(&p.workspace_id, &id)
        .await?
        .or_not_found(Resource::INCIDENT, &id)?;
    Ok(Success::ok(with_timeline(&state, &i).await?))
}

/// Read the optional JSON body of an acknowledgement.
fn note_of(headers: &HeaderMap, body: &Bytes) -> Result<Option<String>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !json {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_CONTENT_TYPE",
            "The body must be JSON with `Content-Type: application/json`",
        ));
    }
    let parsed: AcknowledgeBody = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("Invalid JSON: {e}")))?;
    if parsed
        .note
        .as_ref()
        .is_some_and(|n| n.chars().count() > 2000)
    {
        return Err(ApiError::validation(vec![FieldError::new(
            "note",
            "must be at most 2000 characters",
        )]));
    }
    Ok(parsed.note)
}

/// Acknowledge an incident: pending escalation no longer applies. Acknowledging an
/// acknowledged incident changes nothing; a resolved one answers 409.
#[utoipa::path(post, path = "/v1/incidents/{id}/acknowledge", tag = "incidents", params(("id" = String, Path, description = "Incident id")),
    request_body(content = Option<AcknowledgeBody>, description = "Optional note"),
    responses(
        (status = 200, description = "The incident", body = SuccessBody<IncidentView>),
        (status = 404, description = "INCIDENT_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "INCIDENT_RESOLVED", body = ErrorBody),
    ))]
pub async fn acknowledge(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Success<IncidentView>, ApiError> {
    let note = note_of(&headers, &body)?;
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "incident.acknowledge",
        "incident",
        Some(&id),
    ));
    let i = actions::acknowledge(
        &state.store,
        &state.engine,
        &p.workspace_id,
        &id,
        &p.key_name,
        note.as_deref(),
        state.clock.now_ms(),
    )
    .await
    .map_err(|e| action_error(e, &id))?;
    Ok(Success::ok(with_timeline(&state, &i).await?))
}

/// Resolve an incident by hand, with the same event and notifications as recovery.
#[utoipa::path(post, path = "/v1/incidents/{id}/resolve", tag = "incidents", params(("id" = String, Path, description = "Incident id")),
    responses(
        (status = 200, description = "The incident", body = SuccessBody<IncidentView>),
        (status = 404, description = "INCIDENT_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn resolve(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<IncidentView>, ApiError> {
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "incident.resolve",
        "incident",
        Some(&id),
    ));
    let i = actions::resolve(
        &state.store,
        &state.engine,
        &p.workspace_id,
        &id,
        &p.key_name,
        state.clock.now_ms(),
    )
    .await
    .map_err(|e| action_error(e, &id))?;
    Ok(Success::ok(with_timeline(&state, &i).await?))
}
