//! What the chat and paging channels share: an event payload read into an [`Alert`]
//! (which monitor, what failed, since when, where from, a link, how long it lasted), the
//! words every provider's message is made of, and [`post`]: one JSON request to a provider,
//! its answer judged into a receipt or a retryable or permanent failure.

use serde_json::Value;
use tocsin_plugin_sdk::{Failure, Header, Receipt, http};

pub mod template;
pub use template::Templates;

/// What happened, as a person reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Down,
    /// A reminder that an incident is still open: `still` says for how long ("still down
    /// for 2 h 10 min").
    Reminder {
        still: String,
    },
    Recovered,
    Acknowledged,
    /// A flapping summary; `down` tells the state it settled in.
    Flapping {
        changes: i64,
        down: bool,
    },
    /// A monitor started flapping: `changes` within `window_minutes`; its alerts are held
    /// until it settles.
    FlappingStarted {
        changes: i64,
        window_minutes: i64,
    },
    /// Up, but slower than the monitor's limit for enough checks in a row.
    Degraded {
        response_ms: Option<i64>,
        limit_ms: Option<i64>,
    },
    /// Fast again after being degraded.
    DegradedEnded {
        response_ms: Option<i64>,
    },
    Paused,
    Resumed,
    /// A certificate close to expiry.
    Certificate {
        days: i64,
        critical: bool,
    },
    /// The previous month's uptime report of the workspace.
    Report {
        /// `October 2026`.
        title: String,
        monitors: u64,
        targets_missed: u64,
        incidents: u64,
    },
    /// Every probe of a private location went silent (`online` false), or one was heard
    /// again.
    Location {
        name: String,
        online: bool,
        /// Its last probe was revoked while it was offline: nobody checks from it now,
        /// and the alert about it is closed.
        retired: bool,
        monitors: u64,
        /// The workspace's id: a location's name is the server's, shared by workspaces.
        workspace_id: Option<String>,
    },
    /// What an alert pipeline step held (outside business hours, say), gathered into one
    /// message when the hold ended: `count` notifications, listed in the group.
    Summary {
        count: u64,
        /// The step that held them, e.g. `business-hours`.
        held_by: String,
    },
    /// Any other event, by name.
    Other(String),
}

/// How urgent an alert is: providers map it to colours, priorities and severities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Critical,
    Warning,
    Resolved,
    Info,
}

/// One incident of a grouped message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupEntry {
    pub monitor: String,
    pub reason: String,
    pub link: Option<String>,
}

/// An event, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    pub event: String,
    pub kind: Kind,
    /// A test message sent from the channel's test button.
    pub test: bool,
    pub monitor: String,
    pub monitor_id: Option<String>,
    /// What is monitored: the URL or host name.
    pub target: Option<String>,
    pub incident_id: Option<String>,
    /// The incident in Tocsin.
    pub link: Option<String>,
    pub reason: Option<String>,
    pub region: Option<String>,
    /// When the incident opened (RFC 3339).
    pub since: Option<String>,
    /// How long the incident lasted, in seconds (recoveries).
    pub duration_seconds: Option<i64>,
    /// When a certificate expires (RFC 3339).
    pub expires: Option<String>,
    pub workspace: Option<String>,
    /// Incidents grouped into this message (more than one), else empty.
    pub group: Vec<GroupEntry>,
    /// One-click links to act on the incident (acknowledge, snooze, resolve), as
    /// (button label, URL), in the order to show them; empty when the alert has none.
    pub actions: Vec<(&'static str, String)>,
    /// The headline the channel's title template wrote ([`Alert::shaped`]).
    pub custom_title: Option<String>,
    /// The text the channel's message template wrote: shown in place of the facts.
    pub text: Option<String>,
}

/// The payload's `actions` keys, with the words of their buttons, in order.
pub const ACTIONS: [(&str, &str); 4] = [
    ("acknowledge", "Acknowledge"),
    ("snooze1h", "Snooze 1 h"),
    ("snoozeUntilMorning", "Snooze until 09:00"),
    ("resolve", "Resolve"),
];

