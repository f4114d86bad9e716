//! Uptime reports: `GET /v1/reports/uptime`, per monitor over a period, as JSON, CSV, a
//! printable HTML page or a PDF ([`pdf`]), with the accounting rules written on the report.
//!
//! Uptime here is time, not a share of checks: each stretch between two checks takes the
//! state of the earlier one, so a failure counts from the first failing check to the first
//! passing one. Checks taken in a maintenance window make their stretch maintenance, which
//! counts neither way. A check that did not count (a failure another region did not
//! confirm: the probe's trouble, not the target's) does not change the state. A stretch
//! longer than two intervals (a paused monitor, a stopped server) counts its first two
//! intervals and leaves the rest unmonitored, as is the time before the period's first
//! check.

use super::AppState;
use super::envelope::{Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError, OrNotFound, Resource};
use super::extract::ApiQuery;
use super::paging;
use crate::store::MonitorRow;
use crate::store::incidents::IncidentRow;
use crate::store::keys::Principal;
use axum::Extension;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

mod pdf;

/// Monitors one report covers at most.
const MAX_MONITORS: usize = 200;
/// The longest period of one report.
const MAX_PERIOD_MS: i64 = 366 * 86_400_000;
/// Checks read per query.
const BATCH: u64 = 5_000;

/// The rules, as the report states them.
pub const RULES: [&str; 6] = [
    "Uptime is time: each stretch between two checks takes the state of the earlier check, so a failure counts from the first failing check to the first passing one.",
    "Time in a maintenance window (checks taken during maintenance) counts neither as up nor as down.",
    "A failure that did not count (another region did not confirm it: the probe's trouble, not the target's) does not change the state.",
    "A gap longer than two intervals (a paused monitor, a stopped server) counts its first two intervals; the rest is unmonitored. A heartbeat monitor's gap is measured against its period and grace.",
    "The period starts in the state of the last check before it (if that check is within two intervals); time not yet come is not counted.",
    "Response times are those of the counted checks: the median and the 95th percentile (nearest rank).",
];

/// Query of an uptime report.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct ReportParams {
    /// Monitor ids, comma-separated.
    pub monitor_ids: Option<String>,
    /// Every monitor with this tag.
    pub tag: Option<String>,
    /// Every monitor the status page shows.
    pub status_page_id: Option<String>,
    /// Period start (ISO 8601), included.
    pub from: String,
    /// Period end (ISO 8601), excluded; at most 366 days after `from`.
    pub to: String,
    /// The uptime target in percent (e.g. 99.9) for every monitor of the report, in place
    /// of each monitor's own `slaTarget`: each is marked met or missed.
    pub target: Option<f64>,
    /// `json` (default), `csv` (one row per monitor), `html` (a printable page) or `pdf`
    /// (a document with a chart of each monitor's uptime against its target).
    pub format: Option<String>,
}

/// One monitor's figures over the period.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitorReport {
    pub monitor_id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    /// Up time over up and down time, in percent; null when neither was measured.
    pub uptime_percent: Option<f64>,
    pub up_seconds: i64,
    pub down_seconds: i64,
    pub maintenance_seconds: i64,
    pub unmonitored_seconds: i64,
    /// Checks that counted, and how many of them failed.
    pub checks: u64,
    pub failed_checks: u64,
    pub median_response_time_ms: Option<i32>,
    pub p95_response_time_ms: Option<i32>,
    /// The target it is held to: the report's `target`, else the monitor's `slaTarget`.
    pub target_percent: Option<f64>,
    /// Whether the uptime reached the target (null without a target or a measured uptime).
    pub target_met: Option<bool>,
    /// Incidents open at any time in the period, oldest first.
    pub incidents: Vec<ReportIncident>,
}

/// An incident as a report lists it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportIncident {
    pub id: String,
    pub started_at: String,
    /// Null while it is open.
    pub resolved_at: Option<String>,
    /// Its time within the period (to the period's end, or now, while open).
    pub seconds_in_period: i64,
}

