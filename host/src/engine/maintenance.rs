//! Maintenance windows: when a monitor is under planned work.
//!
//! A window is one-off (a start and an end) or recurring: an RFC 5545 rule (`RRULE`) or a
//! cron schedule, each occurrence lasting `durationMinutes`, read in an IANA time zone (so
//! "Sundays 02:00 Berlin time" stays at 02:00 across daylight-saving changes), from a
//! start and optionally until an end. It covers some monitors (by id), the monitors with
//! some tags, or, when it names neither, every monitor of its workspace.
//!
//! While a window covers a monitor, its checks still run and are recorded, marked
//! `maintenance`, but they count for nothing: no health change, no incident, no
//! notification, no uptime. An incident already open stays open and does not escalate
//! (escalation waits for the window's end), and held notifications wait too.

use crate::store::MonitorRow;
use crate::store::maintenance::MaintenanceWindowRow;
use chrono::{TimeZone, Utc};
use std::collections::HashMap;
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};

/// Longest occurrence of a recurring window.
pub const MAX_DURATION_MINUTES: i64 = 7 * 24 * 60;
/// Longest one-off window.
pub const MAX_ONE_OFF_DAYS: i64 = 366;
/// How far ahead a window's upcoming occurrences are looked for.
pub const LOOKAHEAD_MS: i64 = 366 * DAY_MS;
const DAY_MS: i64 = 86_400_000;
const MINUTE_MS: i64 = 60_000;
/// Most occurrences a rule is walked through from its start to reach a time (a rule is
/// at most hourly, so this is over eleven years of hours).
const MAX_RULE_STEPS: usize = 100_000;
/// Most occurrences looked at in one query of a cron schedule.
const MAX_CRON_STEPS: usize = 20_000;
/// Most occurrences chained together when a window's occurrences overlap.
const MAX_CHAIN: usize = 1_000;

/// One occurrence of a window, in epoch milliseconds, `start` inclusive, `end` exclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Occurrence {
    pub start: i64,
    pub end: i64,
}

enum Schedule {
    Once {
        start: i64,
        end: i64,
    },
    Rule {
        set: Box<rrule::RRuleSet>,
        duration: i64,
        /// What its occurrences follow from (rule, time zone, start): the memo's key, so
        /// two windows, or two versions of one, share occurrences only when they are equal.
        memo_key: (String, i64),
    },
    Cron {
        cron: Box<croner::Cron>,
        timezone: chrono_tz::Tz,
        duration: i64,
    },
}

/// A window, ready to answer "is this monitor under maintenance at this time?".
pub struct Window {
    pub id: String,
    pub name: String,
    pub description: String,
    schedule: Schedule,
    /// The first occurrence starts no earlier.
    series_start: i64,
    /// No occurrence starts at or after this.
    series_end: Option<i64>,
    monitor_ids: Vec<String>,
    tags: Vec<String>,
}

