//! The public side of status pages: `/status/{slug}` (server-rendered HTML, no scripts or
//! outside assets, readable on a phone) and `/status/{slug}.json` (the same facts for
//! machines). No key is needed; a private or unknown page answers 404.
//!
//! Visitors see monitor names, states, a 90-day uptime bar from the daily rollups, and
//! incidents (open ones and those of the last 14 days) with their times: never URLs,
//! hosts or failure reasons, which may describe internals. Maintenance windows covering
//! the page's monitors are announced (in progress, and those starting within 14 days), and
//! a monitor under maintenance shows as such.

use super::AppState;
use super::error::{ApiError, Resource};
use crate::engine::maintenance::{Calendar, Occurrence};
use crate::store::status_pages::{DAY_MS, day_of};
use crate::store::{DailyUptimeRow, MonitorRow, MonitorState, State as _};
use crate::text::escape_html;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use std::collections::HashMap;
use std::fmt::Write;

/// Days in the uptime bar.
pub const BAR_DAYS: i32 = 90;
/// How far back resolved incidents are listed.
const RECENT_INCIDENT_DAYS: i64 = 14;
/// Most incidents listed.
const MAX_INCIDENTS: u64 = 20;
/// How far ahead maintenance is announced.
const MAINTENANCE_AHEAD_DAYS: i64 = 14;
/// Most maintenance entries listed.
const MAX_MAINTENANCE: usize = 10;

/// What a status page shows.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PageView {
    pub name: String,
    pub description: String,
    /// `operational`, `degraded_performance` (none down, some slower than their
    /// `degradedAfterMs`), `under_maintenance` (none down, some under maintenance),
    /// `partial_outage` or `major_outage`. A monitor under maintenance is never counted down.
    pub status: &'static str,
    pub updated_at: String,
    pub monitors: Vec<MonitorView>,
    pub incidents: Vec<IncidentView>,
    /// Maintenance in progress and scheduled within 14 days, soonest first.
    pub maintenance: Vec<MaintenanceView>,
    /// The workspace's updates of the last 14 days, newest first (`status`, `body`,
    /// `createdAt`, and `updatedAt` when it was edited, null otherwise); all of them are in
    /// the Atom feed at `/status/{slug}/feed.atom`.
    pub updates: Vec<serde_json::Value>,
    /// The page's slug (for its feed and subscribe form).
    pub slug: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MaintenanceView {
    pub name: String,
    pub description: String,
    pub start: String,
    pub end: String,
    /// In progress now.
    pub active: bool,
    /// Names of the page's monitors it covers.
    pub monitors: Vec<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MonitorView {
    pub name: String,
    /// `up`, `down`, `paused` or `pending`.
    pub status: String,
    /// Under maintenance now.
    pub maintenance: bool,
    /// Percent over the days with checks in the last 90; null without checks.
    pub uptime_90d: Option<f64>,
    /// Oldest first, one per day of the last 90 (UTC).
    pub days: Vec<DayView>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DayView {
    pub date: String,
    pub checks: i32,
    pub uptime: Option<f64>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IncidentView {
    pub monitor: String,
    pub status: String,
    pub created_at: String,
    pub resolved_at: Option<String>,
    pub duration_seconds: Option<i64>,
}

/// Middleware: every answer under `/status/` (pages, JSON, feed, subscribe, confirm and
/// unsubscribe links, and their errors) carries a strict Content-Security-Policy (no
/// script, no outside content; the pages' own inline style only) and refuses framing,
/// unless `status_page_frame_ancestors` names origins that may embed the pages. Headers a
/// handler set (its caching) are kept.
pub async fn page_headers(
    State(state): State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let req_is_link = req.uri().path().starts_with("/act/");
    let public = req.uri().path().starts_with("/status/") || req_is_link;
    let mut response = next.run(req).await;
    if !public {
        return response;
    }
    // Alerts' one-click pages are never framed (a framed button could be clicked for you).
    let ancestors: &[String] = if req_is_link {
        &[]
    } else {
        &state.config.status_page_frame_ancestors
    };
    let frame_ancestors = if ancestors.is_empty() {
        "'none'".to_string()
    } else {
        ancestors.join(" ")
    };
    let policy = format!(
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; \
         form-action 'self'; base-uri 'none'; frame-ancestors {frame_ancestors}"
    );
    let h = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&policy) {
        h.insert(header::CONTENT_SECURITY_POLICY, value);
    }
    if ancestors.is_empty() {
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    // Confirm and unsubscribe links carry tokens: never send them on.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// A public status page: HTML, or JSON when the slug ends in `.json`. No key needed.
#[utoipa::path(get, path = "/status/{slug}", tag = "status-pages",
    params(("slug" = String, Path, description = "The page's slug; add `.json` for JSON")),
    security(()),
    responses(
        (status = 200, description = "The page (text/html), or its facts (application/json)", content_type = "text/html"),
        (status = 404, description = "No public page with this slug"),
    ))]
pub async fn status_page(State(state): State<AppState>, Path(slug): Path<String>) -> Response {
    if slug.contains('\0') {
        return not_found_html(&slug.replace('\0', ""));
    }
    let (slug, json) = match slug.strip_suffix(".json") {
        Some(s) => (s.to_string(), true),
        None => (slug, false),
    };
    let view = match build(&state, &slug).await {
        Ok(Some(v)) => v,
        Ok(None) if json => {
            return Resource::STATUS_PAGE.not_found(&slug).into_response();
        }
        Ok(None) => return not_found_html(&slug),
        Err(e) => return e.into_response(),
    };
    if json {
        return (
            [(header::CACHE_CONTROL, "public, max-age=30")],
            axum::Json(view),
        )
            .into_response();
    }
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=30"),
        ],
        render(&view),
    )
        .into_response()
}

