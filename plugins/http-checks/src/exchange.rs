//! The request an HTTP-based check sends through the host's `http` interface.

use crate::config::HttpConfig;
use crate::verdict::TransportFailure;
use tocsin_plugin_sdk::{Header, http};

/// The most of a body a check reads (1 MiB), as the server promises.
pub const MAX_BODY_BYTES: u32 = 1024 * 1024;

/// The request for one check: the configured method, URL, headers and body, redirects as
/// configured, reading at most `max_body_bytes` of the answer.
pub fn request(config: &HttpConfig, timeout_ms: u32, max_body_bytes: u32) -> http::Request {
    http::Request {
        method: config.method.clone(),
        url: config.url.clone(),
        headers: config
            .headers
            .iter()
            .map(|(name, value)| Header {
                name: name.clone(),
                value: value.clone(),
            })
            .collect(),
        body: config.body.as_ref().map(|b| b.as_bytes().to_vec()),
        timeout_ms,
        follow_redirects: config.follow_redirects,
        max_redirects: config.max_redirects,
        max_body_bytes,
        version: http::HttpVersion::Any,
    }
}

impl From<http::Error> for TransportFailure {
    fn from(error: http::Error) -> TransportFailure {
        match error {
            http::Error::Timeout(ms) => TransportFailure::Timeout(ms),
            http::Error::Dns(d) => TransportFailure::Dns(d),
            http::Error::ConnectionRefused(d) => TransportFailure::ConnectionRefused(d),
            http::Error::Tls(d) => TransportFailure::Tls(d),
            http::Error::TooManyRedirects(n) => TransportFailure::TooManyRedirects(n),
            http::Error::InvalidRequest(d) => TransportFailure::InvalidRequest(d),
            http::Error::Denied(d) => TransportFailure::Denied(d),
            http::Error::Other(d) => TransportFailure::Other(d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_carries_the_configuration() {
        let c = crate::config::parse(
            r#"{"url":"http://127.0.0.1:9/x","method":"POST","headers":{"X-A":"1"},"body":"hi","followRedirects":false}"#,
        )
        .expect("valid");
        let r = request(&c, 5000, MAX_BODY_BYTES);
        assert_eq!(
            (r.method.as_str(), r.url.as_str()),
            ("POST", "http://127.0.0.1:9/x")
        );
        assert_eq!(
            (r.headers[0].name.as_str(), r.headers[0].value.as_str()),
            ("X-A", "1")
        );
        assert_eq!(r.body.as_deref(), Some(&b"hi"[..]));
        assert!(!r.follow_redirects);
        assert_eq!((r.timeout_ms, r.max_body_bytes), (5000, MAX_BODY_BYTES));
        assert_eq!(
            TransportFailure::from(http::Error::Timeout(5000)),
            TransportFailure::Timeout(5000)
        );
    }
}