/// Where a problem with a window's schedule lies: the field and what is wrong.
pub type Problem = (&'static str, String);

/// Parse an RFC 5545 recurrence rule (with or without its `RRULE:` prefix) starting at
/// `start` in `timezone`. Rules more frequent than hourly are refused.
pub fn parse_rule(
    text: &str,
    start: i64,
    timezone: chrono_tz::Tz,
) -> Result<rrule::RRuleSet, String> {
    let body = text.trim();
    let body = body
        .strip_prefix("RRULE:")
        .or_else(|| body.strip_prefix("rrule:"))
        .unwrap_or(body);
    if body.is_empty()
        || body.contains(['\n', '\r'])
        || body.to_ascii_uppercase().contains("DTSTART")
    {
        return Err(
            "must be one RRULE line such as `FREQ=WEEKLY;BYDAY=SU` (the start is `start`)".into(),
        );
    }
    let rule = rrule::RRule::<rrule::Unvalidated>::from_str(body)
        .map_err(|e| format!("is not a valid RRULE: {e}"))?;
    if matches!(
        rule.get_freq(),
        rrule::Frequency::Secondly | rrule::Frequency::Minutely
    ) {
        return Err(
            "must repeat at most hourly (FREQ=HOURLY, DAILY, WEEKLY, MONTHLY or YEARLY)".into(),
        );
    }
    let tz = rrule::Tz::from(timezone);
    let dt_start = Utc
        .timestamp_millis_opt(start - start.rem_euclid(1000))
        .single()
        .ok_or_else(|| "has a start out of range".to_string())?
        .with_timezone(&tz);
    rule.build(dt_start)
        .map_err(|e| format!("is not a valid RRULE: {e}"))
}

impl Window {
    /// A stored window. Err names the field whose value cannot be used.
    pub fn from_row(row: &MaintenanceWindowRow) -> Result<Window, Problem> {
        let timezone = chrono_tz::Tz::from_str(&row.timezone)
            .map_err(|_| ("timezone", "is not an IANA time zone".to_string()))?;
        let duration = row
            .duration_minutes
            .map(|m| i64::from(m) * MINUTE_MS)
            .unwrap_or(0);
        let schedule = match (&row.rrule, &row.cron) {
            (Some(rule), None) => Schedule::Rule {
                set: Box::new(parse_rule(rule, row.starts_at, timezone).map_err(|e| ("rrule", e))?),
                duration,
                memo_key: (format!("{rule}|{}", row.timezone), row.starts_at),
            },
            (None, Some(cron)) => Schedule::Cron {
                cron: Box::new(super::schedules::parse_cron(cron).map_err(|e| ("cron", e))?),
                timezone,
                duration,
            },
            (None, None) => Schedule::Once {
                start: row.starts_at,
                end: row
                    .ends_at
                    .ok_or_else(|| ("end", "is required for a one-off window".to_string()))?,
            },
            (Some(_), Some(_)) => return Err(("cron", "give `rrule` or `cron`, not both".into())),
        };
        if !matches!(schedule, Schedule::Once { .. }) && duration <= 0 {
            return Err((
                "durationMinutes",
                "is required for a recurring window".to_string(),
            ));
        }
        Ok(Window {
            id: row.id.clone(),
            name: row.name.clone(),
            description: row.description.clone(),
            // Rules run in whole seconds: a start's milliseconds do not hide its first one.
            series_start: match schedule {
                Schedule::Rule { .. } => row.starts_at - row.starts_at.rem_euclid(1000),
                _ => row.starts_at,
            },
            series_end: match schedule {
                Schedule::Once { .. } => None,
                _ => row.ends_at,
            },
            schedule,
            monitor_ids: serde_json::from_str(&row.monitor_ids).unwrap_or_default(),
            tags: serde_json::from_str(&row.tags).unwrap_or_default(),
        })
    }

    /// Whether the window names neither monitors nor tags (so covers every monitor).
    pub fn workspace_wide(&self) -> bool {
        self.monitor_ids.is_empty() && self.tags.is_empty()
    }

    /// Whether the window covers this monitor (by id, by a tag, or all of them).
    pub fn covers(&self, m: &MonitorRow) -> bool {
        if self.tags.is_empty() {
            return self.covers_parts(&m.id, &[]);
        }
        self.covers_parts(&m.id, &m.tag_list())
    }

    /// Whether the window covers a monitor with this id and these tags.
    pub fn covers_parts(&self, id: &str, tags: &[String]) -> bool {
        self.workspace_wide()
            || self.monitor_ids.iter().any(|i| i == id)
            || tags.iter().any(|t| self.tags.contains(t))
    }

    /// Occurrences that overlap `[from, to)`, oldest first, at most `limit`.
    pub fn occurrences(&self, from: i64, to: i64, limit: usize) -> Vec<Occurrence> {
        let mut out = Vec::new();
        if to <= from || limit == 0 {
            return out;
        }
        let keep = |o: &Occurrence| o.end > from && o.start < to;
        match &self.schedule {
            Schedule::Once { start, end } => {
                let o = Occurrence {
                    start: *start,
                    end: *end,
                };
                if keep(&o) {
                    out.push(o);
                }
            }
            Schedule::Rule {
                set,
                duration,
                memo_key,
            } => {
                for start in rule_starts(set, memo_key, from - duration, to) {
                    if out.len() >= limit {
                        break;
                    }
                    let o = Occurrence {
                        start,
                        end: start + duration,
                    };
                    if keep(&o) && self.in_series(start) {
                        out.push(o);
                    }
                }
            }
            Schedule::Cron {
                cron,
                timezone,
                duration,
            } => {
                let first = (from - duration).max(self.series_start);
                let Some(mut at) = Utc
                    .timestamp_millis_opt(first)
                    .single()
                    .map(|t| t.with_timezone(timezone))
                else {
                    return out;
                };
                let mut inclusive = true;
                for _ in 0..MAX_CRON_STEPS {
                    let Ok(next) = cron.find_next_occurrence(&at, inclusive) else {
                        break;
                    };
                    inclusive = false;
                    let start = next.timestamp_millis();
                    if start >= to || !self.in_series(start) {
                        break;
                    }
                    let o = Occurrence {
                        start,
                        end: start + duration,
                    };
                    if keep(&o) {
                        out.push(o);
                        if out.len() >= limit {
                            break;
                        }
                    }
                    at = next;
                }
            }
        }
        out
    }

    fn in_series(&self, start: i64) -> bool {
        start >= self.series_start && self.series_end.is_none_or(|end| start < end)
    }

    /// If the window is in force at `at`, when it ends: the end of the occurrence covering
    /// `at`, carried on through occurrences that overlap or touch it.
    pub fn active_until(&self, at: i64) -> Option<i64> {
        let mut end = self
            .occurrences(at, at + 1, MAX_CHAIN)
            .iter()
            .map(|o| o.end)
            .max()?;
        for _ in 0..MAX_CHAIN {
            let next = self
                .occurrences(end, end + 1, MAX_CHAIN)
                .iter()
                .map(|o| o.end)
                .max();
            match next {
                Some(later) if later > end => end = later,
                _ => break,
            }
        }
        Some(end)
    }

    /// The next occurrences that have not ended by `now`, at most `limit`, within a year.
    pub fn upcoming(&self, now: i64, limit: usize) -> Vec<Occurrence> {
        self.occurrences(now, now + LOOKAHEAD_MS, limit)
    }
}

/// The starts of a rule's occurrences in `[from, to)`. A rule can only be walked from its
/// start, so the starts around a time are worked out once per rule, time zone and start,
/// and kept (for a span from a day before the first asked time to 40 days past the last).
fn rule_starts(set: &rrule::RRuleSet, key: &(String, i64), from: i64, to: i64) -> Vec<i64> {
    type Memo = HashMap<(String, i64), Arc<(i64, i64, Vec<i64>)>>;
    static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
    let memo = MEMO.get_or_init(|| Mutex::new(HashMap::new()));
    let known = memo
        .lock()
        .ok()
        .and_then(|m| m.get(key).cloned())
        .filter(|span| span.0 <= from && to <= span.1);
    let span = match known {
        Some(span) => span,
        None => {
            let (span_from, span_to) = (from - DAY_MS, to.saturating_add(40 * DAY_MS));
            let mut starts = Vec::new();
            for (step, at) in set.into_iter().enumerate() {
                let start = at.timestamp_millis();
                if start >= span_to || step >= MAX_RULE_STEPS {
                    break;
                }
                if start >= span_from {
                    starts.push(start);
                }
            }
            let span = Arc::new((span_from, span_to, starts));
            if let Ok(mut m) = memo.lock() {
                if m.len() > 10_000 {
                    m.clear();
                }
                m.insert(key.clone(), span.clone());
            }
            span
        }
    };
    span.2
        .iter()
        .copied()
        .filter(|s| *s >= from && *s < to)
        .collect()
}

/// A monitor is under maintenance: by which window, and until when.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Active {
    pub window_id: String,
    pub name: String,
    pub until: i64,
}

