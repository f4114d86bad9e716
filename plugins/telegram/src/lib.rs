//! The `telegram` channel: renders an event as a short message and sends it through the
//! Telegram Bot API (`POST <api_base>/bot<token>/sendMessage`).

pub mod message;

use message::TelegramConfig;
use tocsin_plugin_sdk::{
    Ability, Capability, Channel, Delivery, Failure, Header, Info, Receipt, export_channel, http,
};

struct TelegramChannel;

impl Channel for TelegramChannel {
    type Config = TelegramConfig;

    fn info() -> Info {
        Info {
            name: "telegram",
            version: env!("CARGO_PKG_VERSION"),
            description: "Sends alerts to a Telegram chat through the Bot API.",
            capabilities: &[Capability::Http],
        }
    }

    // A group window's incidents go out in one message.
    fn abilities() -> &'static [Ability] {
        &[Ability::Grouping]
    }

    fn deliver(config: TelegramConfig, n: Delivery) -> Result<Receipt, Failure> {
        let target = message::target(&config, &n.settings).map_err(Failure::permanent)?;
        // Buttons call back only through the server's own bot, whose updates it receives.
        let callbacks = config.bot_token.is_none()
            && serde_json::from_str::<serde_json::Value>(&n.settings)
                .is_ok_and(|s| s["callbacks"] == serde_json::Value::Bool(true));
        let keyboard = message::keyboard(&n.payload, callbacks);
        let text = message::render_with(&n.payload, keyboard.is_some(), config.templates())
            .map_err(Failure::permanent)?;
        let mut body = serde_json::json!({
            "chat_id": target.chat_id,
            "text": text,
            "parse_mode": "HTML",
            "disable_web_page_preview": true,
        });
        if let Some(keyboard) = keyboard {
            body["reply_markup"] = keyboard;
        }
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
            version: http::HttpVersion::Any,
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
            Err(http::Error::Timeout(_)) => {
                Err(Failure::retry("The Telegram API did not answer in time"))
            }
            Err(e) => Err(Failure::retry(format!(
                "Could not reach the Telegram API: {}",
                transport(&e)
            ))),
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

export_channel!(TelegramChannel);
