//! The `rocketchat` channel: a Rocket.Chat incoming webhook (Slack-compatible), the alert as text
//! and an attachment.

use tocsin_chat::{Alert, Post};
use tocsin_plugin_sdk::{Capability, Channel, Delivery, Failure, Info, Receipt, export_channel};

tocsin_chat::webhook_url_config!(
    RocketChatConfig,
    "rocketchat channel",
    "Incoming webhook URL from Rocket.Chat (https://chat.example.com/hooks/...)."
);

struct Plugin;

impl Channel for Plugin {
    type Config = RocketChatConfig;

    fn info() -> Info {
        Info {
            name: "rocketchat",
            version: env!("CARGO_PKG_VERSION"),
            description: "Posts alerts to a Rocket.Chat channel through an incoming webhook, with a coloured attachment.",
            capabilities: &[Capability::Http],
        }
    }

    fn deliver(config: RocketChatConfig, n: Delivery) -> Result<Receipt, Failure> {
        let alert = Alert::parse(&n.payload)
            .map_err(Failure::permanent)?
            .shaped(config.templates());
        tocsin_chat::post(Post {
            service: "Rocket.Chat",
            method: "POST",
            url: config.webhook_url,
            headers: vec![],
            body: tocsin_chat::attachment_message(&alert),
            timeout_ms: n.timeout_ms,
        })
    }
}

export_channel!(Plugin);
