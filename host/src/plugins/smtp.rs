//! The `smtp` host interface: one message through the server's configured relay
//! (`smtp.*`: none, STARTTLS or implicit TLS), within the call's remaining budget.

use super::settings::{SmtpConfig, SmtpTls};
use super::state::CallState;
use super::wit::smtp::{Error, Host, Message};
use lettre::message::{Mailbox, MultiPart, SinglePart, header::ContentType};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use std::time::Duration;

/// Most recipients of one message.
const MAX_RECIPIENTS: usize = 50;

/// A configured relay.
pub struct SmtpRelay {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl SmtpRelay {
    /// Build from the configuration; `Ok(None)` when no relay is configured.
    pub fn from_config(c: &SmtpConfig) -> Result<Option<SmtpRelay>, String> {
        let Some(host) = c.host.as_deref().filter(|h| !h.is_empty()) else {
            return Ok(None);
        };
        let tls = c.tls.unwrap_or(SmtpTls::Starttls);
        let builder = match tls {
            SmtpTls::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host),
            SmtpTls::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host)
                .map_err(|e| format!("smtp.host: {e}"))?,
            SmtpTls::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(host)
                .map_err(|e| format!("smtp.host: {e}"))?,
        };
        let port = c.port.unwrap_or(match tls {
            SmtpTls::None => 25,
            SmtpTls::Starttls => 587,
            SmtpTls::Tls => 465,
        });
        let mut builder = builder.port(port).timeout(Some(Duration::from_secs(10)));
        if let (Some(user), Some(pass)) = (&c.username, &c.password) {
            builder = builder.credentials(Credentials::new(user.clone(), pass.clone()));
        }
        let from_text = c
            .from
            .clone()
            .unwrap_or_else(|| format!("Tocsin <tocsin@{host}>"));
        let from: Mailbox = from_text
            .parse()
            .map_err(|e| format!("smtp.from `{from_text}`: {e}"))?;
        Ok(Some(SmtpRelay {
            transport: builder.build(),
            from,
        }))
    }

    /// Send one message.
    pub async fn send(&self, msg: &Message, budget: Duration) -> Result<(), Error> {
        if msg.to.is_empty() || msg.to.len() > MAX_RECIPIENTS {
            return Err(Error::Rejected(format!(
                "a message needs 1 to {MAX_RECIPIENTS} recipients"
            )));
        }
        let mut builder = lettre::Message::builder()
            .from(self.from.clone())
            .subject(msg.subject.clone());
        for to in &msg.to {
            let mailbox: Mailbox = to
                .parse()
                .map_err(|e| Error::Rejected(format!("`{to}` is not an e-mail address: {e}")))?;
            builder = builder.to(mailbox);
        }
        let email = match &msg.html_body {
            Some(html) => builder.multipart(MultiPart::alternative_plain_html(
                msg.text_body.clone(),
                html.clone(),
            )),
            None => builder.singlepart(
                SinglePart::builder()
                    .header(ContentType::TEXT_PLAIN)
                    .body(msg.text_body.clone()),
            ),
        }
        .map_err(|e| Error::Rejected(format!("cannot build the message: {e}")))?;
        match tokio::time::timeout(budget, self.transport.send(email)).await {
            Err(_) => Err(Error::Transient(format!(
                "the relay did not answer within {} s",
                budget.as_secs()
            ))),
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) if e.is_permanent() => Err(Error::Rejected(format!(
                "the relay refused the message: {e}"
            ))),
            Ok(Err(e)) => Err(Error::Transient(format!("sending failed: {e}"))),
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
        relay.send(&msg, self.call.remaining()).await
    }
}
