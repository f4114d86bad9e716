//! `/status-pages`: the workspace's public status pages, each with a link to see it as
//! visitors do, and a form to make one from chosen monitors.

use super::{Layout, page, viewer};
use crate::api::AppState;
use crate::store::keys::Role;
use crate::store::monitors::{MonitorListQuery, MonitorSort};
use crate::store::{Order, Page};
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

/// Monitors offered as checkboxes.
const MONITOR_CHOICES: u64 = 200;

struct PageLine {
    id: String,
    name: String,
    slug: String,
    monitors: usize,
    public: bool,
}

#[derive(Template)]
#[template(path = "status_pages.html")]
struct StatusPages {
    layout: Layout,
    can_write: bool,
    pages: Vec<PageLine>,
    monitors: Vec<(String, String)>,
    monitors_truncated: bool,
}

pub async fn show(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let (p, layout) = match viewer(&state, &headers, "status-pages").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let pages = state
        .store
        .list_status_pages(
            &p.workspace_id,
            Page {
                page: 1,
                limit: 100,
            },
        )
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let (monitors, total) = state
        .store
        .list_monitors(
            &p.workspace_id,
            &MonitorListQuery {
                status: None,
                search: None,
                kind: None,
                tag: None,
                sort: MonitorSort::Name,
                order: Order::Asc,
                page: Page {
                    page: 1,
                    limit: MONITOR_CHOICES,
                },
            },
        )
        .await
        .unwrap_or_default();
    let html = StatusPages {
        layout,
        can_write: p.role != Role::Read,
        pages: pages
            .into_iter()
            .map(|s| PageLine {
                monitors: serde_json::from_str::<Vec<String>>(&s.monitor_ids)
                    .map_or(0, |v| v.len()),
                id: s.id,
                name: s.title,
                slug: s.slug,
                public: s.public,
            })
            .collect(),
        monitors: monitors.into_iter().map(|m| (m.id, m.name)).collect(),
        monitors_truncated: total > MONITOR_CHOICES,
    }
    .render();
    page(StatusCode::OK, html)
}