async fn build(state: &AppState, slug: &str) -> Result<Option<PageView>, ApiError> {
    let Some(page) = state.store.status_page_by_slug(slug).await? else {
        return Ok(None);
    };
    if !page.public {
        return Ok(None);
    }
    view_of(state, page).await.map(Some)
}

/// A page as visitors would see it, public or not yet, for its workspace's members (the
/// dashboard's preview, never cached): None when `id` is not a page of `workspace_id`.
pub async fn preview(
    state: &AppState,
    workspace_id: &str,
    id: &str,
) -> Result<Option<String>, ApiError> {
    let Some(page) = state.store.status_page(workspace_id, id).await? else {
        return Ok(None);
    };
    Ok(Some(render(&view_of(state, page).await?)))
}

async fn view_of(
    state: &AppState,
    page: crate::store::status_pages::StatusPageRow,
) -> Result<PageView, ApiError> {
    let ids: Vec<String> = serde_json::from_str(&page.monitor_ids).unwrap_or_default();
    let monitors = state
        .store
        .monitors_in_workspace(&page.workspace_id, ids.clone())
        .await?;
    let now = state.clock.now_ms();
    let today = day_of(now);
    let first_day = today - (BAR_DAYS - 1);
    let rollups = state.store.daily_uptime(ids.clone(), first_day).await?;
    let mut by_monitor: HashMap<&str, HashMap<i32, &DailyUptimeRow>> = HashMap::new();
    for r in &rollups {
        by_monitor
            .entry(r.monitor_id.as_str())
            .or_default()
            .insert(r.day, r);
    }
    let calendar = Calendar::of(
        &state
            .store
            .maintenance_windows_of(vec![page.workspace_id.clone()])
            .await?,
    );
    let mut views = Vec::new();
    // Page order, skipping monitors deleted since.
    for id in &ids {
        let Some(m) = monitors.iter().find(|m| &m.id == id) else {
            continue;
        };
        let days_of = by_monitor.get(m.id.as_str());
        let mut days = Vec::with_capacity(BAR_DAYS as usize);
        let (mut total, mut up) = (0i64, 0i64);
        for day in first_day..=today {
            let r = days_of.and_then(|d| d.get(&day));
            let (t, u) = r.map_or((0, 0), |r| (r.total, r.up));
            total += i64::from(t);
            up += i64::from(u);
            days.push(DayView {
                date: crate::time::format_ms(i64::from(day) * DAY_MS)[..10].to_string(),
                checks: t,
                uptime: (t > 0).then(|| percent(i64::from(u), i64::from(t))),
            });
        }
        views.push(MonitorView {
            name: m.name.clone(),
            status: m.status.name().to_string(),
            maintenance: calendar.active(m, now).is_some(),
            uptime_90d: (total > 0).then(|| percent(up, total)),
            days,
        });
    }
    let names: HashMap<&str, &str> = monitors
        .iter()
        .map(|m| (m.id.as_str(), m.name.as_str()))
        .collect();
    let incidents = state
        .store
        .incidents_for_page(
            ids.clone(),
            now - RECENT_INCIDENT_DAYS * DAY_MS,
            MAX_INCIDENTS,
        )
        .await?
        .into_iter()
        .map(|i| IncidentView {
            monitor: names
                .get(i.monitor_id.as_str())
                .map_or_else(String::new, |n| n.to_string()),
            status: i.status.name().to_string(),
            created_at: crate::time::format_ms(i.created_at),
            resolved_at: i.resolved_at.map(crate::time::format_ms),
            duration_seconds: i.resolved_at.map(|r| (r - i.created_at) / 1000),
        })
        .collect();
    let down = views
        .iter()
        .filter(|m| !m.maintenance && m.status == MonitorState::Down.name())
        .count();
    let degraded = views
        .iter()
        .any(|m| !m.maintenance && m.status == MonitorState::Degraded.name());
    let status = match down {
        0 if degraded => "degraded_performance",
        0 if views.iter().any(|m| m.maintenance) => "under_maintenance",
        0 => "operational",
        n if n == views.len() => "major_outage",
        _ => "partial_outage",
    };
    let maintenance = announced(&calendar, &page.workspace_id, &monitors, &ids, now);
    let (recent, _) = state
        .store
        .list_status_updates(
            &page.id,
            crate::store::Page {
                page: 1,
                limit: MAX_INCIDENTS,
            },
        )
        .await?;
    let updates = recent
        .iter()
        .filter(|u| u.created_at >= now - RECENT_INCIDENT_DAYS * DAY_MS)
        .map(super::public_subscribe::update_json)
        .collect();
    Ok(PageView {
        name: page.title,
        description: page.description,
        status,
        updated_at: crate::time::format_ms(now),
        monitors: views,
        incidents,
        maintenance,
        updates,
        slug: page.slug,
    })
}