/// An uptime report.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UptimeReport {
    pub from: String,
    pub to: String,
    /// The report's `target`, when one was asked for (each monitor says its own).
    pub target_percent: Option<f64>,
    /// How the figures are counted.
    pub rules: Vec<String>,
    pub monitors: Vec<MonitorReport>,
}

/// An uptime report of some monitors over a period.
#[utoipa::path(get, path = "/v1/reports/uptime", tag = "reports",
    params(ReportParams),
    responses(
        (status = 200, description = "The report (JSON), or the same as CSV or a printable HTML page",
            content((SuccessBody<UptimeReport> = "application/json"), (String = "text/csv"), (String = "text/html"), (Vec<u8> = "application/pdf"))),
        (status = 400, description = "Invalid parameters (a period starting before the checks kept, not exactly one of monitorIds, tag and statusPageId, more than 200 monitors)", body = ErrorBody),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND or MONITOR_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn uptime_report(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(q): ApiQuery<ReportParams>,
) -> Result<Response, ApiError> {
    let report = build(&state, &p, &q).await?;
    let format = q.format.as_deref().unwrap_or("json");
    Ok(match format {
        "csv" => download(
            "text/csv; charset=utf-8",
            "csv",
            &report,
            csv_text(&report).map_err(|e| ApiError::internal(format!("writing CSV: {e}")))?,
        ),
        "pdf" => {
            // Drawing pages is CPU work: off the async threads.
            let (bytes, report) = tokio::task::spawn_blocking(move || (pdf::render(&report), report))
                .await
                .map_err(|_| ApiError::internal("writing the PDF failed"))?;
            download("application/pdf", "pdf", &report, bytes)
        }
        "html" => (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                // A page of its own: its inline style, nothing else, never framed.
                (
                    header::CONTENT_SECURITY_POLICY,
                    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
                ),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            html_text(&report),
        )
            .into_response(),
        _ => Success::ok(report).into_response(),
    })
}

/// Check the query and work out the report (the API's and the dashboard's).
pub async fn build(
    state: &AppState,
    p: &Principal,
    q: &ReportParams,
) -> Result<UptimeReport, ApiError> {
    let mut errors = Vec::new();
    let from = paging::timestamp("from", Some(&q.from), &mut errors);
    let to = paging::timestamp("to", Some(&q.to), &mut errors);
    if let (Some(from), Some(to)) = (from, to) {
        if to <= from {
            errors.push(FieldError::new("to", "must be after `from`"));
        } else if to - from > MAX_PERIOD_MS {
            errors.push(FieldError::new(
                "to",
                "must be at most 366 days after `from`",
            ));
        }
    }
    if let Some(t) = q.target
        && !(t > 0.0 && t <= 100.0)
    {
        errors.push(FieldError::new(
            "target",
            "must be a percentage above 0 and at most 100",
        ));
    }
    let format = q.format.as_deref().unwrap_or("json");
    if !matches!(format, "json" | "csv" | "html" | "pdf") {
        errors.push(FieldError::new("format", "must be json, csv, html or pdf"));
    }
    let chosen = [
        q.monitor_ids.is_some(),
        q.tag.is_some(),
        q.status_page_id.is_some(),
    ]
    .iter()
    .filter(|c| **c)
    .count();
    if q.tag.as_deref().is_some_and(|t| t.trim().is_empty()) {
        errors.push(FieldError::new("tag", "must not be empty"));
    }
    if chosen != 1 {
        errors.push(FieldError::new(
            "monitorIds",
            "choose the monitors with exactly one of monitorIds, tag or statusPageId",
        ));
    }
    let now = state.clock.now_ms();
    let days = i64::from(state.config.retention.checks_days);
    if let Some(from) = from
        && days > 0
        && from < now - days * 86_400_000
    {
        errors.push(FieldError::new(
            "from",
            format!(
                "checks older than {days} days are removed (retention.checks_days): start on or after {}",
                crate::time::format_ms(now - days * 86_400_000)
            ),
        ));
    }
    paging::finish(errors)?;
    let (Some(from), Some(to)) = (from, to) else {
        return Err(ApiError::internal("validated period missing"));
    };
    let monitors = chosen_monitors(state, p, q).await?;
    if monitors.len() > MAX_MONITORS {
        return Err(ApiError::validation(vec![FieldError::new(
            "monitorIds",
            format!(
                "a report covers at most {MAX_MONITORS} monitors; {} were chosen",
                monitors.len()
            ),
        )]));
    }
    let mut rows = Vec::with_capacity(monitors.len());
    for m in &monitors {
        rows.push(monitor_report(state, m, from, to, now, q.target).await?);
    }
    let report = UptimeReport {
        from: crate::time::format_ms(from),
        to: crate::time::format_ms(to),
        target_percent: q.target,
        rules: RULES.iter().map(|r| r.to_string()).collect(),
        monitors: rows,
    };
    Ok(report)
}

fn download(
    content_type: &str,
    extension: &str,
    report: &UptimeReport,
    body: impl Into<axum::body::Body>,
) -> Response {
    let day = |t: &str| t.get(..10).unwrap_or(t).to_string();
    (
        [
            (header::CONTENT_TYPE, content_type.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!(
                    "attachment; filename=\"uptime-{}-{}.{extension}\"",
                    day(&report.from),
                    day(&report.to)
                ),
            ),
        ],
        body.into(),
    )
        .into_response()
}

/// The monitors the query names, in name order; every id must be the workspace's.
async fn chosen_monitors(
    state: &AppState,
    p: &Principal,
    q: &ReportParams,
) -> Result<Vec<MonitorRow>, ApiError> {
    let ws = &p.workspace_id;
    let mut monitors = if let Some(ids) = &q.monitor_ids {
        let ids: std::collections::BTreeSet<String> = ids
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if ids.is_empty() || ids.len() > MAX_MONITORS {
            return Err(ApiError::validation(vec![FieldError::new(
                "monitorIds",
                format!("name between 1 and {MAX_MONITORS} monitors"),
            )]));
        }
        let found = state
            .store
            .monitors_by_id(ws, ids.iter().cloned().collect())
            .await?;
        let known: std::collections::BTreeSet<&str> = found.iter().map(|m| m.id.as_str()).collect();
        if let Some(missing) = ids.iter().find(|id| !known.contains(id.as_str())) {
            return Err(Resource::MONITOR.not_found(missing));
        }
        found
    } else if let Some(page_id) = &q.status_page_id {
        let page = state
            .store
            .status_page(ws, page_id)
            .await?
            .or_not_found(Resource::STATUS_PAGE, page_id)?;
        let ids: Vec<String> = serde_json::from_str(&page.monitor_ids).unwrap_or_default();
        state.store.monitors_by_id(ws, ids).await?
    } else {
        let tag = q.tag.clone().unwrap_or_default();
        state.store.monitors_with_tag(ws, &tag).await?
    };
    monitors.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.id.cmp(&b.id)));
    Ok(monitors)
}

