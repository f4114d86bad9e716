//! How fast the dashboard's overview is at 100, 1,000 and 10,000 monitors, measured in
//! headless Chromium (server time and time to interactive, medians of 5 loads) against a
//! real server on SQLite. A measurement, not a check: it is ignored in the suite; run it
//! with `cargo test -p tocsin --test dashboard_speed -- --ignored --nocapture`. The
//! figures are in docs/performance.md.

use crate::support;

use serde_json::json;
use std::process::Command;
use support::Server;
use support::browser::{Browser, token_in};
use support::chromium::{chromium_path, playwright};

#[test]
#[ignore = "a measurement; run it by name"]
fn overview_speed_at_100_1000_and_10000_monitors() {
    let executable = chromium_path();
    let modules = playwright().join("node_modules");
    let server = Server::start(&[]);
    let api = server.client();
    let link = std::fs::read_to_string(server.data_dir.join("setup-link.txt")).expect("link");
    let mut owner = Browser::new(&server.base);
    owner.post(
        "/v1/auth/setup",
        &json!({"token": token_in(&link, "/setup"), "name": "Olive", "email": "olive@example.com", "password": "olive-password-1"}),
    );
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/overview_speed.mjs");
    let mut created = 0;
    println!("| monitors | server (ms) | interactive (ms) | HTML (bytes) |");
    println!("|---:|---:|---:|---:|");
    for target in [100, 1_000, 10_000] {
        while created < target {
            let r = api.post(
                "/v1/monitors",
                &json!({"name": format!("service {created:05}"), "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 3600}),
            );
            assert_eq!(r.status, 201, "{}", r.body);
            created += 1;
        }
        let config = json!({"base": server.base, "chromium": executable, "modules": modules,
            "email": "olive@example.com", "password": "olive-password-1", "runs": 5});
        let file = server.data_dir.join("speed.json");
        std::fs::write(&file, config.to_string()).expect("config");
        let out = Command::new("node")
            .arg(&script)
            .arg(&file)
            .env("HOME", &server.data_dir)
            .output()
            .expect("node");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let m: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("the script's figures");
        println!(
            "| {target} | {:.0} | {:.0} | {} |",
            m["serverMs"].as_f64().unwrap_or(0.0),
            m["interactiveMs"].as_f64().unwrap_or(0.0),
            m["htmlBytes"]
        );
    }
}
