//! Monthly reports: a workspace that names channels for it gets the previous month's
//! uptime report of all its monitors on the 1st (midnight in the workspace's time zone),
//! as a `report.monthly` delivery to each channel, with the report's PDF as a file of the
//! delivery (e-mail attaches it). The month is taken with a conditional update in the same
//! transaction as the deliveries and their files: a server down on the 1st sends it when
//! it comes back, and a restart or a second node never sends one twice.

use super::{UptimeReport, monitor_report};
use crate::clock::SharedClock;
use crate::outbox::events::kind;
use crate::outbox::{self, Origin, Target};
use crate::store::reports::{DeliveryFileRow, MonthlyReportRow};
use crate::store::{Store, StoreError};
use chrono::{Datelike, NaiveDate, TimeZone};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// The most monitors one monthly report covers (by name; the rest are counted).
pub const MAX_MONITORS: usize = 1_000;
/// The largest PDF attached to a report's e-mail (mail relays commonly refuse messages
/// past 10 to 25 MB, and base64 adds a third); a larger one goes as its link.
pub const MAX_ATTACHMENT_BYTES: usize = 7 * 1024 * 1024;
/// How often the pass looks for a month to send.
const EVERY: Duration = Duration::from_secs(600);
/// Settings read per query.
const PAGE: u64 = 100;
/// Monitors named in the payload, the lowest uptime first.
const LISTED: usize = 10;

/// A calendar month in a time zone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Month {
    /// `2026-10`.
    pub label: String,
    /// `October 2026`.
    pub title: String,
    pub from_ms: i64,
    pub to_ms: i64,
}

/// Midnight at the start of `day` in `zone` (the first instant of the day when a clock
/// change makes it ambiguous or skips it).
fn midnight(zone: chrono_tz::Tz, day: NaiveDate) -> i64 {
    let naive = day.and_hms_opt(0, 0, 0).unwrap_or_default();
    match zone.from_local_datetime(&naive) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => {
            t.timestamp_millis()
        }
        // Midnight skipped (a clock going forward at 00:00): an hour later is the day's start.
        chrono::LocalResult::None => zone
            .from_local_datetime(&(naive + chrono::Duration::hours(1)))
            .earliest()
            .map_or_else(
                || naive.and_utc().timestamp_millis(),
                |t| t.timestamp_millis(),
            ),
    }
}

/// The month before the one `now` is in, in `zone`.
pub fn previous_month(now_ms: i64, zone: chrono_tz::Tz) -> Month {
    let now = zone
        .timestamp_millis_opt(now_ms)
        .single()
        .unwrap_or_else(|| {
            zone.from_utc_datetime(
                &chrono::DateTime::from_timestamp_millis(now_ms)
                    .unwrap_or_default()
                    .naive_utc(),
            )
        });
    let this_first = NaiveDate::from_ymd_opt(now.year(), now.month(), 1).unwrap_or_default();
    let previous_first = this_first
        .pred_opt()
        .and_then(|d| d.with_day(1))
        .unwrap_or(this_first);
    Month::starting(previous_first, zone)
}

impl Month {
    /// The month that starts on `first` (a 1st), in `zone`.
    fn starting(first: NaiveDate, zone: chrono_tz::Tz) -> Month {
        let next = first
            .checked_add_months(chrono::Months::new(1))
            .unwrap_or(first);
        Month {
            label: first.format("%Y-%m").to_string(),
            title: first.format("%B %Y").to_string(),
            from_ms: midnight(zone, first),
            to_ms: midnight(zone, next),
        }
    }
}

/// The month `2026-10` in `zone`; none for anything else.
pub fn month_named(label: &str, zone: chrono_tz::Tz) -> Option<Month> {
    let first = NaiveDate::parse_from_str(&format!("{label}-01"), "%Y-%m-%d").ok()?;
    (first.format("%Y-%m").to_string() == label).then(|| Month::starting(first, zone))
}

/// The workspace's time zone (UTC when unset or unknown).
pub fn zone_of(name: Option<&str>) -> chrono_tz::Tz {
    name.and_then(|z| z.parse().ok()).unwrap_or(chrono_tz::UTC)
}

