//! The web dashboard: pages rendered on the server (askama templates, escaped by
//! default), served by the same binary at `/`. A page reads what a `GET` of the API would
//! and acts with the signed-in person's rights in their selected workspace; changes go
//! through the API (`/v1`, with the session's CSRF token), so there is one set of rules.
//! Strict Content-Security-Policy: scripts and styles from this origin only, no inline
//! script.

use crate::api::AppState;
use crate::api::session;
use crate::store::keys::Principal;
use crate::store::monitors::{MonitorListQuery, MonitorSort};
use crate::store::{MonitorState, Order, Page, State as _};
use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;

mod alerting;
pub mod forms;
mod heartbeat;
mod import;
mod incidents;
mod live;
mod maintenance;
mod reports;
mod settings;
mod status_pages;

/// Sent by a live page when it reads itself again (see `dashboard.js`).
const LIVE_HEADER: &str = "x-tocsin-live";

/// Monitors per overview page.
const PAGE_SIZE: u64 = 50;
/// Checks listed on a monitor's page.
const RECENT_CHECKS: usize = 30;
/// Checks in a monitor page's heartbeat bar.
const BEATS: u64 = 60;
/// Most checks the response-time chart draws one by one (a range with fewer than two
/// aggregated points, such as a monitor's first quarter hour).
const CHART_CHECKS: u64 = 500;
/// Checks in each heartbeat bar of the overview.
const OVERVIEW_BEATS: u32 = 20;

/// The dashboard's routes (merged into the server's router).
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(overview))
        .route("/monitors/new", get(new_monitor))
        .route("/monitors/{id}", get(monitor))
        .route("/monitors/{id}/edit", get(edit_monitor))
        .route("/events", get(live::events))
        .route("/settings", get(settings::show))
        .route("/settings/{section}", get(settings::section))
        .route("/alerting", get(alerting::show))
        .route("/status-pages", get(status_pages::show))
        .route("/maintenance", get(maintenance::show))
        .route("/status-pages/{id}", get(status_pages::edit))
        .route("/status-pages/{id}/preview", get(status_pages::preview))
        .route("/alerting/channels/new", get(alerting::new_channel))
        .route("/alerting/channels/{id}/edit", get(alerting::edit_channel))
        .route("/alerting/policies/{id}/edit", get(alerting::edit_policy))
        .route(
            "/alerting/policies/{id}/channels/{at}/edit",
            get(alerting::edit_inline_channel),
        )
        .route("/alerting/deliveries/{id}", get(alerting::delivery))
        .route("/incidents", get(incidents::list))
        .route("/reports", get(reports::show))
        .route("/import", get(import::show).post(import::run))
        .route("/incidents/{id}", get(incidents::show))
        .route("/assets/dashboard.js", get(script))
        .route("/assets/dashboard.css", get(style))
}

/// What every page's frame shows.
pub struct Layout {
    pub csrf: String,
    pub workspace_id: String,
    /// The person's workspaces (id, name), for the switcher.
    pub workspaces: Vec<(String, String)>,
    pub workspace: String,
    pub role: String,
    pub email: String,
    pub section: &'static str,
}

#[derive(Template)]
#[template(path = "error.html")]
pub(crate) struct ErrorPage<'a> {
    pub layout: Layout,
    pub title: &'a str,
    pub message: &'a str,
}

pub(crate) fn page(status: StatusCode, html: Result<String, askama::Error>) -> Response {
    let mut r = match html {
        Ok(body) => (status, Html(body)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "cannot render a dashboard page");
            (StatusCode::INTERNAL_SERVER_ERROR, "cannot render this page").into_response()
        }
    };
    crate::api::pages::secure_headers(r.headers_mut());
    r
}

/// The signed-in person acting in their workspace, or the response to give instead.
pub(crate) async fn viewer(
    state: &AppState,
    headers: &HeaderMap,
    section: &'static str,
) -> Result<(Principal, Layout), Response> {
    // A live page reading itself again is not the person's activity: it must not keep the
    // session from idling out while a tab stays open.
    let looked_up = if headers.contains_key(LIVE_HEADER) {
        session::still_signed_in(state, headers).await
    } else {
        session::signed_in(state, headers).await
    };
    let signed = match looked_up {
        Ok(s) => s,
        Err(_) => return Err(crate::api::pages::page().await),
    };
    let principal = match session::principal(state, headers, &signed).await {
        Ok(p) => p,
        Err(e) => {
            let layout = Layout {
                csrf: crate::accounts::csrf_token(&signed.token),
                workspace_id: String::new(),
                workspaces: Vec::new(),
                workspace: String::new(),
                role: String::new(),
                email: signed.user.email.clone(),
                section,
            };
            let html = ErrorPage {
                layout,
                title: "No access",
                message: &e.message,
            }
            .render();
            return Err(page(e.status, html));
        }
    };
    let workspaces: Vec<(String, String)> = state
        .store
        .memberships(&signed.user.email)
        .await
        .unwrap_or_default()
        .into_iter()
        .map(|(_, w)| (w.id, w.name))
        .collect();
    let workspace = workspaces
        .iter()
        .find(|(id, _)| *id == principal.workspace_id)
        .map(|(_, name)| name.clone())
        .unwrap_or_default();
    let role = principal
        .session
        .as_ref()
        .map(|s| s.member_role.clone())
        .unwrap_or_default();
    let workspace_id = principal.workspace_id.clone();
    Ok((
        principal,
        Layout {
            csrf: crate::accounts::csrf_token(&signed.token),
            workspace_id,
            workspaces,
            workspace,
            role,
            email: signed.user.email.clone(),
            section,
        },
    ))
}

/// `?q=&status=&type=&sort=&page=` of the overview. Unknown values show everything
/// rather than an error: these come from links and forms.
#[derive(Debug, Default, Deserialize)]
pub struct OverviewQuery {
    q: Option<String>,
    status: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    tag: Option<String>,
    sort: Option<String>,
    page: Option<String>,
}

/// The filter as the form shows it.
struct Filter {
    q: String,
    status: String,
    kind: String,
    tag: String,
    sort: String,
}

