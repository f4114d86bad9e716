//! End to end: who may do what. Workspaces made with the CLI cannot see each other's
//! resources; `read` keys are refused on every write route, `write` keys on key management;
//! a revoked key is refused at once; the rate limit answers 429 with its headers; probe IPs
//! come from the configuration.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::{Api, Server, wait_for};

fn create(api: &Api, path: &str, body: Value) -> String {
    let r = api.post(path, &body);
    assert_eq!(r.status, 201, "{path}: {}", r.body);
    r.body["data"]["id"].as_str().expect("id").to_string()
}

fn new_key(api: &Api, role: &str) -> (String, String) {
    let r = api.post(
        "/v1/api-keys",
        &json!({"name": format!("{role} key"), "role": role}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let secret = r.body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    assert!(secret.starts_with("tcs_") && secret.len() == 44);
    (
        r.body["data"]["id"].as_str().expect("id").to_string(),
        secret,
    )
}

/// Every write route of the OpenAPI document that keys may call, with sample ids filled
/// in (`/v1/auth/*` is for people: signing in needs no key, a session's own routes take
/// no key).
fn write_routes(api: &Api) -> Vec<(String, String)> {
    let doc = api.get("/v1/openapi.json").body;
    let mut routes = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        // Sign-in routes and heartbeat ping URLs take no API key; a probe's routes take
        // its own token (an API key of any role gets 401 there, e2e_probes).
        if path.starts_with("/v1/auth/")
            || path.starts_with("/v1/probe/")
            || !path.starts_with("/v1/")
        {
            continue;
        }
        for method in ["post", "put", "patch", "delete"] {
            if item.get(method).is_some() {
                routes.push((method.to_uppercase(), path.replace("{id}", "x_1")));
            }
        }
    }
    routes
}

#[test]
fn keys_roles_and_revocation() {
    let server = Server::start(&[]);
    let admin = server.client();
    let (read_id, read_secret) = new_key(&admin, "read");
    let (_, write_secret) = new_key(&admin, "write");
    let read = admin.with_key(&read_secret);
    let write = admin.with_key(&write_secret);

    // The list never shows a secret, but tells keys apart and when they were used.
    assert_eq!(read.get("/v1/monitors").status, 200);
    let listed = admin.get("/v1/api-keys").body;
    assert_eq!(listed["pagination"]["total"], 3, "{listed}");
    let text = listed.to_string();
    assert!(
        !text.contains(&read_secret) && !text.contains("secret"),
        "{text}"
    );
    let read_row = listed["data"]
        .as_array()
        .expect("list")
        .iter()
        .find(|k| k["id"] == read_id.as_str())
        .cloned()
        .expect("the read key is listed");
    assert_eq!(read_row["role"], "read");
    assert_eq!(read_row["prefix"], &read_secret[..8]);
    assert!(read_row["lastUsedAt"].is_string(), "{read_row}");

    // read: refused on every write route, whatever the body.
    let routes = write_routes(&admin);
    assert!(routes.len() >= 15, "{routes:?}");
    for (method, path) in &routes {
        read.request(method, path, Some(&json!({})))
            .assert_error(403, "FORBIDDEN");
    }
    assert_eq!(
        admin.get("/v1/monitors").body["pagination"]["total"],
        0,
        "nothing was created"
    );

    // write: everything but key management.
    for (method, path) in [
        ("GET", "/v1/api-keys"),
        ("POST", "/v1/api-keys"),
        ("DELETE", "/v1/api-keys/key_1"),
    ] {
        write
            .request(method, path, Some(&json!({"name": "x", "role": "admin"})))
            .assert_error(403, "FORBIDDEN");
    }
    let r = write.post(
        "/v1/monitors",
        &json!({"name": "w", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60}),
    );
    assert_eq!(r.status, 201, "{}", r.body);

    // Bad creates change nothing.
    admin
        .post("/v1/api-keys", &json!({"name": "x", "role": "member"}))
        .assert_error(400, "VALIDATION_ERROR");
    admin
        .post("/v1/api-keys", &json!({"role": "read"}))
        .assert_error(400, "VALIDATION_ERROR");
    assert_eq!(admin.get("/v1/api-keys").body["pagination"]["total"], 3);

    // Revoked: refused from the next request on.
    assert_eq!(admin.delete(&format!("/v1/api-keys/{read_id}")).status, 204);
    read.get("/v1/monitors").assert_error(401, "UNAUTHORIZED");
    admin
        .delete(&format!("/v1/api-keys/{read_id}"))
        .assert_error(404, "API_KEY_NOT_FOUND");
    assert_eq!(admin.get("/v1/api-keys").body["pagination"]["total"], 2);
}

#[test]
fn last_use_of_a_key_survives_a_restart() {
    let dir = tempfile::tempdir().expect("dir");
    let mut server = Server::start_in(dir.path(), &[]);
    let admin = server.client();
    let (id, secret) = new_key(&admin, "read");
    let listed = |api: &Api| -> Value {
        api.get("/v1/api-keys").body["data"]
            .as_array()
            .expect("list")
            .iter()
            .find(|k| k["id"] == id.as_str())
            .cloned()
            .expect("listed")
    };
    assert_eq!(listed(&admin)["lastUsedAt"], Value::Null, "never used yet");
    assert_eq!(admin.with_key(&secret).get("/v1/monitors").status, 200);
    let used = listed(&admin)["lastUsedAt"].clone();
    assert!(used.is_string(), "{used}");
    // Written on the way down, read back on the way up.
    server.stop();
    let server = Server::start_in(dir.path(), &[]);
    assert_eq!(listed(&server.client())["lastUsedAt"], used);
}

#[test]
fn workspaces_cannot_see_each_other() {
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let a = server.client();

    // A second workspace and its key, made offline with the CLI.
    let ws_b = server.cli(&["workspace", "create", "--name", "Team B", "--plan", "pro"]);
    assert!(ws_b.starts_with("ws_"), "{ws_b}");
    let key_b = server.cli(&["key", "create", "--workspace", &ws_b, "--role", "admin"]);
    assert!(key_b.starts_with("tcs_"), "{key_b}");
    let b = a.with_key(&key_b);
    let wb = b.get("/v1/workspace").body;
    assert_eq!(
        (wb["data"]["id"].as_str(), wb["data"]["plan"].as_str()),
        (Some(ws_b.as_str()), Some("pro"))
    );

    // Workspace A: one of everything, including an incident and a delivery.
    let channel = create(
        &a,
        "/v1/channels",
        json!({"name": "hook", "type": "webhook", "url": "http://127.0.0.1:9/hook"}),
    );
    let policy = create(
        &a,
        "/v1/alert-policies",
        json!({"name": "p", "failureThreshold": 1, "channels": [{"channelId": channel}]}),
    );
    let monitor = create(
        &a,
        "/v1/monitors",
        json!({"name": "down", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 1, "alertPolicyId": policy}),
    );
    let incident = wait_for("an incident in A", Duration::from_secs(20), || {
        a.get("/v1/incidents").body["data"][0]["id"]
            .as_str()
            .map(str::to_string)
    });
    let delivery = wait_for("a delivery in A", Duration::from_secs(20), || {
        a.get("/v1/webhook-deliveries").body["data"][0]["id"]
            .as_str()
            .map(str::to_string)
    });
    let (key_a, _) = new_key(&a, "read");

    // B sees none of it: lists are empty, ids answer 404 with the resource's code.
    for list in [
        "/v1/monitors",
        "/v1/alert-policies",
        "/v1/channels",
        "/v1/incidents",
        "/v1/webhook-deliveries",
    ] {
        let r = b.get(list);
        assert_eq!(r.status, 200, "{list}: {}", r.body);
        assert_eq!(r.body["data"], json!([]), "{list} leaks: {}", r.body);
    }
    let keys_b = b.get("/v1/api-keys").body;
    assert_eq!(keys_b["pagination"]["total"], 1, "{keys_b}");
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "GET",
            format!("/v1/monitors/{monitor}"),
            "MONITOR_NOT_FOUND",
        ),
        (
            "PATCH",
            format!("/v1/monitors/{monitor}"),
            "MONITOR_NOT_FOUND",
        ),
        (
            "DELETE",
            format!("/v1/monitors/{monitor}"),
            "MONITOR_NOT_FOUND",
        ),
        (
            "POST",
            format!("/v1/monitors/{monitor}/pause"),
            "MONITOR_NOT_FOUND",
        ),
        (
            "GET",
            format!("/v1/monitors/{monitor}/checks"),
            "MONITOR_NOT_FOUND",
        ),
        (
            "GET",
            format!("/v1/monitors/{monitor}/uptime"),
            "MONITOR_NOT_FOUND",
        ),
        (
            "GET",
            format!("/v1/alert-policies/{policy}"),
            "ALERT_POLICY_NOT_FOUND",
        ),
        (
            "PATCH",
            format!("/v1/alert-policies/{policy}"),
            "ALERT_POLICY_NOT_FOUND",
        ),
        (
            "DELETE",
            format!("/v1/alert-policies/{policy}"),
            "ALERT_POLICY_NOT_FOUND",
        ),
        (
            "GET",
            format!("/v1/channels/{channel}"),
            "CHANNEL_NOT_FOUND",
        ),
        (
            "PATCH",
            format!("/v1/channels/{channel}"),
            "CHANNEL_NOT_FOUND",
        ),
        (
            "DELETE",
            format!("/v1/channels/{channel}"),
            "CHANNEL_NOT_FOUND",
        ),
        (
            "POST",
            format!("/v1/channels/{channel}/test"),
            "CHANNEL_NOT_FOUND",
        ),
        (
            "GET",
            format!("/v1/incidents/{incident}"),
            "INCIDENT_NOT_FOUND",
        ),
        (
            "POST",
            format!("/v1/incidents/{incident}/acknowledge"),
            "INCIDENT_NOT_FOUND",
        ),
        (
            "POST",
            format!("/v1/incidents/{incident}/resolve"),
            "INCIDENT_NOT_FOUND",
        ),
        (
            "GET",
            format!("/v1/webhook-deliveries/{delivery}"),
            "DELIVERY_NOT_FOUND",
        ),
        (
            "POST",
            format!("/v1/webhook-deliveries/{delivery}/redeliver"),
            "DELIVERY_NOT_FOUND",
        ),
        (
            "DELETE",
            format!("/v1/api-keys/{key_a}"),
            "API_KEY_NOT_FOUND",
        ),
    ];
    for (method, path, code) in &cases {
        let body = json!({"name": "stolen"});
        b.request(method, path, (*method == "PATCH").then_some(&body))
            .assert_error(404, code);
    }
    // B cannot point its own monitor at A's policy either.
    b.post(
        "/v1/monitors",
        &json!({"name": "x", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60, "alertPolicyId": policy}),
    )
    .assert_error(422, "UNPROCESSABLE_ENTITY");

    // A's things are untouched.
    assert_eq!(
        a.get(&format!("/v1/monitors/{monitor}")).body["data"]["name"],
        "down"
    );
    assert_eq!(a.get(&format!("/v1/channels/{channel}")).status, 200);
    assert_eq!(a.get("/v1/api-keys").body["pagination"]["total"], 2);
    assert_ne!(
        a.get(&format!("/v1/incidents/{incident}")).body["data"]["status"],
        "resolved"
    );

    // Each renames only its own workspace; the plan is the operator's.
    let r = b.patch("/v1/workspace", &json!({"name": "Team B (renamed)"}));
    assert_eq!(r.body["data"]["name"], "Team B (renamed)", "{}", r.body);
    assert_eq!(a.get("/v1/workspace").body["data"]["name"], "Default");
    b.patch("/v1/workspace", &json!({"plan": "enterprise"}))
        .assert_error(400, "VALIDATION_ERROR");
    server.cli(&[
        "workspace",
        "set-plan",
        "--workspace",
        &ws_b,
        "--plan",
        "business",
    ]);
    assert_eq!(b.get("/v1/workspace").body["data"]["plan"], "business");
}

