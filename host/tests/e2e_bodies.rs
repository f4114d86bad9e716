//! Every operation of the OpenAPI document that takes a body answers an oversized body with
//! 413 and a malformed one with a 4xx, both in the error envelope: no route's body
//! extractor may answer in the framework's plain text. The operations come from the
//! served document, so a route added later is walked too.

use crate::support;

use serde_json::{Value, json};
use support::browser::{Browser, token_in};
use support::{ADMIN_KEY, Reply, Server};

/// Over the 1 MiB limit (JSON, so only its size is wrong).
fn oversized() -> Vec<u8> {
    format!("{{\"name\": \"{}\"}}", "x".repeat(1_100_000)).into_bytes()
}

/// How a request shows who sends it: the admin key on `/v1`, a session (cookie and CSRF
/// token) on a person's own routes, nothing on public ones.
struct Callers {
    base: String,
    http: reqwest::blocking::Client,
    cookie: String,
    csrf: String,
    /// A probe's token, for the routes a probe calls.
    probe_token: String,
}

impl Callers {
    fn send(&self, method: &str, path: &str, content_type: &str, body: Vec<u8>) -> Reply {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("content-type", content_type)
            .header("accept", "application/json")
            .body(body);
        if path.starts_with("/v1/auth/") {
            // Harmless on the public sign-in routes, needed on a person's own.
            req = req
                .header("cookie", format!("tocsin_session={}", self.cookie))
                .header("x-csrf-token", &self.csrf);
        } else if path.starts_with("/v1/probe/") {
            req = req.bearer_auth(&self.probe_token);
        } else if path.starts_with("/v1/") {
            req = req.bearer_auth(ADMIN_KEY);
        }
        support::reply(req.send().expect("request"))
    }
}

/// The operations with a request body: (method, path with its parameters filled, the
/// body's content type).
fn operations_with_bodies(doc: &Value) -> Vec<(String, String, String)> {
    let mut found = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let Some(content) = op["requestBody"]["content"].as_object() else {
                continue;
            };
            let content_type = if content.contains_key("application/json") {
                "application/json".to_string()
            } else {
                content.keys().next().cloned().unwrap_or_default()
            };
            // Parameters get values that exist nowhere: the body is read before any lookup.
            let filled = path
                .split('/')
                .map(|seg| {
                    if seg.starts_with('{') {
                        "x1".to_string()
                    } else {
                        seg.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("/");
            found.push((method.to_uppercase(), filled, content_type));
        }
    }
    found
}

fn assert_envelope(r: &Reply, what: &str) {
    assert!(
        (400..500).contains(&r.status),
        "{what}: {} {}",
        r.status,
        r.body
    );
    assert_eq!(r.body["success"], false, "{what}: {}", r.body);
    assert_eq!(
        r.body["error"]["statusCode"], r.status,
        "{what}: {}",
        r.body
    );
    assert!(
        r.body["error"]["code"]
            .as_str()
            .is_some_and(|c| !c.is_empty()),
        "{what}: {}",
        r.body
    );
    assert!(
        r.body["meta"]["requestId"]
            .as_str()
            .is_some_and(|id| id.starts_with("req_")),
        "{what}: {}",
        r.body
    );
    let ct = r
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(
        ct.starts_with("application/json"),
        "{what}: content type {ct}"
    );
}

#[test]
fn every_body_taking_operation_answers_bad_bodies_in_the_envelope() {
    // A private location, so a probe can be made for the routes a probe calls.
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("tocsin.toml"),
        "[[regions]]\nname = \"local\"\n\n[[regions]]\nname = \"office\"\nprivate = true\n",
    )
    .expect("config");
    let server = Server::start_in(dir.path(), &[]);
    let doc = server.client().get("/v1/openapi.json").body;
    let probe = server
        .client()
        .post("/v1/probes", &json!({"name": "p", "location": "office"}));
    assert_eq!(probe.status, 201, "{}", probe.body);

    // A person signed in, for the routes of their own account.
    let link = std::fs::read_to_string(server.data_dir.join("setup-link.txt")).expect("setup");
    let mut owner = Browser::new(&server.base);
    let r = owner.post(
        "/v1/auth/setup",
        &json!({"token": token_in(&link, "/setup"), "name": "Olive", "email": "olive@example.com", "password": "olive-password-1"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let callers = Callers {
        base: server.base.clone(),
        http: reqwest::blocking::Client::new(),
        cookie: owner.cookie.clone().expect("cookie"),
        csrf: owner.csrf.clone().expect("csrf"),
        probe_token: probe.body["data"]["token"]
            .as_str()
            .expect("token")
            .to_string(),
    };

    let operations = operations_with_bodies(&doc);
    assert!(
        operations.len() > 30,
        "the document lists only {} operations with a body",
        operations.len()
    );
    for (method, path, content_type) in &operations {
        // The session must outlive the walk: signing out and revoking sessions last.
        if path.contains("logout") || path.ends_with("/sessions") {
            continue;
        }
        let what = format!("{method} {path} (oversized)");
        let r = callers.send(method, path, content_type, oversized());
        assert_envelope(&r, &what);
        assert_eq!(r.status, 413, "{what}: {}", r.body);
        assert_eq!(r.body["error"]["code"], "PAYLOAD_TOO_LARGE", "{what}");

        let what = format!("{method} {path} (malformed)");
        let r = callers.send(method, path, content_type, b"{\"name\": ".to_vec());
        assert_envelope(&r, &what);
    }
    for (method, path, content_type) in operations
        .iter()
        .filter(|(_, p, _)| p.contains("logout") || p.ends_with("/sessions"))
    {
        let r = callers.send(method, path, content_type, oversized());
        assert_envelope(&r, &format!("{method} {path} (oversized)"));
        assert_eq!(r.status, 413, "{method} {path}: {}", r.body);
    }

    // A path parameter that is not UTF-8 is refused in the envelope too.
    let r = callers.send("GET", "/status/%FF", "application/json", Vec::new());
    assert_envelope(&r, "GET /status/%FF");
    let r = callers.send("POST", "/ping/%FF", "text/plain", b"ok".to_vec());
    assert_envelope(&r, "POST /ping/%FF");
}
