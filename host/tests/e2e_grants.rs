//! End to end: a plugin from `plugins_dir` gets only the capabilities the operator grants
//! (built-ins keep theirs), and an `http_hosts` list limits where its requests may go.

use crate::support;

use support::target;

use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::{Api, Server, wait_for};
use target::Target;

fn with_fetch_plugin(dir: &Path, config: &str) {
    let plugins = dir.join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::copy(
        Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join("tocsin_guest_fetch.wasm"),
        plugins.join("fetch.wasm"),
    )
    .expect("copy plugin");
    std::fs::write(dir.join("tocsin.toml"), config).expect("config");
}

fn reason_of(api: &Api, config: Value) -> Option<String> {
    let r = api.post(
        "/v1/monitors",
        &json!({"name": "fetch", "type": "test-fetch", "interval": 1, "config": config}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["data"]["id"].as_str().expect("id").to_string();
    let check = wait_for("a check", Duration::from_secs(20), || {
        api.get(&format!("/v1/monitors/{id}/checks")).body["data"][0]
            .as_object()
            .cloned()
    });
    check["reason"].as_str().map(str::to_string)
}

fn plugin(api: &Api, name: &str) -> Value {
    api.get("/v1/plugins").body["data"]
        .as_array()
        .expect("list")
        .iter()
        .find(|p| p["name"] == name)
        .cloned()
        .expect("listed")
}

#[test]
fn outside_plugins_get_only_what_is_granted() {
    let target = Target::start();
    let port = target.base.rsplit(':').next().expect("port").to_string();

    // Not granted: loaded, listed with what it asks for, and refused at the call.
    let dir = tempfile::tempdir().expect("dir");
    with_fetch_plugin(dir.path(), "");
    let server = Server::start_in(dir.path(), &[]);
    let api = server.client();
    let p = plugin(&api, "test-fetch");
    assert_eq!(p["capabilities"], json!(["http", "net"]));
    assert_eq!(p["granted"], json!([]));
    assert_eq!(
        plugin(&api, "http")["granted"],
        json!(["http"]),
        "built-ins keep theirs"
    );
    let reason = reason_of(
        &api,
        json!({"url": format!("http://localhost:{port}/ok"), "resolve": "localhost"}),
    )
    .expect("a failure");
    assert!(
        reason.contains("was not granted the http capability")
            && reason.contains("[plugin_grants.test-fetch]")
            && reason.contains("was not granted the net capability"),
        "{reason}"
    );
    assert!(
        server
            .log()
            .contains("asks for capabilities it was not granted")
    );
    drop(server);

    // Granted, with an allowlist of hosts.
    let dir = tempfile::tempdir().expect("dir");
    with_fetch_plugin(
        dir.path(),
        "[plugin_grants.test-fetch]\ncapabilities = [\"http\", \"net\"]\nhttp_hosts = [\"localhost\"]\n",
    );
    let server = Server::start_in(dir.path(), &[]);
    let api = server.client();
    assert_eq!(
        plugin(&api, "test-fetch")["granted"],
        json!(["http", "net"])
    );
    assert_eq!(
        reason_of(
            &api,
            json!({"url": format!("http://localhost:{port}/ok"), "resolve": "localhost"})
        ),
        None,
        "an allowed host passes"
    );
    let reason =
        reason_of(&api, json!({"url": format!("http://127.0.0.1:{port}/ok")})).expect("a failure");
    assert!(
        reason.contains("may not reach `127.0.0.1`") && reason.contains("http_hosts"),
        "{reason}"
    );
}

#[test]
fn unknown_capabilities_in_the_configuration_are_refused() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join("tocsin.toml"),
        "[plugin_grants.x]\ncapabilities = [\"files\"]\n",
    )
    .expect("config");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tocsin"))
        .arg("migrate")
        .env("TOCSIN_DATA_DIR", dir.path())
        .current_dir(dir.path())
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("unknown capability `files`"), "{err}");
}

#[test]
fn plugin_check_describes_a_component_and_runs_it() {
    let target = Target::start();
    let file = Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join("tocsin_guest_fetch.wasm");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tocsin"))
            .args(["plugin", "check"])
            .arg(&file)
            .args(args)
            .output()
            .expect("run");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    let (ok, text) = run(&[]);
    assert!(ok, "{text}");
    assert!(
        text.contains("a monitor plugin built against tocsin:plugin@0.1.0")
            && text.contains("name:         test-fetch")
            && text.contains("capabilities: http, net"),
        "{text}"
    );
    let config = format!(r#"{{"url":"{}"}}"#, target.url("/ok"));
    let (ok, text) = run(&[&config]);
    assert!(ok && text.contains("check:        passed"), "{text}");
    let (ok, text) = run(&[r#"{"url":"http://127.0.0.1:9/"}"#]);
    assert!(!ok && text.contains("check:        failed"), "{text}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tocsin"))
        .args(["plugin", "check", "/nonexistent.wasm"])
        .output()
        .expect("run");
    assert!(!out.status.success());
}
