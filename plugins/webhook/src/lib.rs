//! The `webhook` channel: POSTs the event payload, exactly as signed by the host, to the
//! receiver's URL. No redirects are followed; any non-2xx answer is a failed attempt.

pub mod rules;

use rules::WebhookConfig;
use tocsin_plugin_sdk::{
    Ability, Capability, Channel, Delivery, Failure, Info, Receipt, export_channel, http,
};

struct WebhookChannel;

impl Channel for WebhookChannel {
    type Config = WebhookConfig;

    fn info() -> Info {
        Info {
            name: "webhook",
            version: env!("CARGO_PKG_VERSION"),
            description: "Posts signed JSON events to an HTTPS endpoint.",
            capabilities: &[Capability::Http],
        }
    }

    // Tools that follow the incident: told of acknowledgements and pauses; the body is
    // sent as the host signed it; the receiver's URL must be https unless allowed.
    fn abilities() -> &'static [Ability] {
        &[Ability::Acknowledgements, Ability::Pauses, Ability::Signing]
    }

    fn https_only() -> &'static [&'static str] {
        &["url"]
    }

    fn deliver(config: WebhookConfig, n: Delivery) -> Result<Receipt, Failure> {
        // The server's switch holds for channels saved while it was on, too.
        if let Some(reason) = rules::insecure_refusal(&config.url, &n.settings) {
            return Err(Failure::permanent(reason));
        }
        let url = config.url;
        let request = http::Request {
            method: "POST".into(),
            url,
            headers: n.headers,
            body: Some(n.payload.into_bytes()),
            timeout_ms: n.timeout_ms,
            follow_redirects: false,
            max_redirects: 0,
            max_body_bytes: 1024,
            version: http::HttpVersion::Any,
        };
        match http::send(&request) {
            Ok(response) => rules::judge(response.status)
                .map(|detail| Receipt {
                    status_code: Some(response.status),
                    detail: Some(detail),
                })
                .map_err(|reason| Failure::retry(reason).with_status(response.status)),
            Err(e) => Err(Failure::retry(rules::transport_reason(&e))),
        }
    }
}

impl rules::Describe for http::Error {
    fn describe(&self) -> String {
        match self {
            http::Error::Timeout(ms) => {
                format!("The receiver did not answer within {} s", ms / 1000)
            }
            http::Error::Dns(d) => format!("Could not resolve the receiver's host name: {d}"),
            http::Error::ConnectionRefused(_) => "The receiver refused the connection".into(),
            http::Error::Tls(d) => format!("TLS error: {d}"),
            http::Error::TooManyRedirects(_) => {
                "The receiver redirected (redirects are not followed)".into()
            }
            http::Error::InvalidRequest(d) => format!("Invalid request: {d}"),
            http::Error::Denied(d) => format!("Request not allowed: {d}"),
            http::Error::Other(d) => format!("Request failed: {d}"),
        }
    }
}

export_channel!(WebhookChannel);
