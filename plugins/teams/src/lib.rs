//! The `teams` channel: a Microsoft Teams workflow webhook (Power Automate "When a Teams
//! webhook request is received"), the alert as an Adaptive Card.

use serde_json::{Value, json};
use tocsin_chat::{Alert, Post, Severity};
use tocsin_plugin_sdk::{Capability, Channel, Delivery, Failure, Info, Receipt, export_channel};

tocsin_chat::webhook_url_config!(
    TeamsConfig,
    "teams channel",
    "Workflow webhook URL from Teams (Workflows, \"Send webhook alerts to a channel\")."
);

struct Plugin;

impl Channel for Plugin {
    type Config = TeamsConfig;

    fn info() -> Info {
        Info {
            name: "teams",
            version: env!("CARGO_PKG_VERSION"),
            description: "Posts alerts to a Microsoft Teams channel through a workflow webhook, as an Adaptive Card.",
            capabilities: &[Capability::Http],
        }
    }

    fn deliver(config: TeamsConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload)
            .map_err(Failure::permanent)?
            .shaped(config.templates());
        tocsin_chat::post(Post {
            service: "Microsoft Teams",
            method: "POST",
            url: config.webhook_url,
            headers: vec![],
            body: message(&alert),
            timeout_ms: n.timeout_ms,
        })
    }
}

/// The message: an Adaptive Card (1.4) with the title, a fact set and a button.
pub fn message(alert: &Alert) -> Value {
    let color = match alert.severity() {
        Severity::Critical => "Attention",
        Severity::Warning => "Warning",
        Severity::Resolved => "Good",
        Severity::Info => "Default",
    };
    let mut body = vec![
        json!({"type": "TextBlock", "text": alert.title(), "weight": "Bolder", "size": "Medium", "color": color, "wrap": true}),
    ];
    let facts: Vec<Value> = alert
        .facts()
        .into_iter()
        .map(|(l, v)| json!({"title": l, "value": tocsin_chat::escape_markdown(&v)}))
        .collect();
    if let Some(text) = &alert.text {
        // A TextBlock reads Markdown: the filled-in words stay words.
        body.push(
            json!({"type": "TextBlock", "text": tocsin_chat::escape_markdown(text), "wrap": true}),
        );
    }
    if !facts.is_empty() {
        body.push(json!({"type": "FactSet", "facts": facts}));
    }
    for line in alert.group_lines() {
        body.push(json!({"type": "TextBlock", "text": format!("- {line}"), "wrap": true, "spacing": "None"}));
    }
    let mut card = json!({
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
    });
    let mut actions: Vec<Value> = alert
        .link
        .iter()
        .map(|link| json!({"type": "Action.OpenUrl", "title": alert.link_label(), "url": link}))
        .collect();
    actions.extend(
        alert
            .actions
            .iter()
            .map(|(label, url)| json!({"type": "Action.OpenUrl", "title": label, "url": url})),
    );
    if !actions.is_empty() {
        card["actions"] = Value::Array(actions);
    }
    json!({"type": "message", "attachments": [{"contentType": "application/vnd.microsoft.card.adaptive", "contentUrl": null, "content": card}]})
}

export_channel!(Plugin);
