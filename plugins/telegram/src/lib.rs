//! The `telegram` channel: renders an event as a short message and sends it through the
//! Telegram Bot API (`POST <api_base>/bot<token>/sendMessage`).

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

pub mod message;

wit_bindgen::generate!({
    path: "../../wit/v0.1.0",
    world: "channel",
});

use exports::tocsin::plugin::channel_plugin::{Failure, Guest, Notification, Receipt};
use tocsin::plugin::http;
use tocsin::plugin::types::{Capability, FieldError, Header, PluginInfo, PluginKind};

struct TelegramChannel;

fn permanent(reason: impl Into<String>) -> Failure {
    Failure {
        retryable: false,
        reason: reason.into(),
        status_code: None,
    }
}

impl Guest for TelegramChannel {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "telegram".into(),
            kind: PluginKind::Channel,
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Sends alerts to a Telegram chat through the Bot API.".into(),
            config_schema: message::schema().to_string(),
            capabilities: vec![Capability::Http],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        message::validate(&config).map_err(|problems| {
            problems
                .into_iter()
                .map(|(field, message)| FieldError { field, message })
                .collect()
        })
    }

    fn deliver(n: Notification) -> Result<Receipt, Failure> {
        let target = message::target(&n.config, &n.settings).map_err(permanent)?;
        let text = message::render(&n.payload).map_err(permanent)?;
        let body = serde_json::json!({
            "chat_id": target.chat_id,
            "text": text,
            "parse_mode": "HTML",
            "disable_web_page_preview": true,
        });
        let request = http::Request {
            method: "POST".into(),
            url: format!("{}/bot{}/sendMessage", target.api_base, target.token),
            headers: vec![Header {
                name: "Content-Type".into(),
                value: "application/json".into(),
            }],
            body: Some(body.to_string().into_bytes()),
            timeout_ms: n.timeout_ms,
            follow_redirects: false,
            max_redirects: 0,
            max_body_bytes: 64 * 1024,
        };
        match http::send(&request) {
            Ok(r) => message::judge(r.status, &r.body)
                .map(|detail| Receipt {
                    status_code: Some(r.status),
                    detail: Some(detail),
                })
                .map_err(|(retryable, reason)| Failure {
                    retryable,
                    reason,
                    status_code: Some(r.status),
                }),
            Err(http::Error::Timeout(_)) => Err(Failure {
                retryable: true,
                reason: "The Telegram API did not answer in time".into(),
                status_code: None,
            }),
            Err(e) => Err(Failure {
                retryable: true,
                reason: format!("Could not reach the Telegram API: {}", transport(&e)),
                status_code: None,
            }),
        }
    }
}

fn transport(e: &http::Error) -> String {
    match e {
        http::Error::Timeout(ms) => format!("no answer within {} s", ms / 1000),
        http::Error::Dns(d) => format!("name lookup failed ({d})"),
        http::Error::ConnectionRefused(_) => "connection refused".into(),
        http::Error::Tls(d) => format!("TLS error ({d})"),
        http::Error::TooManyRedirects(_) => "redirected".into(),
        http::Error::InvalidRequest(d) | http::Error::Denied(d) | http::Error::Other(d) => {
            d.clone()
        }
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(TelegramChannel);
