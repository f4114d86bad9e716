//! The `email` channel: renders an event as a plain-text and HTML message and sends it
//! through the server's SMTP relay.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

pub mod render;

wit_bindgen::generate!({
    path: "../../wit/v0.1.0",
    world: "channel",
});

use exports::tocsin::plugin::channel_plugin::{Failure, Guest, Notification, Receipt};
use tocsin::plugin::smtp;
use tocsin::plugin::types::{Capability, FieldError, PluginInfo, PluginKind};

struct EmailChannel;

impl Guest for EmailChannel {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "email".into(),
            kind: PluginKind::Channel,
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Sends alert e-mails through the server's SMTP relay.".into(),
            config_schema: render::schema().to_string(),
            capabilities: vec![Capability::Smtp],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        render::validate(&config).map_err(|problems| {
            problems
                .into_iter()
                .map(|(field, message)| FieldError { field, message })
                .collect()
        })
    }

    fn deliver(n: Notification) -> Result<Receipt, Failure> {
        let to = render::recipient(&n.config).map_err(|reason| Failure {
            retryable: false,
            reason,
            status_code: None,
        })?;
        let mail = render::render(&n.payload).map_err(|reason| Failure {
            retryable: false,
            reason,
            status_code: None,
        })?;
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
            Err(smtp::Error::Transient(reason)) => Err(Failure {
                retryable: true,
                reason,
                status_code: None,
            }),
            Err(
                smtp::Error::NotConfigured(reason)
                | smtp::Error::Rejected(reason)
                | smtp::Error::Denied(reason),
            ) => Err(Failure {
                retryable: false,
                reason,
                status_code: None,
            }),
        }
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(EmailChannel);
