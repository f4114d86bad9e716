//! The server's SMTP relay (`smtp.*`: none, STARTTLS or implicit TLS): one message sent
//! within a budget, under the egress policy. Plugins reach it through the `smtp` host
//! interface (`smtp.rs`); the server sends its own mail (invitations, resets) through it.

use super::egress::EgressPolicy;
use super::settings::{SmtpConfig, SmtpTls};
use lettre::message::{Mailbox, MultiPart, SinglePart, header::ContentType};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// One message to send.
#[derive(Debug, Clone)]
pub struct Mail {
    pub to: Vec<String>,
    pub subject: String,
    pub text_body: String,
    pub html_body: Option<String>,
    /// Files attached after the body.
    pub attachments: Arc<[Attachment]>,
}

/// A file a message carries (a report's PDF).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub name: String,
    pub content_type: String,
    pub data: Vec<u8>,
}

/// Why a message was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// No relay is configured.
    NotConfigured(String),
    /// The egress policy refuses every address of the relay.
    Denied(String),
    /// The message or its addresses were refused; sending it again will not help.
    Rejected(String),
    /// The relay could not be reached or failed for now.
    Transient(String),
}

impl Error {
    /// What went wrong, whatever the kind.
    pub fn message(self) -> String {
        match self {
            Error::NotConfigured(m)
            | Error::Denied(m)
            | Error::Rejected(m)
            | Error::Transient(m) => m,
        }
    }
}

/// Most recipients of one message.
const MAX_RECIPIENTS: usize = 50;

/// A configured relay. Each message resolves the relay's name, checks the addresses
/// against the egress policy and connects to an allowed one by address (TLS still
/// verifies the certificate for the name).
pub struct SmtpRelay {
    host: String,
    port: u16,
    /// `None` for a plain connection; the name to verify otherwise.
    tls: Option<(SmtpTls, TlsParameters)>,
    credentials: Option<Credentials>,
    from: Mailbox,
}

impl SmtpRelay {
    /// Build from the configuration; `Ok(None)` when no relay is configured.
    pub fn from_config(c: &SmtpConfig) -> Result<Option<SmtpRelay>, String> {
        let Some(host) = c.host.as_deref().filter(|h| !h.is_empty()) else {
            return Ok(None);
        };
        let tls = c.tls.unwrap_or(SmtpTls::Starttls);
        let parameters = match tls {
            SmtpTls::None => None,
            SmtpTls::Starttls | SmtpTls::Tls => Some((
                tls,
                TlsParameters::new(host.to_string()).map_err(|e| format!("smtp.host: {e}"))?,
            )),
        };
        let port = c.port.unwrap_or(match tls {
            SmtpTls::None => 25,
            SmtpTls::Starttls => 587,
            SmtpTls::Tls => 465,
        });
        let credentials = match (&c.username, &c.password) {
            (Some(user), Some(pass)) => Some(Credentials::new(user.clone(), pass.clone())),
            _ => None,
        };
        let from_text = c
            .from
            .clone()
            .unwrap_or_else(|| format!("Tocsin <tocsin@{host}>"));
        let from: Mailbox = from_text
            .parse()
            .map_err(|e| format!("smtp.from `{from_text}`: {e}"))?;
        Ok(Some(SmtpRelay {
            host: host.to_string(),
            port,
            tls: parameters,
            credentials,
            from,
        }))
    }

    /// A transport to one address of the relay.
    fn transport(&self, address: IpAddr) -> AsyncSmtpTransport<Tokio1Executor> {
        let mut builder =
            AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(address.to_string())
                .port(self.port)
                .timeout(Some(Duration::from_secs(10)));
        builder = match &self.tls {
            None => builder,
            Some((SmtpTls::Tls, parameters)) => builder.tls(Tls::Wrapper(parameters.clone())),
            Some((_, parameters)) => builder.tls(Tls::Required(parameters.clone())),
        };
        if let Some(credentials) = &self.credentials {
            builder = builder.credentials(credentials.clone());
        }
        builder.build()
    }

