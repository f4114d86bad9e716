//! `/incidents`: unresolved and resolved incidents; `/incidents/{id}`: one incident's
//! timeline, acknowledged (with a note) or resolved from the page through the API.

use super::{Layout, ago, not_found, page, unavailable, viewer};
use crate::api::AppState;
use crate::store::incidents::IncidentFilter;
use crate::store::keys::Role;
use crate::store::{IncidentRow, IncidentState, Order, Page, State as _};
use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

const PAGE_SIZE: u64 = 100;

struct Line {
    id: String,
    monitor: String,
    state: &'static str,
    css: &'static str,
    started: String,
    started_iso: String,
    acknowledged_by: String,
    resolved: String,
    /// How long it lasted, or has lasted so far.
    duration: String,
}

#[derive(Template)]
#[template(path = "incidents.html")]
struct List {
    layout: Layout,
    resolved: bool,
    rows: Vec<Line>,
    total: u64,
}

#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    state: Option<String>,
}

/// The monitor's name as the incident recorded it.
fn monitor_name(i: &IncidentRow) -> String {
    serde_json::from_str::<serde_json::Value>(&i.monitor)
        .ok()
        .and_then(|v| v["name"].as_str().map(str::to_string))
        .unwrap_or_else(|| i.monitor_id.clone())
}

/// "12 min", or "12 min so far" while unresolved.
pub(super) fn duration(i: &IncidentRow, now: i64) -> String {
    let span = super::span((i.resolved_at.unwrap_or(now) - i.created_at) / 1000);
    if i.resolved_at.is_some() {
        span
    } else {
        format!("{span} so far")
    }
}

fn css(state: IncidentState) -> &'static str {
    match state {
        IncidentState::Open => "down",
        IncidentState::Acknowledged | IncidentState::Suppressed => "pending",
        IncidentState::Resolved => "up",
    }
}

pub async fn list(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ListQuery>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "incidents").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let resolved = q.state.as_deref() == Some("resolved");
    let now = state.clock.now_ms();
    // Unresolved: open, acknowledged and suppressed together.
    let wanted: &[IncidentState] = if resolved {
        &[IncidentState::Resolved]
    } else {
        &[
            IncidentState::Open,
            IncidentState::Acknowledged,
            IncidentState::Suppressed,
        ]
    };
    let mut rows = Vec::new();
    let mut total = 0;
    for s in wanted {
        let filter = IncidentFilter {
            status: Some(*s),
            by_resolved: resolved,
            ..Default::default()
        };
        match state
            .store
            .list_incidents(
                &p.workspace_id,
                &filter,
                Order::Desc,
                Page {
                    page: 1,
                    limit: PAGE_SIZE,
                },
            )
            .await
        {
            Ok((found, n)) => {
                total += n;
                rows.extend(found);
            }
            Err(_) => return unavailable(layout),
        }
    }
    rows.sort_by_key(|i| std::cmp::Reverse(i.created_at));
    let html = List {
        layout,
        resolved,
        total,
        rows: rows
            .iter()
            .map(|i| Line {
                id: i.id.clone(),
                monitor: monitor_name(i),
                state: i.status.name(),
                css: css(i.status),
                started: ago(now, i.created_at),
                started_iso: crate::time::format_ms(i.created_at),
                acknowledged_by: i.acknowledged_by.clone().unwrap_or_default(),
                resolved: i.resolved_at.map(|t| ago(now, t)).unwrap_or_default(),
                duration: duration(i, now),
            })
            .collect(),
    }
    .render();
    page(StatusCode::OK, html)
}

struct Event {
    at: String,
    at_iso: String,
    kind: String,
    text: String,
}

#[derive(Template)]
#[template(path = "incident.html")]
struct Show {
    layout: Layout,
    id: String,
    monitor: String,
    monitor_id: String,
    state: &'static str,
    css: &'static str,
    started: String,
    started_iso: String,
    reason: String,
    duration: String,
    resolved_iso: Option<String>,
    /// Reminders sent, and when the next is due while one is (its policy's `repeatEvery`).
    reminders: i32,
    next_reminder_iso: Option<String>,
    can_write: bool,
    timeline: Vec<Event>,
    /// The monitor's checks up to the resolution (or now), newest first.
    checks: Vec<super::CheckLine>,
    /// Notifications of this incident: (id, event, channel type, state, attempts).
    deliveries: Vec<(String, String, String, &'static str, i32)>,
}

/// What an event's details say, in a line: a note, a reason, who acted.
fn event_text(details: &str) -> String {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(details) else {
        return String::new();
    };
    // A pipeline step's entry names the step's plugin, the event, where it went and why.
    [
        "note", "reason", "by", "plugin", "event", "channel", "until", "error",
    ]
    .iter()
    .filter_map(|k| {
        v.get(*k)
            .and_then(|x| x.as_str())
            .map(|s| format!("{k}: {s}"))
    })
    .collect::<Vec<_>>()
    .join(" · ")
}

pub async fn show(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "incidents").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Ok(Some(i)) = state.store.incident(&p.workspace_id, &id).await else {
        return not_found(layout, "incident");
    };
    let now = state.clock.now_ms();
    let timeline = state
        .store
        .incident_timeline(&i.id)
        .await
        .unwrap_or_default();
    let reason = serde_json::from_str::<serde_json::Value>(&i.failure)
        .ok()
        .and_then(|v| v["reason"].as_str().map(str::to_string))
        .unwrap_or_default();
    let end = i.resolved_at.unwrap_or(now);
    let checks = state
        .store
        .list_checks(&i.monitor_id, None, Some(end), Page { page: 1, limit: 20 })
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let deliveries = state
        .store
        .list_deliveries(
            &p.workspace_id,
            None,
            None,
            Some(&i.id),
            Page { page: 1, limit: 50 },
        )
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let html = Show {
        layout,
        duration: duration(&i, now),
        resolved_iso: i.resolved_at.map(crate::time::format_ms),
        reminders: i.reminders,
        next_reminder_iso: i
            .remind_at
            .filter(|_| i.status == crate::store::IncidentState::Open)
            .map(crate::time::format_ms),
        checks: checks.iter().map(|c| super::check_line(now, c)).collect(),
        deliveries: deliveries
            .into_iter()
            .map(|d| (d.id, d.event, d.channel_kind, d.status.name(), d.attempts))
            .collect(),
        id: i.id.clone(),
        monitor: monitor_name(&i),
        monitor_id: i.monitor_id.clone(),
        state: i.status.name(),
        css: css(i.status),
        started: ago(now, i.created_at),
        started_iso: crate::time::format_ms(i.created_at),
        reason,
        can_write: p.role != Role::Read,
        timeline: timeline
            .iter()
            .map(|e| Event {
                at: ago(now, e.at),
                at_iso: crate::time::format_ms(e.at),
                kind: e.kind.clone(),
                text: event_text(&e.details),
            })
            .collect(),
    }
    .render();
    page(StatusCode::OK, html)
}