#[test]
fn the_rate_limit_answers_429_with_its_headers() {
    let server = Server::start(&[
        // One token every 10 s: none comes back between the requests below, however
        // slow the machine.
        ("TOCSIN_RATE_LIMIT_PER_MINUTE", "6"),
        ("TOCSIN_RATE_LIMIT_BURST", "5"),
    ]);
    let api = server.client();
    let first = api.get("/v1/workspace");
    assert_eq!(first.headers["x-ratelimit-remaining"], "4");
    let workspace = first.body["data"]["id"].as_str().expect("id").to_string();
    let mut remaining = Vec::new();
    for _ in 0..4 {
        let r = api.get("/v1/monitors");
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.headers["x-ratelimit-limit"], "6");
        assert!(r.headers.contains_key("x-ratelimit-reset"));
        remaining.push(
            r.headers["x-ratelimit-remaining"]
                .to_str()
                .expect("ascii")
                .parse::<u32>()
                .expect("number"),
        );
    }
    assert_eq!(remaining, [3, 2, 1, 0]);
    let limited = api.get("/v1/monitors");
    limited.assert_error(429, "RATE_LIMITED");
    let retry: u64 = limited.headers["retry-after"]
        .to_str()
        .expect("ascii")
        .parse()
        .expect("seconds");
    assert!((1..=10).contains(&retry), "{retry}");
    assert_eq!(limited.headers["x-ratelimit-remaining"], "0");
    // Writes are limited too, and a limited write changes nothing.
    api.post(
        "/v1/monitors",
        &json!({"name": "x", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60}),
    )
    .assert_error(429, "RATE_LIMITED");
    // Another key of the same workspace does not escape the workspace's bucket; a key of
    // another workspace has its own.
    let same = server.cli(&["key", "create", "--workspace", &workspace]);
    api.with_key(&same)
        .get("/v1/monitors")
        .assert_error(429, "RATE_LIMITED");
    let elsewhere = server.cli(&["workspace", "create", "--name", "Other"]);
    let other = server.cli(&["key", "create", "--workspace", &elsewhere]);
    let r = api.with_key(&other).get("/v1/monitors");
    assert_eq!(r.status, 200, "{}", r.body);
    // A token comes back after Retry-After.
    std::thread::sleep(Duration::from_secs(retry) + Duration::from_millis(100));
    let r = api.get("/v1/monitors");
    assert_eq!(r.status, 200, "a token came back");
    assert_eq!(
        r.body["pagination"]["total"], 0,
        "the limited write created nothing"
    );
}