fn text(v: &Value) -> Option<String> {
    v.as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

impl Alert {
    /// Read an event payload (the JSON a webhook receiver gets).
    pub fn parse(payload: &str) -> Result<Alert, String> {
        let p: Value = serde_json::from_str(payload)
            .map_err(|_| "The event payload is not JSON".to_string())?;
        let event = p["event"].as_str().unwrap_or("").to_string();
        let kind = match event.as_str() {
            "incident.created" => Kind::Down,
            "incident.reminder" => Kind::Reminder {
                still: text(&p["reminder"]["text"]).unwrap_or_else(|| "still down".into()),
            },
            "incident.resolved" => Kind::Recovered,
            "incident.acknowledged" => Kind::Acknowledged,
            "monitor.flapping" => Kind::Flapping {
                changes: p["flapping"]["changes"].as_i64().unwrap_or(0),
                down: p["flapping"]["state"] == "down",
            },
            "monitor.flapping_started" => Kind::FlappingStarted {
                changes: p["flapping"]["changes"].as_i64().unwrap_or(0),
                window_minutes: p["flapping"]["windowMinutes"].as_i64().unwrap_or(0),
            },
            "monitor.degraded" => Kind::Degraded {
                response_ms: p["degraded"]["responseTime"].as_i64(),
                limit_ms: p["degraded"]["thresholdMs"].as_i64(),
            },
            "monitor.degraded_ended" => Kind::DegradedEnded {
                response_ms: p["degraded"]["responseTime"].as_i64(),
            },
            "monitor.paused" => Kind::Paused,
            "monitor.resumed" => Kind::Resumed,
            "ssl.expiry_warning" | "ssl.expiry_critical" => Kind::Certificate {
                days: p["ssl"]["daysRemaining"].as_i64().unwrap_or(0),
                critical: event == "ssl.expiry_critical",
            },
            "report.monthly" => Kind::Report {
                title: text(&p["report"]["title"]).unwrap_or_else(|| "last month".into()),
                monitors: p["report"]["monitors"].as_u64().unwrap_or(0),
                targets_missed: p["report"]["targetsMissed"].as_u64().unwrap_or(0),
                incidents: p["report"]["incidents"].as_u64().unwrap_or(0),
            },
            "location.offline" | "location.online" => Kind::Location {
                name: text(&p["location"]["name"]).unwrap_or_else(|| "location".into()),
                online: event == "location.online",
                retired: event == "location.online" && p["location"]["status"] == "unknown",
                monitors: p["location"]["monitors"].as_u64().unwrap_or(0),
                workspace_id: text(&p["workspace"]["id"]),
            },
            "alert.summary" => Kind::Summary {
                count: p["summary"]["count"].as_u64().unwrap_or(0),
                held_by: text(&p["summary"]["heldBy"]).unwrap_or_else(|| "a pipeline step".into()),
            },
            other => Kind::Other(other.to_string()),
        };
        if let Kind::Summary { .. } = kind {
            return Ok(Alert::summary(event, kind, &p));
        }
        let group: Vec<GroupEntry> = p["group"]["incidents"]
            .as_array()
            .filter(|list| list.len() > 1)
            .map(|list| {
                list.iter()
                    .map(|e| GroupEntry {
                        monitor: text(&e["monitor"]["name"]).unwrap_or_else(|| "monitor".into()),
                        reason: text(&e["failure"]["reason"])
                            .unwrap_or_else(|| "The check failed".into()),
                        link: text(&e["incident"]["url"]),
                    })
                    .collect()
            })
            .unwrap_or_default();
        // A grouped message is about several incidents: no links to act on one of them.
        let actions = if group.is_empty() {
            ACTIONS
                .iter()
                .filter_map(|(key, label)| text(&p["actions"][*key]).map(|url| (*label, url)))
                .collect()
        } else {
            Vec::new()
        };
        Ok(Alert {
            event,
            kind,
            test: p["test"] == Value::Bool(true),
            monitor: text(&p["monitor"]["name"])
                .or_else(|| text(&p["location"]["name"]).map(|n| format!("location {n}")))
                .unwrap_or_else(|| "monitor".into()),
            monitor_id: text(&p["monitor"]["id"]),
            target: text(&p["monitor"]["url"]).or_else(|| text(&p["monitor"]["hostname"])),
            incident_id: text(&p["incident"]["id"]),
            link: text(&p["incident"]["url"]).or_else(|| text(&p["report"]["url"])),
            reason: text(&p["failure"]["reason"]),
            region: text(&p["failure"]["region"]),
            since: text(&p["incident"]["createdAt"])
                .or_else(|| text(&p["flapping"]["since"]))
                .or_else(|| text(&p["location"]["offlineSince"])),
            duration_seconds: p["incident"]["durationSeconds"].as_i64(),
            expires: text(&p["ssl"]["expiresAt"]),
            workspace: text(&p["workspace"]["name"]),
            group,
            actions,
            custom_title: None,
            text: None,
        })
    }

    /// A summary: one line per notification it gathers, no link or buttons of its own.
    fn summary(event: String, kind: Kind, p: &Value) -> Alert {
        let group = p["summary"]["alerts"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|e| {
                        let what = match e["event"].as_str().unwrap_or_default() {
                            "incident.created" => text(&e["failure"]["reason"])
                                .map_or_else(|| "DOWN".to_string(), |r| format!("DOWN, {r}")),
                            "incident.resolved" => "RECOVERED".to_string(),
                            "incident.reminder" => "still DOWN".to_string(),
                            "incident.acknowledged" => "acknowledged".to_string(),
                            other => other.to_string(),
                        };
                        let at = text(&e["timestamp"]).unwrap_or_default();
                        GroupEntry {
                            monitor: text(&e["monitor"]["name"])
                                .unwrap_or_else(|| "monitor".into()),
                            reason: if at.is_empty() {
                                what
                            } else {
                                format!("{what} at {at}")
                            },
                            link: text(&e["incident"]["url"]),
                        }
                    })
                    .collect()
            })
            .unwrap_or_default();
        Alert {
            event,
            kind,
            test: p["test"] == Value::Bool(true),
            monitor: "monitors".into(),
            monitor_id: None,
            target: None,
            incident_id: None,
            link: None,
            reason: None,
            region: None,
            since: None,
            duration_seconds: None,
            expires: None,
            workspace: text(&p["workspace"]["name"]),
            group,
            actions: Vec::new(),
            custom_title: None,
            text: None,
        }
    }

    /// The words of the alert's link: a report's or an incident's.
    pub fn link_label(&self) -> &'static str {
        match self.kind {
            Kind::Report { .. } => "Open the report",
            _ => "Open the incident",
        }
    }

    pub fn severity(&self) -> Severity {
        match &self.kind {
            Kind::Down | Kind::Reminder { .. } => Severity::Critical,
            Kind::Flapping { down: true, .. } => Severity::Critical,
            Kind::Certificate { critical: true, .. } => Severity::Critical,
            Kind::Location { online: false, .. } => Severity::Critical,
            Kind::Location { online: true, .. } => Severity::Resolved,
            Kind::Certificate { .. }
            | Kind::Flapping { .. }
            | Kind::FlappingStarted { .. }
            | Kind::Degraded { .. } => Severity::Warning,
            Kind::Recovered | Kind::DegradedEnded { .. } => Severity::Resolved,
            Kind::Acknowledged
            | Kind::Paused
            | Kind::Resumed
            | Kind::Report { .. }
            | Kind::Summary { .. }
            | Kind::Other(_) => Severity::Info,
        }
    }

    /// A colour for the severity, as 0xRRGGBB.
    pub fn color(&self) -> u32 {
        match self.severity() {
            Severity::Critical => 0xD7_26_1E,
            Severity::Warning => 0xF2_99_1A,
            Severity::Resolved => 0x2E_A0_43,
            Severity::Info => 0x6A_73_7D,
        }
    }

    /// `#D7261E`.
    pub fn color_hex(&self) -> String {
        format!("#{:06X}", self.color())
    }

    /// One line: `DOWN: Public API`, `[Test] RECOVERED: Public API`, `3 monitors down`;
    /// the channel's title template's words when it has one.
    pub fn title(&self) -> String {
        let test = if self.test { "[Test] " } else { "" };
        match &self.custom_title {
            Some(custom) => format!("{test}{custom}"),
            None => format!("{test}{}", self.default_title()),
        }
    }

    /// The headline without a template, and without the test mark.
    pub fn default_title(&self) -> String {
        if !self.group.is_empty() && !matches!(self.kind, Kind::Summary { .. }) {
            return format!("DOWN: {} monitors down", self.group.len());
        }
        let m = &self.monitor;
        match &self.kind {
            Kind::Down => format!("DOWN: {m}"),
            Kind::Reminder { still } => format!("DOWN: {m} is {still}"),
            Kind::Recovered => format!("RECOVERED: {m}"),
            Kind::Acknowledged => format!("Acknowledged: {m}"),
            Kind::Flapping { changes, down } => format!(
                "FLAPPING: {m} changed state {changes} times, now {}",
                if *down { "DOWN" } else { "UP" }
            ),
            Kind::FlappingStarted {
                changes,
                window_minutes,
            } => format!(
                "FLAPPING: {m} changed state {changes} times in {window_minutes} min; alerts are held until it settles"
            ),
            Kind::Degraded {
                response_ms,
                limit_ms,
            } => match (response_ms, limit_ms) {
                (Some(r), Some(l)) => format!(
                    "DEGRADED: {m} responds in {}, slower than {}",
                    response_time(*r),
                    response_time(*l)
                ),
                _ => format!("DEGRADED: {m} is slow"),
            },
            Kind::DegradedEnded { .. } => format!("Performance restored: {m}"),
            Kind::Paused => format!("Paused: {m}"),
            Kind::Resumed => format!("Resumed: {m}"),
            Kind::Certificate { days, .. } => format!("Certificate expires in {days} days: {m}"),
            Kind::Report {
                title,
                monitors,
                targets_missed,
                ..
            } => format!(
                "Uptime report for {title}: {monitors} {}, {targets_missed} {} missed",
                if *monitors == 1 {
                    "monitor"
                } else {
                    "monitors"
                },
                if *targets_missed == 1 {
                    "target"
                } else {
                    "targets"
                }
            ),
            Kind::Location {
                name,
                online: false,
                monitors,
                ..
            } => format!(
                "OFFLINE: location {name} ({monitors} {} not checked)",
                if *monitors == 1 {
                    "monitor"
                } else {
                    "monitors"
                }
            ),
            Kind::Location {
                name,
                retired: true,
                ..
            } => format!("CLOSED: location {name} has no probe left; nothing checks from it"),
            Kind::Location { name, .. } => format!("ONLINE: location {name} is checking again"),
            Kind::Summary { count, held_by } => format!(
                "Summary: {count} {} held by {held_by}",
                if *count == 1 { "alert" } else { "alerts" }
            ),
            Kind::Other(event) => format!("{event}: {m}"),
        }
    }

    /// The facts a person needs, as (label, value) pairs, in reading order; none when the
    /// channel's message template wrote a [text](Alert::text) in their place.
    pub fn facts(&self) -> Vec<(&'static str, String)> {
        let mut facts = Vec::new();
        if self.text.is_some() {
            return facts;
        }
        if let Some(t) = &self.target {
            facts.push(("Target", t.clone()));
        }
        match &self.kind {
            Kind::Down | Kind::Reminder { .. } => {
                facts.push((
                    "Reason",
                    self.reason
                        .clone()
                        .unwrap_or_else(|| "The check failed".into()),
                ));
                if let Some(s) = &self.since {
                    facts.push(("Since", s.clone()));
                }
                if let Some(r) = &self.region {
                    facts.push(("Region", r.clone()));
                }
            }
            Kind::Recovered => {
                if let Some(d) = self.duration_seconds {
                    facts.push(("Down for", duration(d)));
                }
                if let Some(s) = &self.since {
                    facts.push(("Down since", s.clone()));
                }
            }
            Kind::Flapping { .. } | Kind::FlappingStarted { .. } => {
                if let Some(s) = &self.since {
                    facts.push(("Since", s.clone()));
                }
            }
            Kind::Certificate { .. } => {
                if let Some(e) = &self.expires {
                    facts.push(("Expires", e.clone()));
                }
            }
            Kind::Report { incidents, .. } => {
                facts.push(("Incidents", incidents.to_string()));
            }
            Kind::Location { online: false, .. } => {
                facts.push((
                    "Why",
                    "None of its probes was heard from for 45 seconds; its monitors keep their states and open no incident until one is".into(),
                ));
                if let Some(s) = &self.since {
                    facts.push(("Since", s.clone()));
                }
            }
            Kind::Degraded {
                response_ms: Some(r),
                ..
            }
            | Kind::DegradedEnded {
                response_ms: Some(r),
            } => facts.push(("Response time", response_time(*r))),
            _ => {}
        }
        facts
    }

    /// The whole message as plain text: title, facts, grouped incidents, link.
    pub fn plain(&self) -> String {
        let mut out = self.title();
        for (label, value) in self.facts() {
            out.push_str(&format!("\n{label}: {value}"));
        }
        if let Some(text) = &self.text {
            out.push('\n');
            out.push_str(text);
        }
        for line in self.group_lines() {
            out.push_str(&format!("\n- {line}"));
        }
        if let Some(link) = &self.link {
            out.push_str(&format!("\n{link}"));
        }
        for (label, url) in &self.actions {
            out.push_str(&format!("\n{label}: {url}"));
        }
        out
    }

    /// The body without the title, as plain lines (for providers with a title field).
    pub fn body(&self) -> String {
        let mut lines: Vec<String> = self
            .facts()
            .into_iter()
            .map(|(label, value)| format!("{label}: {value}"))
            .collect();
        lines.extend(self.text.clone());
        lines.extend(self.group_lines().into_iter().map(|l| format!("- {l}")));
        if lines.is_empty() {
            lines.push(self.title());
        }
        lines.join("\n")
    }

    /// Markdown (CommonMark: Discord, Mattermost, Teams, Matrix): bold title, facts,
    /// grouped incidents and a link.
    pub fn markdown(&self) -> String {
        let mut out = format!("**{}**", escape_markdown(&self.title()));
        for (label, value) in self.facts() {
            out.push_str(&format!("\n**{label}:** {}", escape_markdown(&value)));
        }
        if let Some(text) = &self.text {
            out.push('\n');
            out.push_str(&escape_markdown(text));
        }
        for entry in self.group.iter().take(GROUP_LINES) {
            let name = escape_markdown(&entry.monitor);
            let reason = escape_markdown(&short(&entry.reason));
            match &entry.link {
                Some(l) => out.push_str(&format!("\n- [{name}]({l}): {reason}")),
                None => out.push_str(&format!("\n- {name}: {reason}")),
            }
        }
        if self.group.len() > GROUP_LINES {
            out.push_str(&format!("\n- and {} more", self.group.len() - GROUP_LINES));
        }
        if let Some(link) = &self.link {
            out.push_str(&format!("\n[{}]({link})", self.link_label()));
        }
        if !self.actions.is_empty() {
            let links: Vec<String> = self
                .actions
                .iter()
                .map(|(label, url)| format!("[{label}]({url})"))
                .collect();
            out.push_str(&format!("\n{}", links.join(" · ")));
        }
        out
    }

    /// Grouped incidents, one line each, at most [`GROUP_LINES`] and a count of the rest.
    pub fn group_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .group
            .iter()
            .take(GROUP_LINES)
            .map(|e| format!("{}: {}", e.monitor, short(&e.reason)))
            .collect();
        if self.group.len() > GROUP_LINES {
            lines.push(format!("and {} more", self.group.len() - GROUP_LINES));
        }
        lines
    }

    /// A key that stays the same over an incident's life (created, acknowledged,
    /// resolved), for providers that track alerts (PagerDuty's `dedup_key`, Opsgenie's
    /// alias); the monitor's id for events without an incident.
    pub fn dedup_key(&self) -> String {
        if let Kind::Location {
            name, workspace_id, ..
        } = &self.kind
        {
            // One page per location of a workspace: raised when it goes offline, closed
            // when it is back.
            return format!(
                "location-{}-{name}",
                workspace_id.as_deref().unwrap_or("workspace")
            );
        }
        self.incident_id
            .clone()
            .or_else(|| self.monitor_id.clone())
            .unwrap_or_else(|| format!("tocsin-{}", self.monitor))
    }
}