struct Counts {
    all: u64,
    up: u64,
    degraded: u64,
    down: u64,
    pending: u64,
    paused: u64,
}

struct Row {
    id: String,
    name: String,
    tags: Vec<String>,
    uptime_24h: String,
    uptime_30d: String,
    /// SVG polyline points of the hourly mean response time over 24 h (empty: no data).
    spark: String,
    /// Its last checks, oldest first, and what they add up to for a screen reader.
    beats: Vec<Beat>,
    beats_summary: String,
    state: &'static str,
    kind: String,
    response: String,
    checked: String,
    checked_iso: String,
}

#[derive(Template)]
#[template(path = "overview.html")]
struct Overview {
    layout: Layout,
    can_write: bool,
    counts: Counts,
    filter: Filter,
    status_options: Vec<(&'static str, &'static str)>,
    sort_options: Vec<(&'static str, &'static str)>,
    types: Vec<String>,
    tags: Vec<String>,
    rows: Vec<Row>,
    /// The first steps and which are done, while a young workspace has steps left.
    first_run: Option<FirstRun>,
    /// The shown monitors' ids, for the live updates.
    total: u64,
    page: u64,
    pages: u64,
    prev: Option<String>,
    next: Option<String>,
}

/// A young workspace's first steps: a monitor, a channel, a policy on a monitor, and a
/// notification that arrived (a test counts).
struct FirstRun {
    monitor: bool,
    channel: bool,
    policy: bool,
    delivered: bool,
}

impl FirstRun {
    fn done(&self) -> usize {
        [self.monitor, self.channel, self.policy, self.delivered]
            .iter()
            .filter(|d| **d)
            .count()
    }
}

/// Workspaces with at most this many monitors still see their first steps until all are
/// done; larger ones are past them.
const FIRST_RUN_MONITORS: u64 = 5;

/// The first steps of `workspace` with `monitors` monitors, or None when it is past them.
async fn first_run(state: &AppState, workspace: &str, monitors: u64) -> Option<FirstRun> {
    if monitors > FIRST_RUN_MONITORS {
        return None;
    }
    let one = Page { page: 1, limit: 1 };
    let all = Page {
        page: 1,
        limit: FIRST_RUN_MONITORS,
    };
    let channel = state
        .store
        .list_channels(workspace, one)
        .await
        .is_ok_and(|(_, n)| n > 0);
    let delivered = state
        .store
        .list_deliveries(
            workspace,
            None,
            Some(crate::store::states::DeliveryState::Succeeded),
            None,
            one,
        )
        .await
        .is_ok_and(|(_, n)| n > 0);
    let policy = state
        .store
        .list_monitors(
            workspace,
            &crate::store::monitors::MonitorListQuery {
                status: None,
                search: None,
                kind: None,
                tag: None,
                sort: crate::store::monitors::MonitorSort::Name,
                order: crate::store::Order::Asc,
                page: all,
            },
        )
        .await
        .is_ok_and(|(rows, _)| rows.iter().any(|m| m.alert_policy_id.is_some()));
    let steps = FirstRun {
        monitor: monitors > 0,
        channel,
        policy,
        delivered,
    };
    (steps.done() < 4).then_some(steps)
}

const SORTS: [(&str, &str); 4] = [
    ("name", "Name"),
    ("status", "State"),
    ("newest", "Newest"),
    ("updated", "Recently changed"),
];

/// `seconds` as a person says it: "45 s", "1 min 30 s", "12 min", "2 h 5 min", "1 d 6 h".
pub(crate) fn span(seconds: i64) -> String {
    let s = seconds.max(0);
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        match (s / 60, s % 60) {
            (m, r) if r == 0 || m >= 10 => format!("{m} min"),
            (m, r) => format!("{m} min {r} s"),
        }
    } else if s < 86_400 {
        match (s / 3600, (s % 3600) / 60) {
            (h, 0) => format!("{h} h"),
            (h, m) => format!("{h} h {m} min"),
        }
    } else {
        match (s / 86_400, (s % 86_400) / 3600) {
            (d, 0) => format!("{d} d"),
            (d, h) => format!("{d} d {h} h"),
        }
    }
}

