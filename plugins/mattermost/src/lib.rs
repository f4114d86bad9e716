//! The `mattermost` channel: a Mattermost incoming webhook (Slack-compatible), the alert as text
//! and an attachment.

use tocsin_chat::{Alert, Post};
use tocsin_plugin_sdk::{Capability, Channel, Delivery, Failure, Info, Receipt, export_channel};

tocsin_chat::webhook_url_config!(
    MattermostConfig,
    "mattermost channel",
    "Incoming webhook URL from Mattermost (https://chat.example.com/hooks/...)."
);

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
        let alert = Alert::parse(&n.payload)
            .map_err(Failure::permanent)?
            .shaped(config.templates());
        tocsin_chat::post(Post {
            service: "Mattermost",
            method: "POST",
            url: config.webhook_url,
            headers: vec![],
            body: tocsin_chat::attachment_message(&alert),
            timeout_ms: n.timeout_ms,
        })
    }
}

export_channel!(Plugin);
