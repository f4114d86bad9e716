//! Public badges: a member marks a monitor public (`PUT /v1/monitors/{id}/badge`) and gets
//! a secret token; `/badge/{token}/status.svg`, `uptime.svg` and `response.svg` draw the
//! monitor's state, uptime and mean response time as SVG badges for a README or a wiki,
//! with no key. A badge shows nothing else (not the monitor's name, target or reasons).
//! A new token replaces the old one; `DELETE` revokes every link at once.

use super::AppState;
use super::envelope::{NoContent, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError};
use super::extract::{ApiPath, ApiQuery};
use super::monitors;
use crate::ids;
use crate::store::badges::BadgeRow;
use crate::store::keys::Principal;
use crate::store::status_pages::day_of;
use crate::store::{MonitorState, State as _};
use crate::text::escape_html;
use axum::Extension;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Longest custom label.
const MAX_LABEL_CHARS: usize = 40;
/// How long a cache may keep a badge.
const CACHE: &str = "public, max-age=60";

/// A monitor's public badge: the links to paste.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BadgeView {
    pub monitor_id: String,
    /// The secret in the links (anyone with it sees the badges).
    pub token: String,
    #[schema(example = "https://tocsin.example.com/badge/Xy…/status.svg")]
    pub status_url: String,
    /// Uptime over the last 30 UTC days (`?window=1d|7d|30d|90d` for another).
    pub uptime_url: String,
    /// Mean response time over the last UTC day (`?window=` as for uptime).
    pub response_url: String,
    /// The status badge as Markdown, linked to nothing.
    #[schema(example = "![status](https://tocsin.example.com/badge/Xy…/status.svg)")]
    pub markdown: String,
    pub created_at: String,
}

fn view(state: &AppState, row: BadgeRow) -> BadgeView {
    let base = format!("{}/badge/{}", state.config.public_url, row.token);
    BadgeView {
        monitor_id: row.monitor_id,
        markdown: format!("![status]({base}/status.svg)"),
        status_url: format!("{base}/status.svg"),
        uptime_url: format!("{base}/uptime.svg"),
        response_url: format!("{base}/response.svg"),
        token: row.token,
        created_at: crate::time::format_ms(row.created_at),
    }
}

fn no_badge(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "BADGE_NOT_FOUND",
        format!("Monitor `{id}` has no public badge"),
    )
}

/// The monitor's public badge, if it has one.
#[utoipa::path(get, path = "/v1/monitors/{id}/badge", tag = "badges",
    params(("id" = String, Path, description = "Monitor id")),
    responses(
        (status = 200, description = "The badge's links", body = SuccessBody<BadgeView>),
        (status = 404, description = "MONITOR_NOT_FOUND, or BADGE_NOT_FOUND: the monitor is not public", body = ErrorBody),
    ))]
pub async fn get_badge(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<BadgeView>, ApiError> {
    monitors::find(&state, &p, &id).await?;
    let row = state
        .store
        .badge_of(&p.workspace_id, &id)
        .await?
        .ok_or_else(|| no_badge(&id))?;
    Ok(Success::ok(view(&state, row)))
}

/// Make the monitor's badges public with a new token (a badge it had stops working).
#[utoipa::path(put, path = "/v1/monitors/{id}/badge", tag = "badges",
    params(("id" = String, Path, description = "Monitor id")),
    responses(
        (status = 200, description = "The badge's new links", body = SuccessBody<BadgeView>),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn put_badge(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<BadgeView>, ApiError> {
    monitors::find(&state, &p, &id).await?;
    crate::store::audit::note(
        crate::store::audit::Change::new(Some(&p.workspace_id), "badge.set", "monitor", Some(&id))
            .after(serde_json::json!({"public": true})),
    );
    let row = state
        .store
        .set_badge(BadgeRow {
            monitor_id: id,
            workspace_id: p.workspace_id.clone(),
            token: ids::random_base62(24),
            created_at: state.clock.now_ms(),
        })
        .await?;
    Ok(Success::ok(view(&state, row)))
}

/// Revoke the monitor's badge: every link to it answers 404 from now on.
#[utoipa::path(delete, path = "/v1/monitors/{id}/badge", tag = "badges",
    params(("id" = String, Path, description = "Monitor id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 404, description = "MONITOR_NOT_FOUND or BADGE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn delete_badge(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    monitors::find(&state, &p, &id).await?;
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "badge.delete",
        "monitor",
        Some(&id),
    ));
    if state.store.delete_badge(&p.workspace_id, &id).await? {
        Ok(NoContent)
    } else {
        Err(no_badge(&id))
    }
}

/// A badge's options.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BadgeParams {
    /// The left-hand text, 1 to 40 characters (default: `status`, `uptime 30d`, `response`).
    pub label: Option<String>,
    /// For uptime and response: the last `1d`, `7d`, `30d` or `90d` UTC days, today
    /// included (uptime defaults to `30d`, response to `1d`).
    pub window: Option<String>,
}

impl BadgeParams {
    fn label(&self, default: &str) -> Result<String, ApiError> {
        match &self.label {
            None => Ok(default.to_string()),
            Some(l) if !l.trim().is_empty() && l.chars().count() <= MAX_LABEL_CHARS => {
                Ok(l.trim().to_string())
            }
            Some(_) => Err(ApiError::validation(vec![FieldError::new(
                "label",
                format!("must be 1 to {MAX_LABEL_CHARS} characters"),
            )])),
        }
    }

    /// The window's days and its name.
    fn days(&self, default: &'static str) -> Result<(i32, &'static str), ApiError> {
        match self.window.as_deref().unwrap_or(default) {
            "1d" => Ok((1, "1d")),
            "7d" => Ok((7, "7d")),
            "30d" => Ok((30, "30d")),
            "90d" => Ok((90, "90d")),
            _ => Err(ApiError::validation(vec![FieldError::new(
                "window",
                "must be 1d, 7d, 30d or 90d",
            )])),
        }
    }
}

/// The monitor a badge token opens, or 404.
async fn opened(state: &AppState, token: &str) -> Result<crate::store::MonitorRow, ApiError> {
    let not_found = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "BADGE_NOT_FOUND",
            "No badge at this address (it may have been revoked)",
        )
    };
    if token.len() > 64 {
        return Err(not_found());
    }
    let badge = state
        .store
        .badge_by_token(token)
        .await?
        .ok_or_else(not_found)?;
    state
        .store
        .monitor(&badge.workspace_id, &badge.monitor_id)
        .await?
        .ok_or_else(not_found)
}

