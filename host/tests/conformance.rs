//! The conformance kit over every built-in plugin, the Rust example plugin and the test
//! plugin from "outside".
//! (The Python and JavaScript examples go through the same kit in e2e_polyglot, once built.)

use crate::support;

use support::conformance;

use std::path::Path;
use tocsin::plugins::{HostSettings, PluginHost, PluginSource};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_built_in_plugin_conforms() {
    tocsin::crypto::install_provider();
    let settings = HostSettings {
        grant_declared: true,
        ..HostSettings::default()
    };
    let mut host = PluginHost::new(None, &settings).expect("runtime");
    let mut sources = PluginHost::builtin_sources();
    for file in ["tocsin_guest_fetch.wasm", "tocsin_example_tcp.wasm"] {
        let path = Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join(file);
        sources.push(PluginSource {
            origin: path.display().to_string(),
            bytes: std::fs::read(&path).expect("built"),
        });
    }
    assert!(host.load_all(sources).await.is_empty());
    // Samples point at closed loopback ports: every call fails fast, as a result.
    let samples = [
        (
            "monitor",
            "http",
            r#"{"url":"http://127.0.0.1:9/","method":"GET"}"#,
        ),
        (
            "monitor",
            "keyword",
            r#"{"url":"http://127.0.0.1:9/","method":"GET","keyword":"ok"}"#,
        ),
        (
            "monitor",
            "ping",
            r#"{"hostname":"127.0.0.1","packetCount":1}"#,
        ),
        ("monitor", "ssl", r#"{"hostname":"127.0.0.1","port":9}"#),
        ("monitor", "test-fetch", r#"{"url":"http://127.0.0.1:9/"}"#),
        ("monitor", "tcp-port", r#"{"host":"127.0.0.1","port":9}"#),
        (
            "monitor",
            "tcp",
            r#"{"host":"127.0.0.1","port":9,"expect":"x"}"#,
        ),
        ("monitor", "redis", r#"{"host":"127.0.0.1","port":9}"#),
        ("monitor", "smtp", r#"{"host":"127.0.0.1","port":9}"#),
        ("monitor", "postgres", r#"{"host":"127.0.0.1","port":9}"#),
        ("monitor", "mqtt", r#"{"host":"127.0.0.1","port":9}"#),
        ("monitor", "mysql", r#"{"host":"127.0.0.1","port":9}"#),
        (
            "monitor",
            "dns",
            r#"{"hostname":"example.test","resolver":"127.0.0.1","port":9}"#,
        ),
        (
            "monitor",
            "grpc",
            r#"{"url":"http://127.0.0.1:9","service":"shop.Cart"}"#,
        ),
        (
            "monitor",
            "domain-expiry",
            r#"{"domain":"example.test","rdapServer":"http://127.0.0.1:9"}"#,
        ),
        (
            "channel",
            "slack",
            r#"{"webhookUrl":"http://127.0.0.1:9/s"}"#,
        ),
        (
            "channel",
            "discord",
            r#"{"webhookUrl":"http://127.0.0.1:9/d"}"#,
        ),
        (
            "channel",
            "teams",
            r#"{"webhookUrl":"http://127.0.0.1:9/t"}"#,
        ),
        (
            "channel",
            "mattermost",
            r#"{"webhookUrl":"http://127.0.0.1:9/m"}"#,
        ),
        (
            "channel",
            "rocketchat",
            r#"{"webhookUrl":"http://127.0.0.1:9/r"}"#,
        ),
        (
            "channel",
            "googlechat",
            r#"{"webhookUrl":"http://127.0.0.1:9/g"}"#,
        ),
        (
            "channel",
            "matrix",
            r#"{"homeserverUrl":"http://127.0.0.1:9","roomId":"!r:x","accessToken":"t"}"#,
        ),
        (
            "channel",
            "ntfy",
            r#"{"serverUrl":"http://127.0.0.1:9","topic":"t"}"#,
        ),
        (
            "channel",
            "gotify",
            r#"{"serverUrl":"http://127.0.0.1:9","appToken":"t"}"#,
        ),
        (
            "channel",
            "pushover",
            r#"{"appToken":"azGDORePK8gMaC0QOYAMyEEuzJnyUi","userKey":"uQiRzpo4DXghDmr9QzzfQu27cmVRsG"}"#,
        ),
        (
            "channel",
            "pagerduty",
            r#"{"routingKey":"R0ut1ngKeyR0ut1ngKeyR0ut1ngKey32"}"#,
        ),
        ("channel", "opsgenie", r#"{"apiKey":"k"}"#),
        (
            "channel",
            "webhook",
            r#"{"url":"https://127.0.0.1:9/hook"}"#,
        ),
        ("channel", "email", r#"{"target":"ops@example.com"}"#),
        (
            "channel",
            "telegram",
            r#"{"chatId":"12345","botToken":"123:abc"}"#,
        ),
        (
            "pipeline",
            "oncall-rota",
            r#"{"timeZone":"Europe/Berlin","shifts":[{"days":["mon","tue","wed","thu","fri","sat","sun"],"from":"00:00","to":"24:00","channelIds":["ch_01JD6Z3Y5N8Q2W7R4T6V9X0B1C"]}]}"#,
        ),
        (
            "pipeline",
            "business-hours",
            r#"{"timeZone":"America/New_York"}"#,
        ),
    ];
    let described: Vec<String> = host.descriptions().into_iter().map(|d| d.name).collect();
    for name in [
        "http",
        "keyword",
        "ping",
        "ssl",
        "tcp",
        "redis",
        "smtp",
        "postgres",
        "mqtt",
        "mysql",
        "domain-expiry",
        "dns",
        "grpc",
        "webhook",
        "email",
        "telegram",
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
        "oncall-rota",
        "business-hours",
    ] {
        assert!(
            samples.iter().any(|(_, n, _)| *n == name),
            "built-in `{name}` has no conformance sample"
        );
        assert!(described.iter().any(|d| d == name), "{name} not loaded");
    }
    let mut failures = Vec::new();
    for (kind, name, sample) in samples {
        for p in conformance::check_plugin(&host, kind, name, sample).await {
            failures.push(format!("{name}: {p}"));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kit_catches_a_plugin_that_traps() {
    tocsin::crypto::install_provider();
    let mut host = PluginHost::new(None, &HostSettings::default()).expect("runtime");
    let trap = Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join("tocsin_guest_trap.wasm");
    assert!(
        host.load_all(vec![PluginSource {
            origin: trap.display().to_string(),
            bytes: std::fs::read(&trap).expect("built"),
        }])
        .await
        .is_empty()
    );
    let problems = conformance::check_plugin(&host, "monitor", "test-trap", "{}").await;
    assert!(
        problems.iter().any(|p| p.contains("budget")),
        "a trapping check must fail the kit: {problems:?}"
    );
}