/// Maintenance covering the page's monitors: in progress, or starting within 14 days.
fn announced(
    calendar: &Calendar,
    workspace_id: &str,
    monitors: &[MonitorRow],
    order: &[String],
    now: i64,
) -> Vec<MaintenanceView> {
    let horizon = now + MAINTENANCE_AHEAD_DAYS * DAY_MS;
    let mut out: Vec<(i64, MaintenanceView)> = Vec::new();
    for w in calendar.windows(workspace_id) {
        let covered: Vec<String> = order
            .iter()
            .filter_map(|id| monitors.iter().find(|m| &m.id == id))
            .filter(|m| w.covers(m))
            .map(|m| m.name.clone())
            .collect();
        if covered.is_empty() {
            continue;
        }
        let entry = |o: Occurrence, active: bool| {
            (
                o.start,
                MaintenanceView {
                    name: w.name.clone(),
                    description: w.description.clone(),
                    start: crate::time::format_ms(o.start),
                    end: crate::time::format_ms(o.end),
                    active,
                    monitors: covered.clone(),
                },
            )
        };
        if let Some(o) = super::maintenance::current(w, now) {
            out.push(entry(o, true));
        }
        for o in super::maintenance::upcoming(w, now, 3) {
            if o.start < horizon {
                out.push(entry(o, false));
            }
        }
    }
    out.sort_by_key(|(start, _)| *start);
    out.into_iter()
        .take(MAX_MAINTENANCE)
        .map(|(_, v)| v)
        .collect()
}

/// `up` of `total` as a percentage with two decimals, never rounded up (99.999 % of the
/// checks passing reads 99.99, not 100).
pub(crate) fn percent(up: i64, total: i64) -> f64 {
    (up as f64 * 10_000.0 / total as f64).floor() / 100.0
}

