//! The `pushover` channel: a Pushover notification (`POST /1/messages.json`), priority by
//! state, a link to the incident.

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
    #[schemars(title = "pushover channel")]
    pub struct PushoverConfig {
        /// The application's API token.
        #[schemars(length(min = 30, max = 30), extend("writeOnly" = true))]
        #[schemars(title = "API token")]
        pub app_token: String,
        /// The user or group key to notify.
        #[schemars(length(min = 30, max = 30))]
        #[schemars(title = "User key")]
        pub user_key: String,
        /// Only these devices of the user (comma-separated names); all when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(length(min = 1, max = 200))]
        #[schemars(title = "Devices")]
        pub device: Option<String>,
        /// Priority of DOWN alerts, -2 to 1 (default 1, high: it bypasses quiet hours).
        #[serde(default = "default_priority")]
        #[schemars(range(min = -2, max = 1))]
        #[schemars(title = "Down alert priority")]
        pub down_priority: i8,
    }
}

fn default_priority() -> i8 {
    1
}

impl TypedConfig for PushoverConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.app_token = self.app_token.trim().to_string();
        self.user_key = self.user_key.trim().to_string();
        let key = |v: &str| v.bytes().all(|b| b.is_ascii_alphanumeric());
        let mut problems = Vec::new();
        if !key(&self.app_token) {
            problems.push(field_error(
                "appToken",
                "must be the 30 letters and digits of an application token",
            ));
        }
        if !key(&self.user_key) {
            problems.push(field_error(
                "userKey",
                "must be the 30 letters and digits of a user or group key",
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

struct Plugin;

impl Channel for Plugin {
    type Config = PushoverConfig;

    fn info() -> Info {
        Info {
            name: "pushover",
            version: env!("CARGO_PKG_VERSION"),
            description: "Sends alerts as Pushover notifications, with priority by state.",
            capabilities: &[Capability::Http],
        }
    }

    fn deliver(config: PushoverConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload)
            .map_err(Failure::permanent)?
            .shaped(config.templates());
        let base = tocsin_chat::settings(&n.settings)["apiBase"]
            .as_str()
            .unwrap_or("https://api.pushover.net")
            .trim_end_matches('/')
            .to_string();
        tocsin_chat::post(Post {
            service: "Pushover",
            method: "POST",
            url: format!("{base}/1/messages.json"),
            headers: vec![],
            body: message(&config, &alert),
            timeout_ms: n.timeout_ms,
        })
    }
}

/// The message: token, user, title, text, priority by state, the incident link.
pub fn message(config: &PushoverConfig, alert: &Alert) -> Value {
    let priority = match alert.severity() {
        Severity::Critical => config.down_priority,
        Severity::Warning | Severity::Resolved => 0,
        Severity::Info => -1,
    };
    let mut m = json!({
        "token": config.app_token,
        "user": config.user_key,
        "title": alert.title().chars().take(250).collect::<String>(),
        "message": alert.body().chars().take(1024).collect::<String>(),
        "priority": priority,
    });
    if let Some(device) = &config.device {
        m["device"] = json!(device);
    }
    if let Some(link) = &alert.link {
        m["url"] = json!(link);
        m["url_title"] = json!(alert.link_label());
    }
    m
}

export_channel!(Plugin);
