//! The `googlechat` channel: a Google Chat space webhook, the alert as formatted text.

use serde_json::{Value, json};
use tocsin_chat::{Alert, Post};
use tocsin_plugin_sdk::{Capability, Channel, Delivery, Failure, Info, Receipt, export_channel};

tocsin_chat::webhook_url_config!(
    GoogleChatConfig,
    "googlechat channel",
    "Webhook URL of the space (https://chat.googleapis.com/v1/spaces/.../messages?key=...&token=...)."
);

struct Plugin;

impl Channel for Plugin {
    type Config = GoogleChatConfig;

    fn info() -> Info {
        Info {
            name: "googlechat",
            version: env!("CARGO_PKG_VERSION"),
            description: "Posts alerts to a Google Chat space through its webhook.",
            capabilities: &[Capability::Http],
        }
    }

    fn deliver(config: GoogleChatConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload)
            .map_err(Failure::permanent)?
            .shaped(config.templates());
        tocsin_chat::post(Post {
            service: "Google Chat",
            method: "POST",
            url: config.webhook_url,
            headers: vec![tocsin_chat::header(
                "Content-Type",
                "application/json; charset=UTF-8",
            )],
            body: message(&alert),
            timeout_ms: n.timeout_ms,
        })
    }
}

/// Google Chat's text formatting: `*bold*`, `<url|label>` links.
pub fn message(alert: &Alert) -> Value {
    let clean = |t: &str| t.replace('<', "‹").replace('>', "›");
    let mut text = format!("*{}*", clean(&alert.title()));
    for (label, value) in alert.facts() {
        text.push_str(&format!("\n*{label}:* {}", clean(&value)));
    }
    if let Some(t) = &alert.text {
        text.push_str(&format!("\n{}", clean(t)));
    }
    for line in alert.group_lines() {
        text.push_str(&format!("\n• {}", clean(&line)));
    }
    if let Some(link) = &alert.link {
        text.push_str(&format!("\n<{link}|{}>", alert.link_label()));
    }
    json!({"text": text})
}

export_channel!(Plugin);
