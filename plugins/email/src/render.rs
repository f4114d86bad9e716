//! E-mail messages: the configuration and rendering an event as subject, text and HTML.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tocsin_plugin_sdk::FieldError;
use tocsin_plugin_sdk::typed::{PluginConfig, TypedConfig, field_error};

/// A rendered message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// A plausible address: one `@`, something on both sides, a dot in the domain, no spaces.
pub fn plausible_address(a: &str) -> bool {
    match a.split_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
                && !a.chars().any(|c| c.is_whitespace() || c == '<' || c == '>')
                && !domain.contains('@')
                && a.len() <= 254
        }
        None => false,
    }
}
/// An e-mail channel's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "email channel")]
pub struct EmailConfig {
    /// Recipient address.
    #[schemars(extend("format" = "email"))]
    #[schemars(title = "Recipient address")]
    pub target: String,
}

impl TypedConfig for EmailConfig {
    fn refine(self) -> Result<Self, Vec<FieldError>> {
        let target = self.target.trim().to_string();
        if !plausible_address(&target) {
            return Err(vec![field_error("target", "must be an e-mail address")]);
        }
        Ok(EmailConfig { target })
    }
}

/// Validate `{"target": "..."}` and return it normalised, or `(field, message)` pairs.
pub fn validate(text: &str) -> Result<String, Vec<(String, String)>> {
    EmailConfig::parse(text)
        .map(|c| c.canonical().to_string())
        .map_err(|problems| problems.into_iter().map(|p| (p.field, p.message)).collect())
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn duration(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, (seconds % 3600) / 60, seconds % 60);
    match (h, m) {
        (0, 0) => format!("{s} s"),
        (0, _) => format!("{m} min {s} s"),
        _ => format!("{h} h {m} min"),
    }
}

