//! The `email` channel: renders an event as a plain-text and HTML message and sends it
//! through the server's SMTP relay.

pub mod render;

use tocsin_plugin_sdk::config::{FieldProblem, problems};
use tocsin_plugin_sdk::{
    Capability, Channel, Delivery, Failure, Info, Receipt, export_channel, smtp,
};

struct EmailChannel;

impl Channel for EmailChannel {
    /// The canonical configuration, `{"target": ...}` as JSON text.
    type Config = String;

    fn info() -> Info {
        Info {
            name: "email",
            version: env!("CARGO_PKG_VERSION"),
            description: "Sends alert e-mails through the server's SMTP relay.",
            schema: render::schema(),
            capabilities: &[Capability::Smtp],
        }
    }

    fn parse(text: &str) -> Result<String, Vec<FieldProblem>> {
        render::validate(text).map_err(problems)
    }

    fn canonical(config: &String) -> serde_json::Value {
        serde_json::from_str(config).unwrap_or_default()
    }

    fn deliver(config: String, n: Delivery) -> Result<Receipt, Failure> {
        let to = render::recipient(&config).map_err(Failure::permanent)?;
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
