//! End to end: configuration as code. `tocsin apply` makes a running server's workspace
//! match a YAML file over the API (creating, showing a dry run's field diff, replacing,
//! pruning only what it created), `tocsin export` writes a file that applies with no
//! change, and the API's `key`, `managedBy`, `dryRun` and `PUT` that apply stands on.

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use support::{ADMIN_KEY, Server};

/// Run `tocsin <args>` against `server` with `env`; (success, output).
fn tocsin(server: &Server, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (bool, String) {
    let mut all = vec![
        ("TOCSIN_URL", server.base.as_str()),
        ("TOCSIN_API_KEY", ADMIN_KEY),
    ];
    all.extend_from_slice(env);
    support::run_tocsin(dir, args, &all)
}

const FILE: &str = r#"
channels:
  - name: ops-hook
    type: webhook
    url: https://127.0.0.1:9/hook
alertPolicies:
  - name: default
    failureThreshold: 3
    channels:
      - channel: ops-hook
monitors:
  - name: Public API
    key: api
    type: http
    url: http://127.0.0.1:9/health
    method: GET
    followRedirects: false
    headers:
      Authorization: Bearer ${API_TOKEN}
    interval: 60
    alertPolicy: default
    tags: [production]
  - name: Database
    type: http
    url: http://127.0.0.1:9/db
    method: GET
    interval: 120
    dependsOn: [api]
statusPages:
  - slug: acme
    name: Acme status
    monitors: [api, Database]
maintenanceWindows:
  - name: Sunday patching
    start: "2026-12-06T02:00:00Z"
    rrule: FREQ=WEEKLY;BYDAY=SU
    durationMinutes: 60
    monitors: [Database]
"#;

fn items(server: &Server, path: &str) -> Vec<Value> {
    let reply = server.client().get(path);
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["data"].as_array().cloned().unwrap_or_default()
}

fn named<'a>(list: &'a [Value], name: &str) -> &'a Value {
    list.iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no `{name}` in {list:?}"))
}