async fn monitor_report(
    state: &AppState,
    m: &MonitorRow,
    from: i64,
    to: i64,
    now: i64,
    target: Option<f64>,
) -> Result<MonitorReport, ApiError> {
    let end = to.min(now).max(from);
    let mut tally = Tally::new(from, vouched_ms(m));
    if let Some(c) = state.store.check_before(&m.id, from).await? {
        tally.prior(Check {
            at: c.checked_at,
            ok: c.ok,
            counted: c.counted,
            maintenance: c.maintenance,
            response_ms: None,
        });
    }
    let mut after = None;
    loop {
        let batch = state
            .store
            .checks_after(&m.id, Some(from), Some(end - 1), after, BATCH)
            .await?;
        for c in &batch {
            tally.check(Check {
                at: c.checked_at,
                ok: c.ok,
                counted: c.counted,
                maintenance: c.maintenance,
                response_ms: c.response_time_ms,
            });
        }
        if (batch.len() as u64) < BATCH {
            break;
        }
        after = batch.last().map(|c| (c.checked_at, c.id.clone()));
    }
    let figures = tally.finish(end);
    let incidents = state
        .store
        .incidents_overlapping(&m.workspace_id, &m.id, from, to)
        .await?
        .iter()
        .map(|i| report_incident(i, from, end))
        .collect();
    let uptime = figures.uptime_percent();
    let target = target.or(m.sla_target_ppm.map(super::monitor_input::ppm_percent));
    Ok(MonitorReport {
        monitor_id: m.id.clone(),
        name: m.name.clone(),
        kind: m.kind.clone(),
        uptime_percent: uptime,
        up_seconds: seconds(figures.up_ms),
        down_seconds: seconds(figures.down_ms),
        maintenance_seconds: seconds(figures.maintenance_ms),
        unmonitored_seconds: seconds(figures.unmonitored_ms),
        checks: figures.checks,
        failed_checks: figures.failed,
        median_response_time_ms: figures.percentile(0.5),
        p95_response_time_ms: figures.percentile(0.95),
        target_percent: target,
        target_met: target.zip(uptime).map(|(t, u)| u >= t),
        incidents,
    })
}