#[test]
fn probe_ips_come_from_the_configuration() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("tocsin.toml"),
        r#"
region = "eu-west"
[[regions]]
name = "eu-west"
ipv4 = ["203.0.113.0/28"]
ipv6 = ["2001:db8:1::/64"]
[[regions]]
name = "us-east"
ipv4 = ["198.51.100.16/28"]
"#,
    )
    .expect("config");
    let server = Server::start_in(dir.path(), &[]);
    let api = server.client();
    // Only regions with a live node are listed: us-east has none yet.
    let r = api.get("/v1/probe-ips");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["data"],
        json!([
            {"region": "eu-west", "ipv4": ["203.0.113.0/28"], "ipv6": ["2001:db8:1::/64"], "nodes": 1}
        ])
    );
    let us = Server::start_node_sharing(dir.path(), &[("TOCSIN_REGION", "us-east")]);
    let r = wait_for(
        "the us-east node's heartbeat",
        Duration::from_secs(10),
        || {
            let r = api.get("/v1/probe-ips");
            (r.body["data"].as_array().map(Vec::len) == Some(2)).then_some(r)
        },
    );
    assert_eq!(
        r.body["data"][1],
        json!({"region": "us-east", "ipv4": ["198.51.100.16/28"], "ipv6": [], "nodes": 1})
    );
    drop(us);
    api.without_key()
        .get("/v1/probe-ips")
        .assert_error(401, "UNAUTHORIZED");
}