#[test]
fn apply_creates_diffs_prunes_and_export_round_trips() {
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tocsin.yaml");
    std::fs::write(&file, FILE).expect("write");
    let f = file.to_str().expect("path");
    let token = [("API_TOKEN", "s3cret")];

    // A secret the environment does not hold stops everything before any request.
    let (ok, out) = tocsin(&server, dir.path(), &["apply", "-f", f], &[]);
    assert!(!ok && out.contains("API_TOKEN is not set"), "{out}");
    assert!(items(&server, "/v1/monitors").is_empty());

    // The first apply creates everything, references resolved to ids.
    let (ok, out) = tocsin(&server, dir.path(), &["apply", "-f", f], &token);
    assert!(ok, "{out}");
    for line in [
        "+ create channel `ops-hook`",
        "+ create alert policy `default`",
        "+ create monitor `api`",
        "+ create monitor `Database`",
        "+ create status page `acme`",
        "+ create maintenance window `Sunday patching`",
        "Plan: 6 to create, 0 to change, 0 to delete, 0 unchanged.",
    ] {
        assert!(out.contains(line), "missing `{line}` in:\n{out}");
    }
    let monitors = items(&server, "/v1/monitors");
    let policies = items(&server, "/v1/alert-policies");
    let channels = items(&server, "/v1/channels");
    let api = named(&monitors, "Public API");
    let database = named(&monitors, "Database");
    assert_eq!(api["key"], "api");
    assert_eq!(api["managedBy"], "tocsin-apply");
    assert_eq!(api["headers"]["Authorization"], "Bearer s3cret");
    assert_eq!(api["followRedirects"], false);
    assert_eq!(api["alertPolicyId"], policies[0]["id"]);
    assert_eq!(policies[0]["channels"][0]["channelId"], channels[0]["id"]);
    assert_eq!(database["dependsOn"], json!([api["id"]]));
    let page = &items(&server, "/v1/status-pages")[0];
    assert_eq!(page["monitorIds"], json!([api["id"], database["id"]]));
    let window = &items(&server, "/v1/maintenance-windows")[0];
    assert_eq!(window["monitorIds"], json!([database["id"]]));

    // Applying the same file again changes nothing.
    let (ok, out) = tocsin(&server, dir.path(), &["apply", "-f", f], &token);
    assert!(ok, "{out}");
    assert!(
        out.contains("Plan: 0 to create, 0 to change, 0 to delete, 6 unchanged."),
        "{out}"
    );

    // A field that holds a secret from the environment shows as changed, never its value
    // (plans end up in CI logs).
    let (ok, out) = tocsin(
        &server,
        dir.path(),
        &["apply", "-f", f, "--dry-run"],
        &[("API_TOKEN", "n3wT0ken")],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("    headers: (changed; it holds a secret)"),
        "{out}"
    );
    assert!(
        !out.contains("n3wT0ken") && !out.contains("s3cret"),
        "{out}"
    );

    // A dry run shows each changed field with its old and new value, and changes nothing.
    // A field left out of the file goes back to its default (followRedirects: true).
    let changed = FILE
        .replace("    interval: 60\n", "    interval: 300\n")
        .replace("    followRedirects: false\n", "");
    std::fs::write(&file, &changed).expect("write");
    let (ok, out) = tocsin(
        &server,
        dir.path(),
        &["apply", "-f", f, "--dry-run"],
        &token,
    );
    assert!(ok, "{out}");
    assert!(out.contains("~ change monitor `api`"), "{out}");
    assert!(out.contains("    interval: 60 → 300"), "{out}");
    assert!(out.contains("    followRedirects: false → true"), "{out}");
    assert!(out.contains("1 to change") && out.contains("Dry run: nothing was changed."));
    let api_now = server
        .client()
        .get(&format!("/v1/monitors/{}", api["id"].as_str().expect("id")));
    assert_eq!(api_now.body["data"]["interval"], 60);

    let (ok, out) = tocsin(&server, dir.path(), &["apply", "-f", f], &token);
    assert!(ok && out.contains("Applied."), "{out}");
    let api_now = server
        .client()
        .get(&format!("/v1/monitors/{}", api["id"].as_str().expect("id")));
    assert_eq!(api_now.body["data"]["interval"], 300);
    assert_eq!(api_now.body["data"]["followRedirects"], true);
    assert_eq!(api_now.body["data"]["id"], api["id"], "replaced in place");

    // Prune deletes what apply created and the file dropped, not what people made.
    let handmade = server.client().post(
        "/v1/monitors",
        &json!({"name": "Handmade", "type": "http", "url": "http://127.0.0.1:9/h",
            "method": "GET", "interval": 60}),
    );
    assert_eq!(handmade.status, 201, "{}", handmade.body);
    let without_window = changed
        .split("maintenanceWindows:")
        .next()
        .expect("file")
        .to_string();
    std::fs::write(&file, without_window).expect("write");
    let (ok, out) = tocsin(&server, dir.path(), &["apply", "-f", f], &token);
    assert!(ok, "{out}");
    assert!(!out.contains("- delete"), "no prune without --prune: {out}");
    assert_eq!(items(&server, "/v1/maintenance-windows").len(), 1);
    let (ok, out) = tocsin(&server, dir.path(), &["apply", "-f", f, "--prune"], &token);
    assert!(ok, "{out}");
    assert!(
        out.contains("- delete maintenance window `Sunday patching`"),
        "{out}"
    );
    assert!(!out.contains("Handmade"), "{out}");
    assert!(items(&server, "/v1/maintenance-windows").is_empty());
    assert_eq!(items(&server, "/v1/monitors").len(), 3, "Handmade stays");

    // Export, then apply the export: no change at all.
    let exported = dir.path().join("export.yaml");
    let (ok, out) = tocsin(
        &server,
        dir.path(),
        &["export", "-o", exported.to_str().expect("path")],
        &[],
    );
    assert!(ok, "{out}");
    let text = std::fs::read_to_string(&exported).expect("export");
    assert!(text.contains("alertPolicy: default"), "{text}");
    assert!(!text.contains("mon_"), "references, not ids: {text}");
    // Secrets (the header's value, the webhook URL) are variables, set to apply it back.
    assert!(!text.contains("s3cret"), "{text}");
    let (ok, out) = tocsin(
        &server,
        dir.path(),
        &["apply", "-f", exported.to_str().expect("path"), "--dry-run"],
        &[
            ("TOCSIN_MONITOR_API_HEADERS_AUTHORIZATION", "Bearer s3cret"),
            ("TOCSIN_CHANNEL_OPS_HOOK_URL", "https://127.0.0.1:9/hook"),
        ],
    );
    assert!(ok, "{out}");
    assert!(
        out.contains("Plan: 0 to create, 0 to change, 0 to delete, 6 unchanged."),
        "{out}"
    );

    // --prune-unmanaged takes what people made too, once the file leaves it out.
    std::fs::write(
        &file,
        changed.split("maintenanceWindows:").next().expect("file"),
    )
    .expect("write");
    let (ok, out) = tocsin(
        &server,
        dir.path(),
        &["apply", "-f", f, "--prune", "--prune-unmanaged"],
        &token,
    );
    assert!(ok, "{out}");
    assert!(out.contains("- delete monitor `Handmade`"), "{out}");
    assert_eq!(items(&server, "/v1/monitors").len(), 2);
}

