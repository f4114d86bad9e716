//! The `email` channel: renders an event as a plain-text and HTML message and sends it
//! through the server's SMTP relay.

pub mod render;

use render::EmailConfig;
use tocsin_plugin_sdk::{
    Ability, Capability, Channel, Delivery, Failure, Info, Receipt, export_channel, smtp,
};

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

    // A group window's incidents go out in one message.
    fn abilities() -> &'static [Ability] {
        &[Ability::Grouping]
    }

    fn deliver(config: EmailConfig, n: Delivery) -> Result<Receipt, Failure> {
        let to = config.target;
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
