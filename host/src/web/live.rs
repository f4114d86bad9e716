//! `GET /events?ids=...`: server-sent events for the overview. Every two seconds, while
//! something changed, one `monitors` event with the state and last response time of the
//! monitors the page shows (at most a page's worth) and the workspace's counts by state;
//! the page updates its cells without a reload. A signed-in session is required, and only
//! the person's workspace is read.

use crate::api::AppState;
use crate::api::session;
use crate::store::{MonitorState, State as _};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use std::time::Duration;

/// How often the shown monitors are looked at.
const TICK: Duration = Duration::from_secs(2);
/// Ids one stream follows at most (a page of the overview).
const MAX_IDS: usize = 100;

#[derive(Debug, Default, Deserialize)]
pub struct EventsQuery {
    ids: Option<String>,
}

pub async fn events(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<EventsQuery>,
) -> Response {
    let principal = match session::signed_in(&state, &headers).await {
        Ok(signed) => match session::principal(&state, &headers, &signed).await {
            Ok(p) => p,
            Err(e) => return (e.status, e.message).into_response(),
        },
        Err(e) => return (StatusCode::UNAUTHORIZED, e.message).into_response(),
    };
    let ids: Vec<String> = q
        .ids
        .unwrap_or_default()
        .split(',')
        .filter(|s| !s.is_empty() && s.len() <= 40)
        .take(MAX_IDS)
        .map(str::to_string)
        .collect();
    let workspace = principal.workspace_id;
    let stream = futures::stream::unfold(
        (state, workspace, ids, String::new()),
        |(state, workspace, ids, last)| async move {
            loop {
                tokio::time::sleep(TICK).await;
                let rows = state.store.monitors_by_id(&workspace, ids.clone()).await;
                let counts = state.store.count_monitors_by_state(&workspace).await;
                let (Ok(rows), Ok(counts)) = (rows, counts) else {
                    continue;
                };
                let count = |s: MonitorState| {
                    counts
                        .iter()
                        .find(|(st, _)| *st == s)
                        .map_or(0, |(_, n)| *n)
                };
                let data = serde_json::json!({
                    "monitors": rows.iter().map(|m| serde_json::json!({
                        "id": m.id,
                        "state": m.status.name(),
                        "response": m.last_response_time_ms.map_or_else(|| "–".to_string(), |ms| format!("{ms} ms")),
                    })).collect::<Vec<_>>(),
                    "counts": {
                        "up": count(MonitorState::Up),
                        "down": count(MonitorState::Down),
                        "pending": count(MonitorState::Pending),
                        "paused": count(MonitorState::Paused),
                    },
                })
                .to_string();
                if data != last {
                    let event = Event::default().event("monitors").data(data.clone());
                    return Some((
                        Ok::<_, std::convert::Infallible>(event),
                        (state, workspace, ids, data),
                    ));
                }
            }
        },
    );
    let mut r = Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response();
    r.headers_mut().insert(
        axum::http::header::CACHE_CONTROL,
        axum::http::HeaderValue::from_static("no-store"),
    );
    r
}
