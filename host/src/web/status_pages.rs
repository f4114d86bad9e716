//! `/status-pages`: the workspace's public status pages, each with a link to see it as
//! visitors do, and a form to make one from chosen monitors. `/status-pages/{id}`: one
//! page edited (name, address, description, public or not, its monitors), its updates
//! posted, corrected and deleted, its subscribers approved and removed.

use super::{Layout, ago, not_found, page, viewer};
use crate::api::AppState;
use crate::store::Page;
use crate::store::keys::Role;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

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
    let (monitors, total) = super::monitor_choices(&state, &p.workspace_id).await;
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
        monitors,
        monitors_truncated: total > super::MONITOR_CHOICES,
    }
    .render();
    page(StatusCode::OK, html)
}

#[derive(Template)]
#[template(path = "status_page.html")]
struct StatusPageEdit {
    layout: Layout,
    can_write: bool,
    id: String,
    name: String,
    slug: String,
    description: String,
    public: bool,
    managed: bool,
    /// Every monitor offered (id, name, shown on the page).
    monitors: Vec<(String, String, bool)>,
    monitors_truncated: bool,
    /// (id, status, body, when posted, when edited)
    updates: Vec<(String, String, String, String, Option<String>)>,
    /// The statuses an update may give, with their labels.
    update_statuses: [(&'static str, &'static str); 4],
    /// (id, type, address, confirmed, when)
    subscribers: Vec<(String, String, String, bool, String)>,
}

pub async fn edit(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "status-pages").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Ok(Some(sp)) = state.store.status_page(&p.workspace_id, &id).await else {
        return not_found(layout, "status page");
    };
    let now = state.clock.now_ms();
    let shown: Vec<String> = serde_json::from_str(&sp.monitor_ids).unwrap_or_default();
    let (monitors, total) = super::monitor_choices(&state, &p.workspace_id).await;
    let first = Page { page: 1, limit: 50 };
    let updates = state
        .store
        .list_status_updates(&sp.id, first)
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let subscribers = state
        .store
        .list_subscribers(&sp.id, first)
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let html = StatusPageEdit {
        layout,
        can_write: p.role != Role::Read,
        managed: sp.managed_by.is_some(),
        monitors: monitors
            .into_iter()
            .map(|(id, name)| {
                let on = shown.contains(&id);
                (id, name, on)
            })
            .collect(),
        monitors_truncated: total > super::MONITOR_CHOICES,
        updates: updates
            .into_iter()
            .map(|u| {
                let edited = u.updated_at.map(|at| ago(now, at));
                (u.id, u.status, u.body, ago(now, u.created_at), edited)
            })
            .collect(),
        update_statuses: [
            ("investigating", "Investigating"),
            ("identified", "Identified"),
            ("monitoring", "Monitoring"),
            ("resolved", "Resolved"),
        ],
        subscribers: subscribers
            .into_iter()
            .map(|s| (s.id, s.kind, s.target, s.confirmed, ago(now, s.created_at)))
            .collect(),
        id: sp.id,
        name: sp.title,
        slug: sp.slug,
        description: sp.description,
        public: sp.public,
    }
    .render();
    page(StatusCode::OK, html)
}

/// A status page as visitors would see it, public or not yet (`/status-pages/{id}/preview`),
/// for its workspace's members: the public page's own HTML under the public page's strict
/// policy (no script, its inline style, its forms sending nothing), never cached, with a
/// line saying it is a preview.
pub async fn preview(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    use axum::http::{HeaderValue, header};
    use axum::response::IntoResponse;
    let (p, layout) = match viewer(&state, &headers, "status-pages").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let public = match state.store.status_page(&p.workspace_id, &id).await {
        Ok(Some(sp)) => sp.public,
        Ok(None) => return not_found(layout, "status page"),
        Err(_) => return super::unavailable(layout),
    };
    let html = match crate::api::public_status::preview(&state, &p.workspace_id, &id).await {
        Ok(Some(html)) => html,
        Ok(None) => return not_found(layout, "status page"),
        Err(_) => return super::unavailable(layout),
    };
    let banner = if public {
        "Preview: this is what visitors see now."
    } else {
        "Preview: this page is private; visitors get 404 until it is made public."
    };
    let html = html.replacen(
        "<body>",
        &format!(
            "<body><p role=\"note\" style=\"margin:0;padding:.6rem 1rem;background:#fff3cd;color:#3d2c00\">{banner}</p>"
        ),
        1,
    );
    let mut r = ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; \
             form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}
