//! Heartbeat monitors: instead of the server checking a target, a job pings the monitor's
//! secret URL, and a missed deadline is a failed check.
//!
//! - Expectation: every `period` seconds, or on a `cron` schedule read in `timezone`; a
//!   ping may be `grace` seconds late.
//! - A ping reports success (`/ping/<token>`, `/0`), failure (`/fail`, a non-zero exit
//!   status `/<1-255>`) or a start (`/start`). A success after a start records how long
//!   the run took, and fails when that is over `maxDuration`.
//! - The deadline lives in the database (`heartbeat_states.deadline_at`). Every node sweeps
//!   for deadlines passed; moving a deadline on is a conditional update, so exactly one node
//!   records each miss, and a restart loses none.

use super::recorder::{CheckRecord, Recorder};
use super::schedules::parse_cron;
use crate::clock::SharedClock;
use crate::store::heartbeats::HeartbeatState;
use crate::store::{MonitorRow, MonitorState, Store, StoreError};
use chrono::{TimeZone, Utc};
use serde_json::{Map, Value, json};
use std::str::FromStr;
use std::time::Duration;
use tokio::sync::watch;

/// How often passed deadlines are looked for.
pub const POLL: Duration = Duration::from_millis(500);
/// Most of a ping's body kept with its check.
pub const MAX_BODY_BYTES: usize = 10 * 1024;
/// Longest period, grace and run (a year).
pub const MAX_SECONDS: u64 = 31_536_000;
/// Grace when none is given.
pub const DEFAULT_GRACE_SECS: u64 = 60;

/// When pings are expected.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// Every this many seconds.
    Period(u64),
    /// On a cron schedule in a time zone.
    Cron {
        cron: Box<croner::Cron>,
        timezone: chrono_tz::Tz,
    },
}

/// A heartbeat monitor's settings, parsed.
#[derive(Debug, Clone)]
pub struct Expectation {
    pub schedule: Schedule,
    pub grace_ms: i64,
    pub max_duration_ms: Option<i64>,
}

/// A problem with one field of the settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    pub field: &'static str,
    pub message: String,
}

fn problem(field: &'static str, message: impl Into<String>) -> FieldProblem {
    FieldProblem {
        field,
        message: message.into(),
    }
}

fn seconds(
    config: &Map<String, Value>,
    field: &'static str,
    min: u64,
    problems: &mut Vec<FieldProblem>,
) -> Option<u64> {
    match config.get(field) {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if (min..=MAX_SECONDS).contains(&n) => Some(n),
            _ => {
                problems.push(problem(
                    field,
                    format!("must be a whole number of seconds from {min} to {MAX_SECONDS}"),
                ));
                None
            }
        },
    }
}

/// Check a heartbeat monitor's settings; the normalised settings (JSON text) when valid.
/// `min_period` is the server's shortest interval.
pub fn validate(config: &Map<String, Value>, min_period: u64) -> Result<String, Vec<FieldProblem>> {
    let mut problems = Vec::new();
    for key in config.keys() {
        if !["period", "cron", "timezone", "grace", "maxDuration"].contains(&key.as_str()) {
            problems.push(FieldProblem {
                field: "type",
                message: format!(
                    "a heartbeat monitor has no field `{key}` (its fields: period or cron, timezone, grace, maxDuration)"
                ),
            });
        }
    }
    let period = seconds(config, "period", min_period.max(1), &mut problems);
    let grace = seconds(config, "grace", 0, &mut problems).unwrap_or(DEFAULT_GRACE_SECS);
    let max_duration = seconds(config, "maxDuration", 1, &mut problems);
    let cron = match config.get("cron") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) if text.len() <= 200 => match parse_cron(text) {
            Ok(_) => Some(text.trim().to_string()),
            Err(e) => {
                problems.push(problem("cron", e));
                None
            }
        },
        Some(_) => {
            problems.push(problem(
                "cron",
                "must be a cron schedule such as `0 3 * * *`",
            ));
            None
        }
    };
    let timezone = match config.get("timezone") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) => match chrono_tz::Tz::from_str(name) {
            Ok(_) => Some(name.clone()),
            Err(_) => {
                problems.push(problem(
                    "timezone",
                    "must be an IANA time zone name such as Europe/Berlin or UTC",
                ));
                None
            }
        },
        Some(_) => {
            problems.push(problem("timezone", "must be an IANA time zone name"));
            None
        }
    };
    let has_cron = config.get("cron").is_some_and(|v| !v.is_null());
    let has_period = config.get("period").is_some_and(|v| !v.is_null());
    match (has_period, has_cron) {
        (false, false) => problems.push(problem(
            "period",
            "give `period` (seconds between pings) or `cron` (the job's schedule)",
        )),
        (true, true) => problems.push(problem("cron", "give `period` or `cron`, not both")),
        _ => {}
    }
    if has_period && config.get("timezone").is_some_and(|v| !v.is_null()) {
        problems.push(problem("timezone", "applies to `cron` schedules only"));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let mut out = Map::new();
    if let Some(p) = period {
        out.insert("period".into(), Value::from(p));
    }
    if let Some(c) = cron {
        out.insert("cron".into(), Value::from(c));
        out.insert(
            "timezone".into(),
            Value::from(timezone.unwrap_or_else(|| "UTC".into())),
        );
    }
    out.insert("grace".into(), Value::from(grace));
    if let Some(m) = max_duration {
        out.insert("maxDuration".into(), Value::from(m));
    }
    Ok(Value::Object(out).to_string())
}