pub(crate) fn ago(now: i64, at: i64) -> String {
    let secs = (now - at).max(0) / 1000;
    match secs {
        0..=59 => format!("{secs} s ago"),
        60..=3599 => format!("{} min ago", secs / 60),
        3600..=86_399 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

async fn overview(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<OverviewQuery>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "overview").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let (query, sort_key) = list_query(&q);
    let (status, search, kind, tag, page_n) = (
        query.status,
        query.search.clone(),
        query.kind.clone(),
        query.tag.clone(),
        query.page.page,
    );
    let listed = state.store.list_monitors(&p.workspace_id, &query).await;
    let by_state = state.store.count_monitors_by_state(&p.workspace_id).await;
    let (Ok((rows, total)), Ok(by_state)) = (listed, by_state) else {
        return unavailable(layout);
    };
    let now = state.clock.now_ms();
    let ids: Vec<String> = rows.iter().map(|m| m.id.clone()).collect();
    let hours = state
        .store
        .hourly_summaries(ids.clone(), now - 24 * 3_600_000)
        .await
        .unwrap_or_default();
    // The bars' window: twice the page's longest interval per beat, at most a day.
    let longest_ms = rows
        .iter()
        .map(|m| i64::from(m.interval_secs) * 1000)
        .max()
        .unwrap_or(0);
    let window = (longest_ms * i64::from(OVERVIEW_BEATS) * 2).min(86_400_000);
    let recent = state
        .store
        .recent_checks(&ids, OVERVIEW_BEATS, now - window)
        .await
        .unwrap_or_default();
    let first_day = i32::try_from((now - 30 * 86_400_000) / 86_400_000).unwrap_or(0);
    let days = state
        .store
        .daily_uptime(ids, first_day)
        .await
        .unwrap_or_default();
    let count = |s: MonitorState| {
        by_state
            .iter()
            .find(|(st, _)| *st == s)
            .map_or(0, |(_, n)| *n)
    };
    let pages = total.div_ceil(PAGE_SIZE).max(1);
    let link = |n: u64| {
        let mut pairs = url_pairs(&search, &q.status, &kind, &sort_key);
        if let Some(t) = &tag {
            pairs.push(("tag".into(), t.clone()));
        }
        pairs.push(("page".into(), n.to_string()));
        format!("/?{}", encode(&pairs))
    };
    let mut types: Vec<String> = state
        .plugins
        .descriptions()
        .into_iter()
        .filter(|d| d.kind == "monitor")
        .map(|d| d.name)
        .collect();
    types.sort();
    let monitors: u64 = by_state.iter().map(|(_, n)| n).sum();
    let first_run = first_run(&state, &p.workspace_id, monitors).await;
    let overview = Overview {
        first_run,
        can_write: p.role != crate::store::keys::Role::Read,
        layout,
        counts: Counts {
            all: by_state.iter().map(|(_, n)| n).sum(),
            up: count(MonitorState::Up),
            degraded: count(MonitorState::Degraded),
            down: count(MonitorState::Down),
            pending: count(MonitorState::Pending),
            paused: count(MonitorState::Paused),
        },
        filter: Filter {
            q: search.clone().unwrap_or_default(),
            status: status.map(|s| s.name().to_string()).unwrap_or_default(),
            kind: kind.clone().unwrap_or_default(),
            tag: tag.clone().unwrap_or_default(),
            sort: sort_key.clone(),
        },
        status_options: vec![
            ("", "Any"),
            ("up", "Up"),
            ("degraded", "Degraded"),
            ("down", "Down"),
            ("pending", "Pending"),
            ("paused", "Paused"),
        ],
        sort_options: SORTS.to_vec(),
        types,
        tags: state
            .store
            .monitor_tags(&p.workspace_id)
            .await
            .unwrap_or_default(),
        rows: rows
            .iter()
            .map(|m| overview_row(m, &hours, &days, &recent, now))
            .collect(),
        total,
        page: page_n,
        pages,
        prev: (page_n > 1).then(|| link(page_n - 1)),
        next: (page_n < pages).then(|| link(page_n + 1)),
    };
    page(StatusCode::OK, overview.render())
}

/// The overview's list query from its URL, with the sort's name for links.
fn list_query(q: &OverviewQuery) -> (MonitorListQuery, String) {
    let status = q.status.as_deref().and_then(MonitorState::parse);
    let kind = q.kind.clone().filter(|k| !k.is_empty());
    let search =
        q.q.as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.chars().take(200).collect::<String>());
    let sort_key = q
        .sort
        .clone()
        .filter(|s| SORTS.iter().any(|(k, _)| k == s))
        .unwrap_or_else(|| "name".into());
    let (sort, order) = match sort_key.as_str() {
        "status" => (MonitorSort::Status, Order::Asc),
        "newest" => (MonitorSort::CreatedAt, Order::Desc),
        "updated" => (MonitorSort::UpdatedAt, Order::Desc),
        _ => (MonitorSort::Name, Order::Asc),
    };
    let page_n = q
        .page
        .as_deref()
        .and_then(|t| t.parse::<u64>().ok())
        .filter(|n| (1..=1_000_000).contains(n))
        .unwrap_or(1);
    let tag = q.tag.clone().filter(|t| !t.is_empty());
    let query = MonitorListQuery {
        status,
        search,
        kind,
        tag,
        sort,
        order,
        page: Page {
            page: page_n,
            limit: PAGE_SIZE,
        },
    };
    (query, sort_key)
}

/// One monitor's row of the overview, with its uptime over 24 hours and 30 days.
fn overview_row(
    m: &crate::store::monitors::MonitorRow,
    hours: &[crate::store::checks::HourSummary],
    days: &[crate::store::status_pages::DailyUptimeRow],
    recent: &[crate::store::checks::CheckRow],
    now: i64,
) -> Row {
    let mine: Vec<crate::store::checks::CheckRow> = recent
        .iter()
        .filter(|c| c.monitor_id == m.id)
        .cloned()
        .collect();
    let failed = mine.iter().filter(|c| !c.ok && !c.maintenance).count();
    let beats_summary = format!("Last {} checks: {} failed", mine.len(), failed);
    Row {
        beats: beats(now, &mine),
        beats_summary,
        id: m.id.clone(),
        name: m.name.clone(),
        tags: m.tag_list(),
        uptime_24h: {
            let mine = hours.iter().filter(|h| h.monitor_id == m.id);
            let (up, total) = mine.fold((0, 0), |(u, t), h| (u + h.up, t + h.total));
            percent(up, total)
        },
        uptime_30d: {
            let mine = days.iter().filter(|d| d.monitor_id == m.id);
            let (up, total) = mine.fold((0i64, 0i64), |(u, t), d| {
                (u + i64::from(d.up), t + i64::from(d.total))
            });
            percent(up, total)
        },
        spark: sparkline(hours, &m.id, now),
        state: m.status.name(),
        kind: m.kind.clone(),
        response: m
            .last_response_time_ms
            .map_or_else(|| "–".into(), |ms| format!("{ms} ms")),
        checked: m
            .last_checked_at
            .map_or_else(|| "never".into(), |t| ago(now, t)),
        checked_iso: m
            .last_checked_at
            .map(crate::time::format_ms)
            .unwrap_or_default(),
    }
}

/// `up` of `total` as a percentage with two decimals ("–" without checks).
fn percent(up: i64, total: i64) -> String {
    if total == 0 {
        "–".into()
    } else {
        format!("{:.2} %", up as f64 * 100.0 / total as f64)
    }
}

