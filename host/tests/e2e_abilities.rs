//! End to end: a third-party channel built against contract 0.3.0 (`tests/guests/pager`,
//! on the SDK) gets what it declares and nothing the server would decide from its name: it
//! hears acknowledgements, a group window's incidents reach it in one signed delivery (its
//! signing granted by the operator, as a plugin from the plugins directory needs), its
//! secret URL is hidden from a read key, and its https-only URL is refused while the server
//! does not allow insecure webhooks. A webhook on the same policy, told of each incident at
//! once and of pauses, shows the events were there to tell. The built-ins list the
//! abilities the server used to grant them by name.

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::sinks::Receiver;
use support::{Api, Server, create, ping, wait_for};

/// The policy's window: long enough to hold both failures on a slow machine.
const WINDOW_SECS: u64 = 6;
/// Long enough for anything else the outbox would send to have arrived.
const SETTLE: Duration = Duration::from_millis(3500);

/// A data directory whose plugins directory holds the pager, granted `http` (and, with
/// `signing`, signed deliveries).
fn with_pager(signing: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::copy(
        Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join("tocsin_guest_pager.wasm"),
        plugins.join("pager.wasm"),
    )
    .expect("copy the pager");
    std::fs::write(
        dir.path().join("tocsin.toml"),
        format!("[plugin_grants.test-pager]\ncapabilities = [\"http\"]\nsigning = {signing}\n"),
    )
    .expect("config");
    dir
}

fn channel_plugin(api: &Api, name: &str) -> Value {
    let listed = api.get("/v1/plugins?kind=channel&limit=100").body;
    listed["data"]
        .as_array()
        .expect("plugins")
        .iter()
        .find(|p| p["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} in {listed}"))
}

fn read_key(api: &Api) -> Api {
    let r = api.post("/v1/api-keys", &json!({"name": "reader", "role": "read"}));
    assert_eq!(r.status, 201, "{}", r.body);
    api.with_key(r.body["data"]["secret"].as_str().expect("secret"))
}