    /// The relay's first address the egress policy allows.
    async fn address(&self, egress: &EgressPolicy) -> Result<IpAddr, Error> {
        let name = self.host.trim_start_matches('[').trim_end_matches(']');
        let mut found: Vec<IpAddr> = Vec::new();
        let addresses = tokio::net::lookup_host((name, self.port))
            .await
            .map_err(|e| {
                Error::Transient(format!("cannot resolve the relay `{}`: {e}", self.host))
            })?;
        for address in addresses {
            if !found.contains(&address.ip()) {
                found.push(address.ip());
            }
        }
        let allowed = egress
            .filter(&found)
            .map_err(|e| Error::Denied(format!("the relay `{}`: {e}", self.host)))?;
        allowed
            .first()
            .copied()
            .ok_or_else(|| Error::Transient(format!("the relay `{}` has no address", self.host)))
    }

    /// Connect, greet, secure and sign in as a delivery would, then quit without sending
    /// anything; says where it connected.
    pub async fn probe(&self, budget: Duration, egress: &EgressPolicy) -> Result<String, String> {
        let exchange = async {
            let address = self.address(egress).await.map_err(Error::message)?;
            self.transport(address)
                .test_connection()
                .await
                .map_err(|e| format!("{}:{} ({address}): {e}", self.host, self.port))?;
            Ok::<_, String>(address)
        };
        let address = tokio::time::timeout(budget, exchange).await.map_err(|_| {
            format!(
                "{}:{} did not answer within {} s",
                self.host,
                self.port,
                budget.as_secs()
            )
        })??;
        let security = match &self.tls {
            None => "no TLS",
            Some((SmtpTls::Tls, _)) => "implicit TLS",
            Some(_) => "STARTTLS",
        };
        let signed_in = if self.credentials.is_some() {
            ", signed in"
        } else {
            ""
        };
        Ok(format!(
            "{}:{} ({address}) answered EHLO, {security}{signed_in}",
            self.host, self.port
        ))
    }

    /// Send one message.
    pub async fn send(
        &self,
        msg: &Mail,
        budget: Duration,
        egress: &EgressPolicy,
    ) -> Result<(), Error> {
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
        let email = body(builder, msg)
            .map_err(|e| Error::Rejected(format!("cannot build the message: {e}")))?;
        let exchange = async {
            let address = self.address(egress).await?;
            Ok(self.transport(address).send(email).await)
        };
        match tokio::time::timeout(budget, exchange).await {
            Err(_) => Err(Error::Transient(format!(
                "the relay did not answer within {} s",
                budget.as_secs()
            ))),
            Ok(Err(refused)) => Err(refused),
            Ok(Ok(Ok(_))) => Ok(()),
            Ok(Ok(Err(e))) if e.is_permanent() => Err(Error::Rejected(format!(
                "the relay refused the message: {e}"
            ))),
            Ok(Ok(Err(e))) => Err(Error::Transient(format!("sending failed: {e}"))),
        }
    }
}

/// The message's body: plain text (and HTML as its alternative), then its attachments.
fn body(
    builder: lettre::message::MessageBuilder,
    msg: &Mail,
) -> Result<lettre::Message, lettre::error::Error> {
    let text = SinglePart::builder()
        .header(ContentType::TEXT_PLAIN)
        .body(msg.text_body.clone());
    if msg.attachments.is_empty() {
        return match &msg.html_body {
            Some(html) => builder.multipart(MultiPart::alternative_plain_html(
                msg.text_body.clone(),
                html.clone(),
            )),
            None => builder.singlepart(text),
        };
    }
    let mut mixed = match &msg.html_body {
        Some(html) => MultiPart::mixed().multipart(MultiPart::alternative_plain_html(
            msg.text_body.clone(),
            html.clone(),
        )),
        None => MultiPart::mixed().singlepart(text),
    };
    for file in msg.attachments.iter() {
        let kind = ContentType::parse(&file.content_type).unwrap_or_else(|_| {
            ContentType::parse("application/octet-stream").expect("a valid type")
        });
        mixed = mixed.singlepart(
            lettre::message::Attachment::new(file.name.clone()).body(file.data.clone(), kind),
        );
    }
    builder.multipart(mixed)
}