impl Expectation {
    /// The settings of a stored heartbeat monitor (validated when saved).
    pub fn of(config: &str) -> Option<Expectation> {
        let config: Map<String, Value> = serde_json::from_str(config).ok()?;
        let ms = |field: &str| {
            config
                .get(field)
                .and_then(Value::as_u64)
                .and_then(|s| i64::try_from(s.saturating_mul(1000)).ok())
        };
        let schedule = match (
            config.get("period").and_then(Value::as_u64),
            config.get("cron"),
        ) {
            (Some(p), _) => Schedule::Period(p.max(1)),
            (None, Some(Value::String(c))) => Schedule::Cron {
                cron: Box::new(parse_cron(c).ok()?),
                timezone: config
                    .get("timezone")
                    .and_then(Value::as_str)
                    .and_then(|t| chrono_tz::Tz::from_str(t).ok())
                    .unwrap_or(chrono_tz::UTC),
            },
            _ => return None,
        };
        Some(Expectation {
            schedule,
            grace_ms: ms("grace").unwrap_or(0),
            max_duration_ms: ms("maxDuration"),
        })
    }

    /// When the next ping is expected after `after_ms` (not counting grace).
    pub fn next_expected(&self, after_ms: i64) -> i64 {
        match &self.schedule {
            Schedule::Period(p) => {
                after_ms.saturating_add(i64::try_from(p.saturating_mul(1000)).unwrap_or(i64::MAX))
            }
            Schedule::Cron { cron, timezone } => {
                let Some(after) = Utc.timestamp_millis_opt(after_ms).single() else {
                    return i64::MAX;
                };
                cron.find_next_occurrence(&after.with_timezone(timezone), false)
                    .map(|t| t.timestamp_millis())
                    .unwrap_or(i64::MAX)
            }
        }
    }

    /// The deadline for the next ping after `after_ms`: the next expected time plus grace.
    pub fn deadline_after(&self, after_ms: i64) -> i64 {
        self.next_expected(after_ms).saturating_add(self.grace_ms)
    }
}

/// What a ping says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Success,
    Start,
    Fail,
    /// The job's exit status (0 is success).
    Exit(u8),
}

impl Signal {
    /// The signal of a ping URL's last segment (`None`: no segment, a success).
    pub fn parse(action: Option<&str>) -> Option<Signal> {
        match action {
            None | Some("") => Some(Signal::Success),
            Some("start") => Some(Signal::Start),
            Some("fail") => Some(Signal::Fail),
            Some(code) => match code.parse::<u8>() {
                Ok(0) => Some(Signal::Exit(0)),
                Ok(n) if !code.starts_with('0') => Some(Signal::Exit(n)),
                _ => None,
            },
        }
    }