/// A response time as people read it: `850 ms`, `2.4 s`.
pub fn response_time(ms: i64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        let tenths = (ms + 50) / 100;
        format!("{}.{} s", tenths / 10, tenths % 10)
    }
}

/// Most incidents a grouped message names one by one.
pub const GROUP_LINES: usize = 25;

fn short(reason: &str) -> String {
    reason.chars().take(120).collect()
}

/// Escape the characters CommonMark would read as formatting, and keep `@` from starting
/// a mention (`@channel`, `@here`, `@all` in Mattermost and Rocket.Chat) with a zero-width
/// space after it.
pub fn escape_markdown(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '*' | '_' | '`' | '[' | ']' | '<' | '>' | '~' | '|' | '\\'
        ) {
            out.push('\\');
        }
        out.push(c);
        if c == '@' {
            out.push('\u{200B}');
        }
    }
    out
}

/// `text` escaped by `escape` and at most `max` characters long, cut before escaping so a
/// cut never splits an escape (`&amp;`, `\\*`) in two.
pub fn escaped_within(text: &str, max: usize, escape: impl Fn(&str) -> String) -> String {
    let escaped = |keep: usize| escape(&text.chars().take(keep).collect::<String>());
    let fits = |keep: usize| escaped(keep).chars().count() <= max;
    // The most characters whose escaped form fits, by halving (escaping only grows).
    let (mut lo, mut hi) = (0, text.chars().count().min(max));
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    escaped(lo)
}

