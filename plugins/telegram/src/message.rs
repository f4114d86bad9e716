//! Telegram messages: configuration, rendering events as HTML-formatted text, and reading
//! the Bot API's answer.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tocsin_plugin_sdk::FieldError;
use tocsin_plugin_sdk::typed::{PluginConfig, TypedConfig, field_error};

/// Where a message goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub api_base: String,
    pub token: String,
    pub chat_id: String,
}

tocsin_chat::with_templates! {
    /// A Telegram channel's configuration.
    #[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[schemars(title = "telegram channel")]
    pub struct TelegramConfig {
        /// Chat id (e.g. -1001234567890) or @channelusername.
        // Chat ids are numbers or @channelusernames; a number given as JSON is accepted too.
        #[serde(deserialize_with = "string_or_number")]
        #[schemars(length(min = 1, max = 64), extend("type" = ["string", "integer"]))]
        #[schemars(title = "Chat ID")]
        pub chat_id: String,
        /// Bot token; defaults to the server's telegram.bot_token.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(extend("writeOnly" = true))]
        #[schemars(title = "Bot token")]
        pub bot_token: Option<String>,
    }
}

fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(serde::de::Error::custom(
            "must be a chat id such as -1001234567890 or @channel",
        )),
    }
}

impl TypedConfig for TelegramConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.chat_id = self.chat_id.trim().to_string();
        let mut problems = Vec::new();
        if let Some(t) = &self.bot_token
            && (!t.contains(':') || t.contains('/'))
        {
            problems.push(field_error(
                "botToken",
                "must be a bot token such as 123456:ABC-DEF",
            ));
        }
        problems.extend(self.check_templates());
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

/// Validate `{"chatId": "...", "botToken": "..."?}` and return it normalised, or
/// `(field, message)` pairs.
pub fn validate(text: &str) -> Result<String, Vec<(String, String)>> {
    TelegramConfig::parse(text)
        .map(|c| c.canonical().to_string())
        .map_err(|problems| problems.into_iter().map(|p| (p.field, p.message)).collect())
}

/// Combine the channel's configuration with the server's settings.
pub fn target(config: &TelegramConfig, settings: &str) -> Result<Target, String> {
    let s: Value = serde_json::from_str(settings).unwrap_or(Value::Null);
    let token = config
        .bot_token
        .as_deref()
        .or_else(|| s["botToken"].as_str())
        .ok_or("No Telegram bot token: set telegram.bot_token on the server or botToken on the channel")?;
    let api_base = s["apiBase"]
        .as_str()
        .unwrap_or("https://api.telegram.org")
        .trim_end_matches('/')
        .to_string();
    Ok(Target {
        api_base,
        token: token.to_string(),
        chat_id: config.chat_id.clone(),
    })
}

/// Escape text for Telegram's HTML parse mode.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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

/// The payload's one-click links (acknowledge, snooze, resolve), as (label, URL).
fn actions(p: &Value) -> Vec<(&'static str, String)> {
    if p["group"]["incidents"]
        .as_array()
        .is_some_and(|l| l.len() > 1)
    {
        return Vec::new();
    }
    tocsin_chat::ACTIONS
        .iter()
        .filter_map(|(key, label)| p["actions"][*key].as_str().map(|u| (*label, u.to_string())))
        .collect()
}

/// Inline buttons for the one-click links, two per row. With `callbacks` (the server
/// receives the bot's updates), each button sends `a:<token>` back through the Bot API
/// and the server acts at once; otherwise each opens its link, when the links are https
/// (the Bot API refuses a message whose button URL it does not accept; plain-http links
/// go in the text instead, see [`render`]).
pub fn keyboard(payload: &str, callbacks: bool) -> Option<Value> {
    let p: Value = serde_json::from_str(payload).ok()?;
    let links = actions(&p);
    if links.is_empty() || !(callbacks || links.iter().all(|(_, u)| u.starts_with("https://"))) {
        return None;
    }
    let button = |label: &str, url: &str| {
        let token = url.rsplit('/').next().unwrap_or_default();
        if callbacks {
            serde_json::json!({"text": label, "callback_data": format!("a:{token}")})
        } else {
            serde_json::json!({"text": label, "url": url})
        }
    };
    let rows: Vec<Value> = links
        .chunks(2)
        .map(|pair| Value::Array(pair.iter().map(|(l, u)| button(l, u)).collect()))
        .collect();
    Some(serde_json::json!({"inline_keyboard": rows}))
}