    fn name(self) -> &'static str {
        match self {
            Signal::Success | Signal::Exit(0) => "success",
            Signal::Start => "start",
            Signal::Fail => "fail",
            Signal::Exit(_) => "exit",
        }
    }
}

/// What a ping changes: the monitor's next state, and the check it records (none for a
/// start).
#[derive(Debug, Clone, PartialEq)]
pub struct PingResult {
    pub state: HeartbeatState,
    /// `(ok, reason, run duration in ms)`.
    pub outcome: Option<(bool, Option<String>, Option<i64>)>,
}

/// Seconds as people read them: `90 s`, `2 min 5 s`, `3 h 0 min`.
pub fn duration_text(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// Apply a ping at `now` to a heartbeat monitor standing at `state`.
pub fn on_ping(exp: &Expectation, state: &HeartbeatState, signal: Signal, now: i64) -> PingResult {
    let next_deadline = exp.deadline_after(now);
    match signal {
        Signal::Start => {
            // A job that has started is not late: with a longest run, the run's end is the
            // deadline; without one, the schedule's deadline stands.
            let deadline = match exp.max_duration_ms {
                Some(m) => now.saturating_add(m),
                None => state.deadline_at.unwrap_or(next_deadline),
            };
            PingResult {
                state: HeartbeatState {
                    started_at: Some(now),
                    deadline_at: Some(deadline),
                    ..state.clone()
                },
                outcome: None,
            }
        }
        Signal::Fail | Signal::Exit(1..) => {
            let reason = match signal {
                Signal::Exit(code) => format!("The job exited with status {code}"),
                _ => "The job reported a failure".to_string(),
            };
            PingResult {
                state: HeartbeatState {
                    last_ping_at: Some(now),
                    started_at: None,
                    deadline_at: Some(next_deadline),
                    ..state.clone()
                },
                outcome: Some((false, Some(reason), None)),
            }
        }
        Signal::Success | Signal::Exit(0) => {
            let duration = state.started_at.map(|s| now - s);
            let outcome = match (duration, exp.max_duration_ms) {
                (Some(d), Some(max)) if d > max => (
                    false,
                    Some(format!(
                        "The run took {}, longer than its maxDuration of {}",
                        duration_text(d),
                        duration_text(max)
                    )),
                    duration,
                ),
                _ => (true, None, duration),
            };
            PingResult {
                state: HeartbeatState {
                    last_ping_at: Some(now),
                    started_at: None,
                    deadline_at: Some(next_deadline),
                    ..state.clone()
                },
                outcome: Some(outcome),
            }
        }
    }
}

/// Why a heartbeat monitor whose deadline passed fails, and its next deadline.
pub fn on_missed(
    exp: &Expectation,
    state: &HeartbeatState,
    created_at: i64,
    now: i64,
) -> (String, Value, i64) {
    let deadline = state.deadline_at.unwrap_or(now);
    let next = exp.deadline_after(now).max(now + 1000);
    if let (Some(started), Some(max)) = (state.started_at, exp.max_duration_ms)
        && now >= started.saturating_add(max)
    {
        let reason = format!(
            "The run started at {} has not finished within its maxDuration of {}",
            crate::time::format_ms(started),
            duration_text(max)
        );
        return (
            reason,
            json!({"startedAt": crate::time::format_ms(started)}),
            next,
        );
    }
    let expected_by = deadline - exp.grace_ms;
    let since = match state.last_ping_at {
        Some(at) => format!("No ping since {}", crate::time::format_ms(at)),
        None => format!(
            "No ping since the monitor was created at {}",
            crate::time::format_ms(created_at)
        ),
    };
    let reason = format!(
        "{since}; one was expected by {} (grace {})",
        crate::time::format_ms(expected_by),
        duration_text(exp.grace_ms)
    );
    let details = json!({
        "lastPingAt": state.last_ping_at.map(crate::time::format_ms),
        "expectedBy": crate::time::format_ms(expected_by),
    });
    (reason, details, next)
}

/// The check a ping or a missed deadline records.
pub fn record(
    monitor: &MonitorRow,
    region: &str,
    at: i64,
    ok: bool,
    reason: Option<String>,
    duration_ms: Option<i64>,
    details: Value,
) -> CheckRecord {
    CheckRecord {
        monitor_id: monitor.id.clone(),
        workspace_id: monitor.workspace_id.clone(),
        checked_at: at,
        ok,
        reason: reason.map(|r| crate::text::bounded(&r, crate::text::MAX_REASON_BYTES)),
        status_code: None,
        response_time_ms: duration_ms.and_then(|d| u32::try_from(d).ok()),
        region: region.to_string(),
        details: details.to_string(),
        confirmation: None,
        probe: None,
    }
}

/// A ping as it arrived.
pub struct Ping<'a> {
    pub signal: Signal,
    pub method: &'a str,
    pub body: &'a [u8],
    pub source: Option<String>,
    pub user_agent: Option<String>,
}

