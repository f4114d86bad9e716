//! Message templates: a chat channel's headline and text, written by its owner with
//! `{{variable}}` placeholders filled from the alert. A template shapes the words only:
//! each channel escapes and formats the result as it does its own messages, so neither a
//! template nor a monitor's name can add links, mentions or HTML to a message (Slack's and
//! Google Chat's `*bold*` stays bold, as in the facts).

use crate::{Alert, Kind, duration};

/// Longest headline template, in characters; a filled-in headline is cut to it too.
pub const TITLE_MAX: usize = 200;
/// Longest text template, in characters; a filled-in text is cut to it too.
pub const TEXT_MAX: usize = 2000;
/// Most characters of one filled-in value.
pub const VALUE_MAX: usize = 300;

/// The variables every chat channel's templates may use, with what each holds (the names
/// docs/plugins.md lists).
pub const VARIABLES: [(&str, &str); 14] = [
    (
        "title",
        "the headline the channel writes without a template: DOWN: Public API",
    ),
    (
        "status",
        "down, up, acknowledged, reminder, flapping, degraded, paused, resumed or certificate",
    ),
    ("event", "the event's name: incident.created"),
    ("monitor", "the monitor's name"),
    ("monitorId", "the monitor's id"),
    ("target", "what the monitor checks: its URL or host"),
    ("reason", "why the check failed"),
    ("region", "where the failing check ran"),
    ("since", "when the incident opened (RFC 3339)"),
    (
        "duration",
        "how long the incident lasted, on recovery: 2 h 10 min",
    ),
    ("link", "the incident in Tocsin"),
    ("incidentId", "the incident's id"),
    ("workspace", "the workspace's name"),
    ("severity", "critical, warning, resolved or info"),
];

/// A channel's templates, as its configuration holds them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Templates<'a> {
    pub title: Option<&'a str>,
    pub text: Option<&'a str>,
}

/// One piece of a template.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'t> {
    Literal(&'t str),
    Variable(&'t str),
}

/// A template's pieces, or what is wrong with it.
fn pieces(template: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            out.push(Piece::Literal(&rest[..open]));
        }
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else {
            return Err("has a `{{` without its closing `}}`".into());
        };
        let name = after[..close].trim();
        if !VARIABLES.iter().any(|(v, _)| *v == name) {
            let known: Vec<&str> = VARIABLES.iter().map(|(v, _)| *v).collect();
            return Err(format!(
                "uses `{{{{{name}}}}}`, which is not a variable; the variables are {}",
                known.join(", ")
            ));
        }
        out.push(Piece::Variable(name));
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Literal(rest));
    }
    Ok(out)
}

/// Check a template for a configuration field: at most `max` characters, every
/// placeholder closed and a known variable.
pub fn check(template: &str, max: usize) -> Result<(), String> {
    if template.chars().count() > max {
        return Err(format!("must be at most {max} characters"));
    }
    pieces(template).map(|_| ())
}

impl Alert {
    /// The value of one template variable (empty when the alert has none).
    fn variable(&self, name: &str) -> String {
        let or_empty = |v: &Option<String>| v.clone().unwrap_or_default();
        match name {
            "title" => self.default_title(),
            "status" => status(&self.kind).to_string(),
            "event" => self.event.clone(),
            "monitor" => self.monitor.clone(),
            "monitorId" => or_empty(&self.monitor_id),
            "target" => or_empty(&self.target),
            "reason" => or_empty(&self.reason),
            "region" => or_empty(&self.region),
            "since" => or_empty(&self.since),
            "duration" => self.duration_seconds.map(duration).unwrap_or_default(),
            "link" => or_empty(&self.link),
            "incidentId" => or_empty(&self.incident_id),
            "workspace" => or_empty(&self.workspace),
            "severity" => format!("{:?}", self.severity()).to_lowercase(),
            _ => String::new(),
        }
    }

    /// `template` filled in: each value at most [`VALUE_MAX`] characters and the whole at
    /// most `max`, so no template can make a message a provider refuses as too long.
    fn fill(&self, template: &str, max: usize) -> Option<String> {
        let pieces = pieces(template).ok()?;
        let mut out = String::with_capacity(template.len() + 64);
        for piece in pieces {
            match piece {
                Piece::Literal(text) => out.push_str(text),
                Piece::Variable(name) => {
                    out.extend(self.variable(name).chars().take(VALUE_MAX));
                }
            }
        }
        let out: String = out.trim().chars().take(max).collect();
        Some(out).filter(|s| !s.is_empty())
    }

    /// Shape this alert's words by the channel's templates: the headline, and a text in
    /// place of the facts. Only alerts about one monitor are shaped; a grouped message and
    /// the monthly report keep their own words. A template that renders empty is as if
    /// it were not set.
    pub fn shaped(mut self, templates: Templates<'_>) -> Alert {
        if !self.group.is_empty() || matches!(self.kind, Kind::Report { .. }) {
            return self;
        }
        // A headline is one line: line breaks (a reason may hold some) become spaces.
        self.custom_title = templates
            .title
            .and_then(|t| self.fill(t, TITLE_MAX))
            .map(|t| t.replace(|c: char| c.is_control(), " "));
        self.text = templates.text.and_then(|t| self.fill(t, TEXT_MAX));
        self
    }
}

