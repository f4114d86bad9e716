//! `/reports`: an uptime report of a month, for the monitors of a tag or of a status page,
//! shown on the page (the API's report, worked out the same way) with its CSV and printable
//! HTML to download from `/v1/reports/uptime`.

use super::{Layout, page, span, unavailable, viewer};
use crate::api::AppState;
use crate::api::reports::{ReportParams, UptimeReport, build};
use crate::store::Page;
use askama::Template;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

/// What the form asks.
#[derive(Debug, Default, Deserialize)]
pub struct ReportQuery {
    /// `tag:<tag>` or `page:<status page id>`.
    by: Option<String>,
    /// `YYYY-MM`.
    month: Option<String>,
    /// Percent; empty: each monitor's own target.
    target: Option<String>,
}

struct Row {
    name: String,
    kind: String,
    uptime: String,
    target: String,
    /// "met", "missed" or "".
    verdict: &'static str,
    down: String,
    maintenance: String,
    unmonitored: String,
    checks: u64,
    failed: u64,
    median: String,
    p95: String,
    incidents: usize,
}

#[derive(Template)]
#[template(path = "reports.html")]
struct Reports {
    layout: Layout,
    /// (value, label) of the choices, and the one chosen.
    choices: Vec<(String, String)>,
    by: String,
    month: String,
    target: String,
    /// The report, or why there is none.
    rows: Vec<Row>,
    shown: bool,
    problem: String,
    /// The API's query for the downloads.
    query: String,
    rules: Vec<String>,
}

/// A month's first instant and the next month's in the workspace's time zone, as ISO
/// 8601 (UTC).
fn month_range(month: &str, zone: chrono_tz::Tz) -> Option<(String, String)> {
    let m = crate::reports::monthly::month_named(month, zone)?;
    Some((
        crate::time::format_ms(m.from_ms),
        crate::time::format_ms(m.to_ms),
    ))
}

fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "no data".into(), |u| format!("{u:.3} %"))
}

fn rows(report: &UptimeReport) -> Vec<Row> {
    let ms = |v: Option<i32>| v.map_or_else(String::new, |v| format!("{v} ms"));
    report
        .monitors
        .iter()
        .map(|m| Row {
            name: m.name.clone(),
            kind: m.kind.clone(),
            uptime: percent(m.uptime_percent),
            target: m
                .target_percent
                .map_or_else(String::new, |t| format!("{t} %")),
            verdict: match m.target_met {
                Some(true) => "met",
                Some(false) => "missed",
                None => "",
            },
            down: span(m.down_seconds),
            maintenance: span(m.maintenance_seconds),
            unmonitored: span(m.unmonitored_seconds),
            checks: m.checks,
            failed: m.failed_checks,
            median: ms(m.median_response_time_ms),
            p95: ms(m.p95_response_time_ms),
            incidents: m.incidents.len(),
        })
        .collect()
}

pub async fn show(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<ReportQuery>,
) -> Response {
    let (p, layout) = match viewer(&state, &headers, "reports").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let tags = match state.store.monitor_tags(&p.workspace_id).await {
        Ok(t) => t,
        Err(_) => return unavailable(layout),
    };
    let pages = match state
        .store
        .list_status_pages(
            &p.workspace_id,
            Page {
                page: 1,
                limit: 100,
            },
        )
        .await
    {
        Ok((pages, _)) => pages,
        Err(_) => return unavailable(layout),
    };
    let mut choices: Vec<(String, String)> = vec![("all".into(), "All monitors".into())];
    choices.extend(
        tags.into_iter()
            .map(|t| (format!("tag:{t}"), format!("Tag {t}"))),
    );
    choices.extend(
        pages
            .into_iter()
            .map(|s| (format!("page:{}", s.id), format!("Status page {}", s.title))),
    );
    let zone = match state.store.workspace(&p.workspace_id).await {
        Ok(w) => crate::reports::monthly::zone_of(w.and_then(|w| w.time_zone).as_deref()),
        Err(_) => return unavailable(layout),
    };
    let month = q
        .month
        .clone()
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| {
            crate::reports::monthly::previous_month(state.clock.now_ms(), zone).label
        });
    let target = q.target.clone().unwrap_or_default();
    let by = q.by.clone().unwrap_or_default();
    let mut view = Reports {
        layout,
        choices,
        by: by.clone(),
        month: month.clone(),
        target: target.clone(),
        rows: Vec::new(),
        shown: false,
        problem: String::new(),
        query: String::new(),
        rules: crate::api::reports::RULES
            .iter()
            .map(|r| r.to_string())
            .collect(),
    };
    if by.is_empty() {
        return page(StatusCode::OK, view.render());
    }
    let Some((from, to)) = month_range(&month, zone) else {
        view.problem = "Choose a month.".into();
        return page(StatusCode::BAD_REQUEST, view.render());
    };
    let target_value = if target.trim().is_empty() {
        None
    } else {
        match target.trim().parse::<f64>() {
            Ok(t) => Some(t),
            Err(_) => {
                view.problem = "The target is a percentage such as 99.9.".into();
                return page(StatusCode::BAD_REQUEST, view.render());
            }
        }
    };
    let all = by == "all";
    let (tag, status_page_id) = match by.split_once(':') {
        Some(("tag", t)) => (Some(t.to_string()), None),
        Some(("page", id)) => (None, Some(id.to_string())),
        _ if all => (None, None),
        _ => {
            view.problem = "Choose a tag or a status page.".into();
            return page(StatusCode::BAD_REQUEST, view.render());
        }
    };
    let params = ReportParams {
        monitor_ids: None,
        tag: tag.clone(),
        status_page_id: status_page_id.clone(),
        all: all.then_some(true),
        from: from.clone(),
        to: to.clone(),
        target: target_value,
        format: None,
    };
    match build(&state, &p, &params).await {
        Ok(report) => {
            view.rows = rows(&report);
            view.shown = true;
            let mut query = url::form_urlencoded::Serializer::new(String::new());
            match (&tag, &status_page_id) {
                (Some(t), _) => query.append_pair("tag", t),
                (_, Some(id)) => query.append_pair("statusPageId", id),
                _ => query.append_pair("all", "true"),
            };
            query.append_pair("from", &from).append_pair("to", &to);
            if let Some(t) = target_value {
                query.append_pair("target", &t.to_string());
            }
            view.query = query.finish();
            page(StatusCode::OK, view.render())
        }
        Err(e) => {
            view.problem = match e.details.as_deref().and_then(|d| d.first()) {
                Some(d) => format!("{} {}", d.field, d.message),
                None => e.message.clone(),
            };
            page(e.status, view.render())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_and_their_ranges() {
        assert_eq!(
            month_range("2026-12", chrono_tz::UTC),
            Some((
                "2026-12-01T00:00:00.000Z".into(),
                "2027-01-01T00:00:00.000Z".into()
            ))
        );
        assert_eq!(
            month_range("2026-10", chrono_tz::Europe::Paris),
            Some((
                "2026-09-30T22:00:00.000Z".into(),
                "2026-10-31T23:00:00.000Z".into()
            ))
        );
        assert_eq!(month_range("2026-13", chrono_tz::UTC), None);
        assert_eq!(month_range("soon", chrono_tz::UTC), None);
    }
}