/// "3 h 5 min", "4 min 20 s", "12 s".
pub fn duration(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, (seconds % 3600) / 60, seconds % 60);
    match (h, m) {
        (0, 0) => format!("{s} s"),
        (0, _) => format!("{m} min {s} s"),
        _ => format!("{h} h {m} min"),
    }
}

/// One JSON request to a provider.
pub struct Post<'a> {
    /// The provider's name, for reasons: `Slack`, `PagerDuty`.
    pub service: &'a str,
    /// `POST` for every provider but Matrix (`PUT`).
    pub method: &'a str,
    pub url: String,
    /// Besides `Content-Type: application/json`.
    pub headers: Vec<Header>,
    pub body: Value,
    pub timeout_ms: u32,
}

/// Define a chat channel's configuration struct with the two template fields every chat
/// channel takes appended to its own (`titleTemplate`, `messageTemplate`; see
/// [`template`]), and `templates()` and `check_templates()` to use and check them. The
/// struct's own fields end with a comma.
#[macro_export]
macro_rules! with_templates {
    ($(#[$meta:meta])* pub struct $name:ident { $($fields:tt)* }) => {
        $(#[$meta])*
        pub struct $name {
            $($fields)*
            /// The message's headline, written with `{{variable}}` placeholders such as
            /// `{{monitor}} is {{status}}`; empty for the channel's own headline.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(length(max = 200), title = "Headline template")]
            pub title_template: Option<String>,
            /// The message's text in place of its facts, with the same placeholders:
            /// title, status, event, monitor, monitorId, target, reason, region, since,
            /// duration, link, incidentId, workspace, severity. Empty for the facts.
            #[serde(default, skip_serializing_if = "Option::is_none")]
            #[schemars(length(max = 2000), title = "Message template")]
            #[schemars(extend("x-tocsin-multiline" = true))]
            pub message_template: Option<String>,
        }

        impl $name {
            /// The templates, for [`Alert::shaped`]($crate::Alert::shaped).
            pub fn templates(&self) -> $crate::Templates<'_> {
                $crate::Templates {
                    title: self.title_template.as_deref(),
                    text: self.message_template.as_deref(),
                }
            }

            /// Trim the templates (empty ones are unset) and check them; the problems, by
            /// field.
            pub fn check_templates(&mut self) -> Vec<tocsin_plugin_sdk::FieldError> {
                let mut problems = Vec::new();
                for (field, value, max) in [
                    ("titleTemplate", &mut self.title_template, $crate::template::TITLE_MAX),
                    ("messageTemplate", &mut self.message_template, $crate::template::TEXT_MAX),
                ] {
                    *value = value
                        .take()
                        .map(|t| t.trim().to_string())
                        .filter(|t| !t.is_empty());
                    if let Some(t) = value.as_deref()
                        && let Err(m) = $crate::template::check(t, max)
                    {
                        problems.push(tocsin_plugin_sdk::typed::field_error(field, m));
                    }
                }
                problems
            }
        }
    };
}

/// The configuration of a channel that is one incoming-webhook URL (Slack, Discord, Teams,
/// Mattermost, Rocket.Chat, Google Chat): `webhookUrl`, an absolute http(s) URL, and the
/// message templates.
/// `webhook_url_config!(SlackConfig, "slack channel", "Incoming webhook URL from Slack.")`.
#[macro_export]
macro_rules! webhook_url_config {
    ($name:ident, $title:literal, $doc:literal) => {
        $crate::with_templates! {
            /// The channel's configuration.
            #[derive(
                Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema,
            )]
            #[serde(rename_all = "camelCase", deny_unknown_fields)]
            #[schemars(title = $title)]
            pub struct $name {
                #[doc = $doc]
                // The URL is the credential: whoever has it can post.
                #[schemars(length(min = 1, max = 2048))]
                #[schemars(extend("x-tocsin-secret" = true, "x-tocsin-target" = true))]
                #[schemars(title = "Webhook URL")]
                pub webhook_url: String,
            }
        }

        impl tocsin_plugin_sdk::typed::TypedConfig for $name {
            fn refine(mut self) -> Result<Self, Vec<tocsin_plugin_sdk::FieldError>> {
                self.webhook_url = self.webhook_url.trim().to_string();
                let mut problems = self.check_templates();
                if let Err(m) = $crate::check_url(&self.webhook_url) {
                    problems.insert(0, tocsin_plugin_sdk::typed::field_error("webhookUrl", m));
                }
                if problems.is_empty() {
                    Ok(self)
                } else {
                    Err(problems)
                }
            }
        }
    };
}