/// Render an event payload as a message, its one-click links as inline buttons when
/// they can be (see [`keyboard`]).
pub fn render(payload: &str) -> Result<String, String> {
    render_with(
        payload,
        keyboard(payload, false).is_some(),
        tocsin_chat::Templates::default(),
    )
}

/// Render an event payload as a message, its words shaped by the channel's `templates`;
/// `buttons` says its one-click links go out as inline buttons (else they are links in
/// the text).
pub fn render_with(
    payload: &str,
    buttons: bool,
    templates: tocsin_chat::Templates<'_>,
) -> Result<String, String> {
    let p: Value =
        serde_json::from_str(payload).map_err(|_| "The event payload is not JSON".to_string())?;
    let name = escape(p["monitor"]["name"].as_str().unwrap_or("monitor"));
    let place = p["monitor"]["url"]
        .as_str()
        .or_else(|| p["monitor"]["hostname"].as_str())
        .map(escape);
    let mut link = p["incident"]["url"]
        .as_str()
        .map(|u| format!("\n<a href=\"{}\">Open the incident</a>", escape(u)))
        .unwrap_or_default();
    // One-click links that are not buttons go in the text.
    let links = actions(&p);
    if !links.is_empty() && !buttons {
        let list: Vec<String> = links
            .iter()
            .map(|(label, url)| format!("<a href=\"{}\">{label}</a>", escape(url)))
            .collect();
        link.push_str(&format!("\n{}", list.join(" · ")));
    }
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
        // What a pipeline step held: the headline and one line per held alert.
        let alert = tocsin_chat::Alert::parse(payload)?;
        let mut text = format!("{test}<b>{}</b>", escape(&alert.title()));
        for line in alert.group_lines() {
            text.push_str(&format!("\n• {}", escape(&line)));
        }
        return Ok(text);
    }
    let shaped = tocsin_chat::Alert::parse(payload)?.shaped(templates);
    if shaped.custom_title.is_some() || shaped.text.is_some() {
        let text = shaped
            .text
            .as_deref()
            .map(|t| format!("\n{}", escape(t)))
            .unwrap_or_default();
        return Ok(format!("<b>{}</b>{text}{link}", escape(&shaped.title())));
    }
    let place_line = place.map(|p| format!("\n{p}")).unwrap_or_default();
    let text = match p["event"].as_str().unwrap_or("") {
        "report.monthly" => {
            let r = &p["report"];
            let missed = r["targetsMissed"].as_u64().unwrap_or(0);
            let monitors = r["monitors"].as_u64().unwrap_or(0);
            let open = r["url"]
                .as_str()
                .map(|u| format!("\n<a href=\"{}\">Open the report</a>", escape(u)))
                .unwrap_or_default();
            format!(
                "📊 <b>Uptime report</b> for {}: {monitors} {}, {missed} {} missed, {} incidents{open}",
                escape(r["title"].as_str().unwrap_or("last month")),
                if monitors == 1 { "monitor" } else { "monitors" },
                if missed == 1 { "target" } else { "targets" },
                r["incidents"].as_u64().unwrap_or(0),
            )
        }
        "incident.created" => {
            let reason = escape(
                p["failure"]["reason"]
                    .as_str()
                    .unwrap_or("The check failed"),
            );
            let region = p["failure"]["region"]
                .as_str()
                .map(|r| format!(" (from {})", escape(r)))
                .unwrap_or_default();
            format!("{test}🔴 <b>DOWN</b>: {name}{place_line}\n{reason}{region}{link}")
        }
        "incident.reminder" => {
            let still = escape(p["reminder"]["text"].as_str().unwrap_or("still down"));
            let reason = escape(
                p["failure"]["reason"]
                    .as_str()
                    .unwrap_or("The check failed"),
            );
            format!("{test}🔴 <b>DOWN</b>: {name} is {still}{place_line}\n{reason}{link}")
        }
        "incident.resolved" => {
            let down = p["incident"]["durationSeconds"]
                .as_i64()
                .map(|s| format!("\nDown for {}", duration(s)))
                .unwrap_or_default();
            format!("{test}✅ <b>RECOVERED</b>: {name}{place_line}{down}{link}")
        }
        "incident.acknowledged" => format!("{test}👀 <b>Acknowledged</b>: {name}{link}"),
        "monitor.flapping" => {
            let f = &p["flapping"];
            let changes = f["changes"].as_i64().unwrap_or(0);
            let (mark, state) = match f["state"].as_str() {
                Some("down") => ("🔴", "DOWN"),
                _ => ("✅", "UP"),
            };
            let since = escape(f["since"].as_str().unwrap_or(""));
            format!(
                "{test}〰️ <b>FLAPPING</b>: {name}{place_line}\nChanged state {changes} times since {since}; settled {mark} <b>{state}</b>{link}"
            )
        }
        "monitor.flapping_started" => {
            let f = &p["flapping"];
            let changes = f["changes"].as_i64().unwrap_or(0);
            let window = f["windowMinutes"].as_i64().unwrap_or(0);
            format!(
                "{test}〰️ <b>FLAPPING</b>: {name}{place_line}\nChanged state {changes} times in {window} min; alerts are held until it settles{link}"
            )
        }
        "monitor.degraded" => {
            let d = &p["degraded"];
            let slow = match (d["responseTime"].as_i64(), d["thresholdMs"].as_i64()) {
                (Some(r), Some(l)) => format!(
                    "\nResponds in {}, slower than {}",
                    tocsin_chat::response_time(r),
                    tocsin_chat::response_time(l)
                ),
                _ => String::new(),
            };
            format!("{test}🐢 <b>DEGRADED</b>: {name}{place_line}{slow}")
        }
        "monitor.degraded_ended" => {
            format!("{test}✅ <b>Performance restored</b>: {name}{place_line}")
        }
        "monitor.paused" => format!("{test}⏸ <b>Paused</b>: {name}"),
        "monitor.resumed" => format!("{test}▶️ <b>Resumed</b>: {name}"),
        "ssl.expiry_warning" | "ssl.expiry_critical" => {
            let days = p["ssl"]["daysRemaining"].as_i64().unwrap_or(0);
            let expires = escape(p["ssl"]["expiresAt"].as_str().unwrap_or("soon"));
            let mark = if p["event"] == "ssl.expiry_critical" {
                "🔴"
            } else {
                "🟠"
            };
            format!(
                "{test}{mark} <b>Certificate expires in {days} days</b>: {name}{place_line}\nExpires {expires}"
            )
        }
        "location.offline" | "location.online" => {
            let l = &p["location"];
            let where_ = escape(l["name"].as_str().unwrap_or("location"));
            let monitors = l["monitors"].as_u64().unwrap_or(0);
            let noun = if monitors == 1 { "monitor" } else { "monitors" };
            if l["status"] == "unknown" {
                format!(
                    "{test}⚪ <b>CLOSED</b>: location {where_} has no probe left; nothing checks its {monitors} {noun} from there"
                )
            } else if p["event"] == "location.offline" {
                let since = l["offlineSince"]
                    .as_str()
                    .map(|s| format!("\nSince {}", escape(s)))
                    .unwrap_or_default();
                format!(
                    "{test}🔴 <b>OFFLINE</b>: location {where_} ({monitors} {noun} not checked)\nNone of its probes was heard from for 45 seconds; its monitors keep their states and open no incident until one is.{since}"
                )
            } else {
                format!(
                    "{test}✅ <b>ONLINE</b>: location {where_} is checking again ({monitors} {noun})"
                )
            }
        }
        other => format!("{test}{}: {name}", escape(other)),
    };
    Ok(text)
}

