//! Contract 0.2.0's TCP streams are a capability like the others and run under the call's
//! limits: a plugin from the plugins directory gets none until `tcp` is granted, holds at
//! most 8 streams at once, moves at most 4 MiB through them, and connects only where the
//! egress policy allows (shown without sending a packet: the policy refuses before any
//! connection is made).

use std::collections::BTreeMap;
use std::path::Path;
use tocsin::plugins::egress::{EgressPolicy, EgressPreset};
use tocsin::plugins::{CheckRequest, HostSettings, PluginGrant, PluginHost, PluginSource};

fn streams_guest() -> PluginSource {
    let path = Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join("tocsin_guest_streams.wasm");
    PluginSource {
        origin: path.display().to_string(),
        bytes: std::fs::read(&path).expect("test guest built by build.rs"),
    }
}

async fn host(granted: bool, egress: EgressPolicy) -> PluginHost {
    tocsin::crypto::install_provider();
    let mut grants = BTreeMap::new();
    if granted {
        grants.insert(
            "test-streams".to_string(),
            PluginGrant {
                capabilities: vec!["tcp".into()],
                http_hosts: None,
            },
        );
    }
    let settings = HostSettings {
        plugin_grants: grants,
        egress,
        ..HostSettings::default()
    };
    let mut host = PluginHost::new(None, &settings).expect("runtime");
    assert!(host.load_all(vec![streams_guest()]).await.is_empty());
    host
}

/// A listener that accepts and reads everything it is sent, on its own thread.
fn drain() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let _ = std::io::copy(&mut s, &mut std::io::sink());
            });
        }
    });
    port
}

async fn run(host: &PluginHost, config: serde_json::Value) -> serde_json::Value {
    let plugin = host.monitor("test-streams").expect("loaded");
    let outcome = host
        .check(
            &plugin,
            CheckRequest {
                config: config.to_string(),
                timeout_ms: 10_000,
                monitor_id: "mon_test".into(),
                region: "local".into(),
                settings: "{}".into(),
                attempt: 1,
            },
        )
        .await
        .expect("the call finishes");
    serde_json::from_str(&outcome.details).expect("details")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_need_the_tcp_grant() {
    let port = drain();
    let host = host(false, EgressPolicy::default()).await;
    let d = run(
        &host,
        serde_json::json!({"host": "127.0.0.1", "port": port, "streams": 1}),
    )
    .await;
    assert_eq!(d["opened"], 0, "{d}");
    let error = d["openError"].as_str().unwrap_or("");
    assert!(
        error.starts_with("Error::Denied") && error.contains("[plugin_grants.test-streams]"),
        "{d}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_holds_at_most_eight_streams_and_moves_at_most_four_mib() {
    let port = drain();
    let host = host(true, EgressPolicy::default()).await;
    let d = run(
        &host,
        serde_json::json!({"host": "127.0.0.1", "port": port, "streams": 9, "bytes": 5 << 20}),
    )
    .await;
    assert_eq!(d["opened"], 8, "{d}");
    assert!(
        d["openError"]
            .as_str()
            .is_some_and(|e| e.starts_with("Error::Limit") && e.contains("at most 8 TCP streams")),
        "{d}"
    );
    assert_eq!(d["written"], 4 << 20, "{d}");
    assert!(
        d["writeError"]
            .as_str()
            .is_some_and(|e| e.starts_with("Error::Limit") && e.contains("4 MiB")),
        "{d}"
    );
    // The next call starts afresh: its streams were closed with the last one.
    let d = run(
        &host,
        serde_json::json!({"host": "127.0.0.1", "port": port, "streams": 8}),
    )
    .await;
    assert_eq!(d["opened"], 8, "{d}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_egress_policy_applies_to_streams() {
    let port = drain();
    let public_only = EgressPolicy::new(EgressPreset::PublicOnly, &[], &[]).expect("policy");
    let host = host(true, public_only).await;
    let d = run(
        &host,
        serde_json::json!({"host": "127.0.0.1", "port": port, "streams": 1}),
    )
    .await;
    assert_eq!(d["opened"], 0, "{d}");
    assert!(
        d["openError"]
            .as_str()
            .is_some_and(|e| e.starts_with("Error::Denied") && e.contains("public-only")),
        "{d}"
    );
}
