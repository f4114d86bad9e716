//! The dashboard in a real browser: headless Chromium (Debian's package) driven by
//! playwright-core (npm), both installed on first use. An owner signs in through the
//! form, searches with the keyboard, pauses a monitor from its page; open pages follow
//! changes made elsewhere without a reload (a monitor created through the API, an incident
//! opened and resolved, checks appended); a viewer sees no
//! write controls and a forged write is refused. Screenshots at desktop and phone width
//! are kept in `target/tmp/dashboard-screenshots` (and `TOCSIN_TEST_ARTIFACTS` if set).

use crate::support;

use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use support::Server;
use support::browser::{Browser, token_in};
use support::chromium::{chromium_path, playwright};
use support::target::Target;

#[test]
fn an_owner_and_a_viewer_use_the_dashboard_in_chromium() {
    let executable = chromium_path();
    let modules = playwright().join("node_modules");

    let target = Target::start();
    // A third-party plugin (the tcp example) in the plugins directory, granted `net`.
    let dir = tempfile::tempdir().expect("dir");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::copy(
        std::path::Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join("tocsin_example_tcp.wasm"),
        plugins.join("tcp.wasm"),
    )
    .expect("copy the tcp plugin");
    std::fs::write(
        dir.path().join("tocsin.toml"),
        "[plugin_grants.tcp-port]\ncapabilities = [\"net\"]\n",
    )
    .expect("config");
    let receiver = support::sinks::Receiver::start();
    let server = Server::start_in(dir.path(), &[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let ws = api.workspace_id();
    let link = std::fs::read_to_string(server.data_dir.join("setup-link.txt")).expect("link");
    let mut owner = Browser::new(&server.base);
    let r = owner.post(
        "/v1/auth/setup",
        &json!({"token": token_in(&link, "/setup"), "name": "Olive", "email": "olive@example.com", "password": "olive-password-1"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let out = server.cli(&[
        "user",
        "create",
        "--email",
        "vic@example.com",
        "--workspace",
        &ws,
        "--role",
        "viewer",
    ]);
    let set = owner.post(
        "/v1/auth/password-reset/confirm",
        &json!({"token": token_in(&out, "/reset-password"), "password": "vic-password-1"}),
    );
    assert_eq!(set.status, 204, "{}", set.body);
    let monitor = api.post(
        "/v1/monitors",
        &json!({"name": "Checkout API", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 3600}),
    );
    let monitor_id = monitor.body["data"]["id"].as_str().expect("id").to_string();
    let live = api.post(
        "/v1/monitors",
        &json!({"name": "Storefront", "type": "http", "url": target.url("/status"), "method": "GET", "interval": 1, "timeout": 1}),
    );
    let live_id = live.body["data"]["id"].as_str().expect("id").to_string();
    let heartbeat = api.post(
        "/v1/monitors",
        &json!({"name": "Nightly backup", "type": "heartbeat", "period": 60, "grace": 60}),
    );
    assert_eq!(heartbeat.status, 201, "{}", heartbeat.body);
    let heartbeat_id = heartbeat.body["data"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    // A policy with a channel defined on it, edited through the dashboard.
    let pager = api.post(
        "/v1/alert-policies",
        &json!({"name": "Pager", "channels": [{"type": "telegram", "chatId": "42", "botToken": "111:pager-token"}]}),
    );
    assert_eq!(pager.status, 201, "{}", pager.body);
    let pager_id = pager.body["data"]["id"].as_str().expect("id").to_string();
    for i in 0..20 {
        api.post(
            "/v1/monitors",
            &json!({"name": format!("Service {i:02}"), "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 3600}),
        );
    }

    let artifacts = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard-screenshots");
    std::fs::create_dir_all(&artifacts).expect("artifacts");
    let config = json!({
        "base": server.base,
        "chromium": executable,
        "modules": modules,
        "artifacts": artifacts,
        "owner": {"email": "olive@example.com", "password": "olive-password-1"},
        "viewer": {"email": "vic@example.com", "password": "vic-password-1"},
        "monitor": "Checkout API",
        "monitorId": monitor_id,
        "live": "Storefront",
        "targetOk": target.url("/ok"),
        "hook": receiver.url("/hooks/ops"),
        "targetPort": target.port(),
        "liveId": live_id,
        "heartbeatId": heartbeat_id,
    });
    let config_file = server.data_dir.join("browser.json");
    std::fs::write(&config_file, config.to_string()).expect("config");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/dashboard.mjs");
    let mut child = Command::new("node")
        .arg(&script)
        .arg(&config_file)
        .env("HOME", &server.data_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("node");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut report = String::new();
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let line = line.expect("line");
        match line.as_str() {
            "step: fail the target" => target.set_status(500),
            "step: recover the target" => target.set_status(200),
            "step: create a monitor elsewhere" => {
                let made = api.post(
                    "/v1/monitors",
                    &json!({"name": "Made elsewhere", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 3600}),
                );
                assert_eq!(made.status, 201, "{}", made.body);
            }
            _ => {
                report.push_str(&line);
                report.push('\n');
                continue;
            }
        }
        writeln!(stdin, "go").expect("answer the browser script");
    }
    let status = child.wait().expect("node");
    assert!(status.success(), "the browser found problems: {report}");
    let findings: serde_json::Value = report
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .expect("the script's findings");
    let scanned = findings["scanned"].as_array().expect("scanned pages");
    assert_eq!(scanned.len(), 23, "axe scanned every page: {findings}");
    // The monthly report goes to the channel ticked in the settings.
    let channels = api.get("/v1/channels").body;
    let hook = channels["data"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["name"] == "Ops hook (renamed)"))
        .expect("the channel");
    assert_eq!(
        api.get("/v1/workspace").body["data"]["monthlyReport"]["channelIds"],
        json!([hook["id"]])
    );
    let changes = api.get("/v1/audit-log?action=workspace.monthly_report");
    assert_eq!(changes.body["pagination"]["total"], 3, "{}", changes.body);
    // The maintenance window was made and deleted through the dashboard.
    for action in ["maintenance_window.create", "maintenance_window.delete"] {
        let log = api.get(&format!("/v1/audit-log?action={action}"));
        assert_eq!(log.body["pagination"]["total"], 1, "{action}: {}", log.body);
    }
    assert_eq!(
        api.get("/v1/maintenance-windows").body["pagination"]["total"],
        0
    );
    // The keyboard-made monitor carries the header typed as a row.
    let all = api.get("/v1/monitors?limit=100").body;
    let made = all["data"]
        .as_array()
        .and_then(|ms| ms.iter().find(|m| m["name"] == "Keyboard API"))
        .expect("the keyboard-made monitor");
    assert_eq!(made["headers"], json!({"X-Probe": "tocsin"}), "{made}");
    // The policy was chosen and then taken off the monitor from its form.
    let watched = api.get(&format!("/v1/monitors/{live_id}")).body;
    assert_eq!(
        watched["data"]["alertPolicyId"],
        serde_json::Value::Null,
        "{watched}"
    );
    assert_eq!(
        watched["data"]["dependsOn"],
        json!([monitor_id]),
        "{watched}"
    );
    for action in ["monitor.snooze", "monitor.unsnooze"] {
        let log = api.get(&format!(
            "/v1/audit-log?resourceId={live_id}&action={action}"
        ));
        assert_eq!(log.body["pagination"]["total"], 1, "{action}: {}", log.body);
    }
    let policies = api.get("/v1/alert-policies").body;
    let named = |name: &str| {
        policies["data"]
            .as_array()
            .and_then(|l| l.iter().find(|p| p["name"] == name))
            .unwrap_or_else(|| panic!("no policy {name}: {policies}"))
            .clone()
    };
    let production = named("Production");
    assert_eq!(production["failureThreshold"], 3, "{policies}");
    assert_eq!(production["channels"].as_array().map(Vec::len), Some(1));
    // The one made from the monitor form, in one step with the monitor's edit.
    let made = named("Alert Ops hook (renamed)");
    assert_eq!(made["failureThreshold"], 1, "{made}");
    assert_eq!(made["channels"], production["channels"], "{made}");
    assert_eq!(policies["pagination"]["total"], 3, "{policies}");
    // The inline channel's chat id changed on its form; its bot token stayed stored.
    let pager = named("Pager");
    assert_eq!(
        pager["channels"],
        json!([{"type": "telegram", "chatId": "43"}]),
        "{pager}"
    );
    let stored = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let url = format!("sqlite://{}", server.data_dir.join("tocsin.db").display());
            let store = tocsin::store::Store::connect(&url).await.expect("store");
            let row = store
                .alert_policy(&ws, &pager_id)
                .await
                .expect("read")
                .expect("policy row");
            store.close().await;
            row.channels
        });
    assert!(stored.contains("111:pager-token"), "{stored}");
    let channels = api.get("/v1/channels").body;
    assert_eq!(
        channels["data"][0]["name"], "Ops hook (renamed)",
        "{channels}"
    );
    let shop = api.get("/status/shop.json");
    assert_eq!(shop.status, 200, "{}", shop.body);
    // Edited from its own page: renamed, one monitor fewer, the update corrected and then
    // deleted.
    let corrected = api.get("/v1/audit-log?action=status_update.update");
    assert_eq!(
        corrected.body["pagination"]["total"], 1,
        "{}",
        corrected.body
    );
    let pages = api.get("/v1/status-pages").body;
    assert_eq!(pages["data"][0]["name"], "Shop status (edited)", "{pages}");
    assert_eq!(
        pages["data"][0]["monitorIds"].as_array().map(Vec::len),
        Some(1),
        "{pages}"
    );
    assert_eq!(shop.body["updates"], json!([]), "{}", shop.body);
    // The test button's notification reached the receiver over the wire.
    let tests = receiver.at("/hooks/ops");
    assert!(!tests.is_empty(), "the receiver got the test notification");
    assert!(
        scanned.iter().all(|s| s["rulesPassed"].as_u64() > Some(5)),
        "{findings}"
    );
    // The pause went through the API: the server agrees.
    assert_eq!(
        api.get(&format!("/v1/monitors/{monitor_id}")).body["data"]["status"],
        "paused"
    );
    // Each main page at both widths; `TOCSIN_UPDATE_DOC_IMAGES=1` copies them to
    // docs/images, where the documentation shows them.
    for name in [
        "overview",
        "monitor",
        "heartbeat",
        "incidents",
        "alerting",
        "maintenance",
        "status-pages",
        "settings",
        "form",
    ] {
        for width in ["desktop", "phone"] {
            let shot = format!("dashboard-{name}-{width}.png");
            let path = artifacts.join(&shot);
            assert!(
                std::fs::metadata(&path).is_ok_and(|m| m.len() > 1000),
                "{shot}"
            );
            if std::env::var_os("TOCSIN_UPDATE_DOC_IMAGES").is_some() {
                let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/images");
                std::fs::create_dir_all(&docs).expect("docs/images");
                std::fs::copy(&path, docs.join(&shot)).expect("copy to docs/images");
            }
        }
    }
    for shot in [
        "overview-desktop.png",
        "monitor-desktop.png",
        "heartbeat-desktop.png",
        "form-error-desktop.png",
        "overview-phone.png",
        "monitor-phone.png",
        "form-phone.png",
    ] {
        let path = artifacts.join(shot);
        assert!(
            std::fs::metadata(&path).is_ok_and(|m| m.len() > 1000),
            "{shot}"
        );
        if let Ok(dir) = std::env::var("TOCSIN_TEST_ARTIFACTS") {
            let _ = std::fs::create_dir_all(&dir);
            let _ = std::fs::copy(&path, std::path::Path::new(&dir).join(shot));
        }
    }
}
