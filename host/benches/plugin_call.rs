//! What a plugin call costs. Run with `cargo bench -p tocsin --bench plugin_call`.
//!
//! Prints, from one process so that the figures are comparable:
//! - plugin host start-up compiling the built-ins, reading them from the compile cache, and
//!   as the build compiled them;
//! - one plugin call without network (fresh instance + `validate-config`);
//! - one http check through the plugin against a loopback target, and the same exchange
//!   made natively by the host's http code with no plugin, as a ratio.

use std::sync::Arc;
use std::time::{Duration, Instant};
use tocsin::plugins::state::{CallContext, Grants, HostServices};
use tocsin::plugins::wit::http::Request;
use tocsin::plugins::{CheckRequest, PluginHost, PluginSource};

fn mean_us(total: Duration, n: u32) -> f64 {
    total.as_secs_f64() * 1e6 / f64::from(n)
}

async fn start_target() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = axum::Router::new().route("/ok", axum::routing::get(|| async { "all ok" }));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://{addr}/ok")
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

/// The same component with a custom section appended: it runs the same, but the server
/// no longer recognises it as a built-in, so it compiles it as it would on a machine the
/// build's artifacts do not suit.
fn unmatched(mut source: PluginSource) -> PluginSource {
    let name = b"tocsin-bench";
    source.bytes.push(0);
    source
        .bytes
        .push(u8::try_from(name.len() + 1).expect("short name"));
    source
        .bytes
        .push(u8::try_from(name.len()).expect("short name"));
    source.bytes.extend_from_slice(name);
    source
}

async fn run() {
    tocsin::crypto::install_provider();
    let cache = tempfile::tempdir().expect("tempdir");

    // Start-up: compiling the built-ins (a machine the build's artifacts do not suit, with
    // an empty compile cache), reading them from the compile cache (its restarts), and as
    // the build compiled them (every start on the build's machine).
    let t = Instant::now();
    let mut cold =
        PluginHost::new(Some(cache.path().to_path_buf()), &Default::default()).expect("host");
    cold.load_all(
        PluginHost::builtin_sources()
            .into_iter()
            .map(unmatched)
            .collect(),
    )
    .await;
    let cold_ms = t.elapsed().as_secs_f64() * 1e3;
    drop(cold);
    let t = Instant::now();
    let mut warm =
        PluginHost::new(Some(cache.path().to_path_buf()), &Default::default()).expect("host");
    warm.load_all(
        PluginHost::builtin_sources()
            .into_iter()
            .map(unmatched)
            .collect(),
    )
    .await;
    let warm_ms = t.elapsed().as_secs_f64() * 1e3;
    drop(warm);
    let t = Instant::now();
    let mut host = PluginHost::new(None, &Default::default()).expect("host");
    host.load_all(PluginHost::builtin_sources()).await;
    let built_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "plugin host start-up: compiling {cold_ms:.1} ms, from the compile cache {warm_ms:.1} ms, as built {built_ms:.1} ms (compiling / as built: {:.0}x), pooling allocator: {}",
        cold_ms / built_ms,
        host.is_pooling()
    );

    let host = Arc::new(host);
    let http = host.monitor("http").expect("http plugin");

    // One call without network: a fresh instance and a pure function.
    let config = r#"{"url":"http://127.0.0.1/","method":"GET","bodyContains":"ok"}"#.to_string();
    for _ in 0..200 {
        let _ = host.validate_monitor_config(&http, config.clone()).await;
    }
    let n = 5000;
    let t = Instant::now();
    for _ in 0..n {
        let r = host
            .validate_monitor_config(&http, config.clone())
            .await
            .expect("call");
        assert!(r.is_ok());
    }
    let call_us = mean_us(t.elapsed(), n);
    println!(
        "plugin call without network (instantiate + validate-config + drop): mean {call_us:.1} us over {n} calls"
    );

    // A full check through the plugin versus the same exchange done natively.
    let url = start_target().await;
    let check_config = format!(r#"{{"url":"{url}","method":"GET","bodyContains":"all ok"}}"#);
    let roots = tocsin::plugins::trust::load(None).expect("roots");
    let egress = Arc::new(tocsin::plugins::egress::EgressPolicy::default());
    let services = Arc::new(HostServices {
        http: tocsin::plugins::http::Clients::build(&roots.certs, egress.clone()).expect("clients"),
        smtp: None,
        tls_verifier: roots.verifier,
        egress,
    });
    let native_request = || Request {
        method: "GET".into(),
        url: url.clone(),
        headers: vec![],
        body: None,
        timeout_ms: 5000,
        follow_redirects: true,
        max_redirects: 10,
        max_body_bytes: 1 << 20,
        version: tocsin::plugins::wit::http::HttpVersion::Any,
    };
    let context = || CallContext {
        plugin: Arc::from("native"),
        grants: Grants::of([tocsin::plugins::Capability::Http]),
        services: services.clone(),
        budget_deadline: Instant::now() + Duration::from_secs(5),
        budget: Duration::from_secs(5),
        region: None,
        attachments: std::sync::Arc::from([]),
    };
    let per_round = 200u32;
    let rounds = 5;
    let (mut plugin_total, mut native_total) = (Duration::ZERO, Duration::ZERO);
    for round in 0..=rounds {
        let t = Instant::now();
        for _ in 0..per_round {
            let o = host
                .check(
                    &http,
                    CheckRequest {
                        config: check_config.clone(),
                        timeout_ms: 5000,
                        monitor_id: "mon_bench".into(),
                        region: "local".into(),
                        settings: "{}".into(),
                        attempt: 1,
                    },
                )
                .await
                .expect("check");
            assert!(o.ok, "{:?}", o.reason);
        }
        let plugin = t.elapsed();
        let t = Instant::now();
        for _ in 0..per_round {
            let r = tocsin::plugins::http::send(&context(), native_request())
                .await
                .expect("native");
            assert!(r.status == 200 && r.body.windows(6).any(|w| w == b"all ok"));
        }
        let native = t.elapsed();
        // Round 0 warms connections and caches.
        if round > 0 {
            plugin_total += plugin;
            native_total += native;
        }
    }
    let checks = per_round * rounds;
    let plugin_us = mean_us(plugin_total, checks);
    let native_us = mean_us(native_total, checks);
    println!(
        "http check on loopback: through the plugin {plugin_us:.1} us, native {native_us:.1} us, ratio {:.3} ({checks} checks each, interleaved)",
        plugin_us / native_us
    );
}