#[test]
fn a_file_the_server_refuses_changes_nothing_and_the_schema_describes_the_file() {
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        "monitors:\n  - name: ok\n    type: http\n    url: http://127.0.0.1:9/\n    method: GET\n    interval: 60\n  - name: broken\n    type: http\n    url: not a url\n    method: GET\n    interval: 60\n    alertPolicy: nowhere\n",
    )
    .expect("write");
    let (ok, out) = tocsin(
        &server,
        dir.path(),
        &["apply", "-f", file.to_str().expect("path")],
        &[],
    );
    assert!(!ok, "{out}");
    assert!(out.contains("monitor `broken`"), "{out}");
    assert!(out.contains("no alert policy `nowhere`"), "{out}");
    assert!(items(&server, "/v1/monitors").is_empty(), "nothing applied");

    let (ok, out) = tocsin(&server, dir.path(), &["apply", "--schema"], &[]);
    assert!(ok, "{out}");
    let schema: Value = serde_json::from_str(&out).expect("JSON Schema");
    let monitor = &schema["properties"]["monitors"]["items"];
    assert!(
        monitor["properties"]["alertPolicy"].is_object(),
        "{monitor}"
    );
    assert!(monitor["properties"]["url"].is_object(), "{monitor}");
    assert!(
        schema["properties"]["statusPages"]["items"]["required"]
            .as_array()
            .expect("required")
            .contains(&json!("monitors"))
    );
}

