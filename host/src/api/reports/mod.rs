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
use crate::store::keys::Principal;
use axum::Extension;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::IntoParams;

pub use crate::reports::{MonitorReport, RULES, ReportIncident, UptimeReport};
use crate::reports::{duration_text, monitor_report};
/// Monitors one report covers at most.
const MAX_MONITORS: usize = 200;
/// The longest period of one report.
const MAX_PERIOD_MS: i64 = 366 * 86_400_000;

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
    /// `true`: every monitor of the workspace (at most 1,000) over at most 32 days, as the
    /// monthly report has.
    pub all: Option<bool>,
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
            let (bytes, report) = tokio::task::spawn_blocking(move || (crate::reports::pdf::render(&report), report))
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
    // Every monitor over a long period is the heaviest report: a month at most (32 days
    // covers any month in any time zone).
    if let (Some(from), Some(to), Some(true)) = (from, to, q.all)
        && to - from > 32 * 86_400_000
    {
        errors.push(FieldError::new(
            "to",
            "with all=true a report covers at most 32 days (a month); choose the monitors by tag or status page for a longer one",
        ));
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
        q.all == Some(true),
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
            "choose the monitors with exactly one of monitorIds, tag, statusPageId or all=true",
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
    let most = if q.all == Some(true) {
        crate::reports::monthly::MAX_MONITORS
    } else {
        MAX_MONITORS
    };
    if monitors.len() > most {
        return Err(ApiError::validation(vec![FieldError::new(
            "monitorIds",
            format!(
                "a report covers at most {most} monitors; {} were chosen",
                monitors.len()
            ),
        )]));
    }
    let mut rows = Vec::with_capacity(monitors.len());
    for m in &monitors {
        rows.push(monitor_report(&state.store, m, from, to, now, q.target).await?);
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
    let mut monitors = if q.all == Some(true) {
        // One past the most a report covers, so that too many is told, not cut.
        let most = crate::reports::monthly::MAX_MONITORS as u64 + 1;
        state.store.monitors_by_name(ws, most).await?.0
    } else if let Some(ids) = &q.monitor_ids {
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