fn bar_class(uptime: Option<f64>) -> &'static str {
    match uptime {
        None => "none",
        Some(u) if u >= 99.9 => "good",
        Some(u) if u >= 99.0 => "fair",
        Some(u) if u >= 95.0 => "poor",
        Some(_) => "bad",
    }
}

const STYLE: &str = "\
*{box-sizing:border-box}\
body{margin:0;font:16px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1f2933;background:#f5f7fa}\
main{max-width:860px;margin:0 auto;padding:24px 16px 48px}\
h1{font-size:1.75rem;margin:0 0 4px}\
.lead{color:#52606d;margin:0 0 20px}\
.banner{border-radius:10px;padding:16px 20px;font-weight:600;font-size:1.1rem;color:#fff;margin-bottom:24px}\
.banner.operational{background:#2f9e44}.banner.under_maintenance{background:#1c7ed6}.banner.partial_outage{background:#e67700}.banner.degraded_performance{background:#8d6e00}.banner.major_outage{background:#c92a2a}\
section{background:#fff;border:1px solid #e4e7eb;border-radius:10px;padding:8px 20px;margin-bottom:24px}\
h2{font-size:1.1rem;margin:16px 0 8px}\
.monitor{padding:14px 0;border-top:1px solid #eef0f3}.monitor:first-of-type{border-top:0}\
.row{display:flex;justify-content:space-between;align-items:baseline;gap:12px;flex-wrap:wrap}\
.name{font-weight:600}\
.state{font-size:.9rem;font-weight:600}.state.up{color:#2f9e44}.state.down{color:#c92a2a}.state.degraded{color:#8d6e00}.state.paused,.state.pending{color:#7b8794}.state.maintenance{color:#1c7ed6}\
.bar{display:flex;gap:2px;height:34px;margin:10px 0 4px}\
.bar span{flex:1;border-radius:2px;min-width:2px}\
.good{background:#40c057}.fair{background:#94d82d}.poor{background:#fab005}.bad{background:#fa5252}.none{background:#dde2e6}\
.legend{display:flex;justify-content:space-between;font-size:.8rem;color:#7b8794}\
.incident{padding:12px 0;border-top:1px solid #eef0f3}.incident:first-of-type{border-top:0}\
.tag{display:inline-block;font-size:.75rem;font-weight:700;text-transform:uppercase;padding:2px 8px;border-radius:99px;margin-right:8px}\
.tag.open,.tag.investigating{background:#ffe3e3;color:#c92a2a}.tag.identified{background:#fff3bf;color:#e67700}.tag.monitoring{background:#e7f5ff;color:#1864ab}.tag.scheduled{background:#e7f5ff;color:#1864ab}.tag.in-progress{background:#d0ebff;color:#1864ab}.tag.acknowledged{background:#fff3bf;color:#e67700}.tag.resolved{background:#d3f9d8;color:#2b8a3e}\
.muted{color:#7b8794;font-size:.9rem}\
footer{text-align:center;color:#9aa5b1;font-size:.85rem}\
@media (max-width:520px){.bar{height:28px;gap:1px}h1{font-size:1.4rem}section{padding:4px 14px}}";

/// The page's updates, newest first; an edited one says when it was edited.
fn render_updates(h: &mut String, updates: &[serde_json::Value]) {
    if updates.is_empty() {
        return;
    }
    h.push_str("<section aria-label=\"Updates\" id=\"updates\"><h2>Updates</h2>");
    for u in updates {
        let status = u["status"].as_str().unwrap_or("");
        let edited = u["updatedAt"]
            .as_str()
            .map(|at| format!(" · edited {} UTC", short_time(at)))
            .unwrap_or_default();
        let _ = write!(
            h,
            "<div class=\"incident\"><span class=\"tag {s}\">{s}</span>\
             <span class=\"muted\">{when} UTC{edited}</span><p>{body}</p></div>",
            s = escape_html(status),
            when = short_time(u["createdAt"].as_str().unwrap_or("")),
            edited = escape_html(&edited),
            body = escape_html(u["body"].as_str().unwrap_or("")),
        );
    }
    h.push_str("</section>");
}

