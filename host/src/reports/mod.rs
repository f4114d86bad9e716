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

pub mod monthly;
pub mod pdf;

use crate::store::incidents::IncidentRow;
use crate::store::{MonitorRow, Store, StoreError};
use serde::Serialize;
use utoipa::ToSchema;

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

/// One monitor's figures over `from`..`to`, as of `now`; `target` in place of its own.
pub async fn monitor_report(
    store: &Store,
    m: &MonitorRow,
    from: i64,
    to: i64,
    now: i64,
    target: Option<f64>,
) -> Result<MonitorReport, StoreError> {
    let end = to.min(now).max(from);
    let mut tally = Tally::new(from, vouched_ms(m));
    if let Some(c) = store.check_before(&m.id, from).await? {
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
        let batch = store
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
    let incidents = store
        .incidents_overlapping(&m.workspace_id, &m.id, from, to)
        .await?
        .iter()
        .map(|i| report_incident(i, from, end))
        .collect();
    let uptime = figures.uptime_percent();
    let target = target.or(m.sla_target_ppm.map(|ppm| f64::from(ppm) / 10_000.0));
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

/// A duration as `1 d 2 h 3 min 4 s` (the parts that are not zero).
pub fn duration_text(total: i64) -> String {
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
