//! A paging service's channel as a third party would write it, on the SDK (contract
//! 0.3.0), knowing nothing of the server's built-ins: it declares that it wants
//! acknowledgements, a group window's incidents in one delivery and signed deliveries, that
//! its URL is a secret (the path is the credential) and must be https. It POSTs each
//! notification's payload with the host's headers to its URL, adding `X-Pager-Event`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tocsin_plugin_sdk::typed::{TypedConfig, field_error};
use tocsin_plugin_sdk::{
    Ability, Capability, Channel, Delivery, Failure, FieldError, Header, Info, Receipt,
    export_channel, http,
};

/// The pager's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "pager channel")]
pub struct PagerConfig {
    /// The service's integration URL; its path is the credential.
    #[schemars(extend("x-tocsin-secret" = true, "x-tocsin-target" = true))]
    pub url: String,
}

impl TypedConfig for PagerConfig {
    fn refine(self) -> Result<Self, Vec<FieldError>> {
        if !(self.url.starts_with("https://") || self.url.starts_with("http://")) {
            return Err(vec![field_error("url", "must be an absolute URL")]);
        }
        Ok(self)
    }
}

struct Pager;

impl Channel for Pager {
    type Config = PagerConfig;

    fn info() -> Info {
        Info {
            name: "test-pager",
            version: "1.0.0",
            description: "Pages through a third-party service (a test plugin).",
            capabilities: &[Capability::Http],
        }
    }

    fn abilities() -> &'static [Ability] {
        &[
            Ability::Acknowledgements,
            Ability::Grouping,
            Ability::Signing,
        ]
    }

    fn https_only() -> &'static [&'static str] {
        &["url"]
    }

    fn deliver(config: PagerConfig, n: Delivery) -> Result<Receipt, Failure> {
        let mut headers = n.headers;
        headers.push(Header {
            name: "X-Pager-Event".into(),
            value: n.event.clone(),
        });
        let request = http::Request {
            method: "POST".into(),
            url: config.url,
            headers,
            body: Some(n.payload.into_bytes()),
            timeout_ms: n.timeout_ms,
            follow_redirects: false,
            max_redirects: 0,
            max_body_bytes: 1024,
            version: http::HttpVersion::Any,
        };
        match http::send(&request) {
            Ok(r) if (200..300).contains(&r.status) => Ok(Receipt {
                status_code: Some(r.status),
                detail: Some("paged".into()),
            }),
            Ok(r) => {
                Err(Failure::retry(format!("the service answered {}", r.status))
                    .with_status(r.status))
            }
            Err(e) => Err(Failure::retry(format!(
                "the service was not reached: {e:?}"
            ))),
        }
    }
}

export_channel!(Pager);