/// The page as HTML.
pub fn render(v: &PageView) -> String {
    let banner = match v.status {
        "operational" => "All systems operational",
        "major_outage" => "Major outage",
        "under_maintenance" => "Under maintenance",
        "degraded_performance" => "Degraded performance",
        _ => "Some systems are down",
    };
    let mut h = String::with_capacity(16 * 1024);
    let _ = write!(
        h,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{title}</title><style>{STYLE}</style></head><body><main>\
         <h1>{title}</h1>",
        title = escape_html(&v.name)
    );
    if !v.description.is_empty() {
        let _ = write!(h, "<p class=\"lead\">{}</p>", escape_html(&v.description));
    }
    let _ = write!(
        h,
        "<div class=\"banner {}\" id=\"overall\">{banner}</div>",
        v.status
    );
    h.push_str("<section aria-label=\"Monitors\">");
    if v.monitors.is_empty() {
        h.push_str("<p class=\"muted\">No monitors on this page yet.</p>");
    }
    for m in &v.monitors {
        let (class, state) = match m.status.as_str() {
            _ if m.maintenance => ("maintenance", "Under maintenance"),
            "up" => ("up", "Operational"),
            "degraded" => ("degraded", "Degraded performance"),
            "down" => ("down", "Down"),
            "paused" => ("paused", "Paused"),
            _ => ("pending", "Waiting for the first check"),
        };
        let uptime = m
            .uptime_90d
            .map_or("no data".to_string(), |u| format!("{u:.2}% uptime"));
        let _ = write!(
            h,
            "<div class=\"monitor\"><div class=\"row\"><span class=\"name\">{}</span>\
             <span class=\"state {}\">{state}</span></div><div class=\"bar\" role=\"img\" \
             aria-label=\"Uptime over the last 90 days\">",
            escape_html(&m.name),
            class
        );
        for d in &m.days {
            let tip = match d.uptime {
                Some(u) => format!("{}: {u:.2}% of {} checks", d.date, d.checks),
                None => format!("{}: no checks", d.date),
            };
            let _ = write!(
                h,
                "<span class=\"{}\" title=\"{}\"></span>",
                bar_class(d.uptime),
                escape_html(&tip)
            );
        }
        let _ = write!(
            h,
            "</div><div class=\"legend\"><span>90 days ago</span><span>{uptime}</span>\
             <span>Today</span></div></div>"
        );
    }
    h.push_str("</section>");
    if !v.maintenance.is_empty() {
        h.push_str(
            "<section aria-label=\"Scheduled maintenance\" id=\"maintenance\"><h2>Scheduled maintenance</h2>",
        );
        for w in &v.maintenance {
            let (tag, label, when) = if w.active {
                (
                    "in-progress",
                    "In progress",
                    format!("Until {} UTC", short_time(&w.end)),
                )
            } else {
                (
                    "scheduled",
                    "Scheduled",
                    format!("{} – {} UTC", short_time(&w.start), short_time(&w.end)),
                )
            };
            let _ = write!(
                h,
                "<div class=\"incident\"><span class=\"tag {tag}\">{label}</span>\
                 <strong>{}</strong><div class=\"muted\">{when} · {}</div>",
                escape_html(&w.name),
                escape_html(&w.monitors.join(", "))
            );
            if !w.description.is_empty() {
                let _ = write!(h, "<p>{}</p>", escape_html(&w.description));
            }
            h.push_str("</div>");
        }
        h.push_str("</section>");
    }
    render_updates(&mut h, &v.updates);
    h.push_str("<section aria-label=\"Incidents\"><h2>Incidents</h2>");
    if v.incidents.is_empty() {
        h.push_str("<p class=\"muted\">No incidents in the last 14 days.</p>");
    }
    for i in &v.incidents {
        let when = match (&i.resolved_at, i.duration_seconds) {
            (Some(r), Some(d)) => format!(
                "Started {} · resolved {} after {}",
                short_time(&i.created_at),
                short_time(r),
                duration(d)
            ),
            _ => format!("Started {} · ongoing", short_time(&i.created_at)),
        };
        let _ = write!(
            h,
            "<div class=\"incident\"><span class=\"tag {status}\">{status}</span>\
             <strong>{monitor}</strong><div class=\"muted\">{when}</div></div>",
            status = escape_html(&i.status),
            monitor = escape_html(&i.monitor),
        );
    }
    let slug = escape_html(&v.slug);
    let _ = write!(
        h,
        "</section><section aria-label=\"Subscribe\" id=\"subscribe\"><h2>Get updates</h2>\
         <form method=\"post\" action=\"/status/{slug}/subscribe\">\
         <label for=\"sub-email\">E-mail address</label> \
         <input id=\"sub-email\" name=\"email\" type=\"email\" required autocomplete=\"email\"> \
         <button type=\"submit\">Subscribe</button></form>\
         <p class=\"muted\">We send a link to confirm first; every message has a link to \
         unsubscribe. Or follow the <a href=\"/status/{slug}/feed.atom\">Atom feed</a>.</p>\
         </section><footer>Updated {} UTC</footer></main></body></html>",
        short_time(&v.updated_at)
    );
    h
}