/// What became of a ping.
#[derive(Debug, PartialEq, Eq)]
pub enum PingOutcome {
    Recorded,
    /// The monitor is paused: nothing was recorded.
    Paused,
    /// No monitor has this token.
    Unknown,
}

/// Take a ping for the monitor whose token is `token`: move its deadline and record the
/// check (after the record is committed, so an answered ping is never lost).
pub async fn ping(
    store: &Store,
    recorder: &Recorder,
    work: &crate::wake::Nudge,
    region: &str,
    token: &str,
    ping: Ping<'_>,
    now: i64,
) -> Result<PingOutcome, StoreError> {
    let Some(monitor) = store.monitor_by_ping_token(token).await? else {
        return Ok(PingOutcome::Unknown);
    };
    if monitor.status == MonitorState::Paused {
        return Ok(PingOutcome::Paused);
    }
    let Some(exp) = Expectation::of(&monitor.config) else {
        return Err(StoreError::Corrupt(format!(
            "heartbeat monitor {} has invalid settings",
            monitor.id
        )));
    };
    let state = store
        .heartbeat_state(&monitor.id)
        .await?
        .unwrap_or_else(|| HeartbeatState::new(&monitor.id));
    let result = on_ping(&exp, &state, ping.signal, now);
    store.save_heartbeat_state(&result.state).await?;
    // A deadline brought forward (a run started with a limit on its duration) may come
    // before the one the sweep sleeps until. One put off needs nobody woken, so a flood
    // of pings costs the sweep nothing.
    if result
        .state
        .deadline_at
        .is_some_and(|at| state.deadline_at.is_none_or(|was| at < was))
    {
        work.tell();
    }
    let Some((ok, reason, duration)) = result.outcome else {
        return Ok(PingOutcome::Recorded);
    };
    let truncated = ping.body.len() > MAX_BODY_BYTES;
    let body = String::from_utf8_lossy(&ping.body[..ping.body.len().min(MAX_BODY_BYTES)]);
    let mut details = json!({
        "ping": {
            "kind": ping.signal.name(),
            "method": ping.method,
            "body": body,
        }
    });
    if let Some(ping_details) = details.get_mut("ping").and_then(Value::as_object_mut) {
        if let Signal::Exit(code) = ping.signal {
            ping_details.insert("exitStatus".into(), Value::from(code));
        }
        if truncated {
            ping_details.insert("bodyTruncated".into(), Value::Bool(true));
        }
        if let Some(s) = ping.source {
            ping_details.insert("source".into(), Value::from(s));
        }
        if let Some(ua) = ping.user_agent {
            ping_details.insert(
                "userAgent".into(),
                Value::from(crate::text::bounded(&ua, 300)),
            );
        }
        if let Some(d) = duration {
            ping_details.insert("durationMs".into(), Value::from(d));
        }
    }
    recorder
        .record_committed(record(&monitor, region, now, ok, reason, duration, details))
        .await;
    Ok(PingOutcome::Recorded)
}

/// Give heartbeat monitors without a deadline one, counted from `now`. Returns how many.
pub async fn arm_missing(store: &Store, now: i64) -> Result<usize, StoreError> {
    let mut armed = 0;
    for monitor in store.unarmed_heartbeats().await? {
        if let Some(exp) = Expectation::of(&monitor.config) {
            arm(store, &monitor, &exp, now).await?;
            armed += 1;
        }
    }
    Ok(armed)
}

