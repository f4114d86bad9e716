//! What the benchmarks that drive a real `tocsin serve` share: a free loopback port, and the
//! server started in a data directory of its own with rate limits out of the way, ready,
//! its owner's session, and a target that counts the checks it is asked.
// Each bench uses only some of these.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port nobody listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Start `tocsin serve` in `dir` with `key` as its bootstrap admin key and `env` besides,
/// and wait (up to two minutes) until it answers `/readyz`. Its log goes to
/// `dir/server.log`. Returns the process and its base URL.
pub async fn serve(dir: &Path, key: &str, env: &[(&str, &str)]) -> (Child, String) {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = Command::new(env!("CARGO_BIN_EXE_tocsin"))
        .arg("serve")
        .env("TOCSIN_LISTEN", format!("127.0.0.1:{port}"))
        .env("TOCSIN_DATA_DIR", dir)
        .env("TOCSIN_BOOTSTRAP_KEY", key)
        .env("TOCSIN_LOG", "warn")
        .env("TOCSIN_RATE_LIMIT_PER_MINUTE", "100000000")
        .env("TOCSIN_RATE_LIMIT_BURST", "10000000")
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("server.log")).expect("log"))
        .spawn()
        .expect("start tocsin");
    let client = reqwest::Client::new();
    let ready_by = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await
            && r.status().is_success()
        {
            return (server, base);
        }
        if Instant::now() > ready_by || matches!(server.try_wait(), Ok(Some(_))) {
            let log = std::fs::read_to_string(dir.join("server.log")).unwrap_or_default();
            panic!("tocsin did not become ready:\n{log}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The owner's session cookie (`name=value`), signed up through the setup link that a
/// fresh server in `dir` wrote.
pub async fn owner_cookie(client: &reqwest::Client, base: &str, dir: &Path) -> String {
    let link = std::fs::read_to_string(dir.join("setup-link.txt")).expect("setup link");
    let token = link
        .split("token=")
        .nth(1)
        .and_then(|t| t.split(|c: char| c.is_whitespace() || c == '&').next())
        .expect("a setup token");
    let setup = client
        .post(format!("{base}/v1/auth/setup"))
        .json(&serde_json::json!({"token": token, "name": "Bench", "email": "bench@example.com", "password": "bench-password-1"}))
        .send()
        .await
        .expect("setup");
    assert_eq!(setup.status(), 201, "the owner signs up");
    setup
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .expect("a session cookie")
        .to_string()
}

/// A loopback target answering `GET /ok` with "ok", counting what it is asked; its URL.
pub async fn counting_target(hits: std::sync::Arc<std::sync::atomic::AtomicU64>) -> String {
    let target = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("target");
    let url = format!("http://{}/ok", target.local_addr().expect("addr"));
    tokio::spawn(async move {
        let app = axum::Router::new().route(
            "/ok",
            axum::routing::get(move || {
                hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                async { "ok" }
            }),
        );
        axum::serve(target, app).await.expect("target serves");
    });
    url
}

/// Create a monitor through the API with `key`; the created monitor (the answer's `data`).
/// Panics, with the answer, when it was not created.
pub async fn create_monitor(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    body: serde_json::Value,
) -> serde_json::Value {
    let answer: serde_json::Value = client
        .post(format!("{base}/v1/monitors"))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    assert!(
        answer["data"]["id"].is_string(),
        "the monitor was not created: {answer}"
    );
    answer["data"].clone()
}
