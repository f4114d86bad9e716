//! The `smtp` host interface: a plugin's message through the server's relay
//! ([`super::relay`]), within the call's remaining budget.

use super::relay;
use super::state::CallState;
use super::wit::smtp::{Error, Host, Message};

impl From<relay::Error> for Error {
    fn from(e: relay::Error) -> Self {
        match e {
            relay::Error::NotConfigured(m) => Error::NotConfigured(m),
            relay::Error::Denied(m) => Error::Denied(m),
            relay::Error::Rejected(m) => Error::Rejected(m),
            relay::Error::Transient(m) => Error::Transient(m),
        }
    }
}

impl Host for CallState {
    async fn send(&mut self, msg: Message) -> Result<(), Error> {
        if !self.call.grants.allows(super::Capability::Smtp) {
            return Err(Error::Denied(super::state::not_granted(
                &self.call.plugin,
                super::Capability::Smtp,
            )));
        }
        let Some(relay) = &self.call.services.smtp else {
            return Err(Error::NotConfigured(
                "no SMTP relay is configured (set smtp.host)".into(),
            ));
        };
        let mail = relay::Mail {
            to: msg.to,
            subject: msg.subject,
            text_body: msg.text_body,
            html_body: msg.html_body,
            // Once per delivery: the first message the plugin sends carries the files.
            attachments: std::mem::replace(&mut self.call.attachments, std::sync::Arc::from([])),
        };
        Ok(relay
            .send(&mail, self.call.remaining(), &self.call.services.egress)
            .await?)
    }
}