/// The monitor's state as a badge.
#[utoipa::path(get, path = "/badge/{token}/status.svg", tag = "badges",
    params(("token" = String, Path, description = "The badge's token"), BadgeParams),
    responses(
        (status = 200, description = "An SVG badge: up, down, pending or paused", content_type = "image/svg+xml", body = String),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 404, description = "BADGE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn status_svg(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
    ApiQuery(q): ApiQuery<BadgeParams>,
) -> Result<Response, ApiError> {
    let label = q.label("status")?;
    let m = opened(&state, &token).await?;
    let colour = match m.status {
        MonitorState::Up => GREEN,
        MonitorState::Down => RED,
        MonitorState::Degraded => YELLOW,
        MonitorState::Pending | MonitorState::Paused => GREY,
    };
    Ok(svg_response(&label, m.status.name(), colour))
}

/// Uptime over the last days as a badge.
#[utoipa::path(get, path = "/badge/{token}/uptime.svg", tag = "badges",
    params(("token" = String, Path, description = "The badge's token"), BadgeParams),
    responses(
        (status = 200, description = "An SVG badge: the percentage of checks that passed (maintenance excluded), or `no data`", content_type = "image/svg+xml", body = String),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 404, description = "BADGE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn uptime_svg(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
    ApiQuery(q): ApiQuery<BadgeParams>,
) -> Result<Response, ApiError> {
    let (days, name) = q.days("30d")?;
    let label = q.label(&format!("uptime {name}"))?;
    let m = opened(&state, &token).await?;
    let (total, up, _, _) = rolled_up(&state, &m.id, days).await?;
    let (text, colour) = if total == 0 {
        ("no data".to_string(), GREY)
    } else {
        let pct = super::public_status::percent(up, total);
        (percent_text(pct), uptime_colour(pct))
    };
    Ok(svg_response(&label, &text, colour))
}

/// Mean response time over the last days as a badge.
#[utoipa::path(get, path = "/badge/{token}/response.svg", tag = "badges",
    params(("token" = String, Path, description = "The badge's token"), BadgeParams),
    responses(
        (status = 200, description = "An SVG badge: the mean response time in ms, or `no data`", content_type = "image/svg+xml", body = String),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 404, description = "BADGE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn response_svg(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
    ApiQuery(q): ApiQuery<BadgeParams>,
) -> Result<Response, ApiError> {
    let (days, _) = q.days("1d")?;
    let label = q.label("response")?;
    let m = opened(&state, &token).await?;
    let (_, _, sum, count) = rolled_up(&state, &m.id, days).await?;
    let text = if count == 0 {
        "no data".to_string()
    } else {
        format!("{} ms", (sum as f64 / count as f64).round() as i64)
    };
    Ok(svg_response(
        &label,
        &text,
        if count == 0 { GREY } else { BLUE },
    ))
}

