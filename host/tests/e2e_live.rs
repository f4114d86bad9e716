//! The dashboard's event stream (`GET /events`) against a running server: a signed-in
//! person is told of their workspace's committed changes (a monitor created, its checks,
//! its incident) and of nothing from another workspace; a stranger gets 401.

use crate::support;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use support::Server;
use support::browser::{Browser, sign_up_owner, token_in};
use support::target::Target;

/// The `changes` of one open stream, each change as JSON, read on a thread of its own.
pub(crate) struct Stream {
    changes: mpsc::Receiver<Value>,
}

impl Stream {
    pub(crate) fn open(b: &Browser) -> Stream {
        let response = reqwest::blocking::Client::builder()
            .timeout(None)
            .build()
            .expect("client")
            .get(format!("{}/events", b.base))
            .header(
                "cookie",
                format!("tocsin_session={}", b.cookie.as_deref().expect("signed in")),
            )
            .send()
            .expect("events");
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let (tx, changes) = mpsc::channel();
        std::thread::spawn(move || {
            let mut event = String::new();
            for line in BufReader::new(response).lines() {
                let Ok(line) = line else { return };
                if let Some(name) = line.strip_prefix("event: ") {
                    event = name.to_string();
                } else if let Some(data) = line.strip_prefix("data: ")
                    && event == "changes"
                {
                    let list: Vec<Value> = serde_json::from_str(data).expect("changes as JSON");
                    for change in list {
                        if tx.send(change).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        Stream { changes }
    }

    /// Changes read until `found` says yes (or `within` passes), and whether it did.
    pub(crate) fn until(
        &self,
        within: Duration,
        found: impl Fn(&Value) -> bool,
    ) -> (Vec<Value>, bool) {
        let deadline = Instant::now() + within;
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            let Ok(change) = self.changes.recv_timeout(left) else {
                break;
            };
            let hit = found(&change);
            seen.push(change);
            if hit {
                return (seen, true);
            }
        }
        (seen, false)
    }
}

#[test]
fn a_person_is_told_of_their_workspaces_changes_and_of_no_other() {
    let target = Target::start();
    let server = Server::start(&[]);
    let api = server.client();
    let owner = sign_up_owner(&server);

    // A member of another workspace, signed in.
    let ws_b = server.cli(&["workspace", "create", "--name", "B"]);
    let out = server.cli(&[
        "user",
        "create",
        "--email",
        "bea@example.com",
        "--workspace",
        &ws_b,
        "--role",
        "admin",
    ]);
    let mut bea = Browser::new(&server.base);
    let set = bea.post(
        "/v1/auth/password-reset/confirm",
        &json!({"token": token_in(&out, "/reset-password"), "password": "bea-password-1"}),
    );
    assert_eq!(set.status, 204, "{}", set.body);
    assert_eq!(bea.login("bea@example.com", "bea-password-1").status, 200);
    let key_b = server.cli(&["key", "create", "--workspace", &ws_b, "--role", "admin"]);

    // A stranger is refused.
    let stranger = reqwest::blocking::get(format!("{}/events", server.base)).expect("events");
    assert_eq!(stranger.status(), 401);

    let olive_hears = Stream::open(&owner);
    let bea_hears = Stream::open(&bea);

    // A monitor created in A: its creation, then its checks, come to A's stream.
    let made = api.post(
        "/v1/monitors",
        &json!({"name": "Shop", "type": "http", "url": target.url("/status"), "method": "GET", "interval": 1, "timeout": 1}),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let id = made.body["data"]["id"].as_str().expect("id").to_string();
    let (_, created) = olive_hears.until(Duration::from_secs(10), |c| {
        c["kind"] == "monitor" && c["monitorId"] == id.as_str() && c["deleted"] == false
    });
    assert!(created, "the new monitor was told");
    let (seen, checked) = olive_hears.until(Duration::from_secs(20), |c| {
        c["kind"] == "check" && c["monitorId"] == id.as_str() && c["state"] == "up"
    });
    assert!(checked, "its checks were told: {seen:?}");
    let check = seen.last().expect("a check");
    assert_eq!(check["ok"], true, "{check}");
    assert!(check["responseTimeMs"].is_u64(), "{check}");
    assert!(check.get("workspaceId").is_none(), "{check}");

    // It fails: its incident comes, and the check that moved it is marked as a change.
    target.set_status(500);
    let (seen, moved) = olive_hears.until(Duration::from_secs(20), |c| {
        c["kind"] == "check" && c["ok"] == false && c["state"] == "down" && c["changed"] == true
    });
    assert!(moved, "a failing check moved the monitor down: {seen:?}");
    assert!(
        seen.iter()
            .any(|c| c["kind"] == "incident" && c["monitorId"] == id.as_str()),
        "its incident was told with it: {seen:?}"
    );

    // B's own monitor comes to B; nothing of A's ever does.
    let theirs = api.with_key(&key_b).post(
        "/v1/monitors",
        &json!({"name": "B's", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 3600}),
    );
    assert_eq!(theirs.status, 201, "{}", theirs.body);
    let theirs_id = theirs.body["data"]["id"].as_str().expect("id").to_string();
    let (seen, told) = bea_hears.until(Duration::from_secs(10), |c| {
        c["kind"] == "monitor" && c["monitorId"] == theirs_id.as_str()
    });
    assert!(told, "B's monitor was told to B: {seen:?}");
    assert!(
        seen.iter().all(|c| c["monitorId"] != id.as_str()),
        "A's changes reached B: {seen:?}"
    );

    // A deletion is told as one.
    let deleted = api.delete(&format!("/v1/monitors/{id}"));
    assert_eq!(deleted.status, 204, "{}", deleted.body);
    let (_, gone) = olive_hears.until(Duration::from_secs(10), |c| {
        c["kind"] == "monitor" && c["monitorId"] == id.as_str() && c["deleted"] == true
    });
    assert!(gone, "the deletion was told");
    let (rest, _) = bea_hears.until(Duration::from_millis(500), |_| false);
    assert!(
        rest.iter().all(|c| c["monitorId"] != id.as_str()),
        "A's changes reached B: {rest:?}"
    );
}
