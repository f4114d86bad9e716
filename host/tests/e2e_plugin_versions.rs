//! End to end: plugins built against contracts 0.1.0 (`tests/guests/fetch`, bindings of
//! the frozen 0.1.0 WIT), 0.2.0 (`tests/guests/next`) and 0.3.0 (the Rust example on the
//! SDK) load side by side from the plugins directory and all run real checks, while a
//! plugin built against a contract the server does not know (0.4.0, in
//! tests/fixtures/wit) is refused with a reason that names the versions, and nothing else
//! is disturbed by it.

use crate::support;

use serde_json::{Value, json};
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;
use support::{Server, wait_for};

fn guest(file: &str) -> std::path::PathBuf {
    Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join(file)
}

fn plugin_check(args: &[&str]) -> (bool, String) {
    let all: Vec<&str> = ["plugin", "check"].iter().chain(args).copied().collect();
    support::run_tocsin(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &all,
        &[("TOCSIN_LOG", "error")],
    )
}

#[test]
fn three_contract_versions_run_side_by_side_and_an_unknown_one_is_refused() {
    let tcp = guest("tocsin_example_tcp.wasm");
    let fetch = guest("tocsin_guest_fetch.wasm");
    let next = guest("tocsin_guest_next.wasm");
    let future = guest("tocsin_guest_future.wasm");

    // `tocsin plugin check` reads the contract version from the export names.
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    let config = format!(r#"{{"host":"127.0.0.1","port":{port}}}"#);
    let (ok, report) = plugin_check(&[tcp.to_str().expect("path"), &config]);
    assert!(ok, "{report}");
    assert!(
        report.contains("a monitor plugin built against tocsin:plugin@0.3.0"),
        "{report}"
    );
    assert!(report.contains("capabilities: net"), "{report}");
    let (ok, report) = plugin_check(&[fetch.to_str().expect("path"), "{}"]);
    assert!(ok, "{report}");
    assert!(
        report.contains("a monitor plugin built against tocsin:plugin@0.1.0"),
        "{report}"
    );
    let (ok, report) = plugin_check(&[next.to_str().expect("path"), "{}"]);
    assert!(ok, "{report}");
    assert!(
        report.contains("a monitor plugin built against tocsin:plugin@0.2.0"),
        "{report}"
    );
    let (ok, report) = plugin_check(&[future.to_str().expect("path")]);
    assert!(!ok, "{report}");
    assert!(
        report.contains("tocsin:plugin@0.4.0") && report.contains("0.1.0, 0.2.0, 0.3.0"),
        "the refusal names the plugin's version and the supported ones: {report}"
    );

    let dir = tempfile::tempdir().expect("dir");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::copy(&tcp, plugins.join("tcp.wasm")).expect("copy");
    std::fs::copy(&fetch, plugins.join("fetch.wasm")).expect("copy");
    std::fs::copy(&next, plugins.join("next.wasm")).expect("copy");
    std::fs::copy(&future, plugins.join("future.wasm")).expect("copy");
    std::fs::write(
        dir.path().join("tocsin.toml"),
        "[plugin_grants.tcp-port]\ncapabilities = [\"net\"]\n\
         [plugin_grants.test-fetch]\ncapabilities = [\"http\"]\n\
         [plugin_grants.test-next]\ncapabilities = [\"tcp\"]\n",
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
    let catalogue = [
        "tcp-port",
        "test-fetch",
        "test-next",
        "http",
        "keyword",
        "ping",
        "ssl",
        "heartbeat",
        "tcp",
        "dns",
        "grpc",
        "postgres",
        "mysql",
        "redis",
        "mqtt",
        "smtp",
        "domain-expiry",
        "email",
        "telegram",
        "webhook",
        "slack",
        "discord",
        "teams",
        "mattermost",
        "rocketchat",
        "googlechat",
        "matrix",
        "ntfy",
        "gotify",
        "pushover",
        "pagerduty",
        "opsgenie",
    ];
    let missing: Vec<&&str> = catalogue.iter().filter(|n| !names.contains(n)).collect();
    assert!(missing.is_empty(), "missing {missing:?} from {names:?}");
    // Every one comes with its configuration schema.
    assert!(
        listed
            .as_array()
            .expect("list")
            .iter()
            .all(|p| p["configSchema"]["type"] == "object"),
        "{listed}"
    );
    assert!(!names.contains(&"test-future"), "{names:?}");
    let contract = |name: &str| {
        listed
            .as_array()
            .and_then(|a| a.iter().find(|p| p["name"] == name))
            .map(|p| p["contract"].clone())
    };
    assert_eq!(contract("test-fetch"), Some(json!("0.1.0")));
    assert_eq!(contract("tcp-port"), Some(json!("0.3.0")));
    assert_eq!(contract("test-next"), Some(json!("0.2.0")));
    assert_eq!(
        contract("http"),
        Some(json!("0.3.0")),
        "the built-ins are on 0.3.0"
    );
    let top_level = |name: &str| {
        listed
            .as_array()
            .and_then(|a| a.iter().find(|p| p["name"] == name))
            .map(|p| p["topLevelFields"].clone())
    };
    // Third-party types keep their fields under `config`; the built-in http does not.
    assert_eq!(top_level("tcp-port"), Some(json!(false)));
    assert_eq!(top_level("http"), Some(json!(true)));
    let log = server.log();
    assert!(
        log.lines().any(|l| l.contains("plugin refused")
            && l.contains("future.wasm")
            && l.contains("0.4.0")),
        "{log}"
    );

    // The 0.3.0 example does real work: one monitor reaches a listening port, one a closed port.
    let create_monitor = |body: Value| {
        let r = api.post("/v1/monitors", &body);
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["data"]["id"].as_str().expect("id").to_string()
    };
    let create = |name: &str, port: u16| {
        create_monitor(
            json!({"name": name, "type": "tcp-port", "interval": 1, "timeout": 1,
                              "config": {"host": "127.0.0.1", "port": port}}),
        )
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
    // The 0.1.0 plugin runs beside them: its HTTP request reaches a loopback server.
    let http_target = support::target::Target::start();
    let older = create_monitor(
        json!({"name": "older", "type": "test-fetch", "interval": 2, "timeout": 2,
                                      "config": {"url": http_target.url("/ok")}}),
    );
    let c = first_check(&older);
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["statusCode"], 200, "{c}");
    // Another 0.2.0 plugin runs beside it, and is told the attempt number 0.2.0 added.
    let newer = create_monitor(
        json!({"name": "newer", "type": "test-next", "interval": 1, "timeout": 1, "config": {}}),
    );
    let c = first_check(&newer);
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["details"]["attempt"], 1, "{c}");
    // Its TCP stream (0.2.0's `net.tcp-stream`, served by the newest implementation).
    let echo = TcpListener::bind("127.0.0.1:0").expect("listen");
    let echo_port = echo.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut s in echo.incoming().flatten() {
            let mut buf = [0u8; 4];
            if s.read_exact(&mut buf).is_ok() {
                let _ = s.write_all(b"pong");
            }
        }
    });
    let streamer = create_monitor(
        json!({"name": "streamer", "type": "test-next", "interval": 5,
                                         "timeout": 5, "config": {"echoPort": echo_port}}),
    );
    let c = first_check(&streamer);
    assert_eq!(c["details"]["echoed"], "pong", "{c}");
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
        &json!({"name": "bad", "type": "tcp-port", "interval": 60, "config": {"host": "a b", "port": 0}}),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    let text = r.body.to_string();
    assert!(text.contains("host") && text.contains("port"), "{text}");
    drop(listener);
}

