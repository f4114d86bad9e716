//! Snooze: hold a monitor's notifications (or those of every monitor with a tag) until a
//! time. Nothing is lost: an incident that opens while snoozed is notified once when the
//! snooze ends if it is still unresolved (see `engine::holds`).

use super::AppState;
use super::envelope::{NoContent, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError};
use super::extract::{ApiObject, ApiPath};
use super::monitor_input::MonitorView;
use super::monitors;
use crate::store::keys::Principal;
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// The longest snooze: one year.
const MAX_MINUTES: i64 = 525_600;

/// How long to snooze: exactly one of `until` and `minutes`.
#[derive(Debug, serde::Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct SnoozeBody {
    /// When the snooze ends (ISO 8601), in the future and at most a year away.
    #[schema(example = "2026-11-21T10:30:00.000Z")]
    pub until: Option<String>,
    /// Or: how many minutes from now, 1 to 525600.
    #[schema(example = 60)]
    pub minutes: Option<i64>,
}

/// A tag's snooze.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TagSnoozeView {
    pub tag: String,
    pub until: String,
    /// How many monitors of the workspace have the tag now.
    pub monitor_count: usize,
}

/// A monitor's snooze.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitorSnoozeView {
    pub monitor_id: String,
    pub name: String,
    pub until: String,
}

/// Every snooze in force in the workspace.
#[derive(Debug, Serialize, ToSchema)]
pub struct SnoozeList {
    pub monitors: Vec<MonitorSnoozeView>,
    pub tags: Vec<TagSnoozeView>,
}

/// The end of a snooze asked for in `body`, as epoch milliseconds.
fn until_of(body: &Map<String, Value>, now: i64) -> Result<i64, ApiError> {
    let mut errors = Vec::new();
    for key in body.keys() {
        if key != "until" && key != "minutes" {
            errors.push(FieldError::new(
                key.as_str(),
                "is not a field of a snooze (use until or minutes)",
            ));
        }
    }
    let until = match (body.get("until"), body.get("minutes")) {
        (Some(Value::String(text)), None) => match crate::time::parse_ms(text) {
            Some(t) if t <= now => {
                errors.push(FieldError::new("until", "must be in the future"));
                None
            }
            Some(t) if t > now + MAX_MINUTES * 60_000 => {
                errors.push(FieldError::new("until", "must be at most a year away"));
                None
            }
            Some(t) => Some(t),
            None => {
                errors.push(FieldError::new(
                    "until",
                    "must be an ISO 8601 timestamp, e.g. 2026-11-21T10:30:00Z",
                ));
                None
            }
        },
        (Some(_), None) => {
            errors.push(FieldError::new("until", "must be an ISO 8601 timestamp"));
            None
        }
        (None, Some(m)) => match m.as_i64() {
            Some(m) if (1..=MAX_MINUTES).contains(&m) => Some(now + m * 60_000),
            _ => {
                errors.push(FieldError::new(
                    "minutes",
                    format!("must be a whole number from 1 to {MAX_MINUTES}"),
                ));
                None
            }
        },
        (Some(_), Some(_)) => {
            errors.push(FieldError::new("until", "give until or minutes, not both"));
            None
        }
        (None, None) => {
            errors.push(FieldError::new("until", "until or minutes is required"));
            None
        }
    };
    match until {
        Some(u) if errors.is_empty() => Ok(u),
        _ => Err(ApiError::validation(errors)),
    }
}

fn valid_tag(tag: &str) -> Result<(), ApiError> {
    if super::monitor_input::is_tag(tag) {
        Ok(())
    } else {
        Err(ApiError::validation(vec![FieldError::new(
            "tag",
            "must be a tag: 1 to 50 letters, digits, '-', '_', '.', ':' or '/' (write '/' as %2F in the path)",
        )]))
    }
}