/// Render an event payload.
pub fn render(payload: &str) -> Result<Mail, String> {
    let p: Value =
        serde_json::from_str(payload).map_err(|_| "The event payload is not JSON".to_string())?;
    let name = p["monitor"]["name"].as_str().unwrap_or("monitor");
    let place = p["monitor"]["url"]
        .as_str()
        .or_else(|| p["monitor"]["hostname"].as_str());
    let test = if p["test"] == Value::Bool(true) {
        "[Test] "
    } else {
        ""
    };
    if let Some(list) = p["group"]["incidents"].as_array()
        && list.len() > 1
    {
        return Ok(render_group(test, list));
    }
    if p["event"] == "alert.summary" {
        return Ok(render_summary(payload));
    }
    if let Some(kind) = p["event"]
        .as_str()
        .and_then(|e| e.strip_prefix("status_page."))
    {
        return Ok(render_status_page(kind, &p));
    }
    if p["event"] == "report.monthly" {
        return Ok(render_report(&p));
    }
    let mut facts: Vec<(String, String)> = Vec::new();
    if let Some(place) = place {
        facts.push(("Target".into(), place.into()));
    }
    let (subject, headline) = match p["event"].as_str().unwrap_or("") {
        "incident.created" => {
            let reason = p["failure"]["reason"]
                .as_str()
                .unwrap_or("The check failed");
            facts.push(("Reason".into(), reason.into()));
            if let Some(code) = p["failure"]["statusCode"].as_u64() {
                facts.push(("Status code".into(), code.to_string()));
            }
            if let Some(region) = p["failure"]["region"].as_str() {
                facts.push(("Region".into(), region.into()));
            }
            (format!("{test}DOWN: {name}"), format!("{name} is down"))
        }
        "incident.reminder" => {
            let still = p["reminder"]["text"].as_str().unwrap_or("still down");
            let reason = p["failure"]["reason"]
                .as_str()
                .unwrap_or("The check failed");
            facts.push(("Reason".into(), reason.into()));
            if let Some(since) = p["incident"]["createdAt"].as_str() {
                facts.push(("Down since".into(), since.into()));
            }
            if let (Some(n), Some(limit)) = (
                p["reminder"]["number"].as_i64(),
                p["reminder"]["limit"].as_i64(),
            ) {
                facts.push(("Reminder".into(), format!("{n} of {limit}")));
            }
            (
                format!("{test}DOWN: {name} is {still}"),
                format!("{name} is {still}; nobody has acknowledged it yet"),
            )
        }
        "incident.resolved" => {
            if let Some(s) = p["incident"]["durationSeconds"].as_i64() {
                facts.push(("Down for".into(), duration(s)));
            }
            (
                format!("{test}RECOVERED: {name}"),
                format!("{name} is back up"),
            )
        }
        "incident.acknowledged" => (
            format!("{test}Acknowledged: {name}"),
            format!("The incident on {name} was acknowledged"),
        ),
        "monitor.flapping" => {
            let f = &p["flapping"];
            let changes = f["changes"].as_i64().unwrap_or(0);
            let state = f["state"].as_str().unwrap_or("up");
            facts.push(("Changes".into(), changes.to_string()));
            if let (Some(since), Some(until)) = (f["since"].as_str(), f["until"].as_str()) {
                facts.push(("Flapping".into(), format!("{since} to {until}")));
            }
            facts.push(("Now".into(), state.to_uppercase()));
            if state == "down"
                && let Some(reason) = p["failure"]["reason"].as_str()
            {
                facts.push(("Reason".into(), reason.into()));
            }
            (
                format!(
                    "{test}FLAPPING: {name} changed state {changes} times, now {}",
                    state.to_uppercase()
                ),
                format!("{name} was flapping and has settled: it is {state}"),
            )
        }
        "monitor.flapping_started" => {
            let f = &p["flapping"];
            let changes = f["changes"].as_i64().unwrap_or(0);
            let window = f["windowMinutes"].as_i64().unwrap_or(0);
            facts.push(("Changes".into(), changes.to_string()));
            if let Some(since) = f["since"].as_str() {
                facts.push(("Flapping since".into(), since.into()));
            }
            facts.push((
                "Now".into(),
                f["state"].as_str().unwrap_or("up").to_uppercase(),
            ));
            (
                format!("{test}FLAPPING: {name} changed state {changes} times in {window} min"),
                format!(
                    "{name} is flapping: alerts are held until it settles, then one summary says how it is"
                ),
            )
        }
        "monitor.degraded" | "monitor.degraded_ended" => {
            let d = &p["degraded"];
            let ended = p["event"] == "monitor.degraded_ended";
            if let Some(r) = d["responseTime"].as_i64() {
                facts.push(("Response time".into(), tocsin_chat::response_time(r)));
            }
            if let Some(l) = d["thresholdMs"].as_i64() {
                facts.push(("Slow above".into(), tocsin_chat::response_time(l)));
            }
            if ended {
                (
                    format!("{test}Performance restored: {name}"),
                    format!("{name} is responding fast again"),
                )
            } else {
                let checks = d["slowChecks"].as_i64().unwrap_or(0);
                (
                    format!("{test}DEGRADED: {name} is slow"),
                    format!(
                        "{name} is up but slow: {checks} checks in a row were slower than its limit"
                    ),
                )
            }
        }
        "monitor.paused" => (
            format!("{test}Paused: {name}"),
            format!("{name} was paused"),
        ),
        "monitor.resumed" => (
            format!("{test}Resumed: {name}"),
            format!("{name} was resumed"),
        ),
        kind @ ("ssl.expiry_warning" | "ssl.expiry_critical") => {
            let days = p["ssl"]["daysRemaining"].as_i64().unwrap_or(0);
            if let Some(at) = p["ssl"]["expiresAt"].as_str() {
                facts.push(("Expires".into(), at.into()));
            }
            if let Some(issuer) = p["ssl"]["issuer"].as_str() {
                facts.push(("Issuer".into(), issuer.into()));
            }
            let level = if kind == "ssl.expiry_critical" {
                "CRITICAL"
            } else {
                "Warning"
            };
            (
                format!("{test}{level}: certificate for {name} expires in {days} days"),
                format!("The certificate of {name} expires in {days} days"),
            )
        }
        kind @ ("location.offline" | "location.online") => {
            let l = &p["location"];
            let location = l["name"].as_str().unwrap_or("location");
            let monitors = l["monitors"].as_u64().unwrap_or(0);
            let noun = if monitors == 1 { "monitor" } else { "monitors" };
            facts.push(("Monitors".into(), monitors.to_string()));
            if let (Some(all), Some(online)) = (l["probes"].as_u64(), l["onlineProbes"].as_u64()) {
                facts.push(("Probes online".into(), format!("{online} of {all}")));
            }
            if let Some(at) = l["lastContactAt"].as_str() {
                facts.push(("Last heard from".into(), at.into()));
            }
            if kind == "location.online" && l["status"] == "unknown" {
                (
                    format!("{test}CLOSED: location {location} has no probe left"),
                    format!(
                        "The last probe of {location} was revoked while it was offline: nothing checks its {monitors} {noun} from there now"
                    ),
                )
            } else if kind == "location.offline" {
                (
                    format!("{test}OFFLINE: location {location} ({monitors} {noun} not checked)"),
                    format!(
                        "None of the probes of {location} was heard from for 45 seconds: its monitors keep their states and open no incident until one is"
                    ),
                )
            } else {
                (
                    format!("{test}ONLINE: location {location} is checking again"),
                    format!(
                        "A probe of {location} is heard from again: its {monitors} {noun} are checked"
                    ),
                )
            }
        }
        other => (format!("{test}{other}: {name}"), format!("{other}: {name}")),
    };
    if let Some(at) = p["timestamp"].as_str() {
        facts.push(("When".into(), at.into()));
    }
    let link = p["incident"]["url"].as_str();
    let mut text = format!("{headline}\n\n");
    for (k, v) in &facts {
        text.push_str(&format!("{k}: {v}\n"));
    }
    if let Some(url) = link {
        text.push_str(&format!("\nIncident: {url}\n"));
    }
    // One-click links (a grouped mail returned above, so they are this incident's).
    let actions: Vec<(&str, &str)> = tocsin_chat::ACTIONS
        .iter()
        .filter_map(|(key, label)| p["actions"][*key].as_str().map(|u| (*label, u)))
        .collect();
    if !actions.is_empty() {
        text.push('\n');
        for (label, url) in &actions {
            text.push_str(&format!("{label}: {url}\n"));
        }
    }
    let mut html = html_start(&headline, &facts);
    if let Some(url) = link {
        html.push_str(&format!(
            "<p><a href=\"{}\">Open the incident</a></p>",
            escape(url)
        ));
    }
    if !actions.is_empty() {
        html.push_str("<p>");
        for (label, url) in &actions {
            html.push_str(&format!(
                "<a href=\"{}\" style=\"display:inline-block;margin:0 8px 8px 0;padding:6px 14px;border-radius:6px;background:#1f6feb;color:#ffffff;text-decoration:none\">{}</a>",
                escape(url),
                escape(label)
            ));
        }
        html.push_str("</p><p style=\"color:#57606a;font-size:13px\">Each button opens a page that asks you to confirm; it works once.</p>");
    }
    html.push_str("</body></html>");
    Ok(Mail {
        subject,
        text,
        html,
    })
}

