//! The `slack` channel: a Slack incoming webhook, the alert as Block Kit blocks.

use serde_json::{Value, json};
use tocsin_chat::{Alert, Post};
use tocsin_plugin_sdk::{Capability, Channel, Delivery, Failure, Info, Receipt, export_channel};

tocsin_chat::webhook_url_config!(
    SlackConfig,
    "slack channel",
    "Incoming webhook URL from Slack (https://hooks.slack.com/services/...)."
);

struct Plugin;

impl Channel for Plugin {
    type Config = SlackConfig;

    fn info() -> Info {
        Info {
            name: "slack",
            version: env!("CARGO_PKG_VERSION"),
            description: "Posts alerts to a Slack channel through an incoming webhook, as Block Kit blocks.",
            capabilities: &[Capability::Http],
        }
    }

    fn deliver(config: SlackConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload)
            .map_err(Failure::permanent)?
            .shaped(config.templates());
        tocsin_chat::post(Post {
            service: "Slack",
            method: "POST",
            url: config.webhook_url,
            headers: vec![],
            body: message(&alert),
            timeout_ms: n.timeout_ms,
        })
    }
}

/// Slack's mrkdwn: `&`, `<` and `>` escaped.
fn mrkdwn(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The message: `text` (notifications and old clients) and Block Kit blocks.
pub fn message(alert: &Alert) -> Value {
    let mut blocks = vec![json!({
        "type": "header",
        "text": {"type": "plain_text", "text": alert.title().chars().take(150).collect::<String>(), "emoji": true}
    })];
    let facts: Vec<Value> = alert
        .facts()
        .into_iter()
        .map(|(label, value)| json!({"type": "mrkdwn", "text": format!("*{label}*\n{}", mrkdwn(&value))}))
        .collect();
    if let Some(text) = &alert.text {
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": tocsin_chat::escaped_within(text, 3000, mrkdwn)}}));
    }
    for chunk in facts.chunks(10) {
        blocks.push(json!({"type": "section", "fields": chunk}));
    }
    let lines = alert.group_lines();
    if !lines.is_empty() {
        let text: Vec<String> = lines.iter().map(|l| format!("• {}", mrkdwn(l))).collect();
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": text.join("\n").chars().take(3000).collect::<String>()}}));
    }
    let mut buttons: Vec<Value> = alert
        .link
        .iter()
        .map(|link| json!({"type": "button", "text": {"type": "plain_text", "text": alert.link_label()}, "url": link}))
        .collect();
    // Link buttons: Slack opens them in the browser, where the confirmation page acts.
    buttons.extend(alert.actions.iter().map(|(label, url)| {
        json!({"type": "button", "text": {"type": "plain_text", "text": label}, "url": url})
    }));
    if !buttons.is_empty() {
        blocks.push(json!({"type": "actions", "elements": buttons}));
    }
    // The fallback text is mrkdwn too: escaped, so no name can mention anyone.
    json!({"text": mrkdwn(&alert.plain()), "blocks": blocks})
}

export_channel!(Plugin);
