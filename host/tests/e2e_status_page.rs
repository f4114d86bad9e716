//! End to end: a status page over real monitors of a loopback target, one of them in an
//! incident; its API (unique slugs, workspace checks), its JSON, and its HTML as headless
//! Chromium renders it, with a phone-sized screenshot.

use crate::support;

use support::target;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::chromium::chromium;
use support::{Api, Server, wait_for};
use target::Target;

fn create(api: &Api, path: &str, body: Value) -> String {
    let r = api.post(path, &body);
    assert_eq!(r.status, 201, "{path}: {}", r.body);
    r.body["data"]["id"].as_str().expect("id").to_string()
}

/// Run headless Chromium with `args` and the page URL; return its stdout.
fn headless(browser: &str, home: &Path, args: &[&str], url: &str) -> String {
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .args([
            "--no-first-run",
            "--disable-extensions",
            "--hide-scrollbars",
        ])
        .args(args)
        .arg(url)
        .env("HOME", home)
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_status_page_shows_states_uptime_and_incidents() {
    let target = Target::start();
    let server = Server::start(&[]);
    let api = server.client();
    let website = create(
        &api,
        "/v1/monitors",
        json!({"name": "Website", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 1}),
    );
    target.set_status(503);
    let checkout = create(
        &api,
        "/v1/monitors",
        json!({"name": "Checkout <API>", "type": "http", "url": target.url("/status"), "method": "GET", "interval": 1}),
    );

    let page = api.post(
        "/v1/status-pages",
        &json!({"slug": "acme", "name": "Acme status", "description": "Live state of Acme's services.", "monitorIds": [website, checkout]}),
    );
    assert_eq!(page.status, 201, "{}", page.body);
    let page_id = page.body["data"]["id"].as_str().expect("id").to_string();
    assert_eq!(page.body["data"]["public"], true);
    // `name`, as every resource and DECISIONS.md say; `title` is still read as its old name.
    assert_eq!(page.body["data"]["name"], "Acme status");
    assert!(page.body["data"].get("title").is_none(), "{}", page.body);
    let renamed = api.patch(
        &format!("/v1/status-pages/{page_id}"),
        &json!({"title": "Acme (old field)"}),
    );
    assert_eq!(
        renamed.body["data"]["name"], "Acme (old field)",
        "{}",
        renamed.body
    );
    let renamed = api.patch(
        &format!("/v1/status-pages/{page_id}"),
        &json!({"name": "Acme status"}),
    );
    assert_eq!(
        renamed.body["data"]["name"], "Acme status",
        "{}",
        renamed.body
    );
    assert!(
        page.body["data"]["url"]
            .as_str()
            .unwrap_or("")
            .ends_with("/status/acme")
    );

    // The API refuses what it cannot keep.
    api.post(
        "/v1/status-pages",
        &json!({"slug": "acme", "name": "Again", "monitorIds": []}),
    )
    .assert_error(409, "CONFLICT");
    api.post(
        "/v1/status-pages",
        &json!({"slug": "Acme Inc", "name": "x", "monitorIds": []}),
    )
    .assert_error(400, "VALIDATION_ERROR");
    api.post(
        "/v1/status-pages",
        &json!({"slug": "other", "name": "x", "monitorIds": ["mon_01M7ZZZZZZZZZZZZZZZZZZZZZZ"]}),
    )
    .assert_error(422, "UNPROCESSABLE_ENTITY");
    assert_eq!(api.get("/v1/status-pages").body["pagination"]["total"], 1);

    // Wait for an open incident on the failing monitor and a passing check on the other.
    wait_for("the checkout incident", Duration::from_secs(30), || {
        (api.get(&format!("/v1/incidents?monitorId={checkout}")).body["data"][0]["status"]
            == "open")
            .then_some(())
    });
    wait_for("the website up", Duration::from_secs(30), || {
        (api.get(&format!("/v1/monitors/{website}")).body["data"]["status"] == "up").then_some(())
    });

    // JSON for machines.
    let anon = api.without_key();
    let j = anon.get("/status/acme.json");
    assert_eq!(j.status, 200, "{}", j.body);
    let facts = &j.body;
    assert_eq!(facts["name"], "Acme status");
    assert_eq!(facts["status"], "partial_outage");
    let monitors = facts["monitors"].as_array().expect("monitors");
    assert_eq!(monitors.len(), 2);
    assert_eq!(
        (monitors[0]["name"].as_str(), monitors[0]["status"].as_str()),
        (Some("Website"), Some("up"))
    );
    assert_eq!(monitors[1]["status"], "down");
    let days = monitors[0]["days"].as_array().expect("days");
    assert_eq!(days.len(), 90);
    assert!(days[89]["checks"].as_i64().unwrap_or(0) > 0, "{}", days[89]);
    assert_eq!(days[0]["uptime"], Value::Null);
    assert_eq!(monitors[0]["uptime90d"], 100.0);
    assert!(monitors[1]["uptime90d"].as_f64().unwrap_or(100.0) < 50.0);
    assert_eq!(facts["incidents"][0]["monitor"], "Checkout <API>");
    assert_eq!(facts["incidents"][0]["status"], "open");
    assert!(
        !facts.to_string().contains("127.0.0.1"),
        "no targets leak: {facts}"
    );

    // HTML for people, as Chromium renders it.
    let html_url = format!("{}/status/acme", server.base);
    let raw = reqwest::blocking::get(&html_url).expect("get page");
    assert_eq!(raw.status(), 200);
    assert!(
        raw.headers()["content-type"]
            .to_str()
            .unwrap_or("")
            .starts_with("text/html")
    );
    let body = raw.text().expect("body");
    assert!(body.contains("Checkout &lt;API&gt;"), "names are escaped");
    match chromium() {
        None => {
            eprintln!("SKIPPED the Chromium part: no chromium on PATH (apt-get install chromium)")
        }
        Some(browser) => {
            let home = tempfile::tempdir().expect("home");
            let dom = headless(browser, home.path(), &["--dump-dom"], &html_url);
            assert!(dom.contains("Some systems are down"), "{dom}");
            assert!(dom.contains("Website") && dom.contains("Checkout &lt;API&gt;"));
            assert!(dom.contains("Operational") && dom.contains("Down"));
            assert_eq!(dom.matches("class=\"bar\"").count(), 2);
            assert!(dom.contains("ongoing"), "the open incident is listed");
            let shot = home.path().join("status-phone.png");
            let arg = format!("--screenshot={}", shot.display());
            headless(
                browser,
                home.path(),
                &[&arg, "--window-size=412,915"],
                &html_url,
            );
            let png = std::fs::read(&shot).expect("screenshot written");
            assert!(png.starts_with(b"\x89PNG"), "a PNG");
            assert!(png.len() > 5_000, "a real picture, {} bytes", png.len());
            if let Ok(dir) = std::env::var("TOCSIN_SCREENSHOT_DIR") {
                let _ = std::fs::copy(&shot, Path::new(&dir).join("status-phone.png"));
            }
        }
    }

    // Private pages and unknown slugs answer 404, in both forms.
    let r = api.patch(
        &format!("/v1/status-pages/{page_id}"),
        &json!({"public": false}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        reqwest::blocking::get(&html_url).expect("get").status(),
        404
    );
    anon.get("/status/acme.json")
        .assert_error(404, "STATUS_PAGE_NOT_FOUND");
    anon.get("/status/nobody.json")
        .assert_error(404, "STATUS_PAGE_NOT_FOUND");

    // Another workspace neither sees nor changes the page, nor puts its monitors on its own.
    let ws_b = server.cli(&["workspace", "create", "--name", "B"]);
    let b = api.with_key(&server.cli(&["key", "create", "--workspace", &ws_b]));
    assert_eq!(b.get("/v1/status-pages").body["data"], json!([]));
    for (method, body) in [
        ("GET", None),
        ("PATCH", Some(json!({"title": "x"}))),
        ("DELETE", None),
    ] {
        b.request(
            method,
            &format!("/v1/status-pages/{page_id}"),
            body.as_ref(),
        )
        .assert_error(404, "STATUS_PAGE_NOT_FOUND");
    }
    b.post(
        "/v1/status-pages",
        &json!({"slug": "b-page", "name": "B", "monitorIds": [website]}),
    )
    .assert_error(422, "UNPROCESSABLE_ENTITY");
    assert_eq!(
        api.delete(&format!("/v1/status-pages/{page_id}")).status,
        204
    );
    assert_eq!(api.get("/v1/status-pages").body["pagination"]["total"], 0);
}

/// Every public status route (HTML, JSON, feed, subscribe, confirm and unsubscribe links,
/// unknown pages) forbids framing and outside content by default; a server that lists
/// frame ancestors lets those origins, and only those, embed its pages.
#[test]
fn public_pages_refuse_framing_unless_configured() {
    let routes = [
        ("GET", "/status/acme"),
        ("GET", "/status/acme.json"),
        ("GET", "/status/acme/feed.atom"),
        ("POST", "/status/acme/subscribe"),
        ("GET", "/status/acme/confirm/tok_unknown"),
        ("POST", "/status/acme/confirm/tok_unknown"),
        ("GET", "/status/acme/unsubscribe/tok_unknown"),
        ("POST", "/status/acme/unsubscribe/tok_unknown"),
        ("GET", "/status/nope"),
        ("GET", "/status/nope.json"),
        ("GET", "/status/acme/nothing/here"),
    ];
    let header = |r: &reqwest::blocking::Response, name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let send = |server: &Server, method: &str, path: &str| {
        let http = reqwest::blocking::Client::new();
        let url = format!("{}{path}", server.base);
        let req = if method == "POST" {
            http.post(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body("email=reader%40example.com")
        } else {
            http.get(url)
        };
        req.send().expect("request")
    };

    let server = Server::start(&[]);
    create(
        &server.client(),
        "/v1/status-pages",
        json!({"slug": "acme", "name": "Acme status", "monitorIds": []}),
    );
    for (method, path) in routes {
        let r = send(&server, method, path);
        let csp = header(&r, "content-security-policy");
        assert!(
            csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"),
            "{method} {path} ({}): CSP {csp:?}",
            r.status()
        );
        assert!(!csp.contains("script-src"), "{method} {path}: {csp}");
        assert_eq!(header(&r, "x-frame-options"), "DENY", "{method} {path}");
        assert_eq!(
            header(&r, "x-content-type-options"),
            "nosniff",
            "{method} {path}"
        );
        assert_eq!(
            header(&r, "referrer-policy"),
            "no-referrer",
            "{method} {path}"
        );
    }
    // The page itself still caches (headers are added, not replaced).
    let page = send(&server, "GET", "/status/acme");
    assert_eq!(page.status(), 200);
    assert_eq!(header(&page, "cache-control"), "public, max-age=30");
    drop(server);

    let server = Server::start(&[(
        "TOCSIN_STATUS_PAGE_FRAME_ANCESTORS",
        "https://intranet.example.com, https://*.example.org",
    )]);
    create(
        &server.client(),
        "/v1/status-pages",
        json!({"slug": "acme", "name": "Acme status", "monitorIds": []}),
    );
    for (method, path) in routes {
        let r = send(&server, method, path);
        let csp = header(&r, "content-security-policy");
        assert!(
            csp.contains("frame-ancestors https://intranet.example.com https://*.example.org"),
            "{method} {path}: {csp}"
        );
        assert_eq!(header(&r, "x-frame-options"), "", "{method} {path}");
    }
    // The dashboard is never framed, whatever the status pages allow.
    let r = send(&server, "GET", "/");
    assert!(header(&r, "content-security-policy").contains("frame-ancestors 'none'"));
    assert_eq!(header(&r, "x-frame-options"), "DENY");
}

#[test]
fn frame_ancestors_that_are_not_origins_are_refused_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ok, out) = support::run_tocsin(
        dir.path(),
        &["serve"],
        &[
            ("TOCSIN_DATA_DIR", dir.path().to_str().expect("utf-8")),
            (
                "TOCSIN_STATUS_PAGE_FRAME_ANCESTORS",
                "https://ok.example.com; script-src *",
            ),
        ],
    );
    assert!(!ok, "{out}");
    assert!(out.contains("status_page_frame_ancestors"), "{out}");
}