/// Snooze a monitor: its notifications are held until the snooze ends, then an incident
/// still unresolved is notified once. Snoozing again moves the end.
#[utoipa::path(post, path = "/v1/monitors/{id}/snooze", tag = "snoozes",
    params(("id" = String, Path, description = "Monitor id")),
    request_body = SnoozeBody,
    responses(
        (status = 200, description = "The snoozed monitor (see snoozedUntil)", body = SuccessBody<MonitorView>),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn snooze_monitor(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiObject(body): ApiObject,
) -> Result<Success<MonitorView>, ApiError> {
    let until = until_of(&body, state.clock.now_ms())?;
    set_monitor(state, p, id, Some(until)).await
}

/// End a monitor's snooze now: what it held is sent within seconds.
#[utoipa::path(delete, path = "/v1/monitors/{id}/snooze", tag = "snoozes",
    params(("id" = String, Path, description = "Monitor id")),
    responses(
        (status = 200, description = "The monitor", body = SuccessBody<MonitorView>),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn unsnooze_monitor(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<MonitorView>, ApiError> {
    set_monitor(state, p, id, None).await
}

async fn set_monitor(
    state: AppState,
    p: Principal,
    id: String,
    until: Option<i64>,
) -> Result<Success<MonitorView>, ApiError> {
    monitors::find(&state, &p, &id).await?;
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            if until.is_some() {
                "monitor.snooze"
            } else {
                "monitor.unsnooze"
            },
            "monitor",
            Some(&id),
        )
        .after(serde_json::json!({"until": until.map(crate::time::format_ms)})),
    );
    state
        .store
        .set_monitor_snooze(&p.workspace_id, &id, until)
        .await?;
    let row = monitors::find(&state, &p, &id).await?;
    Ok(Success::ok(monitors::view_for(
        &p,
        &state,
        &row,
        &state.config.region_names(),
    )))
}

/// Snooze every monitor with a tag (now or later) until a time. Snoozing again moves the end.
#[utoipa::path(post, path = "/v1/tags/{tag}/snooze", tag = "snoozes",
    params(("tag" = String, Path, description = "Tag")),
    request_body = SnoozeBody,
    responses(
        (status = 200, description = "The tag's snooze", body = SuccessBody<TagSnoozeView>),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
    ))]
pub async fn snooze_tag(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(tag): ApiPath<String>,
    ApiObject(body): ApiObject,
) -> Result<Success<TagSnoozeView>, ApiError> {
    valid_tag(&tag)?;
    let until = until_of(&body, state.clock.now_ms())?;
    crate::store::audit::note(
        crate::store::audit::Change::new(Some(&p.workspace_id), "tag.snooze", "tag", Some(&tag))
            .after(serde_json::json!({"until": crate::time::format_ms(until)})),
    );
    state.store.snooze_tag(&p.workspace_id, &tag, until).await?;
    let monitor_count = tag_count(&state, &p, &tag).await?;
    Ok(Success::ok(TagSnoozeView {
        tag,
        until: crate::time::format_ms(until),
        monitor_count,
    }))
}

/// End a tag's snooze now: what it held is sent within seconds.
#[utoipa::path(delete, path = "/v1/tags/{tag}/snooze", tag = "snoozes",
    params(("tag" = String, Path, description = "Tag")),
    responses(
        (status = 204, description = "Ended"),
        (status = 404, description = "SNOOZE_NOT_FOUND: the tag is not snoozed", body = ErrorBody),
    ))]
pub async fn unsnooze_tag(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(tag): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    valid_tag(&tag)?;
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "tag.unsnooze",
        "tag",
        Some(&tag),
    ));
    if state
        .store
        .unsnooze_tag(&p.workspace_id, &tag, state.clock.now_ms())
        .await?
    {
        Ok(NoContent)
    } else {
        Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "SNOOZE_NOT_FOUND",
            format!("The tag {tag} is not snoozed"),
        ))
    }
}

async fn tag_count(state: &AppState, p: &Principal, tag: &str) -> Result<usize, ApiError> {
    use crate::store::monitors::{MonitorListQuery, MonitorSort};
    let query = MonitorListQuery {
        status: None,
        search: None,
        kind: None,
        tag: Some(tag.to_string()),
        sort: MonitorSort::CreatedAt,
        order: crate::store::Order::Asc,
        page: crate::store::Page { page: 1, limit: 1 },
    };
    let (_, total) = state.store.list_monitors(&p.workspace_id, &query).await?;
    Ok(usize::try_from(total).unwrap_or(usize::MAX))
}

/// Every snooze in force: monitors' and tags'.
#[utoipa::path(get, path = "/v1/snoozes", tag = "snoozes",
    responses(
        (status = 200, description = "Snoozes in force", body = SuccessBody<SnoozeList>),
    ))]
pub async fn list_snoozes(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
) -> Result<Success<SnoozeList>, ApiError> {
    let now = state.clock.now_ms();
    let monitors = state
        .store
        .snoozed_monitors(&p.workspace_id, now)
        .await?
        .into_iter()
        .map(|m| MonitorSnoozeView {
            monitor_id: m.id,
            name: m.name,
            until: crate::time::format_ms(m.snoozed_until.unwrap_or(now)),
        })
        .collect();
    let mut tags: Vec<(String, i64)> = state
        .store
        .tag_snoozes(&p.workspace_id, now)
        .await?
        .into_iter()
        .collect();
    tags.sort();
    let mut tag_views = Vec::with_capacity(tags.len());
    for (tag, until) in tags {
        let monitor_count = tag_count(&state, &p, &tag).await?;
        tag_views.push(TagSnoozeView {
            tag,
            until: crate::time::format_ms(until),
            monitor_count,
        });
    }
    Ok(Success::ok(SnoozeList {
        monitors,
        tags: tag_views,
    }))
}