/// Set a heartbeat monitor's deadline counting from `from` (created, resumed or edited),
/// keeping its last ping.
pub async fn arm(
    store: &Store,
    monitor: &MonitorRow,
    exp: &Expectation,
    from: i64,
) -> Result<(), StoreError> {
    let state = store
        .heartbeat_state(&monitor.id)
        .await?
        .unwrap_or_else(|| HeartbeatState::new(&monitor.id));
    let next = HeartbeatState {
        deadline_at: Some(exp.deadline_after(from)),
        ..state
    };
    store.save_heartbeat_state(&next).await
}

/// Record a failed check for every heartbeat monitor whose deadline passed by `now`.
/// Returns how many were recorded.
pub async fn sweep(
    store: &Store,
    recorder: &Recorder,
    region: &str,
    now: i64,
) -> Result<usize, StoreError> {
    let mut missed = 0;
    for (monitor, state) in store.due_heartbeats(now, 200).await? {
        let Some(exp) = Expectation::of(&monitor.config) else {
            continue;
        };
        let (reason, details, next) = on_missed(&exp, &state, monitor.created_at, now);
        // Another node may have taken this miss already.
        if !store
            .advance_heartbeat_deadline(&monitor.id, state.deadline_at, next)
            .await?
        {
            continue;
        }
        recorder
            .record_waiting(record(
                &monitor,
                region,
                now,
                false,
                Some(reason),
                None,
                details,
            ))
            .await;
        missed += 1;
    }
    Ok(missed)
}

/// Sweep for missed deadlines until `shutdown` turns true.
pub async fn run(
    store: Store,
    recorder: Recorder,
    region: String,
    clock: SharedClock,
    work: crate::wake::Nudge,
    mut shutdown: watch::Receiver<bool>,
) {
    if let Err(e) = arm_missing(&store, clock.now_ms()).await {
        tracing::warn!(error = %e, "could not give heartbeat monitors their deadlines");
    }
    let mut told = work.listen();
    loop {
        told.borrow_and_update();
        if let Err(e) = sweep(&store, &recorder, &region, clock.now_ms()).await {
            tracing::warn!(error = %e, "heartbeat deadline sweep failed; retrying");
        }
        // Alone on its database, the node sleeps until the next deadline (a ping or a new
        // monitor tells it to look again); nodes sharing one poll.
        let (wait, listening) = if work.idles() {
            let wait = match store.next_heartbeat_deadline().await {
                Ok(Some(at)) => {
                    Duration::from_millis(u64::try_from(at - clock.now_ms()).unwrap_or(0))
                        .clamp(SOONEST, work.cap_or(POLL))
                }
                Ok(None) => work.cap_or(POLL),
                Err(_) => POLL,
            };
            (wait, true)
        } else {
            (POLL, false)
        };
        if crate::wake::pause(wait, listening, &mut told, &mut shutdown).await {
            break;
        }
    }
}