/// A Slack-style message with one attachment coloured by state (Mattermost and Rocket.Chat
/// take this shape): the Markdown text, the title linked to the incident, the facts as
/// fields, grouped incidents as the attachment's text.
pub fn attachment_message(alert: &Alert) -> Value {
    let fields: Vec<Value> = alert
        .facts()
        .into_iter()
        .map(|(label, value)| {
            // Field values read Markdown: a failure's reason stays words.
            serde_json::json!({"short": label != "Reason" && label != "Target", "title": label, "value": escape_markdown(&value)})
        })
        .collect();
    let mut attachment = serde_json::json!({
        "fallback": alert.plain(),
        "color": alert.color_hex(),
        "title": alert.title(),
        "fields": fields,
    });
    if let Some(text) = &alert.text {
        // The attachment's text reads Markdown: the filled-in words stay words.
        attachment["text"] = serde_json::json!(escape_markdown(text));
    }
    if let Some(link) = &alert.link {
        attachment["title_link"] = serde_json::json!(link);
    }
    let lines = alert.group_lines();
    if !lines.is_empty() {
        let text: Vec<String> = lines.iter().map(|l| format!("- {l}")).collect();
        attachment["text"] = serde_json::json!(text.join("\n"));
    }
    serde_json::json!({"username": "Tocsin", "text": alert.markdown(), "attachments": [attachment]})
}