fn report_incident(i: &IncidentRow, from: i64, end: i64) -> ReportIncident {
    let stop = i.resolved_at.unwrap_or(end).min(end);
    ReportIncident {
        id: i.id.clone(),
        started_at: crate::time::format_ms(i.created_at),
        resolved_at: i.resolved_at.map(crate::time::format_ms),
        seconds_in_period: seconds((stop - i.created_at.max(from)).max(0)),
    }
}

/// How long one check vouches for: two intervals; for a heartbeat monitor, two periods
/// and its grace (a missed ping is recorded at the deadline), or, on a cron schedule, a
/// month and its grace (its checks come at the schedule's own pace).
fn vouched_ms(m: &MonitorRow) -> i64 {
    let interval = i64::from(m.interval_secs).max(1) * 1000;
    if m.kind != "heartbeat" {
        return 2 * interval;
    }
    let config: serde_json::Value = serde_json::from_str(&m.config).unwrap_or_default();
    let seconds = |name: &str| config.get(name).and_then(serde_json::Value::as_i64);
    let grace = seconds("grace").unwrap_or(0).max(0) * 1000;
    match seconds("period") {
        Some(period) if config.get("cron").is_none_or(serde_json::Value::is_null) => {
            2 * period.max(1) * 1000 + grace
        }
        _ => 31 * 86_400_000 + grace,
    }
}

/// Milliseconds as whole seconds, rounded.
fn seconds(ms: i64) -> i64 {
    (ms + 500).div_euclid(1000)
}

/// One check, as the accounting needs it.
#[derive(Debug, Clone, Copy)]
pub struct Check {
    pub at: i64,
    pub ok: bool,
    pub counted: bool,
    pub maintenance: bool,
    pub response_ms: Option<i32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stretch {
    Up,
    Down,
    Maintenance,
    Unmonitored,
}

/// The period's figures, built one check at a time in time order.
#[derive(Debug)]
pub struct Tally {
    /// Where the time counted so far ends, and what the stretch from there is.
    at: i64,
    stretch: Stretch,
    /// Whether the last counted check failed (None before the first).
    failing: Option<bool>,
    /// The longest stretch a check vouches for.
    cap_ms: i64,
    pub up_ms: i64,
    pub down_ms: i64,
    pub maintenance_ms: i64,
    pub unmonitored_ms: i64,
    pub checks: u64,
    pub failed: u64,
    /// Counted checks by response time (ms): exact percentiles in the space of the
    /// distinct times, not of the checks.
    times: std::collections::BTreeMap<i32, u64>,
    /// What the first stretch may still vouch for (less when it began before `from`).
    first_cap_ms: Option<i64>,
}

impl Tally {
    /// A tally of a period starting at `from`, where one check vouches for at most
    /// `vouch_ms` (see [`vouched_ms`]).
    pub fn new(from: i64, vouch_ms: i64) -> Tally {
        Tally {
            at: from,
            stretch: Stretch::Unmonitored,
            failing: None,
            cap_ms: vouch_ms,
            up_ms: 0,
            down_ms: 0,
            maintenance_ms: 0,
            unmonitored_ms: 0,
            checks: 0,
            failed: 0,
            times: std::collections::BTreeMap::new(),
            first_cap_ms: None,
        }
    }

