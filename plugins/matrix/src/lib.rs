//! The `matrix` channel: a message in a Matrix room through the client-server API
//! (`PUT /_matrix/client/v3/rooms/{roomId}/send/m.room.message/{txnId}`), as the user whose
//! access token the channel holds.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tocsin_chat::{Alert, Post};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Capability, Channel, Delivery, Failure, FieldError, Header, Info, Receipt, export_channel,
};

tocsin_chat::with_templates! {
    /// The channel's configuration.
    #[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[schemars(title = "matrix channel")]
    pub struct MatrixConfig {
        /// The homeserver's base URL, e.g. https://matrix.example.org.
        #[schemars(length(min = 1, max = 2048), extend("x-tocsin-target" = true))]
        #[schemars(title = "Homeserver URL")]
        pub homeserver_url: String,
        /// The room id, e.g. !abcdefg:example.org (the sending user must have joined it).
        #[schemars(length(min = 3, max = 255))]
        #[schemars(title = "Room ID")]
        pub room_id: String,
        /// Access token of the sending user.
        #[schemars(length(min = 1, max = 1024), extend("writeOnly" = true))]
        #[schemars(title = "Access token")]
        pub access_token: String,
    }
}

impl TypedConfig for MatrixConfig {
    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.homeserver_url = self.homeserver_url.trim().trim_end_matches('/').to_string();
        self.room_id = self.room_id.trim().to_string();
        let mut problems = Vec::new();
        if let Err(m) = tocsin_chat::check_url(&self.homeserver_url) {
            problems.push(field_error("homeserverUrl", m));
        }
        if !self.room_id.starts_with('!') || !self.room_id.contains(':') {
            problems.push(field_error(
                "roomId",
                "must be a room id such as !abcdefg:example.org",
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
    type Config = MatrixConfig;

    fn info() -> Info {
        Info {
            name: "matrix",
            version: env!("CARGO_PKG_VERSION"),
            description: "Posts alerts to a Matrix room through the client-server API.",
            capabilities: &[Capability::Http],
        }
    }

    fn deliver(config: MatrixConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload)
            .map_err(Failure::permanent)?
            .shaped(config.templates());
        // The transaction id makes a retried attempt the same message, not a second one.
        // Without the header, the payload's delivery id; then the incident and event (an
        // event about no incident, a report or a location, has a delivery id).
        let txn = delivery_id(&n.headers)
            .or_else(|| {
                serde_json::from_str::<serde_json::Value>(&n.payload)
                    .ok()
                    .and_then(|p| p["webhookId"].as_str().map(|id| format!("tocsin-{id}")))
            })
            .unwrap_or_else(|| format!("tocsin-{}-{}", alert.dedup_key(), alert.event));
        tocsin_chat::post(Post {
            service: "Matrix",
            method: "PUT",
            url: format!(
                "{}/_matrix/client/v3/rooms/{}/send/m.room.message/{}",
                config.homeserver_url,
                tocsin_chat::path_segment(&config.room_id),
                tocsin_chat::path_segment(&txn)
            ),
            headers: vec![tocsin_chat::header(
                "Authorization",
                &format!("Bearer {}", config.access_token),
            )],
            body: message(&alert),
            timeout_ms: n.timeout_ms,
        })
    }
}

/// The delivery's id, from the headers the server prepared (`...-Webhook-ID`).
fn delivery_id(headers: &[Header]) -> Option<String> {
    headers
        .iter()
        .find(|h| h.name.to_ascii_lowercase().ends_with("-webhook-id"))
        .map(|h| h.value.clone())
}

fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An `m.text` message with a plain body and an HTML `formatted_body`.
pub fn message(alert: &Alert) -> Value {
    let mut formatted = format!("<strong>{}</strong>", html(&alert.title()));
    for (label, value) in alert.facts() {
        formatted.push_str(&format!("<br><strong>{label}:</strong> {}", html(&value)));
    }
    if let Some(text) = &alert.text {
        formatted.push_str(&format!("<br>{}", html(text).replace('\n', "<br>")));
    }
    let lines = alert.group_lines();
    if !lines.is_empty() {
        formatted.push_str("<ul>");
        for line in lines {
            formatted.push_str(&format!("<li>{}</li>", html(&line)));
        }
        formatted.push_str("</ul>");
    }
    if let Some(link) = &alert.link {
        formatted.push_str(&format!(
            "<br><a href=\"{}\">{}</a>",
            html(link),
            alert.link_label()
        ));
    }
    json!({
        "msgtype": "m.text",
        // Mentions no one: a name or reason that reads `@room` pings nobody.
        "m.mentions": {},
        "body": alert.plain(),
        "format": "org.matrix.custom.html",
        "formatted_body": formatted,
    })
}

export_channel!(Plugin);