/// Check that a configured URL is an absolute `http(s)://` URL; the message names `field`.
pub fn check_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or("must be an https:// URL")?;
    if rest.is_empty() || rest.starts_with('/') || url.chars().any(char::is_whitespace) {
        return Err("must be an https:// URL with a host".into());
    }
    Ok(())
}

/// Percent-encode one URL path segment (room ids, aliases).
pub fn path_segment(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Send `post` and judge the answer: 2xx is delivered; 408, 425, 429 and 5xx are worth
/// another try; any other answer is permanent, with the provider's own error message.
pub fn post(post: Post<'_>) -> Result<Receipt, Failure> {
    let mut headers = vec![Header {
        name: "Content-Type".into(),
        value: "application/json".into(),
    }];
    headers.extend(post.headers);
    let request = http::Request {
        method: post.method.into(),
        url: post.url,
        headers,
        body: Some(post.body.to_string().into_bytes()),
        timeout_ms: post.timeout_ms,
        follow_redirects: false,
        max_redirects: 0,
        max_body_bytes: 16 * 1024,
        version: http::HttpVersion::Any,
    };
    match http::send(&request) {
        Ok(r) => judge(post.service, r.status, &r.body),
        Err(e) => Err(transport_failure(post.service, &e)),
    }
}

/// A transport error as a retryable failure (or a permanent one for a bad or refused
/// request).
pub fn transport_failure(service: &str, e: &http::Error) -> Failure {
    match e {
        http::Error::Timeout(ms) => {
            Failure::retry(format!("{service} did not answer within {} s", ms / 1000))
        }
        http::Error::Dns(d) => Failure::retry(format!("Could not reach {service}: {d}")),
        http::Error::ConnectionRefused(d) => {
            Failure::retry(format!("Could not reach {service}: {d}"))
        }
        http::Error::Tls(d) => Failure::retry(format!("TLS error talking to {service}: {d}")),
        http::Error::TooManyRedirects(_) => {
            Failure::permanent(format!("{service} redirected the request; check the URL"))
        }
        http::Error::InvalidRequest(d) | http::Error::Denied(d) => {
            Failure::permanent(format!("Cannot send to {service}: {d}"))
        }
        http::Error::Other(d) => Failure::retry(format!("Could not reach {service}: {d}")),
    }
}

/// Judge a provider's answer.
pub fn judge(service: &str, status: u16, body: &[u8]) -> Result<Receipt, Failure> {
    if (200..300).contains(&status) {
        return Ok(Receipt {
            status_code: Some(status),
            detail: Some(format!("accepted by {service}")),
        });
    }
    let said = provider_message(body);
    let said = if said.is_empty() {
        String::new()
    } else {
        format!(": {said}")
    };
    let failure = match status {
        408 | 425 | 429 | 500..=599 => Failure::retry(format!("{service} answered {status}{said}")),
        401 | 403 => Failure::permanent(format!(
            "{service} refused the credentials ({status}){said}; check the channel's key or URL"
        )),
        404 | 410 => Failure::permanent(format!(
            "{service} does not know this destination ({status}){said}; check the channel's URL"
        )),
        _ => Failure::permanent(format!("{service} refused the message ({status}){said}")),
    };
    Err(failure.with_status(status))
}

/// The error a provider put in its answer: a JSON `message`, `error`, `description` or
/// `text` field and the first of its `errors`, or the body as text; at most 200 characters.
pub fn provider_message(body: &[u8]) -> String {
    let text = match serde_json::from_slice::<Value>(body) {
        Ok(v) => {
            let pick = |v: &Value| -> Option<String> {
                match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Array(a) => a.first().map(|x| match x {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    }),
                    Value::Object(o) => o
                        .get("message")
                        .and_then(Value::as_str)
                        .map(String::from)
                        .or_else(|| Some(v.to_string())),
                    _ => None,
                }
            };
            let main = ["message", "error", "description", "text", "info"]
                .iter()
                .find_map(|k| v.get(*k).and_then(pick));
            // A list of `errors` says what exactly was wrong (PagerDuty, Pushover).
            let detail = v.get("errors").and_then(pick);
            match (main, detail) {
                (Some(m), Some(d)) if m != d => format!("{m}: {d}"),
                (Some(m), _) => m,
                (None, Some(d)) => d,
                (None, None) => v.to_string(),
            }
        }
        Err(_) => String::from_utf8_lossy(body).trim().to_string(),
    };
    text.chars().take(200).collect()
}

