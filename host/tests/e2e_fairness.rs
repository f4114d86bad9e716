//! One workspace's load does not hold up another's alerts: the outbox gives each
//! workspace at most its share of the delivery slots and serves workspaces in turn, and
//! the test button has its own small allowance per workspace.

mod support;

use serde_json::json;
use std::time::Duration;
use support::sinks::Receiver;
use support::{Api, Server, free_port, wait_for};

/// Most deliveries of one workspace in flight at once (the outbox's per-workspace share).
const SHARE: usize = tocsin::outbox::worker::MAX_IN_FLIGHT_PER_WORKSPACE;

fn created(r: support::Reply) -> String {
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["data"]["id"].as_str().expect("id").to_string()
}

/// A policy that opens an incident on the first failure and notifies `urls`.
fn policy(api: &Api, name: &str, urls: &[String]) -> String {
    let channels: Vec<_> = urls
        .iter()
        .map(|u| json!({"type": "webhook", "url": u}))
        .collect();
    created(api.post(
        "/v1/alert-policies",
        &json!({"name": name, "failureThreshold": 1, "channels": channels}),
    ))
}

/// A monitor that fails at once (nothing listens on its port).
fn failing_monitor(api: &Api, name: &str, policy: &str) -> String {
    created(api.post(
        "/v1/monitors",
        &json!({"name": name, "type": "http", "method": "GET", "interval": 60,
                "url": format!("http://127.0.0.1:{}/", free_port()), "alertPolicyId": policy}),
    ))
}

#[test]
fn a_workspace_with_stuck_receivers_does_not_delay_another_workspaces_alert() {
    let receiver = Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let a = server.client();
    let ws_b = server.cli(&["workspace", "create", "--name", "B"]);
    let b = a.with_key(&server.cli(&["key", "create", "--workspace", &ws_b]));

    // Workspace A: 40 notifications to receivers that never answer in time (each attempt
    // takes the full 10 s deadline).
    receiver.hold_next("/a", 1000);
    for n in 0..2 {
        let urls: Vec<String> = (0..20)
            .map(|i| receiver.url(&format!("/a?{n}-{i}")))
            .collect();
        let p = policy(&a, &format!("stuck {n}"), &urls);
        failing_monitor(&a, &format!("a{n}"), &p);
    }
    wait_for("A's deliveries in flight", Duration::from_secs(30), || {
        (receiver.at("/a").len() >= SHARE).then_some(())
    });

    // Workspace B's incident goes out while every one of A's attempts is still hanging.
    let p = policy(&b, "b", &[receiver.url("/b")]);
    failing_monitor(&b, "b", &p);
    wait_for("B's alert", Duration::from_secs(30), || {
        (!receiver.at("/b").is_empty()).then_some(())
    });
    let a_sent = receiver.at("/a").len();
    let a_deliveries = a.get("/v1/webhook-deliveries?limit=100").body;
    let finished = a_deliveries["data"]
        .as_array()
        .expect("deliveries")
        .iter()
        .filter(|d| d["attempts"].as_u64().unwrap_or(0) > 0)
        .count();
    assert_eq!(
        finished, 0,
        "B waited until {finished} of A's attempts had timed out"
    );
    assert!(
        a_sent <= SHARE,
        "A had {a_sent} deliveries in flight, more than its share of {SHARE}"
    );
    assert_eq!(receiver.at("/b")[0].json["event"], "incident.created");
}

#[test]
fn the_test_button_has_a_small_allowance_per_workspace() {
    let receiver = Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let a = server.client();
    let ws_b = server.cli(&["workspace", "create", "--name", "B"]);
    let b = a.with_key(&server.cli(&["key", "create", "--workspace", &ws_b]));
    let channel = |api: &Api| {
        created(api.post(
            "/v1/channels",
            &json!({"name": "hook", "type": "webhook", "url": receiver.url("/t")}),
        ))
    };
    let (ch_a, ch_b) = (channel(&a), channel(&b));
    let test = |api: &Api, ch: &str| api.request("POST", &format!("/v1/channels/{ch}/test"), None);

    for _ in 0..tocsin::api::ratelimit::CHANNEL_TESTS_BURST {
        assert_eq!(test(&a, &ch_a).status, 200);
    }
    let refused = test(&a, &ch_a);
    refused.assert_error(429, "RATE_LIMITED");
    assert!(
        refused
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|s| s >= 1),
        "{:?}",
        refused.headers
    );
    // Another workspace's button still works, and nothing extra was sent.
    assert_eq!(test(&b, &ch_b).status, 200);
    assert_eq!(
        receiver.at("/t").len(),
        tocsin::api::ratelimit::CHANNEL_TESTS_BURST as usize + 1
    );
}
