//! The `discord` channel: a Discord webhook, the alert as an embed.

use serde_json::{Value, json};
use tocsin_chat::{Alert, Post};
use tocsin_plugin_sdk::{Capability, Channel, Delivery, Failure, Info, Receipt, export_channel};

tocsin_chat::webhook_url_config!(
    DiscordConfig,
    "discord channel",
    "Webhook URL from Discord (https://discord.com/api/webhooks/...)."
);

struct Plugin;

impl Channel for Plugin {
    type Config = DiscordConfig;

    fn info() -> Info {
        Info {
            name: "discord",
            version: env!("CARGO_PKG_VERSION"),
            description: "Posts alerts to a Discord channel through a webhook, as an embed.",
            capabilities: &[Capability::Http],
        }
    }

    fn deliver(config: DiscordConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload)
            .map_err(Failure::permanent)?
            .shaped(config.templates());
        let separator = if config.webhook_url.contains('?') {
            '&'
        } else {
            '?'
        };
        tocsin_chat::post(Post {
            service: "Discord",
            method: "POST",
            url: format!("{}{separator}wait=true", config.webhook_url),
            headers: vec![],
            body: message(&alert),
            timeout_ms: n.timeout_ms,
        })
    }
}

/// The message: one embed with the title, the facts as fields and the incident link.
pub fn message(alert: &Alert) -> Value {
    let fields: Vec<Value> = alert
        .facts()
        .into_iter()
        .take(25)
        // Field values read Markdown: a failure's reason stays words.
        .map(|(label, value)| json!({"name": label, "value": tocsin_chat::escaped_within(&value, 1024, tocsin_chat::escape_markdown), "inline": label != "Reason" && label != "Target"}))
        .collect();
    let mut embed = json!({
        "title": alert.title().chars().take(256).collect::<String>(),
        "color": alert.color(),
        "fields": fields,
    });
    if let Some(text) = &alert.text {
        // The description reads Markdown: the filled-in words stay words.
        embed["description"] = json!(tocsin_chat::escaped_within(
            text,
            4096,
            tocsin_chat::escape_markdown
        ));
    }
    let lines = alert.group_lines();
    if !lines.is_empty() {
        embed["description"] = json!(
            lines
                .iter()
                .map(|l| format!("- {l}"))
                .collect::<Vec<_>>()
                .join("\n")
                .chars()
                .take(4096)
                .collect::<String>()
        );
    }
    if let Some(link) = &alert.link {
        embed["url"] = json!(link);
    }
    json!({"username": "Tocsin", "content": alert.title().chars().take(2000).collect::<String>(), "embeds": [embed], "allowed_mentions": {"parse": []}})
}

export_channel!(Plugin);