/// The alert's state in one word, for `{{status}}`.
fn status(kind: &Kind) -> &str {
    match kind {
        Kind::Down => "down",
        Kind::Reminder { .. } => "reminder",
        Kind::Recovered | Kind::DegradedEnded { .. } => "up",
        Kind::Acknowledged => "acknowledged",
        Kind::Flapping { .. } | Kind::FlappingStarted { .. } => "flapping",
        Kind::Degraded { .. } => "degraded",
        Kind::Paused => "paused",
        Kind::Resumed => "resumed",
        Kind::Certificate { .. } => "certificate",
        Kind::Report { .. } => "report",
        Kind::Location { retired: true, .. } => "unknown",
        Kind::Location { online: true, .. } => "online",
        Kind::Location { .. } => "offline",
        Kind::Summary { .. } => "summary",
        Kind::Other(event) => event,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn down() -> Alert {
        Alert::parse(
            &json!({
                "event": "incident.created",
                "incident": {"id": "inc_1", "url": "https://t.example/incidents/inc_1",
                              "createdAt": "2026-11-21T09:30:00.000Z"},
                "monitor": {"id": "mon_1", "name": "Public *API*", "url": "https://api.example.com"},
                "failure": {"reason": "Expected status 200, got 503", "region": "eu-west"},
                "workspace": {"name": "Acme"},
            })
            .to_string(),
        )
        .expect("alert")
    }

    #[test]
    fn templates_fill_every_variable_and_replace_title_and_facts() {
        let t = Templates {
            title: Some("{{ monitor }} is {{status}} ({{severity}})"),
            text: Some(
                "{{reason}} from {{region}} since {{since}}; {{link}} [{{workspace}}/{{monitorId}}/{{incidentId}}] {{target}} {{event}}: {{title}}",
            ),
        };
        let a = down().shaped(t);
        assert_eq!(a.title(), "Public *API* is down (critical)");
        assert_eq!(
            a.text.as_deref(),
            Some(
                "Expected status 200, got 503 from eu-west since 2026-11-21T09:30:00.000Z; https://t.example/incidents/inc_1 [Acme/mon_1/inc_1] https://api.example.com incident.created: DOWN: Public *API*"
            )
        );
        assert!(a.facts().is_empty(), "the text stands for the facts");
        // Markdown channels escape the filled-in words as they escape their own.
        assert!(
            a.markdown()
                .starts_with("**Public \\*API\\* is down (critical)**")
        );
        assert!(
            a.plain()
                .contains("Expected status 200, got 503 from eu-west")
        );
    }

    #[test]
    fn a_test_send_says_so_and_empty_or_missing_values_leave_the_defaults() {
        let mut a = down();
        a.test = true;
        let a = a.shaped(Templates {
            title: Some("{{monitor}} down"),
            text: Some("{{duration}}"),
        });
        assert_eq!(a.title(), "[Test] Public *API* down");
        assert_eq!(a.text, None, "a text that renders empty is not set");
        assert_eq!(a.facts()[1].0, "Reason");
        let plain = down().shaped(Templates::default());
        assert_eq!(plain.title(), "DOWN: Public *API*");
    }

    #[test]
    fn recoveries_fill_the_duration_and_groups_keep_their_words() {
        let a = Alert::parse(
            &json!({"event": "incident.resolved", "monitor": {"name": "API"},
                    "incident": {"id": "i", "durationSeconds": 7860}})
            .to_string(),
        )
        .expect("alert")
        .shaped(Templates {
            title: Some("{{monitor}} is {{status}} after {{duration}}"),
            text: None,
        });
        assert_eq!(a.title(), "API is up after 2 h 11 min");
        let group = Alert::parse(
            &json!({"event": "incident.created", "monitor": {"name": "A"},
                    "group": {"incidents": [{"monitor": {"name": "A"}}, {"monitor": {"name": "B"}}]}})
            .to_string(),
        )
        .expect("alert")
        .shaped(Templates {
            title: Some("{{monitor}}"),
            text: Some("x"),
        });
        assert_eq!(group.title(), "DOWN: 2 monitors down");
        assert_eq!(group.text, None);
    }

    #[test]
    fn filled_values_are_bounded_and_a_headline_stays_one_line() {
        let mut a = down();
        a.reason = Some(format!("line one\nline two {}", "x".repeat(5000)));
        let a = a.shaped(Templates {
            title: Some("{{reason}}"),
            text: Some(&"{{reason}} ".repeat(100)),
        });
        let title = a.title();
        assert!(title.starts_with("line one line two x"), "{title}");
        assert_eq!(title.chars().count(), TITLE_MAX);
        assert_eq!(a.text.as_deref().map(|t| t.chars().count()), Some(TEXT_MAX));
        assert!(
            a.text
                .as_deref()
                .is_some_and(|t| t.starts_with("line one\nline two"))
        );
    }

    #[test]
    fn escaping_within_a_limit_never_splits_an_escape() {
        let slack = |t: &str| t.replace('&', "&amp;");
        let text = "a&".repeat(10);
        let cut = crate::escaped_within(&text, 9, slack);
        assert_eq!(cut, "a&amp;a", "cut before escaping, within 9");
        assert_eq!(crate::escaped_within("short", 9, slack), "short");
        let md = crate::escaped_within("**bold** @here", 100, crate::escape_markdown);
        assert_eq!(md, "\\*\\*bold\\*\\* @\u{200B}here");
    }

    #[test]
    fn bad_templates_are_refused_with_a_reason() {
        assert_eq!(check("{{monitor}} {{ status }}", TITLE_MAX), Ok(()));
        assert_eq!(check("no variables at all", TITLE_MAX), Ok(()));
        let unknown = check("{{monitor.name}}", TITLE_MAX).expect_err("unknown");
        assert!(unknown.contains("`{{monitor.name}}`"), "{unknown}");
        assert!(unknown.contains("monitor, monitorId"), "{unknown}");
        assert!(check("{{monitor", TITLE_MAX).is_err());
        assert!(check(&"x".repeat(TITLE_MAX + 1), TITLE_MAX).is_err());
        assert_eq!(check(&"é".repeat(TITLE_MAX), TITLE_MAX), Ok(()));
    }
}