#[test]
fn keys_are_unique_put_replaces_and_dry_runs_save_nothing() {
    let server = Server::start(&[]);
    let api = server.client();
    let body = json!({"name": "One", "type": "http", "url": "http://127.0.0.1:9/",
        "method": "GET", "interval": 60, "key": "one", "headers": {"X-A": "1"}});
    let dry = api.post("/v1/monitors?dryRun=true", &body);
    assert_eq!(dry.status, 200, "{}", dry.body);
    assert_eq!(dry.body["data"]["key"], "one");
    assert_eq!(api.get("/v1/monitors").body["data"], json!([]));

    let one = api.post("/v1/monitors", &body);
    assert_eq!(one.status, 201, "{}", one.body);
    let id = one.body["data"]["id"].as_str().expect("id").to_string();
    let twin = api.post(
        "/v1/monitors",
        &json!({"name": "Two", "type": "http",
        "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60, "key": "one"}),
    );
    assert_eq!(twin.status, 409, "{}", twin.body);
    assert_eq!(twin.body["error"]["code"], "CONFLICT");
    let bad = api.post(
        "/v1/monitors",
        &json!({"name": "Three", "type": "http",
        "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60, "key": "has space"}),
    );
    assert_eq!(bad.status, 400, "{}", bad.body);

    // PUT replaces: headers left out are gone, the key too; a dry run keeps the stored ones.
    let replacement = json!({"name": "One", "type": "http", "url": "http://127.0.0.1:9/",
        "method": "GET", "interval": 120});
    let dry = api.request(
        "PUT",
        &format!("/v1/monitors/{id}?dryRun=true"),
        Some(&replacement),
    );
    assert_eq!(dry.status, 200, "{}", dry.body);
    assert_eq!(dry.body["data"]["interval"], 120);
    let stored = api.get(&format!("/v1/monitors/{id}"));
    assert_eq!(stored.body["data"]["interval"], 60);
    assert_eq!(stored.body["data"]["headers"], json!({"X-A": "1"}));
    let put = api.request("PUT", &format!("/v1/monitors/{id}"), Some(&replacement));
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(put.body["data"]["headers"], json!({}));
    assert_eq!(put.body["data"]["key"], Value::Null);
    assert_eq!(put.body["data"]["interval"], 120);

    // Keys are per kind: a channel may share a monitor's key.
    let channel = api.post(
        "/v1/channels",
        &json!({"name": "c", "type": "webhook",
        "url": "https://127.0.0.1:9/x", "key": "one"}),
    );
    assert_eq!(channel.status, 201, "{}", channel.body);
}

/// Secrets written plainly in a file (no `${VAR}`) are masked in every plan by what the
/// plugins' schemas mark: a stored channel's write-only token and its secret topic, and
/// an inline channel's webhook URL in a policy.
#[test]
fn plain_secrets_are_masked_in_plans_by_the_plugins_schemas() {
    let server = Server::start(&[]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tocsin.yaml");
    let f = file.to_str().expect("path");
    let write = |topic: &str, token: &str, hook: &str| {
        let text = format!(
            "channels:\n  - name: push\n    type: ntfy\n    serverUrl: https://ntfy.example.test\n    topic: {topic}\n    accessToken: {token}\n\
             alertPolicies:\n  - name: pager\n    channels:\n      - channel: push\n      - type: slack\n        webhookUrl: https://hooks.slack.test/services/T/B/{hook}\n"
        );
        std::fs::write(&file, text).expect("write");
    };
    write("topic-one-4711", "tk_first0815", "hookone1234");
    let (ok, out) = tocsin(&server, dir.path(), &["apply", "-f", f], &[]);
    assert!(ok, "{out}");
    for secret in ["topic-one-4711", "tk_first0815", "hookone1234"] {
        assert!(!out.contains(secret), "{secret} printed:\n{out}");
    }
    assert_eq!(items(&server, "/v1/channels").len(), 1);

    write("topic-two-4712", "tk_second0816", "hooktwo5678");
    let (ok, out) = tocsin(&server, dir.path(), &["apply", "-f", f, "--dry-run"], &[]);
    assert!(ok, "{out}");
    assert!(out.contains("~ change channel `push`"), "{out}");
    assert!(
        out.contains("    topic: (changed; it holds a secret)"),
        "{out}"
    );
    assert!(out.contains("~ change alert policy `pager`"), "{out}");
    for secret in [
        "topic-one-4711",
        "topic-two-4712",
        "tk_first0815",
        "tk_second0816",
        "hookone1234",
        "hooktwo5678",
    ] {
        assert!(!out.contains(secret), "{secret} printed:\n{out}");
    }
}