/// `2026-11-21 09:30` from `2026-11-21T09:30:00.000Z`.
fn short_time(iso: &str) -> String {
    iso.get(..16).unwrap_or(iso).replace('T', " ")
}

fn duration(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        s => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

fn not_found_html(slug: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>Not found</title><style>{STYLE}</style></head><body><main>\
         <h1>No status page here</h1><p class=\"lead\">There is no public status page \
         called “{}”.</p></main></body></html>",
        escape_html(slug)
    );
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_states_bars_and_incidents() {
        let v = PageView {
            name: "Acme <status>".into(),
            description: String::new(),
            status: "partial_outage",
            updated_at: "2026-11-21T09:30:00.000Z".into(),
            monitors: vec![MonitorView {
                name: "API".into(),
                status: "down".into(),
                maintenance: false,
                uptime_90d: Some(98.5),
                days: vec![
                    DayView {
                        date: "2026-11-20".into(),
                        checks: 0,
                        uptime: None,
                    },
                    DayView {
                        date: "2026-11-21".into(),
                        checks: 100,
                        uptime: Some(98.5),
                    },
                ],
            }],
            incidents: vec![IncidentView {
                monitor: "API".into(),
                status: "resolved".into(),
                created_at: "2026-11-21T08:00:00.000Z".into(),
                resolved_at: Some("2026-11-21T09:05:00.000Z".into()),
                duration_seconds: Some(3900),
            }],
            maintenance: vec![MaintenanceView {
                name: "Database <upgrade>".into(),
                description: "Read-only for an hour".into(),
                start: "2026-11-29T01:00:00.000Z".into(),
                end: "2026-11-29T02:00:00.000Z".into(),
                active: false,
                monitors: vec!["API".into()],
            }],
            updates: vec![
                serde_json::json!({"status": "identified", "body": "Disk <full>",
                                             "createdAt": "2026-11-21T09:00:00.000Z"}),
            ],
            slug: "acme".into(),
        };
        let html = render(&v);
        assert!(html.contains("<title>Acme &lt;status&gt;</title>"));
        assert!(html.contains("Some systems are down"));
        assert!(html.contains("class=\"none\" title=\"2026-11-20: no checks\""));
        assert!(html.contains("class=\"poor\""));
        assert!(html.contains("98.50% uptime"));
        assert!(html.contains("after 1 h 5 min"));
        assert!(html.contains("Scheduled maintenance"));
        assert!(html.contains("<p>Disk &lt;full&gt;</p>"));
        assert!(html.contains("action=\"/status/acme/subscribe\""));
        assert!(html.contains("href=\"/status/acme/feed.atom\""));
        assert!(html.contains("Database &lt;upgrade&gt;"));
        assert!(html.contains("2026-11-29 01:00 – 2026-11-29 02:00 UTC · API"));
        assert!(!html.contains("<script"));
    }
}