/// The points of a 96×24 sparkline of a monitor's hourly mean response time over the
/// last 24 hours (higher is slower); hours without a timed check are skipped.
fn sparkline(hours: &[crate::store::checks::HourSummary], monitor_id: &str, now: i64) -> String {
    let current = now / 3_600_000;
    let points: Vec<(i64, f64)> = hours
        .iter()
        .filter(|h| h.monitor_id == monitor_id)
        .filter_map(|h| Some((23 - (current - h.hour), h.mean_response_ms?)))
        .filter(|(x, _)| (0..24).contains(x))
        .collect();
    if points.len() < 2 {
        return String::new();
    }
    let max = points.iter().map(|(_, v)| *v).fold(1.0, f64::max);
    let mut sorted = points;
    sorted.sort_by_key(|(x, _)| *x);
    sorted
        .iter()
        .map(|(x, v)| {
            format!(
                "{:.1},{:.1}",
                *x as f64 * 96.0 / 23.0,
                23.0 - v / max * 22.0
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn url_pairs(
    search: &Option<String>,
    status: &Option<String>,
    kind: &Option<String>,
    sort: &str,
) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for (k, v) in [("q", search), ("status", status), ("type", kind)] {
        if let Some(v) = v.as_ref().filter(|v| !v.is_empty()) {
            pairs.push((k.to_string(), v.clone()));
        }
    }
    pairs.push(("sort".into(), sort.to_string()));
    pairs
}

fn encode(pairs: &[(String, String)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    s.finish()
}

struct CheckLine {
    at: String,
    at_iso: String,
    ok: bool,
    response: String,
    region: String,
    reason: String,
}

/// One check in the heartbeat bar: its colour and what hovering or focusing it shows.
struct Beat {
    css: &'static str,
    tip: String,
}

/// The response-time chart, drawn on the server: its line, a dot per point when they are
/// few, its scale, the median and 95th percentile of its points, the incidents of its range
/// shaded, and the labels of its axes.
struct Chart {
    line: String,
    dots: Vec<(String, String)>,
    max: f64,
    /// Reference lines: (label, y).
    marks: Vec<(String, String)>,
    /// Incidents within the range: (x, width, what).
    bands: Vec<(String, String, String)>,
    /// Maintenance within the range, as the incidents.
    maintenance: Vec<(String, String, String)>,
    /// The time axis: (x, text anchor, label).
    ticks: Vec<(String, &'static str, String)>,
    /// Half the top, for the value axis.
    half: i64,
}

struct DayLine {
    date: String,
    text: String,
    css: &'static str,
}

const RANGES: [(&str, &str); 4] = [
    ("1h", "1 hour"),
    ("24h", "24 hours"),
    ("7d", "7 days"),
    ("30d", "30 days"),
];

#[derive(Debug, Default, Deserialize)]
pub struct MonitorQuery {
    range: Option<String>,
}

#[derive(Template)]
#[template(path = "monitor.html")]
struct MonitorPage {
    layout: Layout,
    ranges: Vec<(&'static str, &'static str)>,
    range: String,
    bucket_label: &'static str,
    chart: Chart,
    chart_from: String,
    chart_max: i64,
    /// The last checks, oldest first.
    beats: Vec<Beat>,
    days: Vec<DayLine>,
    incidents: Vec<(String, String)>,
    id: String,
    /// Write controls are shown to those who may use them (the API decides anyway).
    can_write: bool,
    name: String,
    state: &'static str,
    kind: String,
    interval: i32,
    timeout: i32,
    /// Seconds from a failing check to the next, when not the interval.
    retry_interval: Option<i32>,
    /// Slow above this many milliseconds, if ever.
    degraded_after_ms: Option<i32>,
    /// A heartbeat monitor's set-up (to those who may write).
    heartbeat: Option<heartbeat::Setup>,
    /// Its public badge: the token and the Markdown to paste.
    badge: Option<(String, String)>,
    /// Its alert policy (id, name), if any.
    policy: Option<(String, String)>,
    /// The monitors it depends on: (id, name).
    parents: Vec<(String, String)>,
    /// Until when its notifications are held, if snoozed.
    snoozed_until: Option<String>,
    /// It checks only from private locations that are offline: its state is the last one
    /// their probes reported.
    stale: bool,
    /// Its key, and the tool that owns it (`tocsin apply` puts its fields back).
    key: Option<String>,
    managed_by: Option<String>,
    uptime_24h: String,
    mean_24h: String,
    checks: Vec<CheckLine>,
}

/// What the monitor page shows beside its checks: a heartbeat's set-up, the public badge
/// and the alert policy.
struct Extras {
    heartbeat: Option<heartbeat::Setup>,
    badge: Option<(String, String)>,
    policy: Option<(String, String)>,
    /// The monitors it depends on: (id, name).
    parents: Vec<(String, String)>,
}

async fn extras(state: &AppState, p: &Principal, m: &crate::store::MonitorRow, now: i64) -> Extras {
    // The token changes the monitor's state: shown to those who may write.
    let heartbeat = match m
        .ping_token
        .as_ref()
        .filter(|_| p.role != crate::store::keys::Role::Read)
    {
        Some(token) => {
            let last = state
                .store
                .heartbeat_state(&m.id)
                .await
                .ok()
                .flatten()
                .and_then(|h| h.last_ping_at)
                .map(|at| ago(now, at));
            Some(heartbeat::setup(
                format!("{}/ping/{token}", state.config.public_url),
                &m.config,
                crate::engine::heartbeat::DEFAULT_GRACE_SECS as i64,
                last,
            ))
        }
        None => None,
    };
    let badge = state
        .store
        .badge_of(&p.workspace_id, &m.id)
        .await
        .ok()
        .flatten()
        .map(|b| {
            let markdown = format!(
                "![status]({}/badge/{}/status.svg)",
                state.config.public_url, b.token
            );
            (b.token, markdown)
        });
    let policy = match &m.alert_policy_id {
        Some(pid) => state
            .store
            .alert_policy(&p.workspace_id, pid)
            .await
            .ok()
            .flatten()
            .map(|r| (r.id, r.name)),
        None => None,
    };
    let parent_ids = m.parent_ids();
    let parents = if parent_ids.is_empty() {
        Vec::new()
    } else {
        state
            .store
            .monitors_in_workspace(&p.workspace_id, parent_ids)
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|m| (m.id, m.name))
            .collect()
    };
    Extras {
        heartbeat,
        badge,
        policy,
        parents,
    }
}

async fn monitor(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(q): Query<MonitorQuery>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "monitor").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let Ok(Some(m)) = state.store.monitor(&p.workspace_id, &id).await else {
        return not_found(layout, "monitor");
    };
    let now = state.clock.now_ms();
    let checks = state
        .store
        .list_checks(
            &m.id,
            None,
            None,
            Page {
                page: 1,
                limit: BEATS,
            },
        )
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let stats = state.store.uptime(&m.id, now - 86_400_000, now).await.ok();
    let uptime_24h = stats.as_ref().filter(|s| s.total > 0).map_or_else(
        || "no checks yet".into(),
        |s| format!("{:.2} %", s.up as f64 * 100.0 / s.total as f64),
    );
    let mean_24h = stats
        .as_ref()
        .and_then(|s| s.mean_response_ms)
        .map_or_else(|| "–".into(), |ms| format!("{ms:.0} ms"));
    let range = q
        .range
        .filter(|r| RANGES.iter().any(|(k, _)| k == r))
        .unwrap_or_else(|| "24h".into());
    // 90 days of rollups for the uptime by day; the chart's 30-day range reads the last 30.
    let day =
        |ago_days: i64| i32::try_from((now - ago_days * 86_400_000) / 86_400_000).unwrap_or(0);
    let rollups = state
        .store
        .daily_uptime(vec![m.id.clone()], day(90))
        .await
        .unwrap_or_default();
    let month: Vec<_> = rollups
        .iter()
        .filter(|d| d.day >= day(30))
        .cloned()
        .collect();
    let (points, from, span, bucket_label) = chart_points(&state, &m.id, &range, &month, now).await;
    let days = day_lines(&rollups);
    let incident_rows = state
        .store
        .list_incidents(
            &p.workspace_id,
            &crate::store::incidents::IncidentFilter {
                monitor_id: Some(m.id.clone()),
                ..Default::default()
            },
            Order::Desc,
            Page { page: 1, limit: 10 },
        )
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let times = state
        .store
        .response_times(&m.id, from)
        .await
        .unwrap_or_default();
    let mut chart = chart_line(points, from, span, &times);
    chart.bands = bands(&incident_rows, from, span, now);
    chart.maintenance = maintenance_bands(&state, &m, from, span, now).await;
    chart.ticks = ticks(from, span, &range);
    let incidents = incident_rows
        .into_iter()
        .map(|i| {
            let when = crate::time::format_ms(i.created_at);
            let lasted = incidents::duration(&i, now);
            (i.id, format!("{}, from {when}, {lasted}", i.status.name()))
        })
        .collect();
    let Extras {
        heartbeat,
        badge,
        policy,
        parents,
    } = extras(&state, &p, &m, now).await;
    let html = MonitorPage {
        layout,
        policy,
        parents,
        snoozed_until: m
            .snoozed_until
            .filter(|until| *until > now)
            .map(crate::time::format_ms),
        stale: state
            .engine
            .offline
            .stale(&m.workspace_id, &m.region_list()),
        ranges: RANGES.to_vec(),
        range,
        bucket_label,
        chart_from: crate::time::format_ms(from),
        chart_max: chart.max.round() as i64,
        chart,
        beats: beats(now, &checks),
        days,
        incidents,
        id: m.id.clone(),
        can_write: p.role != crate::store::keys::Role::Read,
        name: m.name.clone(),
        state: m.status.name(),
        kind: m.kind.clone(),
        key: m.apply_key.clone(),
        managed_by: m.managed_by.clone(),
        interval: m.interval_secs,
        timeout: m.timeout_secs,
        retry_interval: m.retry_interval_secs,
        degraded_after_ms: m.degraded_after_ms,
        heartbeat,
        badge,
        uptime_24h,
        mean_24h,
        checks: checks
            .iter()
            .take(RECENT_CHECKS)
            .map(|c| check_line(now, c))
            .collect(),
    }
    .render();
    page(StatusCode::OK, html)
}

/// The chart's points for `range` (mean response time per bucket, per day for 30 days),
/// with where the chart starts, its span and the bucket's name. With fewer than two
/// aggregated points (a new monitor, a day not rolled up yet) it draws the range's checks
/// one by one from the first of them, so the chart shows from the first timed check.
async fn chart_points(
    state: &AppState,
    monitor_id: &str,
    range: &str,
    rollups: &[crate::store::status_pages::DailyUptimeRow],
    now: i64,
) -> (Vec<(i64, f64)>, i64, i64, &'static str) {
    let (span, bucket, bucket_label): (i64, u32, &str) = match range {
        "1h" => (3_600_000, 60_000, "minute"),
        "7d" => (7 * 86_400_000, 3_600_000, "hour"),
        "30d" => (30 * 86_400_000, 86_400_000, "day"),
        _ => (86_400_000, 900_000, "quarter hour"),
    };
    let points: Vec<(i64, f64)> = if range == "30d" {
        rollups
            .iter()
            .filter(|d| d.response_count > 0)
            .map(|d| {
                (
                    i64::from(d.day) * 86_400_000,
                    d.response_ms_sum as f64 / f64::from(d.response_count),
                )
            })
            .collect()
    } else {
        state
            .store
            .summaries(vec![monitor_id.to_string()], now - span, bucket)
            .await
            .unwrap_or_default()
            .into_iter()
            .filter_map(|s| Some((s.hour * i64::from(bucket), s.mean_response_ms?)))
            .collect()
    };
    if points.len() >= 2 {
        return (points, now - span, span, bucket_label);
    }
    let page = Page {
        page: 1,
        limit: CHART_CHECKS,
    };
    let checks = state
        .store
        .list_checks(monitor_id, Some(now - span), Some(now), page)
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let each: Vec<(i64, f64)> = checks
        .iter()
        .filter_map(|c| Some((c.checked_at, f64::from(c.response_time_ms?))))
        .collect();
    let first = each.iter().map(|(t, _)| *t).min().unwrap_or(now - span);
    (each, first, (now - first).max(1_000), "check")
}

/// The heartbeat bar: `checks` (newest first) oldest first, coloured by result, a check
/// made under maintenance marked as such.
/// A check as a row of a table of checks.
fn check_line(now: i64, c: &crate::store::checks::CheckRow) -> CheckLine {
    CheckLine {
        at: ago(now, c.checked_at),
        at_iso: crate::time::format_ms(c.checked_at),
        ok: c.ok,
        response: c
            .response_time_ms
            .map_or_else(|| "–".into(), |ms| format!("{ms} ms")),
        region: c.region.clone(),
        reason: c.reason.clone().unwrap_or_default(),
    }
}

fn beats(now: i64, checks: &[crate::store::checks::CheckRow]) -> Vec<Beat> {
    checks
        .iter()
        .rev()
        .map(|c| {
            let css = if c.maintenance {
                "maintenance"
            } else if c.ok {
                "up"
            } else {
                "down"
            };
            let result = if c.maintenance {
                "under maintenance".to_string()
            } else if c.ok {
                "ok".to_string()
            } else {
                format!(
                    "failed: {}",
                    c.reason.as_deref().unwrap_or("no reason given")
                )
            };
            let response = c
                .response_time_ms
                .map_or_else(|| "no response".into(), |ms| format!("{ms} ms"));
            Beat {
                css,
                tip: format!("{}, {response}, {result}", ago(now, c.checked_at)),
            }
        })
        .collect()
}

/// The response-time chart (600 by 150) over `span` from `from`: the line through the
/// points, a dot for each when there are few of them (one point is a dot alone).
fn chart_line(points: Vec<(i64, f64)>, from: i64, span: i64, checks: &[i32]) -> Chart {
    // The median and 95th percentile are the range's checks' when there are any (a point
    // of a long range is a mean of many checks, and the mean of means hides the slow
    // ones), the plotted points' otherwise.
    let mut values: Vec<f64> = if checks.len() >= 2 {
        checks.iter().map(|ms| f64::from(*ms)).collect()
    } else {
        points.iter().map(|(_, v)| *v).collect()
    };
    values.sort_by(f64::total_cmp);
    let quantiles: Vec<(&str, f64)> = if values.len() < 2 {
        Vec::new()
    } else {
        [("median", 0.5), ("p95", 0.95)]
            .into_iter()
            .map(|(name, q)| (name, quantile(&values, q)))
            .collect()
    };
    // The scale holds the line and the reference lines.
    let max = points
        .iter()
        .map(|(_, v)| *v)
        .chain(quantiles.iter().map(|(_, v)| *v))
        .fold(1.0, f64::max);
    let mut sorted = points;
    sorted.sort_by_key(|(t, _)| *t);
    let placed: Vec<(f64, f64)> = sorted
        .iter()
        .map(|(t, v)| {
            let x = ((t - from) as f64 / span as f64 * 600.0).clamp(0.0, 600.0);
            (x, 150.0 - v / max * 130.0)
        })
        .collect();
    let line = if placed.len() < 2 {
        String::new()
    } else {
        placed
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let dots = if placed.len() <= 60 {
        placed
            .iter()
            .map(|(x, y)| (format!("{x:.1}"), format!("{y:.1}")))
            .collect()
    } else {
        Vec::new()
    };
    let marks = quantiles
        .into_iter()
        .map(|(name, v)| {
            (
                format!("{name} {v:.0} ms"),
                format!("{:.1}", 150.0 - v / max * 130.0),
            )
        })
        .collect();
    Chart {
        line,
        dots,
        max,
        marks,
        bands: Vec::new(),
        maintenance: Vec::new(),
        ticks: Vec::new(),
        half: (max / 2.0).round() as i64,
    }
}

/// The `q` quantile of sorted values (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The incidents within the chart's range, as shaded spans.
fn bands(
    incidents: &[crate::store::IncidentRow],
    from: i64,
    span: i64,
    now: i64,
) -> Vec<(String, String, String)> {
    let x = |t: i64| ((t - from) as f64 / span as f64 * 600.0).clamp(0.0, 600.0);
    incidents
        .iter()
        .filter(|i| i.resolved_at.unwrap_or(now) > from)
        .map(|i| {
            let (a, b) = (x(i.created_at), x(i.resolved_at.unwrap_or(now)));
            (
                format!("{a:.1}"),
                format!("{:.1}", (b - a).max(2.0)),
                format!("Incident from {}", crate::time::format_ms(i.created_at)),
            )
        })
        .collect()
}

/// Most maintenance occurrences shaded on one chart (an hourly window over 30 days is 720).
const CHART_MAINTENANCE: usize = 200;

/// The occurrences of the maintenance windows that cover `m` within the chart's range, as
/// shaded spans (the checks they hold back are not counted against its uptime).
async fn maintenance_bands(
    state: &AppState,
    m: &crate::store::MonitorRow,
    from: i64,
    span: i64,
    now: i64,
) -> Vec<(String, String, String)> {
    let rows = state
        .store
        .maintenance_windows_of(vec![m.workspace_id.clone()])
        .await
        .unwrap_or_default();
    let x = |t: i64| ((t - from) as f64 / span as f64 * 600.0).clamp(0.0, 600.0);
    let mut out = Vec::new();
    for row in &rows {
        let Ok(window) = crate::engine::maintenance::Window::from_row(row) else {
            continue;
        };
        if !window.covers(m) {
            continue;
        }
        for o in window.occurrences(
            from,
            now,
            CHART_MAINTENANCE - out.len().min(CHART_MAINTENANCE),
        ) {
            let (a, b) = (x(o.start), x(o.end.min(now)));
            out.push((
                format!("{a:.1}"),
                format!("{:.1}", (b - a).max(2.0)),
                format!(
                    "Maintenance \u{201c}{}\u{201d} from {} to {}",
                    window.name,
                    crate::time::format_ms(o.start),
                    crate::time::format_ms(o.end)
                ),
            ));
        }
    }
    out
}

/// Labels of the time axis: the range's start, middle and end.
fn ticks(from: i64, span: i64, range: &str) -> Vec<(String, &'static str, String)> {
    let label = |t: i64| {
        let iso = crate::time::format_ms(t);
        match range {
            "1h" | "24h" => iso[11..16].to_string(),
            _ => iso[5..10].to_string(),
        }
    };
    vec![
        ("2".into(), "start", label(from)),
        ("300".into(), "middle", label(from + span / 2)),
        ("598".into(), "end", label(from + span)),
    ]
}

/// A line per day with checks, oldest first.
fn day_lines(rollups: &[crate::store::status_pages::DailyUptimeRow]) -> Vec<DayLine> {
    let mut days: Vec<DayLine> = rollups
        .iter()
        .filter(|d| d.total > 0)
        .map(|d| {
            let pct = f64::from(d.up) * 100.0 / f64::from(d.total);
            DayLine {
                date: crate::time::format_ms(i64::from(d.day) * 86_400_000)[..10].to_string(),
                text: format!("{pct:.1} %"),
                css: if pct >= 99.9 {
                    "up"
                } else if pct >= 95.0 {
                    "pending"
                } else {
                    "down"
                },
            }
        })
        .collect();
    days.sort_by(|a, b| a.date.cmp(&b.date));
    days
}

#[derive(Template)]
#[template(path = "monitor_form.html")]
struct MonitorForm {
    layout: Layout,
    monitor_id: Option<String>,
    kind: String,
    top_level: bool,
    types: Vec<(String, String)>,
    name: String,
    tags: String,
    interval: u32,
    timeout: u32,
    /// Seconds from a failing check to the next (None: the interval).
    retry_interval: Option<u32>,
    /// Slow above this many milliseconds (None: never degraded).
    degraded_after_ms: Option<u32>,
    /// The workspace's alert policies (id, name) and the one the monitor uses.
    policies: Vec<(String, String)>,
    /// The workspace's channels (id, name), each offered as a new policy made in the same
    /// step as the monitor.
    channels: Vec<(String, String)>,
    policy: String,
    /// Other monitors it may depend on: (id, name, chosen).
    parents: Vec<(String, String, bool)>,
    fields: Vec<forms::Field>,
}

/// Fields every monitor has, outside its plugin's settings.
const MONITOR_FIELDS: [&str; 10] = [
    "name",
    "type",
    "interval",
    "retryInterval",
    "timeout",
    "degradedAfterMs",
    "alertPolicyId",
    "regions",
    "regionalConfirmation",
    "paused",
];

/// Monitors offered as choices on a form (status pages, maintenance, dependencies).
const MONITOR_CHOICES: u64 = 200;

/// The workspace's first [`MONITOR_CHOICES`] monitors by name, as (id, name), and how many
/// it has in all (more than were listed: the form says so).
/// The channels a form offers (id, name): the workspace's first 100, newest first.
pub(crate) async fn channel_choices(state: &AppState, workspace_id: &str) -> Vec<(String, String)> {
    state
        .store
        .list_channels(
            workspace_id,
            Page {
                page: 1,
                limit: 100,
            },
        )
        .await
        .map(|(rows, _)| rows.into_iter().map(|r| (r.id, r.name)).collect())
        .unwrap_or_default()
}

pub(crate) async fn monitor_choices(
    state: &AppState,
    workspace_id: &str,
) -> (Vec<(String, String)>, u64) {
    let (rows, total) = state
        .store
        .list_monitors(
            workspace_id,
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
    (rows.into_iter().map(|m| (m.id, m.name)).collect(), total)
}

/// 404 page: no such `what` in the person's workspace.
pub(crate) fn not_found(layout: Layout, what: &str) -> Response {
    let message = format!("There is no such {what} in this workspace.");
    page(
        StatusCode::NOT_FOUND,
        ErrorPage {
            layout,
            title: "Not found",
            message: &message,
        }
        .render(),
    )
}

/// 403 page for a viewer on a page that changes `what`.
pub(crate) fn read_only(layout: Layout, what: &str) -> Response {
    let message = format!("Your role in this workspace can look but not change {what}.");
    page(
        StatusCode::FORBIDDEN,
        ErrorPage {
            layout,
            title: "Read only",
            message: &message,
        }
        .render(),
    )
}

/// 503 page while the database cannot be reached.
pub(crate) fn unavailable(layout: Layout) -> Response {
    page(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorPage {
            layout,
            title: "Unavailable",
            message: "The database cannot be reached right now; try again in a moment.",
        }
        .render(),
    )
}

#[derive(Debug, Default, Deserialize)]
pub struct NewQuery {
    #[serde(rename = "type")]
    kind: Option<String>,
}

async fn new_monitor(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<NewQuery>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "overview").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    if p.role == crate::store::keys::Role::Read {
        return read_only(layout, "monitors");
    }
    monitor_form(&state, &p, layout, None, q.kind).await
}

async fn edit_monitor(
    State(state): State<AppState>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "overview").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    if p.role == crate::store::keys::Role::Read {
        return read_only(layout, "monitors");
    }
    let Ok(Some(m)) = state.store.monitor(&p.workspace_id, &id).await else {
        return not_found(layout, "monitor");
    };
    let kind = Some(m.kind.clone());
    monitor_form(&state, &p, layout, Some(m), kind).await
}

async fn monitor_form(
    state: &AppState,
    p: &Principal,
    layout: Layout,
    monitor: Option<crate::store::MonitorRow>,
    kind: Option<String>,
) -> Response {
    let mut types: Vec<(String, String, serde_json::Value)> = state
        .plugins
        .descriptions()
        .into_iter()
        .filter(|d| d.kind == "monitor")
        .map(|d| (d.name, d.description, d.config_schema))
        .collect();
    types.sort_by(|a, b| a.0.cmp(&b.0));
    let kind = kind
        .filter(|k| types.iter().any(|t| t.0 == *k))
        .or_else(|| {
            types
                .iter()
                .find(|t| t.0 == crate::plugins::builtin::HTTP)
                .map(|t| t.0.clone())
        })
        .or_else(|| types.first().map(|t| t.0.clone()))
        .unwrap_or_default();
    let schema = types
        .iter()
        .find(|t| t.0 == kind)
        .map(|t| t.2.clone())
        .unwrap_or_default();
    // Write-only fields (passwords) are never put in the page; left empty, an edit keeps them.
    let current: Option<serde_json::Map<String, serde_json::Value>> = monitor
        .as_ref()
        .and_then(|m| serde_json::from_str(&m.config).ok())
        .map(|mut c: serde_json::Map<String, serde_json::Value>| {
            for name in state.plugins.monitor_write_only_fields(&kind) {
                c.remove(&name);
            }
            c
        });
    let mut fields = forms::fields(&schema, current.as_ref(), &MONITOR_FIELDS);
    if let (Some(m), Some(shown)) = (&monitor, &current) {
        forms::mark_kept(&mut fields, &forms::left_out(&m.config, shown));
    }
    let policies = state
        .store
        .list_alert_policies(
            &p.workspace_id,
            Page {
                page: 1,
                limit: 500,
            },
        )
        .await
        .map(|(rows, _)| rows.into_iter().map(|r| (r.id, r.name)).collect())
        .unwrap_or_default();
    let channels = channel_choices(state, &p.workspace_id).await;
    let chosen = monitor.as_ref().map(|m| m.parent_ids()).unwrap_or_default();
    let own_id = monitor.as_ref().map(|m| m.id.clone()).unwrap_or_default();
    let parents = monitor_choices(state, &p.workspace_id)
        .await
        .0
        .into_iter()
        .filter(|(id, _)| *id != own_id)
        .map(|(id, name)| {
            let on = chosen.contains(&id);
            (id, name, on)
        })
        .collect();
    let html = MonitorForm {
        parents,
        policies,
        channels,
        policy: monitor
            .as_ref()
            .and_then(|m| m.alert_policy_id.clone())
            .unwrap_or_default(),
        layout,
        monitor_id: monitor.as_ref().map(|m| m.id.clone()),
        top_level: state.plugins.fields_at_top_level(&kind),
        kind,
        types: types.into_iter().map(|(n, d, _)| (n, d)).collect(),
        name: monitor.as_ref().map(|m| m.name.clone()).unwrap_or_default(),
        tags: monitor
            .as_ref()
            .map(|m| m.tag_list().join(", "))
            .unwrap_or_default(),
        interval: monitor
            .as_ref()
            .map_or(60, |m| u32::try_from(m.interval_secs).unwrap_or(60)),
        timeout: monitor
            .as_ref()
            .map_or(10, |m| u32::try_from(m.timeout_secs).unwrap_or(10)),
        retry_interval: monitor
            .as_ref()
            .and_then(|m| m.retry_interval_secs)
            .and_then(|r| u32::try_from(r).ok()),
        degraded_after_ms: monitor
            .as_ref()
            .and_then(|m| m.degraded_after_ms)
            .and_then(|d| u32::try_from(d).ok()),
        fields,
    }
    .render();
    page(StatusCode::OK, html)
}

async fn script() -> Response {
    crate::api::pages::asset(
        include_str!("dashboard.js"),
        "text/javascript; charset=utf-8",
    )
}

async fn style() -> Response {
    crate::api::pages::asset(include_str!("dashboard.css"), "text/css; charset=utf-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_marks_quantiles_and_labels_its_axes() {
        let sorted = [1.0, 2.0, 3.0, 4.0, 100.0];
        assert_eq!(quantile(&sorted, 0.5), 3.0);
        assert_eq!(quantile(&sorted, 0.95), 100.0);
        let points = vec![(0, 10.0), (60_000, 20.0), (120_000, 30.0)];
        let chart = chart_line(points.clone(), 0, 120_000, &[]);
        let labels: Vec<&str> = chart.marks.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["median 20 ms", "p95 30 ms"]);
        assert_eq!(chart.half, 15);
        // With the range's checks, theirs: three points are means of many checks, one in
        // ten of which took 400 ms; the scale rises to show that line.
        let mut checks = vec![10; 90];
        checks.extend([400; 10]);
        let chart = chart_line(points, 0, 120_000, &checks);
        let labels: Vec<&str> = chart.marks.iter().map(|(l, _)| l.as_str()).collect();
        assert_eq!(labels, ["median 10 ms", "p95 400 ms"]);
        assert_eq!(chart.half, 200);
        assert_eq!(chart.marks[1].1, "20.0", "p95 at the top of the scale");
        let t = ticks(0, 3_600_000, "1h");
        assert_eq!(
            t.iter().map(|(_, _, l)| l.as_str()).collect::<Vec<_>>(),
            ["00:00", "00:30", "01:00"]
        );
    }

    #[test]
    fn spans_read_as_people_say_them() {
        assert_eq!(span(30), "30 s");
        assert_eq!(span(90), "1 min 30 s");
        assert_eq!(span(300), "5 min");
        assert_eq!(span(3600), "1 h");
        assert_eq!(span(5400), "1 h 30 min");
        assert_eq!(span(725), "12 min");
        assert_eq!(span(86_400), "1 d");
        assert_eq!(span(108_000), "1 d 6 h");
    }

    #[test]
    fn times_read_as_ago() {
        assert_eq!(ago(10_000, 5_000), "5 s ago");
        assert_eq!(ago(3_600_000, 0), "1 h ago");
        assert_eq!(ago(0, 10), "0 s ago");
    }

    #[test]
    fn names_are_escaped() {
        let html = ErrorPage {
            layout: Layout {
                csrf: "t".into(),
                workspace_id: "ws_1".into(),
                workspaces: vec![("ws_1".into(), "<b>ws</b>".into())],
                workspace: "<b>ws</b>".into(),
                role: "owner".into(),
                email: "a@b.c".into(),
                section: "overview",
            },
            title: "x",
            message: "<script>alert(1)</script>",
        }
        .render()
        .expect("render");
        assert!(!html.contains("<script>alert"), "{html}");
        assert!(
            html.contains("&#60;script&#62;") || html.contains("&lt;script&gt;"),
            "{html}"
        );
        assert!(!html.contains("<b>ws</b>"));
    }
}
