//! End to end: the Rust example plugin (built on the SDK) loads from the plugins directory
//! and does real work, while a plugin built against a newer contract (the 0.2.0 draft in
//! tests/fixtures/wit) is refused with a reason that names both versions, and nothing else
//! is disturbed by it.

mod support;

use serde_json::{Value, json};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::Duration;
use support::{Server, wait_for};

fn guest(file: &str) -> std::path::PathBuf {
    Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join(file)
}

fn plugin_check(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_tocsin"))
        .args(["plugin", "check"])
        .args(args)
        .env("TOCSIN_LOG", "error")
        .output()
        .expect("run tocsin");
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn a_newer_contract_is_refused_and_the_frozen_one_keeps_working() {
    let tcp = guest("tocsin_example_tcp.wasm");
    let next = guest("tocsin_guest_next.wasm");

    // `tocsin plugin check` reads the contract version from the export names.
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    let config = format!(r#"{{"host":"127.0.0.1","port":{port}}}"#);
    let (ok, report) = plugin_check(&[tcp.to_str().expect("path"), &config]);
    assert!(ok, "{report}");
    assert!(
        report.contains("a monitor plugin built against tocsin:plugin@0.1.0"),
        "{report}"
    );
    assert!(report.contains("capabilities: net"), "{report}");
    let (ok, report) = plugin_check(&[next.to_str().expect("path")]);
    assert!(!ok, "{report}");
    assert!(
        report.contains("0.2.0") && report.contains("0.1.0"),
        "the refusal names the plugin's version and the supported ones: {report}"
    );

    let dir = tempfile::tempdir().expect("dir");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::copy(&tcp, plugins.join("tcp.wasm")).expect("copy");
    std::fs::copy(&next, plugins.join("next.wasm")).expect("copy");
    std::fs::write(
        dir.path().join("tocsin.toml"),
        "[plugin_grants.tcp]\ncapabilities = [\"net\"]\n",
    )
    .expect("config");
    let server = Server::start_in(dir.path(), &[]);
    let api = server.client();

    let listed = api.get("/v1/plugins?limit=100").body["data"].clone();
    let names: Vec<&str> = listed
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        names.contains(&"tcp") && names.contains(&"http"),
        "{names:?}"
    );
    assert!(!names.contains(&"test-next"), "{names:?}");
    let log = server.log();
    assert!(
        log.lines().any(|l| l.contains("plugin refused")
            && l.contains("next.wasm")
            && l.contains("0.2.0")),
        "{log}"
    );

    // The 0.1.0 plugin does real work: one monitor reaches a listening port, one a closed port.
    let create = |name: &str, port: u16| {
        let r = api.post(
            "/v1/monitors",
            &json!({"name": name, "type": "tcp", "interval": 1, "timeout": 1,
                    "config": {"host": "127.0.0.1", "port": port}}),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["data"]["id"].as_str().expect("id").to_string()
    };
    let closed_port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("listen");
        l.local_addr().expect("addr").port()
    };
    let open = create("open", port);
    let closed = create("closed", closed_port);
    let first_check = |id: &str| -> Value {
        wait_for("a tcp check", Duration::from_secs(30), || {
            api.get(&format!("/v1/monitors/{id}/checks")).body["data"][0]
                .as_object()
                .cloned()
                .map(Value::Object)
        })
    };
    let c = first_check(&open);
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["details"]["address"], format!("127.0.0.1:{port}"), "{c}");
    let c = first_check(&closed);
    assert_eq!(c["ok"], false, "{c}");
    assert!(
        c["reason"]
            .as_str()
            .unwrap_or("")
            .contains("refused the connection"),
        "{c}"
    );
    // Its own validation, through the SDK, answers per field.
    let r = api.post(
        "/v1/monitors",
        &json!({"name": "bad", "type": "tcp", "interval": 60, "config": {"host": "a b", "port": 0}}),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let text = r.body.to_string();
    assert!(text.contains("host") && text.contains("port"), "{text}");
    drop(listener);
}
