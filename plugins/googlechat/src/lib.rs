//! The `googlechat` channel: a Google Chat space webhook, the alert as formatted text.

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
#[schemars(title = "googlechat channel")]
pub struct GoogleChatConfig {
    /// Webhook URL of the space (https://chat.googleapis.com/v1/spaces/.../messages?key=...&token=...).
    #[schemars(length(min = 1, max = 2048))]
    pub webhook_url: String,
}

impl TypedConfig for GoogleChatConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.webhook_url = self.webhook_url.trim().to_string();
        tocsin_chat::check_url(&self.webhook_url)
            .map_err(|m| vec![field_error("webhookUrl", m)])?;
        Ok(self)
    }
}

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
        let alert = Alert::parse(&n.payload).map_err(Failure::permanent)?;
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
    for line in alert.group_lines() {
        text.push_str(&format!("\n• {}", clean(&line)));
    }
    if let Some(link) = &alert.link {
        text.push_str(&format!("\n<{link}|Open the incident>"));
    }
    json!({"text": text})
}

export_channel!(Plugin);