/// Most monitors a grouped message names one by one (a message holds 4096 characters).
const GROUP_LINES: usize = 25;

/// Several incidents opened within a policy's group window, as one message.
fn render_group(test: &str, list: &[Value]) -> String {
    let mut text = format!("{test}🔴 <b>{} monitors down</b>", list.len());
    for entry in list.iter().take(GROUP_LINES) {
        let name = escape(entry["monitor"]["name"].as_str().unwrap_or("monitor"));
        let reason = escape(
            entry["failure"]["reason"]
                .as_str()
                .unwrap_or("The check failed"),
        );
        let reason: String = reason.chars().take(120).collect();
        match entry["incident"]["url"].as_str() {
            Some(u) => text.push_str(&format!(
                "\n• <a href=\"{}\">{name}</a>: {reason}",
                escape(u)
            )),
            None => text.push_str(&format!("\n• {name}: {reason}")),
        }
    }
    if list.len() > GROUP_LINES {
        text.push_str(&format!("\n… and {} more", list.len() - GROUP_LINES));
    }
    text
}

/// Read the Bot API's answer: Ok(detail), or Err((retryable, reason)).
pub fn judge(status: u16, body: &[u8]) -> Result<String, (bool, String)> {
    let answer: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let description = answer["description"].as_str().unwrap_or("no description");
    match status {
        200..=299 if answer["ok"] == Value::Bool(true) => {
            Ok("Telegram accepted the message".into())
        }
        200..=299 => Err((
            true,
            format!("Telegram answered {status} without ok: {description}"),
        )),
        // Rate limited or server trouble: worth another try.
        429 | 500..=599 => Err((true, format!("Telegram answered {status}: {description}"))),
        // A wrong token or chat will not fix itself.
        _ => Err((
            false,
            format!("Telegram refused the message ({status}): {description}"),
        )),
    }
}