    /// Start from the last check before the period: its state holds from the period's
    /// start for what is left of its two intervals. It is not one of the period's checks.
    pub fn prior(&mut self, c: Check) {
        let left = self.cap_ms - (self.at - c.at);
        if left <= 0 {
            return;
        }
        self.stretch = if c.maintenance {
            Stretch::Maintenance
        } else {
            if c.counted {
                self.failing = Some(!c.ok);
            }
            match self.failing {
                Some(true) => Stretch::Down,
                Some(false) => Stretch::Up,
                None => Stretch::Unmonitored,
            }
        };
        self.first_cap_ms = Some(left);
    }

    /// Count the time up to `until` as the current stretch (the first two intervals of
    /// it; the rest unmonitored).
    fn close(&mut self, until: i64) {
        let span = (until - self.at).max(0);
        let cap = self.first_cap_ms.take().unwrap_or(self.cap_ms);
        let vouched = if self.stretch == Stretch::Unmonitored {
            0
        } else {
            span.min(cap)
        };
        match self.stretch {
            Stretch::Up => self.up_ms += vouched,
            Stretch::Down => self.down_ms += vouched,
            Stretch::Maintenance => self.maintenance_ms += vouched,
            Stretch::Unmonitored => {}
        }
        self.unmonitored_ms += span - vouched;
        self.at = self.at.max(until);
    }

    pub fn check(&mut self, c: Check) {
        self.close(c.at);
        self.stretch = if c.maintenance {
            Stretch::Maintenance
        } else {
            if c.counted {
                self.failing = Some(!c.ok);
                self.checks += 1;
                if !c.ok {
                    self.failed += 1;
                }
                if let Some(ms) = c.response_ms {
                    *self.times.entry(ms).or_default() += 1;
                }
            }
            match self.failing {
                Some(true) => Stretch::Down,
                Some(false) => Stretch::Up,
                None => Stretch::Unmonitored,
            }
        };
    }

    /// The figures, with the time from the last check to `end` counted.
    pub fn finish(mut self, end: i64) -> Tally {
        self.close(end);
        self
    }

    pub fn uptime_percent(&self) -> Option<f64> {
        let measured = self.up_ms + self.down_ms;
        (measured > 0).then(|| self.up_ms as f64 * 100.0 / measured as f64)
    }

    /// Nearest-rank percentile of the counted checks' response times.
    pub fn percentile(&self, q: f64) -> Option<i32> {
        let total: u64 = self.times.values().sum();
        let rank = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        self.times.iter().find_map(|(ms, n)| {
            seen += n;
            (seen >= rank).then_some(*ms)
        })
    }
}

/// The CSV columns, in order.
pub const CSV_COLUMNS: [&str; 15] = [
    "monitorId",
    "name",
    "type",
    "uptimePercent",
    "targetPercent",
    "targetMet",
    "upSeconds",
    "downSeconds",
    "maintenanceSeconds",
    "unmonitoredSeconds",
    "checks",
    "failedChecks",
    "medianResponseTimeMs",
    "p95ResponseTimeMs",
    "incidents",
];

/// A cell a spreadsheet would not run as a formula: text starting with `=`, `+`, `-`, `@`,
/// a tab or a carriage return gets a leading `'`.
fn cell(text: &str) -> String {
    if text.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        format!("'{text}")
    } else {
        text.to_string()
    }
}

