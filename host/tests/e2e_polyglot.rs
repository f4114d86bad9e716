//! End to end: plugins written in Python (componentize-py) and JavaScript (componentize-js)
//! are built from `examples/plugins/`, dropped into the plugins directory, granted what
//! they need, and do real work next to the built-ins: a DNS answer for `localhost`, and a
//! chat message POSTed to a loopback receiver. The toolchains are installed from PyPI and
//! npm when missing; if that fails, this test fails.

use crate::support;

use support::{conformance, sinks};

use serde_json::{Value, json};
use sinks::Receiver;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::{Api, Server, wait_for};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins")
}

fn run(cmd: &mut Command, what: &str) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Build the Python example, installing componentize-py first when it is missing.
fn build_python() -> PathBuf {
    let present = Command::new("componentize-py")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        run(
            Command::new("python3").args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "componentize-py==0.25.1",
            ]),
            "installing componentize-py",
        );
    }
    let dir = examples().join("python-dns");
    run(
        Command::new("sh").arg(dir.join("build.sh")),
        "building the Python plugin",
    );
    dir.join("dns.wasm")
}

/// Build the JavaScript example (its script installs componentize-js from npm).
fn build_js() -> PathBuf {
    let dir = examples().join("js-chat");
    run(
        Command::new("sh").arg(dir.join("build.sh")),
        "building the JavaScript plugin",
    );
    dir.join("chat.wasm")
}

fn plugin(api: &Api, name: &str) -> Value {
    api.get("/v1/plugins?limit=100").body["data"]
        .as_array()
        .expect("list")
        .iter()
        .find(|p| p["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} is not loaded"))
}

#[test]
fn python_and_javascript_plugins_do_real_work() {
    let python = build_python();
    let js = build_js();
    for (file, at_most) in [(&python, 40 << 20), (&js, 40 << 20)] {
        let size = std::fs::metadata(file).expect("built").len();
        assert!(
            size > 0 && size < at_most,
            "{}: {size} bytes",
            file.display()
        );
    }

    let dir = tempfile::tempdir().expect("dir");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::copy(&python, plugins.join("dns.wasm")).expect("copy");
    std::fs::copy(&js, plugins.join("chat.wasm")).expect("copy");
    std::fs::write(
        dir.path().join("tocsin.toml"),
        "[plugin_grants.dns-lookup]\ncapabilities = [\"net\"]\n\n\
         [plugin_grants.chat]\ncapabilities = [\"http\"]\nhttp_hosts = [\"127.0.0.1\"]\n",
    )
    .expect("config");
    let receiver = Receiver::start();
    let server = Server::start_in(dir.path(), &[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();

    let dns = plugin(&api, "dns-lookup");
    assert_eq!(
        (dns["kind"].as_str(), dns["granted"].clone()),
        (Some("monitor"), json!(["net"]))
    );
    assert!(dns["source"].as_str().unwrap_or("").ends_with("dns.wasm"));
    let chat = plugin(&api, "chat");
    assert_eq!(
        (chat["kind"].as_str(), chat["granted"].clone()),
        (Some("channel"), json!(["http"]))
    );
    assert_eq!(
        plugin(&api, "http")["source"],
        "builtin",
        "built-ins still load"
    );

    // Python: a DNS answer from /etc/hosts, through the host's net interface.
    let create = |name: &str, config: Value| {
        let r = api.post(
            "/v1/monitors",
            &json!({"name": name, "type": "dns-lookup", "interval": 1, "timeout": 1, "config": config}),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["data"]["id"].as_str().expect("id").to_string()
    };
    let good = create(
        "localhost",
        json!({"hostname": "localhost", "expect": ["127.0.0.1"]}),
    );
    let wrong = create(
        "wrong",
        json!({"hostname": "localhost", "expect": ["127.0.0.2"]}),
    );
    let first_check = |id: &str| {
        wait_for("a dns check", Duration::from_secs(60), || {
            api.get(&format!("/v1/monitors/{id}/checks")).body["data"][0]
                .as_object()
                .cloned()
        })
    };
    let c = first_check(&good);
    assert_eq!(c["ok"], true, "{c:?}");
    assert!(
        c["details"]["addresses"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("127.0.0.1"))),
        "{c:?}"
    );
    let c = first_check(&wrong);
    assert_eq!(c["ok"], false);
    assert!(
        c["reason"].as_str().unwrap_or("").contains("not 127.0.0.2"),
        "{c:?}"
    );
    // Its JSON Schema is enforced by the plugin itself.
    let r = api.post(
        "/v1/monitors",
        &json!({"name": "bad", "type": "dns-lookup", "interval": 60, "config": {"hostname": ""}}),
    );
    assert!(r.status == 400 || r.status == 422, "{}", r.body);

    // JavaScript: a chat message POSTed to a loopback receiver, through the host's http.
    let channel = api.post(
        "/v1/channels",
        &json!({"name": "ops chat", "type": "chat", "url": receiver.url("/chat"), "format": "discord"}),
    );
    assert_eq!(channel.status, 201, "{}", channel.body);
    let id = channel.body["data"]["id"].as_str().expect("id");
    let d = api.request("POST", &format!("/v1/channels/{id}/test"), None);
    assert_eq!(d.body["data"]["status"], "succeeded", "{}", d.body);
    let posted = receiver.at("/chat");
    assert_eq!(posted.len(), 1);
    let content = posted[0].json["content"].as_str().unwrap_or("");
    assert!(content.starts_with("🔴 DOWN (test):"), "{content}");

    // Both pass the same conformance kit as the built-ins.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let problems = runtime.block_on(async {
        tocsin::crypto::install_provider();
        let settings = tocsin::plugins::HostSettings {
            grant_declared: true,
            ..Default::default()
        };
        let mut host = tocsin::plugins::PluginHost::new(None, &settings).expect("runtime");
        for file in [&python, &js] {
            let refused = host
                .load_all(vec![tocsin::plugins::PluginSource {
                    origin: file.display().to_string(),
                    bytes: std::fs::read(file).expect("built"),
                }])
                .await;
            assert!(refused.is_empty(), "{}", file.display());
        }
        let mut problems = conformance::check_plugin(
            &host,
            "monitor",
            "dns-lookup",
            r#"{"hostname":"localhost","expect":["127.0.0.1"]}"#,
        )
        .await;
        problems.extend(
            conformance::check_plugin(&host, "channel", "chat", r#"{"url":"http://127.0.0.1:9/"}"#)
                .await,
        );
        problems
    });
    assert!(problems.is_empty(), "{problems:#?}");
}
