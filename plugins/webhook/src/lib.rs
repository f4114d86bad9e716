//! The `webhook` channel: POSTs the event payload, exactly as signed by the host, to the
//! receiver's URL. No redirects are followed; any non-2xx answer is a failed attempt.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

pub mod rules;

wit_bindgen::generate!({
    path: "../../wit/v0.1.0",
    world: "channel",
});

use exports::tocsin::plugin::channel_plugin::{Failure, Guest, Notification, Receipt};
use tocsin::plugin::http;
use tocsin::plugin::types::{Capability, FieldError, PluginInfo, PluginKind};

struct WebhookChannel;

impl Guest for WebhookChannel {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "webhook".into(),
            kind: PluginKind::Channel,
            version: env!("CARGO_PKG_VERSION").into(),
            description: "Posts signed JSON events to an HTTPS endpoint.".into(),
            config_schema: rules::schema().to_string(),
            capabilities: vec![Capability::Http],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        rules::validate(&config).map_err(|problems| {
            problems
                .into_iter()
                .map(|(field, message)| FieldError { field, message })
                .collect()
        })
    }

    fn deliver(n: Notification) -> Result<Receipt, Failure> {
        let url = rules::url_of(&n.config).map_err(|reason| Failure {
            retryable: false,
            reason,
            status_code: None,
        })?;
        let request = http::Request {
            method: "POST".into(),
            url,
            headers: n.headers,
            body: Some(n.payload.into_bytes()),
            timeout_ms: n.timeout_ms,
            follow_redirects: false,
            max_redirects: 0,
            max_body_bytes: 1024,
        };
        match http::send(&request) {
            Ok(response) => rules::judge(response.status)
                .map(|detail| Receipt {
                    status_code: Some(response.status),
                    detail: Some(detail),
                })
                .map_err(|reason| Failure {
                    retryable: true,
                    reason,
                    status_code: Some(response.status),
                }),
            Err(e) => Err(Failure {
                retryable: true,
                reason: rules::transport_reason(&e),
                status_code: None,
            }),
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

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(WebhookChannel);