#[test]
fn a_third_party_channel_is_acknowledged_grouped_signed_and_redacted_by_declaring_it() {
    let receiver = Receiver::start();
    let dir = with_pager(true);
    let server = Server::start_in(dir.path(), &[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();

    // What each plugin asks for, as the API lists it.
    let pager = channel_plugin(&api, "test-pager");
    assert_eq!(pager["contract"], "0.3.0", "{pager}");
    assert_eq!(
        pager["abilities"],
        json!(["acknowledgements", "grouping", "signing"])
    );
    assert_eq!(pager["httpsOnly"], json!(["url"]));
    for (name, abilities, https_only) in [
        (
            "webhook",
            json!(["acknowledgements", "pauses", "signing"]),
            json!(["url"]),
        ),
        ("pagerduty", json!(["acknowledgements"]), json!([])),
        ("opsgenie", json!(["acknowledgements"]), json!([])),
        ("email", json!(["grouping"]), json!([])),
        ("telegram", json!(["grouping"]), json!([])),
        ("slack", json!([]), json!([])),
    ] {
        let p = channel_plugin(&api, name);
        assert_eq!(p["abilities"], abilities, "{p}");
        assert_eq!(p["httpsOnly"], https_only, "{p}");
        assert_eq!(p["contract"], "0.3.0", "{p}");
    }
    let http = api.get("/v1/plugins?kind=monitor&limit=100").body;
    assert!(
        http["data"]
            .as_array()
            .expect("monitors")
            .iter()
            .all(|p| p["abilities"] == json!([]) && p["httpsOnly"] == json!([])),
        "{http}"
    );

    // The secret URL: a read key sees the origin only.
    let secret = api.get("/v1/workspace/webhook-secret").body["data"]["secret"]
        .as_str()
        .expect("webhook secret")
        .to_string();
    receiver.set_secret(&secret);
    let page_path = "/page/integration-key-4711";
    let channel = create(
        &api,
        "/v1/channels",
        json!({"name": "pager", "type": "test-pager", "url": receiver.url(page_path)}),
    );
    let channel_id = channel["id"].as_str().expect("id").to_string();
    let reader = read_key(&api);
    let seen = reader.get(&format!("/v1/channels/{channel_id}")).body;
    assert!(!seen.to_string().contains("integration-key-4711"), "{seen}");
    assert!(
        api.get(&format!("/v1/channels/{channel_id}"))
            .body
            .to_string()
            .contains("integration-key-4711")
    );
    let listed = reader.get("/v1/channels").body;
    assert!(
        !listed.to_string().contains("integration-key-4711"),
        "{listed}"
    );

    // Two incidents within the window: the pager hears of both in one delivery when it
    // closes, the webhook of each at once.
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "paging", "failureThreshold": 1, "recoveryThreshold": 1,
               "notifyOnRecovery": false, "groupWindowSeconds": WINDOW_SECS,
               "channels": [{"channelId": channel_id},
                            {"type": "webhook", "url": receiver.url("/hook")}]}),
    );
    let monitors: Vec<Value> = ["cron-a", "cron-b"]
        .iter()
        .map(|n| {
            create(
                &api,
                "/v1/monitors",
                json!({"name": n, "type": "heartbeat", "period": 3600,
                       "alertPolicyId": policy["id"]}),
            )
        })
        .collect();
    for m in &monitors {
        ping(&api, m, "/fail");
    }
    let hooks = wait_for("two webhook events", Duration::from_secs(20), || {
        let got = receiver.at("/hook");
        (got.len() >= 2).then_some(got)
    });
    assert!(hooks.iter().all(|h| h.json["event"] == "incident.created"));
    let pages = wait_for(
        "the grouped page",
        Duration::from_secs(WINDOW_SECS + 30),
        || {
            let got = receiver.at(page_path);
            (!got.is_empty()).then_some(got)
        },
    );
    std::thread::sleep(SETTLE);
    let pages_after = receiver.at(page_path);
    assert_eq!(pages_after.len(), 1, "one delivery: {pages_after:?}");
    let page = &pages[0];
    assert_eq!(page.json["event"], "incident.created", "{}", page.json);
    assert_eq!(page.json["group"]["count"], 2, "{}", page.json);
    let mut named: Vec<&str> = page.json["group"]["incidents"]
        .as_array()
        .expect("the group's incidents")
        .iter()
        .filter_map(|i| i["monitor"]["name"].as_str())
        .collect();
    named.sort_unstable();
    assert_eq!(named, ["cron-a", "cron-b"], "{}", page.json);
    assert!(
        page.verified,
        "signed with the workspace's secret: {page:?}"
    );
    assert_eq!(
        page.headers.get("x-pager-event").map(String::as_str),
        Some("incident.created")
    );

    // An acknowledgement reaches the pager (and the webhook), signed.
    let incidents = api.get("/v1/incidents?limit=10").body;
    let incident = incidents["data"][0]["id"].as_str().expect("an incident");
    let acked = api.request(
        "POST",
        &format!("/v1/incidents/{incident}/acknowledge"),
        Some(&json!({})),
    );
    assert_eq!(acked.status, 200, "{}", acked.body);
    let ack = wait_for(
        "the pager told of the acknowledgement",
        Duration::from_secs(20),
        || {
            receiver
                .at(page_path)
                .into_iter()
                .find(|r| r.json["event"] == "incident.acknowledged")
        },
    );
    assert!(ack.verified, "{ack:?}");
    assert_eq!(ack.json["incident"]["id"], incident, "{}", ack.json);

    // A pause: the webhook asked to hear it, the pager did not.
    let monitor = monitors[1]["id"].as_str().expect("id");
    let paused = api.request("POST", &format!("/v1/monitors/{monitor}/pause"), None);
    assert_eq!(paused.status, 200, "{}", paused.body);
    wait_for(
        "the webhook told of the pause",
        Duration::from_secs(20),
        || {
            receiver
                .at("/hook")
                .into_iter()
                .find(|r| r.json["event"] == "monitor.paused")
        },
    );
    std::thread::sleep(SETTLE);
    let events: Vec<Value> = receiver
        .at(page_path)
        .iter()
        .map(|r| r.json["event"].clone())
        .collect();
    assert_eq!(
        events,
        [json!("incident.created"), json!("incident.acknowledged")],
        "the pager hears only what every channel hears and what it asked for"
    );
}

#[test]
fn a_third_party_https_only_url_is_refused_and_signing_needs_a_grant() {
    let dir = with_pager(false);
    let server = Server::start_in(dir.path(), &[]);
    let api = server.client();
    // Signed deliveries carry the workspace's signature: not granted, not given.
    let pager = channel_plugin(&api, "test-pager");
    assert_eq!(
        pager["abilities"],
        json!(["acknowledgements", "grouping"]),
        "{pager}"
    );
    assert!(
        server.log().contains("not granted them"),
        "the operator is told why"
    );
    let refused = api.post(
        "/v1/channels",
        &json!({"name": "pager", "type": "test-pager", "url": "http://127.0.0.1:9/page/key"}),
    );
    refused.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        refused.body["error"]["details"][0]["field"], "url",
        "{}",
        refused.body
    );
    let inline = api.post(
        "/v1/alert-policies",
        &json!({"name": "p", "channels": [{"type": "test-pager", "url": "http://127.0.0.1:9/k"}]}),
    );
    inline.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        inline.body["error"]["details"][0]["field"], "channels[0].url",
        "{}",
        inline.body
    );
    assert_eq!(api.get("/v1/channels").body["data"], json!([]));
    let accepted = api.post(
        "/v1/channels",
        &json!({"name": "pager", "type": "test-pager", "url": "https://127.0.0.1:9/page/key"}),
    );
    assert_eq!(accepted.status, 201, "{}", accepted.body);
}