#[test]
fn members_are_unique_per_workspace_and_keep_an_owner() {
    let server = Server::start(&[]);
    let admin = server.client();
    let (_, write_secret) = new_key(&admin, "write");
    let write = admin.with_key(&write_secret);

    let owner = create(
        &admin,
        "/v1/workspace/members",
        json!({"email": "Ada@Example.com", "name": "Ada", "role": "owner"}),
    );
    let bob = create(
        &admin,
        "/v1/workspace/members",
        json!({"email": "bob@example.com", "role": "member"}),
    );
    let listed = write.get("/v1/workspace/members").body;
    assert_eq!(listed["pagination"]["total"], 2, "{listed}");
    assert_eq!(listed["data"][0]["email"], "ada@example.com");
    assert_eq!(
        listed["data"][1]["name"], "bob",
        "name defaults to the local part"
    );

    // The same address again, in any case: 409.
    admin
        .post(
            "/v1/workspace/members",
            &json!({"email": "ADA@example.com", "role": "viewer"}),
        )
        .assert_error(409, "CONFLICT");
    admin
        .post(
            "/v1/workspace/members",
            &json!({"email": "carol@example.com", "role": "boss"}),
        )
        .assert_error(400, "VALIDATION_ERROR");
    // write keys read members but do not change them.
    write
        .post(
            "/v1/workspace/members",
            &json!({"email": "dan@example.com", "role": "viewer"}),
        )
        .assert_error(403, "FORBIDDEN");
    write
        .delete(&format!("/v1/workspace/members/{bob}"))
        .assert_error(403, "FORBIDDEN");

    let r = admin.patch(
        &format!("/v1/workspace/members/{bob}"),
        &json!({"role": "admin"}),
    );
    assert_eq!(r.body["data"]["role"], "admin", "{}", r.body);
    // The last owner stays an owner.
    admin
        .patch(
            &format!("/v1/workspace/members/{owner}"),
            &json!({"role": "member"}),
        )
        .assert_error(409, "CONFLICT");
    admin
        .delete(&format!("/v1/workspace/members/{owner}"))
        .assert_error(409, "CONFLICT");
    // With a second owner, the first may step down.
    admin.patch(
        &format!("/v1/workspace/members/{bob}"),
        &json!({"role": "owner"}),
    );
    assert_eq!(
        admin
            .delete(&format!("/v1/workspace/members/{owner}"))
            .status,
        204
    );
    admin
        .get(&format!("/v1/workspace/members/{owner}"))
        .assert_error(405, "METHOD_NOT_ALLOWED");
    admin
        .delete(&format!("/v1/workspace/members/{owner}"))
        .assert_error(404, "MEMBER_NOT_FOUND");

    // Another workspace sees none of them.
    let ws_b = server.cli(&["workspace", "create", "--name", "B"]);
    let b =
        admin.with_key(&server.cli(&["key", "create", "--workspace", &ws_b, "--role", "owner"]));
    assert_eq!(b.get("/v1/workspace/members").body["data"], json!([]));
    b.patch(
        &format!("/v1/workspace/members/{bob}"),
        &json!({"role": "viewer"}),
    )
    .assert_error(404, "MEMBER_NOT_FOUND");
    // B may add the same address to its own workspace.
    create(
        &b,
        "/v1/workspace/members",
        json!({"email": "bob@example.com", "role": "owner"}),
    );
}
