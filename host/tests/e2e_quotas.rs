//! Plan quotas: a workspace on a plan gets as many monitors, channels, status pages,
//! members and API keys as the plan allows (`[plans.<plan>]`), and no interval shorter
//! than the plan's; beyond that, 403 `PLAN_UPGRADE_REQUIRED` names the limit and nothing
//! is created. Rate limits hold per workspace, whatever the number of keys, and per client
//! address for unauthenticated requests.

use crate::support;

use serde_json::json;
use support::{Api, Server};

fn start_with_file(toml: &str, env: &[(&str, &str)]) -> (Server, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("tocsin.toml"), toml).expect("config file");
    (Server::start_in(dir.path(), env), dir)
}

fn refused(r: &support::Reply, limit_words: &str) {
    r.assert_error(403, "PLAN_UPGRADE_REQUIRED");
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(limit_words), "{message}");
}

fn monitor(interval: u32) -> serde_json::Value {
    json!({"name": format!("m{interval}-{}", rand_suffix()), "type": "http", "method": "GET",
           "url": "http://127.0.0.1:9/", "interval": interval})
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

#[test]
fn a_free_workspace_gets_what_its_plan_allows_and_a_clear_refusal_beyond() {
    let (server, _dir) = start_with_file(
        "[plans.free]\nmonitors = 2\nchannels = 1\nstatus_pages = 1\nmembers = 1\napi_keys = 2\nmin_interval = 60\n",
        &[],
    );
    let admin = server.client();
    let ws = server.cli(&["workspace", "create", "--name", "Small", "--plan", "free"]);
    let free: Api = admin.with_key(&server.cli(&["key", "create", "--workspace", &ws]));

    // Monitors: the interval floor, then the count.
    refused(&free.post("/v1/monitors", &monitor(30)), "every 60 s");
    let first = free.post("/v1/monitors", &monitor(60));
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(free.post("/v1/monitors", &monitor(120)).status, 201);
    let over = free.post("/v1/monitors", &monitor(60));
    refused(&over, "allows 2 monitors");
    assert_eq!(free.get("/v1/monitors").body["pagination"]["total"], 2);
    // Shortening an interval below the floor is refused too.
    let id = first.body["data"]["id"].as_str().expect("id");
    refused(
        &free.patch(&format!("/v1/monitors/{id}"), &json!({"interval": 10})),
        "every 60 s",
    );
    // Deleting one makes room again.
    assert_eq!(free.delete(&format!("/v1/monitors/{id}")).status, 204);
    assert_eq!(free.post("/v1/monitors", &monitor(60)).status, 201);

    // Channels, status pages, members, keys (the CLI's key counts).
    let ch = |n: &str| json!({"name": n, "type": "email", "target": "ops@example.test"});
    assert_eq!(free.post("/v1/channels", &ch("a")).status, 201);
    refused(&free.post("/v1/channels", &ch("b")), "allows 1 channels");
    let page = |slug: &str| json!({"name": slug, "slug": slug, "monitorIds": []});
    assert_eq!(free.post("/v1/status-pages", &page("one")).status, 201);
    refused(
        &free.post("/v1/status-pages", &page("two")),
        "allows 1 status pages",
    );
    let member = |e: &str| json!({"email": e, "role": "admin"});
    assert_eq!(
        free.post("/v1/workspace/members", &member("a@x.test"))
            .status,
        201
    );
    refused(
        &free.post("/v1/workspace/members", &member("b@x.test")),
        "allows 1 members",
    );
    let key = json!({"name": "ci", "role": "write"});
    let made = free.post("/v1/api-keys", &key);
    assert_eq!(made.status, 201, "{}", made.body);
    refused(&free.post("/v1/api-keys", &key), "allows 2 active API keys");
    // A revoked key no longer counts.
    let kid = made.body["data"]["id"].as_str().expect("key id");
    assert_eq!(free.delete(&format!("/v1/api-keys/{kid}")).status, 204);
    assert_eq!(free.post("/v1/api-keys", &key).status, 201);

    // The enterprise workspace next door has no such limits.
    for _ in 0..3 {
        assert_eq!(admin.post("/v1/monitors", &monitor(1)).status, 201);
    }
}

#[test]
fn more_keys_do_not_buy_more_requests_and_strangers_are_limited_by_address() {
    let server = Server::start(&[
        ("TOCSIN_RATE_LIMIT_PER_MINUTE", "6"),
        ("TOCSIN_RATE_LIMIT_BURST", "6"),
    ]);
    let admin = server.client();
    let keys: Vec<Api> = (0..3)
        .map(|i| {
            let r = admin.post(
                "/v1/api-keys",
                &json!({"name": format!("k{i}"), "role": "read"}),
            );
            admin.with_key(r.body["data"]["secret"].as_str().expect("secret"))
        })
        .collect();
    // The admin key spent 3 of the workspace's 6; the other keys share the remaining 3.
    let mut answered = Vec::new();
    for k in keys.iter().cycle().take(6) {
        answered.push(k.get("/v1/monitors").status);
    }
    let limited = answered.iter().filter(|s| **s == 429).count();
    assert!(
        limited >= 3,
        "three fresh keys escaped the workspace's limit: {answered:?}"
    );
    let r = keys[2].get("/v1/monitors");
    r.assert_error(429, "RATE_LIMITED");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("workspace")),
        "{}",
        r.body
    );

    // Guessing keys is limited by address: after the burst, 429 instead of 401.
    let stranger = admin.with_key("tcs_0000000000000000000000000000000000000000");
    let statuses: Vec<u16> = (0..8)
        .map(|_| stranger.get("/v1/monitors").status)
        .collect();
    assert_eq!(&statuses[..6], &[401; 6], "{statuses:?}");
    assert_eq!(statuses[7], 429, "{statuses:?}");
    // Public status pages share the address's bucket.
    let page = server.client().without_key().get("/status/nothing-here");
    assert_eq!(page.status, 429);
}

/// The specification offers a 30 s interval to every plan (only escalation depends on
/// the plan), so the default quotas let each plan create and move a monitor to 30 s; the
/// server's own `min_interval` (30 in production) stays the floor for all of them.
#[test]
fn every_plan_checks_every_30_seconds_on_the_default_quotas() {
    let server = Server::start(&[("TOCSIN_MIN_INTERVAL", "30")]);
    let admin = server.client();
    for plan in ["free", "pro", "business", "enterprise"] {
        let ws = server.cli(&["workspace", "create", "--name", plan, "--plan", plan]);
        let api: Api = admin.with_key(&server.cli(&["key", "create", "--workspace", &ws]));
        let made = api.post("/v1/monitors", &monitor(30));
        assert_eq!(made.status, 201, "{plan}: {}", made.body);
        assert_eq!(made.body["data"]["interval"], 30, "{plan}");
        let slow = api.post("/v1/monitors", &monitor(300));
        assert_eq!(slow.status, 201, "{plan}: {}", slow.body);
        let id = slow.body["data"]["id"].as_str().expect("id");
        let moved = api.patch(&format!("/v1/monitors/{id}"), &json!({"interval": 30}));
        assert_eq!(moved.status, 200, "{plan}: {}", moved.body);
        // Below the server's floor is a validation error on every plan, not an upsell.
        api.post("/v1/monitors", &monitor(29))
            .assert_error(400, "VALIDATION_ERROR");
        assert_eq!(
            api.get("/v1/monitors").body["pagination"]["total"],
            2,
            "{plan}"
        );
    }
}