fn csv_text(report: &UptimeReport) -> Result<String, csv::Error> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(CSV_COLUMNS)?;
    let opt = |v: Option<String>| v.unwrap_or_default();
    for m in &report.monitors {
        w.write_record([
            m.monitor_id.clone(),
            cell(&m.name),
            cell(&m.kind),
            opt(m.uptime_percent.map(|u| format!("{u:.4}"))),
            opt(m.target_percent.map(|t| t.to_string())),
            opt(m.target_met.map(|t| t.to_string())),
            m.up_seconds.to_string(),
            m.down_seconds.to_string(),
            m.maintenance_seconds.to_string(),
            m.unmonitored_seconds.to_string(),
            m.checks.to_string(),
            m.failed_checks.to_string(),
            opt(m.median_response_time_ms.map(|v| v.to_string())),
            opt(m.p95_response_time_ms.map(|v| v.to_string())),
            m.incidents.len().to_string(),
        ])?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A duration as `1 d 2 h 3 min 4 s` (the parts that are not zero).
fn duration_text(total: i64) -> String {
    let parts = [
        (total / 86_400, "d"),
        (total % 86_400 / 3_600, "h"),
        (total % 3_600 / 60, "min"),
        (total % 60, "s"),
    ];
    let text: Vec<String> = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n} {unit}"))
        .collect();
    if text.is_empty() {
        "0 s".into()
    } else {
        text.join(" ")
    }
}