/// The shortest sleep between two sweeps.
const SOONEST: Duration = Duration::from_millis(20);

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::DateTime;

    fn config(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    fn ms(text: &str) -> i64 {
        DateTime::parse_from_rfc3339(text)
            .expect("date")
            .timestamp_millis()
    }

    #[test]
    fn settings_are_checked_and_normalised() {
        let ok = validate(&config(json!({"period": 3600})), 30).expect("valid");
        assert_eq!(
            serde_json::from_str::<Value>(&ok).expect("json"),
            json!({"grace": 60, "period": 3600})
        );
        let ok = validate(
            &config(json!({"cron": "0 3 * * *", "timezone": "Europe/Berlin", "grace": 600})),
            30,
        )
        .expect("valid");
        assert!(ok.contains(r#""timezone":"Europe/Berlin""#), "{ok}");
        let fields = |v: Value| -> Vec<&'static str> {
            validate(&config(v), 30)
                .expect_err("invalid")
                .into_iter()
                .map(|p| p.field)
                .collect()
        };
        assert_eq!(fields(json!({})), ["period"]);
        assert_eq!(fields(json!({"period": 10})), ["period"]);
        assert_eq!(fields(json!({"period": 60, "cron": "* * * * *"})), ["cron"]);
        assert_eq!(fields(json!({"cron": "61 * * * *"})), ["cron"]);
        assert_eq!(fields(json!({"cron": "* * *"})), ["cron"]);
        assert_eq!(
            fields(json!({"cron": "0 3 * * *", "timezone": "Mars/Base"})),
            ["timezone"]
        );
        assert_eq!(
            fields(json!({"period": 60, "timezone": "UTC"})),
            ["timezone"]
        );
        assert_eq!(fields(json!({"period": 60, "url": "http://x"})), ["type"]);
    }

    #[test]
    fn cron_deadlines_follow_the_time_zone() {
        let exp = Expectation::of(r#"{"cron":"0 3 * * *","timezone":"Europe/Berlin","grace":600}"#)
            .expect("valid");
        // 03:00 in Berlin in winter is 02:00 UTC; in summer 01:00 UTC.
        assert_eq!(
            exp.next_expected(ms("2026-11-24T12:00:00Z")),
            ms("2026-11-25T02:00:00Z")
        );
        assert_eq!(
            exp.deadline_after(ms("2026-07-01T12:00:00Z")),
            ms("2026-07-02T01:10:00Z")
        );
        let secs = Expectation::of(r#"{"cron":"*/5 * * * * *","grace":1}"#).expect("valid");
        assert_eq!(
            secs.next_expected(ms("2026-11-24T12:00:02Z")),
            ms("2026-11-24T12:00:05Z")
        );
    }

    #[test]
    fn pings_move_the_deadline_and_report_runs() {
        let exp = Expectation::of(r#"{"period":60,"grace":10,"maxDuration":30}"#).expect("valid");
        let t = 1_000_000;
        let s0 = HeartbeatState::new("mon_1");
        let r = on_ping(&exp, &s0, Signal::Success, t);
        assert_eq!(r.outcome, Some((true, None, None)));
        assert_eq!(r.state.deadline_at, Some(t + 70_000));
        // A start makes the run's longest end the deadline; a success reports the duration.
        let started = on_ping(&exp, &r.state, Signal::Start, t + 60_000);
        assert_eq!(started.outcome, None);
        assert_eq!(started.state.deadline_at, Some(t + 90_000));
        let done = on_ping(&exp, &started.state, Signal::Success, t + 80_000);
        assert_eq!(done.outcome, Some((true, None, Some(20_000))));
        assert_eq!(done.state.started_at, None);
        let slow = on_ping(&exp, &started.state, Signal::Exit(0), t + 100_000);
        let (ok, reason, _) = slow.outcome.expect("a check");
        assert!(!ok);
        assert!(
            reason
                .expect("reason")
                .contains("longer than its maxDuration of 30 s")
        );
        let failed = on_ping(&exp, &r.state, Signal::Exit(3), t + 5_000);
        assert_eq!(
            failed.outcome,
            Some((false, Some("The job exited with status 3".into()), None))
        );
        assert_eq!(Signal::parse(Some("07")), None);
        assert_eq!(Signal::parse(Some("256")), None);
        assert_eq!(Signal::parse(Some("0")), Some(Signal::Exit(0)));
        assert_eq!(Signal::parse(Some("nope")), None);
    }

    #[test]
    fn a_miss_names_the_last_ping_and_the_expected_time() {
        let exp = Expectation::of(r#"{"period":60,"grace":30}"#).expect("valid");
        let last = ms("2026-11-21T09:30:00Z");
        let state = HeartbeatState {
            last_ping_at: Some(last),
            deadline_at: Some(last + 90_000),
            ..HeartbeatState::new("mon_1")
        };
        let now = last + 91_000;
        let (reason, details, next) = on_missed(&exp, &state, 0, now);
        assert_eq!(
            reason,
            "No ping since 2026-11-21T09:30:00.000Z; one was expected by 2026-11-21T09:31:00.000Z (grace 30 s)"
        );
        assert_eq!(details["expectedBy"], "2026-11-21T09:31:00.000Z");
        assert_eq!(next, now + 90_000);
    }
}
