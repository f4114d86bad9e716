//! `/maintenance`: the workspace's maintenance windows (what each covers, whether it is in
//! progress, its next occurrences in its own time zone) and a form to plan one, one-off or
//! recurring, with a preview of its next occurrences before it is saved (the API's dry run).

use super::{Layout, page, unavailable, viewer};
use crate::api::AppState;
use crate::api::maintenance::{MaintenanceWindowBody, view};
use crate::store::Page;
use crate::store::keys::Role;
use askama::Template;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

struct WindowLine {
    id: String,
    name: String,
    schedule: String,
    covers: String,
    /// "in progress until …", "next: …" or "over".
    when: String,
    active: bool,
    /// The next occurrences after the first, in the window's time zone.
    later: Vec<String>,
    managed: bool,
}

#[derive(Template)]
#[template(path = "maintenance.html")]
struct Maintenance {
    layout: Layout,
    can_write: bool,
    windows: Vec<WindowLine>,
    monitors: Vec<(String, String)>,
    monitors_truncated: bool,
}

/// An ISO time as read in `tz`: "Sun 29 Nov 2026 01:00".
fn local(iso: &str, tz: &str) -> String {
    let (Some(ms), Ok(zone)) = (crate::time::parse_ms(iso), tz.parse::<chrono_tz::Tz>()) else {
        return iso.to_string();
    };
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(
        || iso.to_string(),
        |t| {
            t.with_timezone(&zone)
                .format("%a %-d %b %Y %H:%M")
                .to_string()
        },
    )
}

fn line(w: MaintenanceWindowBody, monitor_names: &[(String, String)]) -> WindowLine {
    let tz = w.timezone.clone().unwrap_or_else(|| "UTC".into());
    let schedule = match (&w.cron, &w.rrule, w.duration_minutes) {
        (Some(cron), _, Some(d)) => format!("cron {cron}, {d} min each, {tz}"),
        (None, Some(rule), Some(d)) => format!("{rule}, {d} min each, {tz}"),
        _ => format!(
            "once, {} to {} ({tz})",
            local(&w.start, &tz),
            w.end.as_deref().map_or_else(String::new, |e| local(e, &tz))
        ),
    };
    let ids = w.monitor_ids.unwrap_or_default();
    let tags = w.tags.unwrap_or_default();
    let covers = if ids.is_empty() && tags.is_empty() {
        "every monitor".to_string()
    } else {
        let mut parts: Vec<String> = ids
            .iter()
            .map(|id| {
                monitor_names
                    .iter()
                    .find(|(mid, _)| mid == id)
                    .map_or_else(|| id.clone(), |(_, name)| name.clone())
            })
            .collect();
        parts.extend(tags.iter().map(|t| format!("tag {t}")));
        parts.join(", ")
    };
    let upcoming = w.upcoming.unwrap_or_default();
    let active = w.active.unwrap_or(false);
    let when = match (&w.current, upcoming.first()) {
        (Some(now), _) => format!("in progress until {}", local(&now.end, &tz)),
        (None, Some(next)) => format!(
            "next: {} to {}",
            local(&next.start, &tz),
            local(&next.end, &tz)
        ),
        (None, None) => "over".to_string(),
    };
    WindowLine {
        id: w.id.unwrap_or_default(),
        name: w.name,
        schedule,
        covers,
        when,
        active,
        later: upcoming
            .iter()
            .skip(usize::from(w.current.is_none()))
            .map(|o| local(&o.start, &tz))
            .collect(),
        managed: w.managed_by.is_some(),
    }
}

pub async fn show(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let (p, layout) = match viewer(&state, &headers, "maintenance").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let now = state.clock.now_ms();
    let Ok((rows, _)) = state
        .store
        .list_maintenance_windows(
            &p.workspace_id,
            Page {
                page: 1,
                limit: crate::api::maintenance::MAX_WINDOWS,
            },
        )
        .await
    else {
        return unavailable(layout);
    };
    let (monitors, total) = super::monitor_choices(&state, &p.workspace_id).await;
    let html = Maintenance {
        layout,
        can_write: p.role != Role::Read,
        windows: rows.iter().map(|r| line(view(r, now), &monitors)).collect(),
        monitors,
        monitors_truncated: total > super::MONITOR_CHOICES,
    }
    .render();
    page(StatusCode::OK, html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_in_the_windows_zone() {
        assert_eq!(
            local("2026-11-29T01:00:00.000Z", "Europe/Paris"),
            "Sun 29 Nov 2026 02:00"
        );
        assert_eq!(
            local("2026-07-01T01:00:00Z", "America/New_York"),
            "Tue 30 Jun 2026 21:00"
        );
        assert_eq!(local("not a time", "UTC"), "not a time");
    }
}