/// A first start compiles nothing: the build compiled the built-ins for this machine, and
/// `tocsin plugin precompile` (what a packager runs) put the plugins directory's into the
/// compile cache, so the server only reads machine code.
#[test]
fn precompile_leaves_a_first_start_nothing_to_compile() {
    let temp = tempfile::tempdir().expect("tempdir");
    let data = temp.path().join("data");
    let cache = temp.path().join("cache");
    let plugins = temp.path().join("plugins");
    std::fs::create_dir_all(&data).expect("data dir");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::copy(
        guest("tocsin_example_tcp.wasm"),
        plugins.join("tocsin_example_tcp.wasm"),
    )
    .expect("copy the example plugin");
    let (data_s, cache_s, plugins_s) = (
        data.display().to_string(),
        cache.display().to_string(),
        plugins.display().to_string(),
    );
    let env = [
        ("TOCSIN_DATA_DIR", data_s.as_str()),
        ("TOCSIN_PLUGIN_CACHE_DIR", cache_s.as_str()),
        ("TOCSIN_PLUGINS_DIR", plugins_s.as_str()),
    ];
    let cached = || -> Vec<String> {
        std::fs::read_dir(&cache)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".cwasm"))
                    .collect()
            })
            .unwrap_or_default()
    };

    let (ok, out) = support::run_tocsin(temp.path(), &["plugin", "precompile"], &env);
    assert!(ok, "{out}");
    assert!(
        out.contains("built-in tocsin_plugin_http: at build time"),
        "{out}"
    );
    let builtins: Vec<&str> = out.lines().filter(|l| l.starts_with("built-in ")).collect();
    assert!(builtins.len() >= 27, "{out}");
    assert!(
        builtins.iter().all(|l| l.contains(": at build time")),
        "every built-in comes compiled by the build: {out}"
    );
    assert!(
        out.contains("tocsin_example_tcp.wasm: compiled now"),
        "{out}"
    );
    assert_eq!(
        cached().len(),
        1,
        "only the plugins directory's component is compiled"
    );

    let (ok, out) = support::run_tocsin(temp.path(), &["plugin", "precompile"], &env);
    assert!(ok, "{out}");
    assert!(
        out.contains("tocsin_example_tcp.wasm: from the compile cache"),
        "{out}"
    );

    // The server starts on the fresh data directory and compiles nothing.
    let server = Server::start_in(&data, &env[1..]);
    let log = server.log();
    assert!(log.contains("from the compile cache"), "{log}");
    assert!(log.contains("at build time"), "{log}");
    assert!(!log.contains("compiled now"), "{log}");
    assert_eq!(cached().len(), 1);
    let plugins = server.client().get("/v1/plugins");
    assert_eq!(plugins.status, 200, "{}", plugins.body);
    assert!(
        plugins.body.to_string().contains("\"tcp-port\""),
        "the precompiled plugin is loaded: {}",
        plugins.body
    );
}
