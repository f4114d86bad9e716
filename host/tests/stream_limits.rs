//! Contract 0.2.0's TCP streams and 0.3.0's UDP sockets are capabilities like the others
//! and run under the call's limits: a plugin from the plugins directory gets none until
//! `tcp` (or `udp`) is granted, holds at most 8 of each at once, moves at most 4 MiB
//! through them, and reaches only what the egress policy allows (shown without sending a
//! packet: the policy refuses before any socket is connected).

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

async fn host(granted: &[&str], egress: EgressPolicy) -> PluginHost {
    tocsin::crypto::install_provider();
    let mut grants = BTreeMap::new();
    grants.insert(
        "test-streams".to_string(),
        PluginGrant {
            capabilities: granted.iter().map(|c| c.to_string()).collect(),
            ..PluginGrant::default()
        },
    );
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
    let host = host(&["udp"], EgressPolicy::default()).await;
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
    let host = host(&["tcp"], EgressPolicy::default()).await;
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
    let host = host(&["tcp", "udp"], public_only).await;
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

/// A UDP socket that reads and drops every datagram, on its own thread.
fn sink() -> u16 {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let port = socket.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        let mut buf = [0u8; 65_536];
        while socket.recv_from(&mut buf).is_ok() {}
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sockets_need_the_udp_grant_apart_from_tcp() {
    let port = sink();
    let host = host(&["tcp", "net"], EgressPolicy::default()).await;
    let d = run(
        &host,
        serde_json::json!({"host": "127.0.0.1", "port": port, "streams": 1, "udp": true}),
    )
    .await;
    assert_eq!(d["opened"], 0, "{d}");
    let error = d["openError"].as_str().unwrap_or("");
    assert!(
        error.starts_with("Error::Denied")
            && error.contains("udp")
            && error.contains("[plugin_grants.test-streams]"),
        "{d}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_holds_at_most_eight_sockets_and_moves_at_most_four_mib() {
    let port = sink();
    let host = host(&["udp"], EgressPolicy::default()).await;
    let d = run(
        &host,
        serde_json::json!({"host": "127.0.0.1", "port": port, "streams": 9, "bytes": 5 << 20,
                           "udp": true}),
    )
    .await;
    assert_eq!(d["opened"], 8, "{d}");
    assert!(
        d["openError"]
            .as_str()
            .is_some_and(|e| e.starts_with("Error::Limit") && e.contains("at most 8 UDP sockets")),
        "{d}"
    );
    // 69 datagrams of 60,000 bytes fit in 4 MiB; the 70th is refused.
    assert_eq!(d["written"], 69 * 60_000, "{d}");
    assert!(
        d["writeError"]
            .as_str()
            .is_some_and(|e| e.starts_with("Error::Limit") && e.contains("4 MiB")),
        "{d}"
    );
    let d = run(
        &host,
        serde_json::json!({"host": "127.0.0.1", "port": port, "streams": 8, "udp": true}),
    )
    .await;
    assert_eq!(d["opened"], 8, "the next call starts afresh: {d}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_egress_policy_applies_to_sockets() {
    let port = sink();
    let public_only = EgressPolicy::new(EgressPreset::PublicOnly, &[], &[]).expect("policy");
    let host = host(&["udp"], public_only).await;
    let d = run(
        &host,
        serde_json::json!({"host": "127.0.0.1", "port": port, "streams": 1, "udp": true}),
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
