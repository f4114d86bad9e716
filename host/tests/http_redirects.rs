//! The host's `http` import follows redirects as browsers and curl do: within one origin it
//! keeps the plugin's headers, to another origin it drops them (`Authorization`, `Cookie`,
//! `Proxy-Authorization` and the monitor's own headers; only the `User-Agent` goes on), and
//! it never replays a request body to another origin. Real requests to two loopback
//! servers (two ports: two origins), through the import every plugin calls.

use crate::support;

use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::target::Target;
use tocsin::plugins::state::{CallContext, Grants};
use tocsin::plugins::wit::http::{Request, Response};
use tocsin::plugins::wit::types::Header;
use tocsin::plugins::{Capability, HostSettings, PluginHost};

fn header(name: &str, value: &str) -> Header {
    Header {
        name: name.into(),
        value: value.into(),
    }
}

/// One request through the host import, with a monitor's credentials and own header.
async fn send(method: &str, url: String, body: Option<&str>) -> Response {
    tocsin::crypto::install_provider();
    let host = PluginHost::new(None, &HostSettings::default()).expect("plugin host");
    let budget = Duration::from_secs(10);
    let call = CallContext {
        plugin: Arc::from("http"),
        grants: Grants::of([Capability::Http]),
        services: host.services(),
        budget_deadline: Instant::now() + budget,
        budget,
        region: Some(Arc::from("local")),
        attachments: std::sync::Arc::from([]),
    };
    let request = Request {
        method: method.into(),
        url,
        headers: vec![
            header("Authorization", "Bearer secret-token"),
            header("Cookie", "session=abc"),
            header("Proxy-Authorization", "Basic cHJveHk="),
            header("X-Custom", "monitor-header"),
        ],
        body: body.map(|b| b.as_bytes().to_vec()),
        timeout_ms: 10_000,
        follow_redirects: true,
        max_redirects: 5,
        max_body_bytes: 65_536,
        version: tocsin::plugins::wit::http::HttpVersion::Any,
    };
    tocsin::plugins::http::send(&call, request)
        .await
        .expect("exchange")
}

fn seen(r: &Response) -> Value {
    serde_json::from_slice(&r.body).expect("the /headers route answers JSON")
}

fn away(from: &Target, code: u16, to: &str) -> String {
    from.url(&format!("/away/{code}?to={to}"))
}

#[tokio::test]
async fn credentials_follow_a_redirect_within_the_origin_only() {
    let a = Target::start();
    let b = Target::start();

    // Same origin: every header arrives after the redirect.
    let r = send("GET", away(&a, 302, &a.url("/headers")), None).await;
    assert_eq!((r.status, r.redirects), (200, 1));
    let h = &seen(&r)["headers"];
    assert_eq!(h["authorization"], "Bearer secret-token");
    assert_eq!(h["cookie"], "session=abc");
    assert_eq!(h["proxy-authorization"], "Basic cHJveHk=");
    assert_eq!(h["x-custom"], "monitor-header");

    // Another origin (another port): none of them, but the User-Agent still names us.
    let r = send("GET", away(&a, 302, &b.url("/headers")), None).await;
    assert_eq!((r.status, r.redirects), (200, 1));
    let h = &seen(&r)["headers"];
    for name in ["authorization", "cookie", "proxy-authorization", "x-custom"] {
        assert!(h.get(name).is_none(), "{name} crossed origins: {h}");
    }
    assert!(
        h["user-agent"]
            .as_str()
            .is_some_and(|ua| ua.starts_with("Tocsin/")),
        "{h}"
    );

    // Dropped once, they stay dropped, also when the chain comes back to the first origin.
    let back = away(&b, 302, &a.url("/headers"));
    let r = send("GET", away(&a, 302, &urlencode(&back)), None).await;
    assert_eq!((r.status, r.redirects), (200, 2));
    assert!(seen(&r)["headers"].get("authorization").is_none());
}

#[tokio::test]
async fn a_request_body_is_never_replayed_to_another_origin() {
    let a = Target::start();
    let b = Target::start();

    // 307 within the origin: method and body are kept, as the status asks.
    let r = send("POST", away(&a, 307, &a.url("/headers")), Some("payload")).await;
    assert_eq!((r.status, r.redirects), (200, 1));
    let s = seen(&r);
    assert_eq!(
        (s["method"].as_str(), s["body"].as_str()),
        (Some("POST"), Some("payload"))
    );

    // 307 or 308 to another origin would resend the body: not followed, the redirect is
    // the answer the check judges.
    for code in [307, 308] {
        let r = send("POST", away(&a, code, &b.url("/headers")), Some("payload")).await;
        assert_eq!((r.status, r.redirects), (code, 0), "{code}");
        assert!(!String::from_utf8_lossy(&r.body).contains("payload"));
    }

    // 303 turns a POST into a GET without a body, so it may go anywhere (without credentials).
    let r = send("POST", away(&a, 303, &b.url("/headers")), Some("payload")).await;
    assert_eq!((r.status, r.redirects), (200, 1));
    let s = seen(&r);
    assert_eq!(
        (s["method"].as_str(), s["body"].as_str()),
        (Some("GET"), Some(""))
    );
    assert!(s["headers"].get("authorization").is_none());
}

/// Percent-encode a URL for use as a query value.
fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