/// JSON Schema of the configuration.
pub fn schema() -> Value {
    TelegramConfig::schema()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_lists_what_was_held() {
        let p = serde_json::json!({"event": "alert.summary",
            "summary": {"count": 2, "heldBy": "business-hours", "alerts": [
                {"event": "incident.created", "monitor": {"name": "db <1>"}, "failure": {"reason": "refused"}},
                {"event": "incident.resolved", "monitor": {"name": "db <1>"}}]}})
        .to_string();
        assert_eq!(
            render(&p).expect("text"),
            "<b>Summary: 2 alerts held by business-hours</b>\n• db &lt;1&gt;: DOWN, refused\n• db &lt;1&gt;: RECOVERED"
        );
    }

    #[test]
    fn a_location_going_offline_and_back_reads_as_one_line_each() {
        let off = serde_json::json!({"event": "location.offline",
            "location": {"name": "office <2>", "monitors": 1, "offlineSince": "2026-12-01T10:00:00.000Z"}})
        .to_string();
        let text = render(&off).expect("text");
        assert!(
            text.starts_with(
                "🔴 <b>OFFLINE</b>: location office &lt;2&gt; (1 monitor not checked)"
            ),
            "{text}"
        );
        assert!(text.contains("Since 2026-12-01T10:00:00.000Z"), "{text}");
        let on = serde_json::json!({"event": "location.online", "location": {"name": "office", "monitors": 2}})
            .to_string();
        assert_eq!(
            render(&on).expect("text"),
            "✅ <b>ONLINE</b>: location office is checking again (2 monitors)"
        );
    }

    #[test]
    fn one_click_links_are_buttons_over_https_and_text_links_otherwise() {
        let with = |base: &str| {
            serde_json::json!({"event": "incident.created", "monitor": {"name": "api"},
                "incident": {"url": format!("{base}/incidents/inc_1")},
                "actions": {"acknowledge": format!("{base}/act/a"), "snooze1h": format!("{base}/act/s"),
                            "snoozeUntilMorning": format!("{base}/act/m"), "resolve": format!("{base}/act/r")}})
            .to_string()
        };
        let https = with("https://t.example");
        let k = keyboard(&https, false).expect("keyboard");
        assert_eq!(k["inline_keyboard"][0][0]["text"], "Acknowledge");
        assert_eq!(k["inline_keyboard"][1][1]["url"], "https://t.example/act/r");
        assert!(!render(&https).expect("text").contains("/act/"));
        let http = with("http://10.0.0.5:8080");
        assert!(keyboard(&http, false).is_none());
        // Through the server's bot with its updates received: buttons that call back.
        let back = keyboard(&http, true).expect("keyboard");
        assert_eq!(back["inline_keyboard"][0][1]["callback_data"], "a:s");
        assert!(back["inline_keyboard"][0][1].get("url").is_none());
        assert!(
            !render_with(&http, true, tocsin_chat::Templates::default())
                .expect("text")
                .contains("/act/")
        );
        let text = render(&http).expect("text");
        assert!(
            text.contains("<a href=\"http://10.0.0.5:8080/act/a\">Acknowledge</a>"),
            "{text}"
        );
    }

    #[test]
    fn a_group_is_one_message_listing_each_monitor() {
        let entry = |n: usize| {
            serde_json::json!({"monitor": {"name": format!("api-{n} <eu>")},
                               "incident": {"url": format!("https://t.test/incidents/inc_{n}")},
                               "failure": {"reason": "Connection refused"}})
        };
        let list: Vec<Value> = (0..30).map(entry).collect();
        let payload = serde_json::json!({"event": "incident.created", "monitor": {"name": "api-0"},
                                         "group": {"id": "grp_1", "count": 30, "incidents": list}});
        let text = render(&payload.to_string()).expect("rendered");
        assert!(text.starts_with("🔴 <b>30 monitors down</b>"), "{text}");
        assert!(text.contains("<a href=\"https://t.test/incidents/inc_3\">api-3 &lt;eu&gt;</a>: Connection refused"), "{text}");
        assert!(text.ends_with("… and 5 more"), "{text}");
        assert!(text.chars().count() < 4096);
    }

    const DOWN: &str = r#"{"event":"incident.created","timestamp":"2026-11-21T09:30:00.000Z","webhookId":"whd_1",
        "incident":{"id":"inc_1","url":"https://t.example/incidents/inc_1","status":"open","createdAt":"2026-11-21T09:30:00.000Z"},
        "monitor":{"id":"mon_1","name":"API <prod>","type":"http","url":"https://api.example.com/health"},
        "failure":{"reason":"Expected status 200, got 503","statusCode":503,"responseTime":12,"region":"eu"},
        "workspace":{"id":"ws_1","name":"Default"}}"#;

    #[test]
    fn down_messages_name_monitor_reason_and_link() {
        let text = render(DOWN).expect("render");
        assert_eq!(
            text,
            "🔴 <b>DOWN</b>: API &lt;prod&gt;\nhttps://api.example.com/health\nExpected status 200, got 503 (from eu)\n<a href=\"https://t.example/incidents/inc_1\">Open the incident</a>"
        );
    }

    #[test]
    fn recovery_messages_say_how_long() {
        let p = DOWN
            .replace("incident.created", "incident.resolved")
            .replace(
                r#""status":"open""#,
                r#""status":"resolved","durationSeconds":3725"#,
            );
        let text = render(&p).expect("render");
        assert!(
            text.starts_with("✅ <b>RECOVERED</b>: API &lt;prod&gt;"),
            "{text}"
        );
        assert!(text.contains("Down for 1 h 2 min"), "{text}");
        assert_eq!(duration(59), "59 s");
        assert_eq!(duration(260), "4 min 20 s");
    }

    #[test]
    fn test_events_are_marked() {
        let p = DOWN.replace(
            r#""webhookId":"whd_1","#,
            r#""webhookId":"whd_1","test":true,"#,
        );
        assert!(render(&p).expect("render").starts_with("[Test] 🔴"));
    }

    #[test]
    fn tokens_come_from_the_channel_or_the_server() {
        let config = |text: &str| TelegramConfig::parse(text).expect("valid");
        let t = target(
            &config(r#"{"chatId":"42"}"#),
            r#"{"apiBase":"http://127.0.0.1:9/","botToken":"1:A"}"#,
        )
        .expect("target");
        assert_eq!(
            t,
            Target {
                api_base: "http://127.0.0.1:9".into(),
                token: "1:A".into(),
                chat_id: "42".into()
            }
        );
        let t = target(
            &config(r#"{"chatId":"42","botToken":"2:B"}"#),
            r#"{"botToken":"1:A"}"#,
        )
        .expect("target");
        assert_eq!(t.token, "2:B");
        assert!(
            target(&config(r#"{"chatId":"42"}"#), "{}")
                .expect_err("no token")
                .contains("telegram.bot_token")
        );
    }

    #[test]
    fn api_answers() {
        assert!(judge(200, br#"{"ok":true,"result":{}}"#).is_ok());
        assert_eq!(
            judge(
                400,
                br#"{"ok":false,"description":"Bad Request: chat not found"}"#
            ),
            Err((
                false,
                "Telegram refused the message (400): Bad Request: chat not found".into()
            ))
        );
        assert!(judge(429, b"{}").expect_err("retry").0);
        assert!(judge(502, b"").expect_err("retry").0);
    }

    #[test]
    fn config_validation() {
        assert_eq!(
            validate(r#"{"chatId":-100123}"#),
            Ok(r#"{"chatId":"-100123"}"#.into())
        );
        assert!(validate(r#"{}"#).is_err());
        assert!(validate(r#"{"chatId":"1","botToken":"nope"}"#).is_err());
        assert!(validate(r#"{"chatId":"1","extra":true}"#).is_err());
    }
}