/// The report of a workspace's monitors over `month`, and how many were left out.
pub async fn workspace_report(
    store: &Store,
    workspace_id: &str,
    month: &Month,
    now: i64,
) -> Result<(UptimeReport, usize), StoreError> {
    let (monitors, all) = store
        .monitors_by_name(workspace_id, MAX_MONITORS as u64)
        .await?;
    let left_out = usize::try_from(all)
        .unwrap_or(usize::MAX)
        .saturating_sub(monitors.len());
    let mut rows = Vec::with_capacity(monitors.len());
    for m in &monitors {
        rows.push(monitor_report(store, m, month.from_ms, month.to_ms, now, None).await?);
    }
    Ok((
        UptimeReport {
            from: crate::time::format_ms(month.from_ms),
            to: crate::time::format_ms(month.to_ms),
            target_percent: None,
            rules: super::RULES.iter().map(|r| r.to_string()).collect(),
            monitors: rows,
        },
        left_out,
    ))
}

/// The `report` object of a `report.monthly` payload: the month, the totals and the
/// monitors with the lowest uptime.
pub fn summary(
    report: &UptimeReport,
    month: &Month,
    zone: &str,
    left_out: usize,
    public_url: &str,
) -> Value {
    let missed = report
        .monitors
        .iter()
        .filter(|m| m.target_met == Some(false))
        .count();
    let incidents: usize = report.monitors.iter().map(|m| m.incidents.len()).sum();
    let mut lowest: Vec<_> = report
        .monitors
        .iter()
        .filter(|m| m.uptime_percent.is_some())
        .collect();
    lowest.sort_by(|a, b| {
        a.uptime_percent
            .partial_cmp(&b.uptime_percent)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let listed: Vec<Value> = lowest
        .iter()
        .take(LISTED)
        .map(|m| {
            json!({"id": m.monitor_id, "name": m.name, "uptimePercent": m.uptime_percent,
                   "targetPercent": m.target_percent, "targetMet": m.target_met,
                   "downSeconds": m.down_seconds, "incidents": m.incidents.len()})
        })
        .collect();
    json!({
        "month": month.label,
        "title": month.title,
        "from": report.from,
        "to": report.to,
        "timeZone": zone,
        "monitors": report.monitors.len(),
        "monitorsLeftOut": left_out,
        "targetsMissed": missed,
        "incidents": incidents,
        "lowestUptime": listed,
        "url": format!("{public_url}/reports?by=all&month={}", month.label),
        "rules": report.rules,
    })
}

/// Queue every monthly report due at `now`. Returns how many workspaces' reports were
/// queued.
pub async fn send_due(store: &Store, now: i64, public_url: &str) -> Result<usize, StoreError> {
    let mut sent = 0;
    let mut after: Option<String> = None;
    loop {
        let page = store.monthly_reports(after.as_deref(), PAGE).await?;
        let full = page.len() as u64 == PAGE;
        after = page.last().map(|r| r.workspace_id.clone());
        for row in page {
            match queue(store, &row, now, public_url, false).await {
                Ok(Some(_)) => sent += 1,
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(workspace = %row.workspace_id, error = %e, "the monthly report could not be queued; it is tried again at the next pass");
                }
            }
        }
        if !full {
            return Ok(sent);
        }
    }
}

/// Queue the previous month's report of `row`'s workspace to its channels: when it is due
/// (taking the month), or, with `test`, now whatever was sent (marked `"test": true`, the
/// month left as it is). The month and how many deliveries were queued; none when
/// nothing was.
pub async fn queue(
    store: &Store,
    row: &MonthlyReportRow,
    now: i64,
    public_url: &str,
    test: bool,
) -> Result<Option<(String, usize)>, StoreError> {
    let Some(workspace) = store.workspace(&row.workspace_id).await? else {
        return Ok(None);
    };
    let zone_name = workspace.time_zone.clone().unwrap_or_else(|| "UTC".into());
    let month = previous_month(now, zone_of(Some(&zone_name)));
    if !test && row.sent_for.as_deref() >= Some(month.label.as_str()) {
        return Ok(None);
    }
    let ids: Vec<String> = serde_json::from_str(&row.channel_ids).unwrap_or_default();
    let channels = store
        .channels_by_ids(&row.workspace_id, ids.clone())
        .await?;
    if channels.is_empty() {
        // Nowhere to send it: the month waits (a channel chosen again still gets it).
        tracing::warn!(workspace = %row.workspace_id, month = %month.label, "the monthly report's channels were all deleted; it is not sent");
        return Ok(None);
    }
    let (report, left_out) = workspace_report(store, &row.workspace_id, &month, now).await?;
    let report_object = summary(&report, &month, &zone_name, left_out, public_url);
    // Drawing pages is CPU work: off the async threads.
    let pdf = tokio::task::spawn_blocking(move || super::pdf::render(&report))
        .await
        .map_err(|e| StoreError::Corrupt(format!("writing the report's PDF failed: {e}")))?;
    let file_name = format!("uptime-{}.pdf", month.label);
    // A document too large for mail relays goes as the link alone.
    let attached = pdf.len() <= MAX_ATTACHMENT_BYTES;
    let files = if attached {
        json!([{"name": file_name, "contentType": "application/pdf", "bytes": pdf.len()}])
    } else {
        json!([])
    };
    let tx = store.begin_write().await?;
    if !test
        && !tx
            .take_report_month(&row.workspace_id, &month.label, now)
            .await?
    {
        return Ok(None);
    }
    let mut queued = 0;
    let origin = Origin {
        workspace_id: &row.workspace_id,
        incident_id: None,
        monitor_id: None,
    };
    for id in &ids {
        let Some(channel) = channels.iter().find(|c| &c.id == id) else {
            tracing::warn!(workspace = %row.workspace_id, channel = %id, "the monthly report names a channel that no longer exists; skipped");
            continue;
        };
        let target = Target {
            kind: channel.kind.clone(),
            config: channel.config.clone(),
            channel_id: Some(channel.id.clone()),
        };
        let delivery = outbox::enqueue_raw(
            &tx,
            &origin,
            &target,
            kind::REPORT_MONTHLY,
            |delivery_id| {
                let mut payload = json!({
                    "event": kind::REPORT_MONTHLY,
                    "timestamp": crate::time::format_ms(now),
                    "webhookId": delivery_id,
                    "report": report_object,
                    "files": files,
                    "workspace": {"id": workspace.id, "name": workspace.name},
                });
                if test {
                    payload["test"] = Value::Bool(true);
                }
                payload.to_string()
            },
            now,
        )
        .await?;
        if attached {
            tx.insert_delivery_file(DeliveryFileRow {
                delivery_id: delivery,
                name: file_name.clone(),
                content_type: "application/pdf".into(),
                data: pdf.clone(),
            })
            .await?;
        }
        queued += 1;
    }
    tx.commit().await?;
    tracing::info!(workspace = %row.workspace_id, month = %month.label, channels = queued, test, "monthly report queued");
    Ok(Some((month.label, queued)))
}

/// The pass: at start and every ten minutes, queue the reports that are due.
pub async fn run(
    store: Store,
    clock: SharedClock,
    public_url: String,
    outbox: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        match send_due(&store, clock.now_ms(), &public_url).await {
            Ok(0) => {}
            Ok(_) => outbox.notify_one(),
            Err(e) => tracing::warn!(error = %e, "looking for monthly reports failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(EVERY) => {}
            _ = shutdown.changed() => if *shutdown.borrow() { return },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        crate::time::parse_ms(text).expect("time")
    }

    #[test]
    fn the_previous_month_is_the_workspaces_own() {
        let utc = previous_month(ms("2026-11-01T00:30:00.000Z"), chrono_tz::UTC);
        assert_eq!(utc.label, "2026-10");
        assert_eq!(utc.title, "October 2026");
        assert_eq!(utc.from_ms, ms("2026-10-01T00:00:00.000Z"));
        assert_eq!(utc.to_ms, ms("2026-11-01T00:00:00.000Z"));
        // 00:30 UTC on the 1st is still October 31 in New York.
        let ny = previous_month(ms("2026-11-01T00:30:00.000Z"), chrono_tz::America::New_York);
        assert_eq!(ny.label, "2026-09");
        // Paris: October starts in summer time and ends in winter time.
        let paris = previous_month(ms("2026-11-15T12:00:00.000Z"), chrono_tz::Europe::Paris);
        assert_eq!(paris.from_ms, ms("2026-09-30T22:00:00.000Z"));
        assert_eq!(paris.to_ms, ms("2026-10-31T23:00:00.000Z"));
        // January's previous month is last year's December.
        let january = previous_month(ms("2027-01-01T08:00:00.000Z"), chrono_tz::UTC);
        assert_eq!(january.label, "2026-12");
        assert_eq!(
            month_named("2026-10", chrono_tz::Europe::Paris),
            Some(paris)
        );
        let december = month_named("2026-12", chrono_tz::UTC).expect("month");
        assert_eq!(december.to_ms, ms("2027-01-01T00:00:00.000Z"));
        for bad in ["2026-13", "soon", "2026-1", "2026-10-01"] {
            assert_eq!(month_named(bad, chrono_tz::UTC), None, "{bad}");
        }
    }
}
