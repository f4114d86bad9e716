//! The `email` channel: renders an event as a plain-text and HTML message and sends it
//! through the server's SMTP relay.

pub mod render;

use tocsin_plugin_sdk::config::{FieldError, problems};
use tocsin_plugin_sdk::typed::PluginConfig;
use tocsin_plugin_sdk::{
    Capability, Channel, Delivery, Failure, Info, Receipt, export_channel, smtp,
};

/// The canonical configuration, `{"target": ...}` as JSON text.
pub struct EmailConfig(pub String);

impl PluginConfig for EmailConfig {
    fn schema() -> serde_json::Value {
        render::schema()
    }

    fn parse(text: &str) -> Result<Self, Vec<FieldError>> {
        render::validate(text).map(EmailConfig).map_err(problems)
    }

    fn canonical(&self) -> serde_json::Value {
        serde_json::from_str(&self.0).unwrap_or_default()
    }
}

struct EmailChannel;

impl Channel for EmailChannel {
    type Config = EmailConfig;

    fn info() -> Info {
        Info {
            name: "email",
            version: env!("CARGO_PKG_VERSION"),
            description: "Sends alert e-mails through the server's SMTP relay.",
            capabilities: &[Capability::Smtp],
        }
    }

    fn deliver(config: EmailConfig, n: Delivery) -> Result<Receipt, Failure> {
        let to = render::recipient(&config.0).map_err(Failure::permanent)?;
        let mail = render::render(&n.payload).map_err(Failure::permanent)?;
        let message = smtp::Message {
            to: vec![to],
            subject: mail.subject,
            text_body: mail.text,
            html_body: Some(mail.html),
        };
        match smtp::send(&message) {
            Ok(()) => Ok(Receipt {
                status_code: None,
                detail: Some("Accepted by the SMTP relay".into()),
            }),
            Err(smtp::Error::Transient(reason)) => Err(Failure::retry(reason)),
            Err(
                smtp::Error::NotConfigured(reason)
                | smtp::Error::Rejected(reason)
                | smtp::Error::Denied(reason),
            ) => Err(Failure::permanent(reason)),
        }
    }
}

export_channel!(EmailChannel);