/// A header.
pub fn header(name: &str, value: &str) -> Header {
    Header {
        name: name.into(),
        value: value.into(),
    }
}

/// Server settings for a plugin as JSON (`{}` when none or unreadable).
pub fn settings(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Object(Default::default()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_summary_lists_each_held_alert_and_pages_nobody() {
        let p = json!({"event": "alert.summary", "workspace": {"name": "Acme"},
            "summary": {"count": 2, "heldBy": "business-hours", "alerts": [
                {"event": "incident.created", "timestamp": "2026-12-01T02:10:00Z",
                 "monitor": {"name": "backup"}, "failure": {"reason": "Exit status 1"},
                 "incident": {"url": "https://t.example/incidents/inc_1"}},
                {"event": "incident.resolved", "timestamp": "2026-12-01T03:00:00Z",
                 "monitor": {"name": "backup"}}]}});
        let alert = Alert::parse(&p.to_string()).expect("alert");
        assert_eq!(alert.title(), "Summary: 2 alerts held by business-hours");
        assert_eq!(alert.severity(), Severity::Info);
        assert_eq!(
            alert.group_lines(),
            [
                "backup: DOWN, Exit status 1 at 2026-12-01T02:10:00Z",
                "backup: RECOVERED at 2026-12-01T03:00:00Z"
            ]
        );
        assert!(alert.actions.is_empty() && alert.link.is_none());
        assert!(
            alert.plain().contains("- backup: RECOVERED"),
            "{}",
            alert.plain()
        );
    }

    #[test]
    fn a_monthly_report_reads_as_one_line_with_a_link_to_the_report() {
        let p = json!({"event": "report.monthly", "workspace": {"name": "Acme"},
            "report": {"title": "October 2026", "monitors": 12, "targetsMissed": 1, "incidents": 3,
                       "url": "https://t.example/reports?month=2026-10"}});
        let alert = Alert::parse(&p.to_string()).expect("alert");
        assert_eq!(
            alert.title(),
            "Uptime report for October 2026: 12 monitors, 1 target missed"
        );
        assert_eq!(alert.severity(), Severity::Info);
        assert_eq!(
            alert.link.as_deref(),
            Some("https://t.example/reports?month=2026-10")
        );
        assert_eq!(alert.link_label(), "Open the report");
        assert!(alert.plain().contains("Incidents: 3"), "{}", alert.plain());
    }

    #[test]
    fn a_location_offline_is_critical_and_says_what_is_not_checked() {
        let p = json!({"event": "location.offline", "workspace": {"name": "Acme"},
            "location": {"name": "office", "status": "offline", "monitors": 4,
                         "offlineSince": "2026-12-01T10:00:00.000Z"}});
        let alert = Alert::parse(&p.to_string()).expect("alert");
        assert_eq!(
            alert.title(),
            "OFFLINE: location office (4 monitors not checked)"
        );
        assert_eq!(alert.severity(), Severity::Critical);
        let plain = alert.plain();
        assert!(plain.contains("Since: 2026-12-01T10:00:00.000Z"), "{plain}");
        assert!(!plain.contains("Open the incident"), "{plain}");
        assert_eq!(alert.dedup_key(), "location-workspace-office");
        let p = json!({"event": "location.online", "workspace": {"id": "wsp_1"},
            "location": {"name": "office", "status": "online", "monitors": 4}});
        let alert = Alert::parse(&p.to_string()).expect("alert");
        assert_eq!(alert.title(), "ONLINE: location office is checking again");
        assert_eq!(alert.severity(), Severity::Resolved);
        assert_eq!(alert.dedup_key(), "location-wsp_1-office");
        let p = json!({"event": "location.online", "workspace": {"id": "wsp_1"},
            "location": {"name": "office", "status": "unknown", "monitors": 4}});
        let alert = Alert::parse(&p.to_string()).expect("alert");
        assert_eq!(
            alert.title(),
            "CLOSED: location office has no probe left; nothing checks from it"
        );
        assert_eq!(alert.severity(), Severity::Resolved);
    }

    #[test]
    fn a_reason_in_an_attachment_field_stays_words() {
        let mut p: Value = serde_json::from_str(&created()).expect("json");
        p["failure"]["reason"] = json!("see [here](https://evil.test) @channel");
        let a = Alert::parse(&p.to_string()).expect("alert");
        let m = attachment_message(&a);
        let reason = m["attachments"][0]["fields"]
            .as_array()
            .and_then(|f| f.iter().find(|f| f["title"] == "Reason"))
            .map(|f| f["value"].clone());
        assert_eq!(
            reason,
            Some(json!("see \\[here\\](https://evil.test) @\u{200B}channel"))
        );
    }

    #[test]
    fn a_degraded_monitor_says_how_slow_against_what() {
        let p = json!({"event": "monitor.degraded", "monitor": {"name": "API", "url": "https://api.example/"},
                       "degraded": {"state": "degraded", "responseTime": 2412, "thresholdMs": 1000, "slowChecks": 3}});
        let a = Alert::parse(&p.to_string()).expect("alert");
        assert_eq!(
            a.title(),
            "DEGRADED: API responds in 2.4 s, slower than 1.0 s"
        );
        assert_eq!(a.severity(), Severity::Warning);
        assert!(a.facts().contains(&("Response time", "2.4 s".to_string())));
        let p = json!({"event": "monitor.degraded_ended", "monitor": {"name": "API"},
                       "degraded": {"state": "up", "responseTime": 182}});
        let a = Alert::parse(&p.to_string()).expect("alert");
        assert_eq!(a.title(), "Performance restored: API");
        assert_eq!(a.severity(), Severity::Resolved);
        assert_eq!(response_time(999), "999 ms");
    }

    #[test]
    fn one_click_links_are_read_in_order_and_not_for_groups() {
        let mut p: Value = serde_json::from_str(&created()).expect("json");
        p["actions"] = json!({"resolve": "https://t/act/r", "acknowledge": "https://t/act/a"});
        let a = Alert::parse(&p.to_string()).expect("alert");
        assert_eq!(
            a.actions,
            vec![
                ("Acknowledge", "https://t/act/a".to_string()),
                ("Resolve", "https://t/act/r".to_string())
            ]
        );
        assert!(
            a.markdown()
                .ends_with("[Acknowledge](https://t/act/a) · [Resolve](https://t/act/r)")
        );
        assert!(a.plain().ends_with("\nResolve: https://t/act/r"));
        p["group"] = json!({"incidents": [p.clone(), p.clone()]});
        assert!(
            Alert::parse(&p.to_string())
                .expect("alert")
                .actions
                .is_empty()
        );
    }

    fn created() -> String {
        json!({
            "event": "incident.created",
            "incident": {"id": "inc_1", "url": "https://t.example/incidents/inc_1",
                          "createdAt": "2026-11-21T09:30:00.000Z"},
            "monitor": {"id": "mon_1", "name": "Public API", "url": "https://api.example.com"},
            "failure": {"reason": "Expected status 200, got 503", "region": "eu-west"},
        })
        .to_string()
    }

    #[test]
    fn a_down_alert_says_what_failed_since_when_and_where() {
        let a = Alert::parse(&created()).expect("parses");
        assert_eq!(a.title(), "DOWN: Public API");
        assert_eq!(a.severity(), Severity::Critical);
        let text = a.plain();
        for part in [
            "Reason: Expected status 200, got 503",
            "Since: 2026-11-21T09:30:00.000Z",
            "Region: eu-west",
            "Target: https://api.example.com",
            "https://t.example/incidents/inc_1",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
        assert_eq!(a.dedup_key(), "inc_1");
    }

    #[test]
    fn a_recovery_says_how_long_it_lasted() {
        let p = json!({"event": "incident.resolved", "incident": {"id": "inc_1", "durationSeconds": 690},
                       "monitor": {"name": "Public API"}});
        let a = Alert::parse(&p.to_string()).expect("parses");
        assert_eq!(a.title(), "RECOVERED: Public API");
        assert!(a.plain().contains("Down for: 11 min 30 s"), "{}", a.plain());
        assert_eq!(a.severity(), Severity::Resolved);
    }

    #[test]
    fn a_monitor_starting_to_flap_says_how_often_and_that_alerts_are_held() {
        let p = json!({"event": "monitor.flapping_started", "monitor": {"name": "Public API"},
                       "flapping": {"since": "2026-11-21T09:02:00.000Z", "changes": 4,
                                    "windowMinutes": 10, "state": "down"}});
        let a = Alert::parse(&p.to_string()).expect("parses");
        assert_eq!(
            a.title(),
            "FLAPPING: Public API changed state 4 times in 10 min; alerts are held until it settles"
        );
        assert_eq!(a.severity(), Severity::Warning);
        assert!(
            a.plain().contains("Since: 2026-11-21T09:02:00.000Z"),
            "{}",
            a.plain()
        );
    }

    #[test]
    fn a_reminder_says_how_long_it_has_been_down() {
        let mut p: Value = serde_json::from_str(&created()).expect("json");
        p["event"] = json!("incident.reminder");
        p["reminder"] = json!({"number": 2, "limit": 5, "downForSeconds": 7800, "text": "still down for 2 h 10 min"});
        let a = Alert::parse(&p.to_string()).expect("parses");
        assert_eq!(a.title(), "DOWN: Public API is still down for 2 h 10 min");
        assert_eq!(a.severity(), Severity::Critical);
        assert!(
            a.plain().contains("Reason: Expected status 200, got 503"),
            "{}",
            a.plain()
        );
        assert_eq!(a.dedup_key(), "inc_1");
    }

    #[test]
    fn markdown_escapes_names() {
        let p = json!({"event": "incident.created", "monitor": {"name": "a*b_[c]"}});
        let a = Alert::parse(&p.to_string()).expect("parses");
        assert!(
            a.markdown().starts_with("**DOWN: a\\*b\\_\\[c\\]**"),
            "{}",
            a.markdown()
        );
    }

    #[test]
    fn provider_errors_are_quoted() {
        assert_eq!(
            provider_message(br#"{"message":"Invalid routing key"}"#),
            "Invalid routing key"
        );
        assert_eq!(provider_message(br#"{"errors":["bad key"]}"#), "bad key");
        assert_eq!(
            provider_message(
                br#"{"message":"Event object is invalid","errors":["Invalid routing key"]}"#
            ),
            "Event object is invalid: Invalid routing key"
        );
        assert_eq!(provider_message(b"invalid_payload"), "invalid_payload");
        let f = judge("Slack", 429, b"rate limited").expect_err("fails");
        assert!(f.retryable);
        let f = judge("Slack", 404, b"no_service").expect_err("fails");
        assert!(
            !f.retryable && f.reason.contains("no_service"),
            "{}",
            f.reason
        );
        assert!(judge("Slack", 200, b"ok").is_ok());
    }
}