/// The windows of one or more workspaces.
#[derive(Default)]
pub struct Calendar {
    by_workspace: HashMap<String, Vec<Window>>,
}

impl Calendar {
    /// The windows among `rows` that can be read (a row the server cannot read, which the
    /// API never writes, is skipped with a warning).
    pub fn of(rows: &[MaintenanceWindowRow]) -> Calendar {
        let mut by_workspace: HashMap<String, Vec<Window>> = HashMap::new();
        for row in rows {
            match Window::from_row(row) {
                Ok(w) => by_workspace
                    .entry(row.workspace_id.clone())
                    .or_default()
                    .push(w),
                Err((field, problem)) => {
                    tracing::warn!(window = %row.id, field, problem, "skipping a maintenance window that cannot be read")
                }
            }
        }
        Calendar { by_workspace }
    }

    pub fn is_empty(&self) -> bool {
        self.by_workspace.is_empty()
    }

    /// The windows of a workspace.
    pub fn windows(&self, workspace_id: &str) -> &[Window] {
        self.by_workspace
            .get(workspace_id)
            .map_or(&[][..], Vec::as_slice)
    }

    /// Whether `m` is under maintenance at `at`, and until when (the latest end among the
    /// windows covering it).
    pub fn active(&self, m: &MonitorRow, at: i64) -> Option<Active> {
        self.windows(&m.workspace_id)
            .iter()
            .filter(|w| w.covers(m))
            .filter_map(|w| {
                w.active_until(at).map(|until| Active {
                    window_id: w.id.clone(),
                    name: w.name.clone(),
                    until,
                })
            })
            .max_by_key(|a| a.until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(text: &str) -> i64 {
        crate::time::parse_ms(text).expect("a timestamp")
    }

    fn row(f: impl FnOnce(&mut MaintenanceWindowRow)) -> MaintenanceWindowRow {
        let mut r = MaintenanceWindowRow {
            id: "mw_1".into(),
            workspace_id: "ws_1".into(),
            name: "Patching".into(),
            description: String::new(),
            starts_at: ms("2026-11-01T00:00:00Z"),
            ends_at: None,
            rrule: None,
            cron: None,
            duration_minutes: None,
            timezone: "UTC".into(),
            monitor_ids: "[]".into(),
            tags: "[]".into(),
            created_at: 0,
            updated_at: 0,
            apply_key: None,
            managed_by: None,
            subscriber_notice_minutes: 1440,
        };
        f(&mut r);
        r
    }

    fn window(f: impl FnOnce(&mut MaintenanceWindowRow)) -> Window {
        Window::from_row(&row(f)).expect("a valid window")
    }

    #[test]
    fn a_one_off_window_covers_its_span_only() {
        let w = window(|r| {
            r.starts_at = ms("2026-11-25T10:00:00Z");
            r.ends_at = Some(ms("2026-11-25T11:00:00Z"));
        });
        assert_eq!(w.active_until(ms("2026-11-25T09:59:59Z")), None);
        assert_eq!(
            w.active_until(ms("2026-11-25T10:00:00Z")),
            Some(ms("2026-11-25T11:00:00Z"))
        );
        assert_eq!(w.active_until(ms("2026-11-25T11:00:00Z")), None);
        assert_eq!(w.upcoming(ms("2026-11-20T00:00:00Z"), 5).len(), 1);
        assert!(w.upcoming(ms("2026-11-26T00:00:00Z"), 5).is_empty());
    }

    #[test]
    fn a_weekly_rule_keeps_local_time_across_daylight_saving() {
        // Sundays 02:00 Berlin time, two hours: 01:00Z in winter, 00:00Z in summer.
        let w = window(|r| {
            r.starts_at = ms("2026-01-04T01:00:00Z");
            r.rrule = Some("RRULE:FREQ=WEEKLY;BYDAY=SU".into());
            r.duration_minutes = Some(120);
            r.timezone = "Europe/Berlin".into();
        });
        assert_eq!(
            w.active_until(ms("2026-11-29T02:30:00Z")),
            Some(ms("2026-11-29T03:00:00Z"))
        );
        assert_eq!(
            w.active_until(ms("2026-07-05T00:30:00Z")),
            Some(ms("2026-07-05T02:00:00Z"))
        );
        assert_eq!(w.active_until(ms("2026-11-28T02:30:00Z")), None);
        let next = w.upcoming(ms("2026-11-25T00:00:00Z"), 3);
        assert_eq!(
            next.iter().map(|o| o.start).collect::<Vec<_>>(),
            [
                ms("2026-11-29T01:00:00Z"),
                ms("2026-12-06T01:00:00Z"),
                ms("2026-12-13T01:00:00Z")
            ]
        );
    }

    #[test]
    fn a_cron_window_with_an_end_stops_there() {
        let w = window(|r| {
            r.cron = Some("30 3 * * *".into());
            r.duration_minutes = Some(30);
            r.timezone = "America/New_York".into();
            r.ends_at = Some(ms("2026-12-01T00:00:00Z"));
        });
        // 03:30 New York is 08:30Z in winter.
        assert_eq!(
            w.active_until(ms("2026-11-25T08:45:00Z")),
            Some(ms("2026-11-25T09:00:00Z"))
        );
        assert_eq!(w.active_until(ms("2026-11-25T09:00:00Z")), None);
        assert_eq!(w.active_until(ms("2026-12-02T08:45:00Z")), None);
        assert_eq!(w.upcoming(ms("2026-11-28T00:00:00Z"), 10).len(), 3);
    }

    #[test]
    fn a_rule_starting_mid_second_keeps_its_first_occurrence() {
        let start = ms("2026-11-25T10:00:07.293Z");
        let w = window(|r| {
            r.starts_at = start;
            r.rrule = Some("FREQ=DAILY".into());
            r.duration_minutes = Some(30);
        });
        assert_eq!(
            w.active_until(start + 60_000),
            Some(ms("2026-11-25T10:30:07Z"))
        );
    }

    #[test]
    fn overlapping_occurrences_chain_into_one_span() {
        // Every hour for 90 minutes: once in, never out until the series ends.
        let w = window(|r| {
            r.starts_at = ms("2026-11-25T00:00:00Z");
            r.ends_at = Some(ms("2026-11-25T05:00:00Z"));
            r.rrule = Some("FREQ=HOURLY".into());
            r.duration_minutes = Some(90);
        });
        assert_eq!(
            w.active_until(ms("2026-11-25T01:10:00Z")),
            Some(ms("2026-11-25T05:30:00Z"))
        );
    }

    #[test]
    fn scope_is_ids_tags_or_everything() {
        let tags = ["db".to_string(), "prod".to_string()];
        let scoped = |ids: &str, tags: &str| {
            window(|r| {
                r.ends_at = Some(ms("2026-11-02T00:00:00Z"));
                r.monitor_ids = ids.into();
                r.tags = tags.into();
            })
        };
        assert!(scoped("[]", "[]").covers_parts("mon_a", &tags));
        assert!(scoped(r#"["mon_a"]"#, "[]").covers_parts("mon_a", &[]));
        assert!(scoped("[]", r#"["db"]"#).covers_parts("mon_a", &tags));
        assert!(!scoped("[]", r#"["web"]"#).covers_parts("mon_a", &tags));
        assert!(!scoped(r#"["mon_b"]"#, "[]").covers_parts("mon_a", &tags));
    }

    #[test]
    fn bad_schedules_name_their_field() {
        let field = |f: fn(&mut MaintenanceWindowRow)| Window::from_row(&row(f)).err().map(|e| e.0);
        assert_eq!(field(|_| {}), Some("end"));
        assert_eq!(
            field(|r| {
                r.rrule = Some("FREQ=MINUTELY".into());
                r.duration_minutes = Some(5);
            }),
            Some("rrule")
        );
        assert_eq!(
            field(|r| {
                r.rrule = Some("FREQ=SOMETIMES".into());
                r.duration_minutes = Some(5);
            }),
            Some("rrule")
        );
        assert_eq!(
            field(|r| {
                r.rrule = Some("DTSTART:20260101T000000Z\nRRULE:FREQ=DAILY".into());
                r.duration_minutes = Some(5);
            }),
            Some("rrule")
        );
        assert_eq!(field(|r| r.cron = Some("0 3 * *".into())), Some("cron"));
        assert_eq!(
            field(|r| r.cron = Some("0 3 * * *".into())),
            Some("durationMinutes")
        );
        assert_eq!(
            field(|r| {
                r.cron = Some("0 3 * * *".into());
                r.duration_minutes = Some(5);
                r.timezone = "Mars/Base".into();
            }),
            Some("timezone")
        );
    }
}