/// A percentage as the report writes it: `99.95 %`, or `no data`.
fn percent(v: &Value) -> String {
    v.as_f64()
        .map_or_else(|| "no data".to_string(), |p| format!("{p:.3} %"))
}

/// The monthly uptime report: the totals, the monitors with the lowest uptime and a link;
/// the PDF is attached by the server.
fn render_report(p: &Value) -> Mail {
    let r = &p["report"];
    let title = r["title"].as_str().unwrap_or("last month");
    let workspace = p["workspace"]["name"].as_str().unwrap_or("your workspace");
    let monitors = r["monitors"].as_u64().unwrap_or(0);
    let missed = r["targetsMissed"].as_u64().unwrap_or(0);
    let incidents = r["incidents"].as_u64().unwrap_or(0);
    let test = if p["test"] == Value::Bool(true) {
        "[Test] "
    } else {
        ""
    };
    let subject = format!(
        "{test}Uptime report for {title}: {monitors} {}, {missed} {} missed",
        if monitors == 1 { "monitor" } else { "monitors" },
        if missed == 1 { "target" } else { "targets" }
    );
    let headline = format!("Uptime report of {workspace} for {title}");
    let mut facts: Vec<(String, String)> = vec![
        ("Monitors".into(), monitors.to_string()),
        ("Targets missed".into(), missed.to_string()),
        ("Incidents".into(), incidents.to_string()),
    ];
    if let Some(zone) = r["timeZone"].as_str() {
        facts.push(("Time zone".into(), zone.into()));
    }
    if let Some(n) = r["monitorsLeftOut"].as_u64().filter(|n| *n > 0) {
        facts.push((
            "Not in the report".into(),
            format!("{n} monitors (past the first 1,000 by name)"),
        ));
    }
    let lowest: Vec<(String, String)> = r["lowestUptime"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|m| {
                    let target = match (m["targetPercent"].as_f64(), m["targetMet"].as_bool()) {
                        (Some(t), Some(false)) => format!(" (target {t} %: missed)"),
                        (Some(t), Some(true)) => format!(" (target {t} %: met)"),
                        _ => String::new(),
                    };
                    (
                        m["name"].as_str().unwrap_or("monitor").to_string(),
                        format!("{}{target}", percent(&m["uptimePercent"])),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let files: Vec<&str> = p["files"]
        .as_array()
        .map(|f| f.iter().filter_map(|f| f["name"].as_str()).collect())
        .unwrap_or_default();
    let link = r["url"].as_str();
    let mut text = format!("{headline}\n\n");
    for (k, v) in &facts {
        text.push_str(&format!("{k}: {v}\n"));
    }
    if !lowest.is_empty() {
        text.push_str("\nLowest uptime:\n");
        for (name, figure) in &lowest {
            text.push_str(&format!("- {name}: {figure}\n"));
        }
    }
    if !files.is_empty() {
        text.push_str(&format!(
            "\nThe full report is attached: {}\n",
            files.join(", ")
        ));
    }
    if let Some(url) = link {
        text.push_str(&format!("\nOpen the report: {url}\n"));
    }
    let mut html = html_start(&headline, &facts);
    if !lowest.is_empty() {
        html.push_str("<h3 style=\"margin:16px 0 8px\">Lowest uptime</h3><ul>");
        for (name, figure) in &lowest {
            html.push_str(&format!("<li>{}: {}</li>", escape(name), escape(figure)));
        }
        html.push_str("</ul>");
    }
    if !files.is_empty() {
        html.push_str(&format!(
            "<p>The full report is attached: {}</p>",
            escape(&files.join(", "))
        ));
    }
    if let Some(url) = link {
        html.push_str(&format!(
            "<p><a href=\"{}\">Open the report</a></p>",
            escape(url)
        ));
    }
    html.push_str("</body></html>");
    Mail {
        subject,
        text,
        html,
    }
}

/// The start of a mail's HTML: the document, its headline and the facts as a table.
fn html_start(headline: &str, facts: &[(String, String)]) -> String {
    let mut html = format!(
        "<!doctype html><html><body style=\"font-family:system-ui,sans-serif;color:#1f2328\"><h2 style=\"margin:0 0 12px\">{}</h2><table style=\"border-collapse:collapse\">",
        escape(headline)
    );
    for (k, v) in facts {
        html.push_str(&format!(
            "<tr><td style=\"padding:2px 12px 2px 0;color:#57606a\">{}</td><td style=\"padding:2px 0\">{}</td></tr>",
            escape(k),
            escape(v)
        ));
    }
    html.push_str("</table>");
    html
}

/// `2026-12-06T02:00:00.000Z` as `2026-12-06 02:00 UTC`; anything else as it is.
fn readable_time(iso: &str) -> String {
    match (iso.get(0..10), iso.get(11..16)) {
        (Some(day), Some(time)) if iso.ends_with('Z') => format!("{day} {time} UTC"),
        _ => iso.to_string(),
    }
}

/// A status page's message to a subscriber: the confirmation link, an update, planned
/// maintenance, or a monitor's change of state; every one ends with the unsubscribe link.
fn render_status_page(kind: &str, p: &Value) -> Mail {
    let page = p["page"]["name"].as_str().unwrap_or("Status page");
    let page_url = p["page"]["url"].as_str().unwrap_or("");
    let unsubscribe = p["unsubscribeUrl"].as_str().unwrap_or("");
    let (subject, lines, link): (String, Vec<String>, Option<(&str, String)>) = match kind {
        "confirm" => {
            let url = p["confirmUrl"].as_str().unwrap_or("");
            (
                format!("Confirm your subscription to {page}"),
                vec![
                    format!("Someone, hopefully you, asked to receive {page}'s updates at this address."),
                    "Follow the link to confirm. If it was not you, ignore this message: nothing more will be sent.".into(),
                ],
                Some(("Confirm the subscription", url.to_string())),
            )
        }
        "update" => {
            let status = p["update"]["status"].as_str().unwrap_or("update");
            let mut word = status.to_string();
            if let Some(f) = word.get_mut(0..1) {
                f.make_ascii_uppercase();
            }
            let body = p["update"]["body"].as_str().unwrap_or("");
            let first: String = body.lines().next().unwrap_or("").chars().take(80).collect();
            (
                format!("[{page}] {word}: {first}"),
                body.lines().map(str::to_string).collect(),
                Some(("Open the status page", page_url.to_string())),
            )
        }
        "maintenance" => {
            let m = &p["maintenance"];
            let name = m["name"].as_str().unwrap_or("Maintenance");
            let when = |key: &str| readable_time(m[key].as_str().unwrap_or(""));
            let affected: Vec<&str> = p["monitors"]
                .as_array()
                .map(|l| l.iter().filter_map(|x| x["name"].as_str()).collect())
                .unwrap_or_default();
            let mut lines = Vec::new();
            let subject = if m["phase"] == "ended" {
                lines.push(format!("{name} has ended ({}).", when("endsAt")));
                format!("[{page}] Maintenance finished: {name}")
            } else {
                lines.push(format!(
                    "{name} is planned from {} to {}.",
                    when("startsAt"),
                    when("endsAt")
                ));
                if let Some(d) = m["description"].as_str().filter(|d| !d.is_empty()) {
                    lines.extend(d.lines().map(str::to_string));
                }
                format!("[{page}] Planned maintenance: {name}")
            };
            if !affected.is_empty() {
                lines.push(format!("Affected: {}.", affected.join(", ")));
            }
            (
                subject,
                lines,
                Some(("Open the status page", page_url.to_string())),
            )
        }
        _ => {
            let name = p["monitor"]["name"].as_str().unwrap_or("A service");
            let down = p["monitor"]["status"] == "down";
            let state = if down { "is down" } else { "is back up" };
            (
                format!("[{page}] {name} {state}"),
                vec![format!("{name} {state}.")],
                Some(("Open the status page", page_url.to_string())),
            )
        }
    };
    let mut text = lines.join("\n");
    if let Some((label, url)) = &link {
        text.push_str(&format!("\n\n{label}: {url}\n"));
    }
    text.push_str(&format!("\nUnsubscribe in one click: {unsubscribe}\n"));
    let mut html = format!(
        "<!doctype html><html><body style=\"font-family:system-ui,sans-serif;color:#1f2328\"><h2 style=\"margin:0 0 12px\">{}</h2>",
        escape(&subject)
    );
    for l in &lines {
        html.push_str(&format!("<p>{}</p>", escape(l)));
    }
    if let Some((label, url)) = &link {
        html.push_str(&format!(
            "<p><a href=\"{}\">{}</a></p>",
            escape(url),
            escape(label)
        ));
    }
    html.push_str(&format!(
        "<p style=\"color:#57606a;font-size:13px\"><a href=\"{}\">Unsubscribe</a> in one click.</p></body></html>",
        escape(unsubscribe)
    ));
    Mail {
        subject,
        text,
        html,
    }
}

/// Several incidents opened within a policy's group window, as one message: a subject
/// naming the first few, and a line (text) or row (HTML) per monitor.
fn render_group(test: &str, list: &[Value]) -> Mail {
    let names: Vec<&str> = list
        .iter()
        .map(|e| e["monitor"]["name"].as_str().unwrap_or("monitor"))
        .collect();
    let shown = names.iter().take(3).copied().collect::<Vec<_>>().join(", ");
    let more = match names.len() {
        n if n > 3 => format!(" and {} more", n - 3),
        _ => String::new(),
    };
    let headline = format!("{} monitors down", list.len());
    let subject = format!("{test}DOWN: {headline}: {shown}{more}");
    let mut text = format!("{headline}\n\n");
    let mut rows = String::new();
    for e in list {
        let name = e["monitor"]["name"].as_str().unwrap_or("monitor");
        let reason = e["failure"]["reason"]
            .as_str()
            .unwrap_or("The check failed");
        let region = e["failure"]["region"].as_str().unwrap_or("");
        let since = e["incident"]["createdAt"].as_str().unwrap_or("");
        let url = e["incident"]["url"].as_str();
        text.push_str(&format!("- {name}: {reason}"));
        if !region.is_empty() {
            text.push_str(&format!(" (from {region})"));
        }
        text.push_str(&format!(", since {since}\n"));
        if let Some(u) = url {
            text.push_str(&format!("  {u}\n"));
        }
        let name_cell = match url {
            Some(u) => format!("<a href=\"{}\">{}</a>", escape(u), escape(name)),
            None => escape(name),
        };
        rows.push_str(&format!(
            "<tr><td style=\"padding:4px 12px 4px 0\">{name_cell}</td><td style=\"padding:4px 12px 4px 0\">{}</td><td style=\"padding:4px 12px 4px 0;color:#57606a\">{}</td><td style=\"padding:4px 0;color:#57606a\">{}</td></tr>",
            escape(reason),
            escape(region),
            escape(since)
        ));
    }
    let html = format!(
        "<!doctype html><html><body style=\"font-family:system-ui,sans-serif;color:#1f2328\"><h2 style=\"margin:0 0 12px\">{}</h2><table style=\"border-collapse:collapse\"><tr style=\"text-align:left;color:#57606a\"><th>Monitor</th><th>Reason</th><th>Region</th><th>Since</th></tr>{rows}</table></body></html>",
        escape(&headline)
    );
    Mail {
        subject,
        text,
        html,
    }
}

/// What an alert pipeline step held, gathered into one message when the hold ended: a
/// line (text) or row (HTML) per notification, in the words the chat channels use.
fn render_summary(payload: &str) -> Mail {
    let alert = match tocsin_chat::Alert::parse(payload) {
        Ok(alert) => alert,
        Err(e) => {
            return Mail {
                subject: "Summary of held alerts".into(),
                text: e.clone(),
                html: format!("<p>{}</p>", escape(&e)),
            };
        }
    };
    let subject = alert.title();
    let mut text = format!("{subject}\n\n");
    let mut rows = String::new();
    for e in &alert.group {
        text.push_str(&format!("- {}: {}\n", e.monitor, e.reason));
        if let Some(u) = &e.link {
            text.push_str(&format!("  {u}\n"));
        }
        let name_cell = match &e.link {
            Some(u) => format!("<a href=\"{}\">{}</a>", escape(u), escape(&e.monitor)),
            None => escape(&e.monitor),
        };
        rows.push_str(&format!(
            "<tr><td style=\"padding:4px 12px 4px 0\">{name_cell}</td><td style=\"padding:4px 0\">{}</td></tr>",
            escape(&e.reason)
        ));
    }
    let html = format!(
        "<!doctype html><html><body style=\"font-family:system-ui,sans-serif;color:#1f2328\"><h2 style=\"margin:0 0 12px\">{}</h2><table style=\"border-collapse:collapse\"><tr style=\"text-align:left;color:#57606a\"><th>Monitor</th><th>What happened</th></tr>{rows}</table></body></html>",
        escape(&subject)
    );
    Mail {
        subject,
        text,
        html,
    }
}

/// JSON Schema of the configuration.
pub fn schema() -> Value {
    EmailConfig::schema()
}

#[cfg(test)]
mod group_tests {
    use super::*;

    #[test]
    fn a_group_is_one_mail_listing_each_monitor() {
        let list: Vec<Value> = (0..12)
            .map(|n| {
                serde_json::json!({"monitor": {"name": format!("api-{n}")},
                                   "incident": {"url": format!("https://t.test/incidents/inc_{n}"),
                                                "createdAt": "2026-11-25T10:00:00.000Z"},
                                   "failure": {"reason": "Connection <refused>", "region": "eu"}})
            })
            .collect();
        let payload = serde_json::json!({"event": "incident.created", "monitor": {"name": "api-0"},
                                         "group": {"id": "grp_1", "count": 12, "incidents": list}});
        let mail = render(&payload.to_string()).expect("rendered");
        assert_eq!(
            mail.subject,
            "DOWN: 12 monitors down: api-0, api-1, api-2 and 9 more"
        );
        assert!(
            mail.text.contains(
                "- api-11: Connection <refused> (from eu), since 2026-11-25T10:00:00.000Z"
            )
        );
        assert!(mail.html.contains("Connection &lt;refused&gt;"));
        assert_eq!(mail.html.matches("<tr><td").count(), 12);
        // A group of one reads like any DOWN message.
        let one = serde_json::json!({"event": "incident.created", "monitor": {"name": "api-0"},
                                     "failure": {"reason": "Timeout"},
                                     "group": {"id": "grp_1", "count": 1, "incidents": [list[0]]}});
        assert_eq!(
            render(&one.to_string()).expect("rendered").subject,
            "DOWN: api-0"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOWN: &str = r#"{"event":"incident.created","timestamp":"2026-11-21T09:30:00.000Z","webhookId":"whd_1",
        "incident":{"id":"inc_1","url":"https://t.example/incidents/inc_1","status":"open","createdAt":"2026-11-21T09:30:00.000Z"},
        "monitor":{"id":"mon_1","name":"Shop <main>","type":"http","url":"https://shop.example.com/"},
        "failure":{"reason":"Timed out after 10 s","responseTime":null,"region":"eu"},
        "workspace":{"id":"ws_1","name":"Default"}}"#;

    #[test]
    fn a_down_mail_with_actions_has_a_button_and_a_line_for_each() {
        let mut p: Value = serde_json::from_str(DOWN).expect("json");
        p["actions"] = serde_json::json!({
            "acknowledge": "https://t.example/act/A1",
            "snooze1h": "https://t.example/act/S1",
            "snoozeUntilMorning": "https://t.example/act/M1",
            "resolve": "https://t.example/act/R1",
        });
        let m = render(&p.to_string()).expect("render");
        assert!(
            m.text.ends_with(
                "Acknowledge: https://t.example/act/A1\nSnooze 1 h: https://t.example/act/S1\nSnooze until 09:00: https://t.example/act/M1\nResolve: https://t.example/act/R1\n"
            ),
            "{}",
            m.text
        );
        assert!(m.html.contains("href=\"https://t.example/act/A1\""));
        assert!(m.html.contains(">Snooze until 09:00</a>"));
        // Without actions, no buttons.
        assert!(!render(DOWN).expect("render").html.contains("/act/"));
    }

    #[test]
    fn down_mail_has_subject_facts_and_link() {
        let m = render(DOWN).expect("render");
        assert_eq!(m.subject, "DOWN: Shop <main>");
        assert!(m.text.starts_with("Shop <main> is down\n\nTarget: https://shop.example.com/\nReason: Timed out after 10 s\nRegion: eu\n"), "{}", m.text);
        assert!(
            m.text
                .ends_with("Incident: https://t.example/incidents/inc_1\n")
        );
        assert!(
            m.html
                .contains("<h2 style=\"margin:0 0 12px\">Shop &lt;main&gt; is down</h2>"),
            "{}",
            m.html
        );
        assert!(
            m.html
                .contains("href=\"https://t.example/incidents/inc_1\"")
        );
    }

    #[test]
    fn planned_maintenance_and_its_end() {
        let scheduled = r#"{"event":"status_page.maintenance","page":{"name":"Shop status","url":"https://t.example/status/shop"},
            "unsubscribeUrl":"https://t.example/status/shop/unsubscribe/tok",
            "maintenance":{"name":"Database <upgrade>","description":"Writes pause.\nReads go on.","startsAt":"2026-12-06T02:00:00.000Z","endsAt":"2026-12-06T04:00:00.000Z","phase":"scheduled"},
            "monitors":[{"name":"API"},{"name":"Checkout"}]}"#;
        let m = render(scheduled).expect("render");
        assert_eq!(
            m.subject,
            "[Shop status] Planned maintenance: Database <upgrade>"
        );
        assert!(
            m.text.starts_with("Database <upgrade> is planned from 2026-12-06 02:00 UTC to 2026-12-06 04:00 UTC.\nWrites pause.\nReads go on.\nAffected: API, Checkout.\n"),
            "{}",
            m.text
        );
        assert!(
            m.text.contains(
                "Unsubscribe in one click: https://t.example/status/shop/unsubscribe/tok"
            )
        );
        assert!(m.html.contains("Database &lt;upgrade&gt;"));
        let ended = scheduled.replace(r#""phase":"scheduled""#, r#""phase":"ended""#);
        let m = render(&ended).expect("render");
        assert_eq!(
            m.subject,
            "[Shop status] Maintenance finished: Database <upgrade>"
        );
        assert!(
            m.text.starts_with(
                "Database <upgrade> has ended (2026-12-06 04:00 UTC).\nAffected: API, Checkout.\n"
            ),
            "{}",
            m.text
        );
    }

    #[test]
    fn recovery_and_ssl_mails() {
        let resolved = DOWN
            .replace("incident.created", "incident.resolved")
            .replace(
                r#""status":"open""#,
                r#""status":"resolved","durationSeconds":125"#,
            );
        let m = render(&resolved).expect("render");
        assert_eq!(m.subject, "RECOVERED: Shop <main>");
        assert!(m.text.contains("Down for: 2 min 5 s"));
        let ssl = r#"{"event":"ssl.expiry_critical","timestamp":"t","monitor":{"name":"Shop","hostname":"shop.example.com"},"ssl":{"expiresAt":"2026-11-26T00:00:00.000Z","daysRemaining":5,"issuer":"Test CA"}}"#;
        let m = render(ssl).expect("render");
        assert_eq!(
            m.subject,
            "CRITICAL: certificate for Shop expires in 5 days"
        );
        assert!(m.text.contains("Issuer: Test CA"));
    }

    #[test]
    fn a_location_offline_mail_says_what_is_not_checked_and_why() {
        let p = r#"{"event":"location.offline","timestamp":"2026-12-01T10:00:45.000Z","workspace":{"name":"Acme"},
            "location":{"name":"office","status":"offline","offlineSince":"2026-12-01T10:00:45.000Z","probes":2,"onlineProbes":0,
            "lastContactAt":"2026-12-01T10:00:00.000Z","monitors":7}}"#;
        let mail = render(p).expect("mail");
        assert_eq!(
            mail.subject,
            "OFFLINE: location office (7 monitors not checked)"
        );
        assert!(mail.text.contains("Probes online: 0 of 2"), "{}", mail.text);
        assert!(
            mail.text
                .contains("Last heard from: 2026-12-01T10:00:00.000Z"),
            "{}",
            mail.text
        );
        assert!(!mail.text.contains("Incident:"), "{}", mail.text);
        let back = render(&p.replace("location.offline", "location.online")).expect("mail");
        assert_eq!(back.subject, "ONLINE: location office is checking again");
    }

    #[test]
    fn a_monthly_report_mail_gives_the_totals_and_the_lowest_uptime() {
        let p = r#"{"event":"report.monthly","timestamp":"2026-11-01T00:00:05.000Z","workspace":{"name":"Acme"},
            "report":{"month":"2026-10","title":"October 2026","monitors":3,"targetsMissed":1,"incidents":2,"timeZone":"UTC","monitorsLeftOut":0,
            "lowestUptime":[{"name":"Shop <api>","uptimePercent":99.5,"targetPercent":99.9,"targetMet":false}],"url":"https://t.example/reports?month=2026-10"},
            "files":[{"name":"uptime-2026-10.pdf","contentType":"application/pdf","bytes":1000}]}"#;
        let mail = render(p).expect("mail");
        assert_eq!(
            mail.subject,
            "Uptime report for October 2026: 3 monitors, 1 target missed"
        );
        assert!(
            mail.text
                .contains("- Shop <api>: 99.500 % (target 99.9 %: missed)"),
            "{}",
            mail.text
        );
        assert!(mail.text.contains("attached: uptime-2026-10.pdf"));
        assert!(
            mail.html.contains("Shop &lt;api&gt;")
                && mail
                    .html
                    .contains("https://t.example/reports?month=2026-10")
        );
    }

    #[test]
    fn addresses_and_config() {
        assert!(plausible_address("ops@example.com"));
        assert!(!plausible_address("ops@localhost"));
        assert!(!plausible_address("two words@example.com"));
        assert_eq!(
            validate(r#"{"target":" ops@example.com "}"#),
            Ok(r#"{"target":"ops@example.com"}"#.into())
        );
        assert!(validate(r#"{"target":"nope"}"#).is_err());
        assert_eq!(
            validate(r#"{"target":"a@b.example","cc":"x"}"#),
            Err(vec![(
                "cc".into(),
                "is not a field of the email channel".into()
            )])
        );
    }
}
