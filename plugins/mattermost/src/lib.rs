//! The `mattermost` channel: a Mattermost incoming webhook (Slack-compatible), the alert as text
//! and an attachment.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tocsin_chat::{Alert, Post};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Capability, Channel, Delivery, Failure, FieldError, Info, Receipt, export_channel,
};

/// The channel's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "mattermost channel")]
pub struct MattermostConfig {
    /// Incoming webhook URL from Mattermost (https://chat.example.com/hooks/...).
    #[schemars(length(min = 1, max = 2048))]
    pub webhook_url: String,
}

impl TypedConfig for MattermostConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.webhook_url = self.webhook_url.trim().to_string();
        tocsin_chat::check_url(&self.webhook_url)
            .map_err(|m| vec![field_error("webhookUrl", m)])?;
        Ok(self)
    }
}

struct Plugin;

impl Channel for Plugin {
    type Config = MattermostConfig;

    fn info() -> Info {
        Info {
            name: "mattermost",
            version: env!("CARGO_PKG_VERSION"),
            description: "Posts alerts to a Mattermost channel through an incoming webhook, with a coloured attachment.",
            capabilities: &[Capability::Http],
        }
    }

    fn deliver(config: MattermostConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload).map_err(Failure::permanent)?;
        tocsin_chat::post(Post {
            service: "Mattermost",
            method: "POST",
            url: config.webhook_url,
            headers: vec![],
            body: message(&alert),
            timeout_ms: n.timeout_ms,
        })
    }
}

/// The message: a Markdown line and a Slack-style attachment with the facts as fields.
pub fn message(alert: &Alert) -> Value {
    let fields: Vec<Value> = alert
        .facts()
        .into_iter()
        .map(|(label, value)| json!({"short": label != "Reason" && label != "Target", "title": label, "value": value}))
        .collect();
    let mut attachment = json!({
        "fallback": alert.plain(),
        "color": alert.color_hex(),
        "title": alert.title(),
        "fields": fields,
    });
    if let Some(link) = &alert.link {
        attachment["title_link"] = json!(link);
    }
    let lines = alert.group_lines();
    if !lines.is_empty() {
        attachment["text"] = json!(
            lines
                .iter()
                .map(|l| format!("- {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    json!({"username": "Tocsin", "text": alert.markdown(), "attachments": [attachment]})
}

export_channel!(Plugin);
