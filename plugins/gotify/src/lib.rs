//! The `gotify` channel: a message to a Gotify server (`POST /message` with an application
//! token), priority by state, a Markdown body.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tocsin_chat::{Alert, Post, Severity};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Capability, Channel, Delivery, Failure, FieldError, Info, Receipt, export_channel,
};

tocsin_chat::with_templates! {
    /// The channel's configuration.
    #[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[schemars(title = "gotify channel")]
    pub struct GotifyConfig {
        /// The Gotify server, e.g. https://gotify.example.com.
        #[schemars(length(min = 1, max = 2048), extend("x-tocsin-target" = true))]
        #[schemars(title = "Server URL")]
        pub server_url: String,
        /// The application's token.
        #[schemars(length(min = 1, max = 256), extend("writeOnly" = true))]
        #[schemars(title = "App token")]
        pub app_token: String,
        /// Priority of DOWN alerts, 0 to 10 (default 8); recoveries use 4.
        #[serde(default = "default_priority")]
        #[schemars(range(min = 0, max = 10))]
        #[schemars(title = "Down alert priority")]
        pub down_priority: u8,
    }
}

fn default_priority() -> u8 {
    8
}

impl TypedConfig for GotifyConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.server_url = self.server_url.trim().trim_end_matches('/').to_string();
        let mut problems = Vec::new();
        if let Err(m) = tocsin_chat::check_url(&self.server_url) {
            problems.push(field_error("serverUrl", m));
        }
        problems.extend(self.check_templates());
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(problems)
        }
    }
}

struct Plugin;

impl Channel for Plugin {
    type Config = GotifyConfig;

    fn info() -> Info {
        Info {
            name: "gotify",
            version: env!("CARGO_PKG_VERSION"),
            description: "Sends alerts to a Gotify server, with priority by state.",
            capabilities: &[Capability::Http],
        }
    }

    fn deliver(config: GotifyConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload)
            .map_err(Failure::permanent)?
            .shaped(config.templates());
        tocsin_chat::post(Post {
            service: "Gotify",
            method: "POST",
            url: format!("{}/message", config.server_url),
            headers: vec![tocsin_chat::header("X-Gotify-Key", &config.app_token)],
            body: message(&config, &alert),
            timeout_ms: n.timeout_ms,
        })
    }
}

/// Title, Markdown message, priority, and a click link in `extras`.
pub fn message(config: &GotifyConfig, alert: &Alert) -> Value {
    let priority = match alert.severity() {
        Severity::Critical => config.down_priority,
        Severity::Warning => 6,
        Severity::Resolved => 4,
        Severity::Info => 2,
    };
    // The Markdown without its first line, which is the title.
    let markdown = alert.markdown();
    let body = markdown
        .split_once('\n')
        .map(|(_, rest)| rest.to_string())
        .unwrap_or_else(|| alert.title());
    let mut extras = json!({"client::display": {"contentType": "text/markdown"}});
    if let Some(link) = &alert.link {
        extras["client::notification"] = json!({"click": {"url": link}});
    }
    json!({"title": alert.title(), "message": body, "priority": priority, "extras": extras})
}

export_channel!(Plugin);