fn html_text(report: &UptimeReport) -> String {
    use crate::text::escape_html as e;
    let mut out = String::new();
    out.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    out.push_str(&format!(
        "<title>Uptime report {} to {}</title>",
        e(&report.from),
        e(&report.to)
    ));
    out.push_str(
        "<style>body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#111}\
         table{border-collapse:collapse;width:100%;margin:1rem 0}\
         th,td{border-bottom:1px solid #ccc;padding:.3rem .5rem;text-align:left}\
         td.n{text-align:right;font-variant-numeric:tabular-nums}\
         .missed{color:#a00;font-weight:600}.met{color:#060}\
         @media print{body{margin:0}}</style></head><body>\n",
    );
    out.push_str(&format!(
        "<h1>Uptime report</h1>\n<p>From {} to {}",
        e(&report.from),
        e(&report.to)
    ));
    if let Some(t) = report.target_percent {
        out.push_str(&format!("; target {t}&nbsp;%"));
    }
    out.push_str("</p>\n<table><thead><tr><th>Monitor</th><th>Uptime</th><th>Target</th><th>Down</th><th>Maintenance</th><th>Unmonitored</th><th>Checks</th><th>Failed</th><th>Median</th><th>p95</th><th>Incidents</th></tr></thead><tbody>\n");
    for m in &report.monitors {
        let uptime = m
            .uptime_percent
            .map_or("no data".into(), |u| format!("{u:.3}&nbsp;%"));
        let verdict = match m.target_met {
            Some(true) => "<span class=\"met\">met</span>",
            Some(false) => "<span class=\"missed\">missed</span>",
            None => "",
        };
        let target = m
            .target_percent
            .map_or(String::new(), |t| format!("{t}&nbsp;% {verdict}"));
        let ms = |v: Option<i32>| v.map_or(String::new(), |v| format!("{v}&nbsp;ms"));
        out.push_str(&format!(
            "<tr><td>{}<br><small>{} · {}</small></td><td class=\"n\">{uptime}</td><td>{target}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
            e(&m.name),
            e(&m.kind),
            e(&m.monitor_id),
            duration_text(m.down_seconds),
            duration_text(m.maintenance_seconds),
            duration_text(m.unmonitored_seconds),
            m.checks,
            m.failed_checks,
            ms(m.median_response_time_ms),
            ms(m.p95_response_time_ms),
            m.incidents.len(),
        ));
    }
    out.push_str("</tbody></table>\n");
    let with_incidents: Vec<&MonitorReport> = report
        .monitors
        .iter()
        .filter(|m| !m.incidents.is_empty())
        .collect();
    if !with_incidents.is_empty() {
        out.push_str("<h2>Incidents</h2>\n<table><thead><tr><th>Monitor</th><th>Started</th><th>Resolved</th><th>In the period</th></tr></thead><tbody>\n");
        for m in with_incidents {
            for i in &m.incidents {
                out.push_str(&format!(
                    "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>\n",
                    e(&m.name),
                    e(&i.started_at),
                    i.resolved_at.as_deref().map_or("open".into(), e),
                    duration_text(i.seconds_in_period),
                ));
            }
        }
        out.push_str("</tbody></table>\n");
    }
    out.push_str("<h2>How it is counted</h2>\n<ul>\n");
    for r in &report.rules {
        out.push_str(&format!("<li>{}</li>\n", e(r)));
    }
    out.push_str("</ul>\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(at: i64, ok: bool) -> Check {
        Check {
            at,
            ok,
            counted: true,
            maintenance: false,
            response_ms: Some(100),
        }
    }

    #[test]
    fn a_failure_counts_from_the_first_failing_check_to_the_first_passing_one() {
        // Checks every 60 s from t=0; fails at 120 and 180, passes again at 240.
        let mut t = Tally::new(0, 120_000);
        for (at, ok) in [
            (0, true),
            (60, true),
            (120, false),
            (180, false),
            (240, true),
        ] {
            t.check(check(at * 1000, ok));
        }
        let t = t.finish(300_000);
        assert_eq!((t.up_ms, t.down_ms), (180_000, 120_000));
        assert_eq!((t.checks, t.failed), (5, 2));
        assert_eq!(t.uptime_percent(), Some(60.0));
    }

    #[test]
    fn maintenance_unconfirmed_failures_and_gaps() {
        let mut t = Tally::new(0, 120_000);
        // Unmonitored until the first check at 30 s.
        t.check(check(30_000, true));
        // A failure another region did not confirm: still up.
        t.check(Check {
            counted: false,
            ..check(90_000, false)
        });
        // Maintenance from 150 s to 210 s.
        t.check(Check {
            maintenance: true,
            counted: false,
            ..check(150_000, false)
        });
        t.check(check(210_000, true));
        // Paused: the next check 600 s later vouches for two intervals only.
        t.check(check(810_000, true));
        let t = t.finish(840_000);
        assert_eq!(t.maintenance_ms, 60_000);
        assert_eq!(t.down_ms, 0);
        assert_eq!(t.up_ms, 120_000 + 120_000 + 30_000);
        assert_eq!(t.unmonitored_ms, 30_000 + 480_000);
        assert_eq!(t.checks, 3);
    }

    #[test]
    fn the_period_starts_in_the_state_of_the_check_before_it() {
        // Down since 30 s before the period; checks every 60 s; passing again at 90 s.
        let mut t = Tally::new(0, 120_000);
        t.prior(check(-30_000, false));
        t.check(check(30_000, false));
        t.check(check(90_000, true));
        let t = t.finish(120_000);
        assert_eq!((t.down_ms, t.up_ms, t.unmonitored_ms), (90_000, 30_000, 0));
        assert_eq!(t.checks, 2, "the check before is not one of the period's");
        // A check before the period older than its two intervals says nothing.
        let mut t = Tally::new(0, 120_000);
        t.prior(check(-200_000, false));
        t.check(check(30_000, true));
        let t = t.finish(60_000);
        assert_eq!((t.down_ms, t.up_ms, t.unmonitored_ms), (0, 30_000, 30_000));
    }

    #[test]
    fn a_prior_stretch_vouches_only_for_what_is_left_of_it() {
        // The check before came 100 s before the period: 20 s of its 120 s are left.
        let mut t = Tally::new(0, 120_000);
        t.prior(check(-100_000, true));
        t.check(check(50_000, true));
        let t = t.finish(50_000);
        assert_eq!((t.up_ms, t.unmonitored_ms), (20_000, 30_000));
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut t = Tally::new(0, 2_000);
        for (i, ms) in [50, 10, 40, 20, 30].into_iter().enumerate() {
            t.check(Check {
                response_ms: Some(ms),
                ..check(i as i64 * 1000, true)
            });
        }
        let t = t.finish(5_000);
        assert_eq!(
            (t.percentile(0.5), t.percentile(0.95)),
            (Some(30), Some(50))
        );
        assert_eq!(Tally::new(0, 1).finish(0).percentile(0.5), None);
    }

    #[test]
    fn durations_read_as_words() {
        assert_eq!(duration_text(0), "0 s");
        assert_eq!(duration_text(90_061), "1 d 1 h 1 min 1 s");
        assert_eq!(duration_text(3_600), "1 h");
    }
}