/// A monitor's checks over the last `days` UTC days, today included, from the daily
/// rollups: (total, up, response sum, response count).
async fn rolled_up(
    state: &AppState,
    monitor_id: &str,
    days: i32,
) -> Result<(i64, i64, i64, i64), ApiError> {
    let today = day_of(state.clock.now_ms());
    let rows = state
        .store
        .daily_uptime(vec![monitor_id.to_string()], today - days + 1)
        .await?;
    Ok(rows.iter().fold((0, 0, 0, 0), |(t, u, s, c), r| {
        (
            t + i64::from(r.total),
            u + i64::from(r.up),
            s + r.response_ms_sum,
            c + i64::from(r.response_count),
        )
    }))
}

const GREEN: &str = "#2e7d32";
const LIGHT_GREEN: &str = "#558b2f";
const YELLOW: &str = "#8d6e00";
const RED: &str = "#c62828";
const GREY: &str = "#616161";
const BLUE: &str = "#1565c0";

fn uptime_colour(pct: f64) -> &'static str {
    if pct >= 99.9 {
        GREEN
    } else if pct >= 99.0 {
        LIGHT_GREEN
    } else if pct >= 95.0 {
        YELLOW
    } else {
        RED
    }
}

/// "100%", "99.95%", "87.5%": a percentage of [`percent`](super::public_status::percent)
/// (two decimals, never rounded up) without its trailing zeros.
fn percent_text(pct: f64) -> String {
    let text = format!("{pct:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}%")
}

/// How wide `text` is drawn in 11 px Verdana, about.
fn text_width(text: &str) -> u32 {
    text.chars()
        .map(|c| match c {
            'i' | 'l' | 'j' | '.' | ',' | ':' | ';' | '!' | '|' | '\'' | ' ' => 4,
            'f' | 't' | 'r' | 'I' | '(' | ')' | '[' | ']' | '/' | '-' => 5,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 11,
            c if c.is_ascii_uppercase() => 8,
            _ => 7,
        })
        .sum()
}

/// A flat badge: `label` on grey, `value` on `colour`, white text (each colour has a
/// contrast of at least 4.5:1 with white).
pub fn svg(label: &str, value: &str, colour: &str) -> String {
    let lw = text_width(label) + 12;
    let vw = text_width(value) + 12;
    let w = lw + vw;
    let (label, value) = (escape_html(label), escape_html(value));
    let (lx, vx) = (f64::from(lw) / 2.0, f64::from(lw) + f64::from(vw) / 2.0);
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="20" role="img" aria-label="{label}: {value}"><title>{label}: {value}</title><clipPath id="r"><rect width="{w}" height="20" rx="3" fill="#fff"/></clipPath><g clip-path="url(#r)"><rect width="{lw}" height="20" fill="#444"/><rect x="{lw}" width="{vw}" height="20" fill="{colour}"/></g><g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11"><text x="{lx}" y="14">{label}</text><text x="{vx}" y="14">{value}</text></g></svg>"##
    )
}

fn svg_response(label: &str, value: &str, colour: &str) -> Response {
    let mut r = (StatusCode::OK, svg(label, value, colour)).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("image/svg+xml; charset=utf-8"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_are_never_rounded_up_to_a_hundred() {
        let percent = |up, total| percent_text(super::super::public_status::percent(up, total));
        assert_eq!(percent(1, 1), "100%");
        assert_eq!(percent(99_999, 100_000), "99.99%");
        assert_eq!(percent(1_999, 2_000), "99.95%");
        assert_eq!(percent(7, 8), "87.5%");
        assert_eq!(percent(0, 5), "0%");
    }

    #[test]
    fn a_badge_escapes_its_text_and_fits_it() {
        let s = svg("<b>&", "up", GREEN);
        assert!(s.contains("&lt;b&gt;&amp;") && !s.contains("<b>"), "{s}");
        assert!(s.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\""));
        let width = |s: String| -> u32 {
            s.split("width=\"")
                .nth(1)
                .and_then(|w| w.split('"').next()?.parse().ok())
                .expect("width")
        };
        let narrow = width(svg("status", "up", GREEN));
        let wide = width(svg("status", "maintenance", GREEN));
        assert!(wide > narrow + 40, "{narrow} {wide}");
    }

    #[test]
    fn windows_and_labels_are_checked() {
        let q = BadgeParams {
            label: Some("x".repeat(41)),
            window: Some("2d".into()),
        };
        assert!(q.label("status").is_err());
        assert!(q.days("30d").is_err());
        let q = BadgeParams::default();
        assert_eq!(q.label("status").ok().as_deref(), Some("status"));
        assert_eq!(q.days("30d").ok(), Some((30, "30d")));
    }
}
