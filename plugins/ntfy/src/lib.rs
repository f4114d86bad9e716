//! The `ntfy` channel: a push notification through an ntfy server (JSON published to the
//! server's root URL), with priority and tags by state.

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
    #[schemars(title = "ntfy channel")]
    pub struct NtfyConfig {
        /// The ntfy server, e.g. https://ntfy.sh (the default).
        #[serde(default = "default_server")]
        #[schemars(length(min = 1, max = 2048), extend("x-tocsin-target" = true))]
        #[schemars(title = "Server URL")]
        pub server_url: String,
        /// The topic to publish to.
        // On a public server the topic's name is all it takes to read and post: a secret.
        #[schemars(length(min = 1, max = 64), extend("x-tocsin-secret" = true))]
        #[schemars(title = "Topic")]
        pub topic: String,
        /// Access token (tk_...) for a protected topic.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(length(min = 1, max = 256), extend("writeOnly" = true))]
        #[schemars(title = "Access token")]
        pub access_token: Option<String>,
        /// Priority of DOWN alerts, 1 (min) to 5 (max, the default); recoveries use 3.
        #[serde(default = "default_priority")]
        #[schemars(range(min = 1, max = 5))]
        #[schemars(title = "Down alert priority")]
        pub down_priority: u8,
    }
}

fn default_server() -> String {
    "https://ntfy.sh".into()
}

fn default_priority() -> u8 {
    5
}

impl TypedConfig for NtfyConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.server_url = self.server_url.trim().trim_end_matches('/').to_string();
        self.topic = self.topic.trim().to_string();
        let mut problems = Vec::new();
        if let Err(m) = tocsin_chat::check_url(&self.server_url) {
            problems.push(field_error("serverUrl", m));
        }
        if !self
            .topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            problems.push(field_error("topic", "must be letters, digits, - or _"));
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
    type Config = NtfyConfig;

    fn info() -> Info {
        Info {
            name: "ntfy",
            version: env!("CARGO_PKG_VERSION"),
            description: "Sends alerts as push notifications through an ntfy server, with priority and tags by state.",
            capabilities: &[Capability::Http],
        }
    }

    fn deliver(config: NtfyConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload)
            .map_err(Failure::permanent)?
            .shaped(config.templates());
        let mut headers = vec![];
        if let Some(token) = &config.access_token {
            headers.push(tocsin_chat::header(
                "Authorization",
                &format!("Bearer {token}"),
            ));
        }
        tocsin_chat::post(Post {
            service: "ntfy",
            method: "POST",
            url: config.server_url.clone(),
            headers,
            body: message(&config, &alert),
            timeout_ms: n.timeout_ms,
        })
    }
}

/// The JSON message: topic, title, body, priority and tags by state, a click link.
pub fn message(config: &NtfyConfig, alert: &Alert) -> Value {
    let (priority, tags) = match alert.severity() {
        Severity::Critical => (config.down_priority, ["rotating_light", "tocsin-down"]),
        Severity::Warning => (4, ["warning", "tocsin-warning"]),
        Severity::Resolved => (3, ["white_check_mark", "tocsin-up"]),
        Severity::Info => (2, ["information_source", "tocsin"]),
    };
    let mut message = json!({
        "topic": config.topic,
        "title": alert.title(),
        "message": alert.body(),
        "priority": priority,
        "tags": tags,
    });
    if let Some(link) = &alert.link {
        message["click"] = json!(link);
        message["actions"] = json!([{"action": "view", "label": alert.link_label(), "url": link}]);
    }
    message
}

export_channel!(Plugin);
