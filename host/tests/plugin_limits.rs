//! A plugin that loops, eats memory or traps fails only its own call; the runtime and
//! other plugins keep working. Also: the compile cache, and refusals at load time.

use crate::support;

use support::target;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tocsin::plugins::{CallError, CheckRequest, LoadError, PluginHost, PluginSource};

fn guest(name: &str) -> PluginSource {
    let path = Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join(format!("tocsin_guest_{name}.wasm"));
    PluginSource {
        origin: path.display().to_string(),
        bytes: std::fs::read(&path).expect("test guest built by build.rs"),
    }
}

fn request(config: &str, timeout_ms: u32) -> CheckRequest {
    CheckRequest {
        config: config.into(),
        timeout_ms,
        monitor_id: "mon_test".into(),
        region: "local".into(),
        settings: "{}".into(),
        attempt: 1,
    }
}

async fn host() -> Arc<PluginHost> {
    tocsin::crypto::install_provider();
    let mut host = PluginHost::new(None, &Default::default()).expect("runtime");
    let mut sources = PluginHost::builtin_sources();
    sources.extend(["spin", "hog", "trap"].map(guest));
    let refused = host.load_all(sources).await;
    assert!(
        refused.is_empty(),
        "refused: {:?}",
        refused
            .iter()
            .map(|(o, e)| format!("{o}: {e}"))
            .collect::<Vec<_>>()
    );
    Arc::new(host)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_looping_plugin_is_stopped_at_its_deadline() {
    let host = host().await;
    let spin = host.monitor("test-spin").expect("spin loaded");
    let started = Instant::now();
    let err = host
        .check(&spin, request("{}", 300))
        .await
        .expect_err("must not finish");
    let elapsed = started.elapsed();
    assert_eq!(err, CallError::Deadline(800));
    assert!(err.to_string().contains("did not finish within 800 ms"));
    // Stopped near its deadline (budget + margin), not left running.
    assert!(elapsed >= Duration::from_millis(800), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
}

/// The epoch ticker that stops a looping guest runs only while some call runs: an idle
/// server does not wake up a hundred times a second for nothing. And after idling, a
/// looping guest is still stopped at its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_epoch_ticks_only_while_a_call_runs() {
    let host = host().await;
    let spin = host.monitor("test-spin").expect("spin loaded");
    for round in 0..2 {
        // Loading ran calls; let the tick that was under way finish.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let idle = host.epoch_ticks();
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(host.epoch_ticks(), idle, "round {round}: ticked while idle");

        let started = Instant::now();
        let err = host
            .check(&spin, request("{}", 100))
            .await
            .expect_err("must not finish");
        assert_eq!(err, CallError::Deadline(600), "round {round}");
        let elapsed = started.elapsed();
        assert!(
            elapsed < Duration::from_secs(3),
            "round {round}: {elapsed:?}"
        );
        // 600 ms of spinning at one tick per 10 ms.
        let ticked = host.epoch_ticks() - idle;
        assert!(
            ticked >= 20,
            "round {round}: {ticked} ticks while the guest ran"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_hog_is_stopped_at_its_cap() {
    let host = host().await;
    let hog = host.monitor("test-hog").expect("hog loaded");
    let err = host
        .check(&hog, request("{}", 5000))
        .await
        .expect_err("must not finish");
    assert_eq!(err, CallError::Memory(64));
    assert_eq!(
        err.to_string(),
        "plugin exceeded its memory limit of 64 MiB"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trapping_plugin_fails_its_call() {
    let host = host().await;
    let trap = host.monitor("test-trap").expect("trap loaded");
    match host.check(&trap, request("{}", 1000)).await {
        Err(CallError::Trap(reason)) => assert!(reason.contains("unreachable"), "{reason}"),
        other => panic!("expected a trap, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_plugins_leave_others_working() {
    let target = target::Target::start();
    let host = host().await;
    let http = host.monitor("http").expect("http loaded");
    let config = format!(
        r#"{{"url":"{}","method":"GET","bodyContains":"all ok"}}"#,
        target.url("/ok")
    );

    // Run the three bad guests at the same time as good checks.
    let mut bad = Vec::new();
    for name in ["test-spin", "test-hog", "test-trap"] {
        let host = host.clone();
        bad.push(tokio::spawn(async move {
            let p = host.monitor(name).expect("loaded");
            host.check(&p, request("{}", 1500)).await
        }));
    }
    for _ in 0..5 {
        let outcome = host
            .check(&http, request(&config, 2000))
            .await
            .expect("http check runs");
        assert!(outcome.ok, "{:?}", outcome.reason);
    }
    for task in bad {
        assert!(task.await.expect("task").is_err());
    }
    // And after them, the same plugins run again from fresh instances.
    let outcome = host
        .check(&http, request(&config, 2000))
        .await
        .expect("http check runs");
    assert!(outcome.ok);
    assert!(
        host.check(
            &host.monitor("test-trap").expect("trap"),
            request("{}", 500)
        )
        .await
        .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_plugin_validates_configs() {
    let host = host().await;
    let http = host.monitor("http").expect("http loaded");
    let normalized = host
        .validate_monitor_config(
            &http,
            r#"{"url":"http://127.0.0.1/","method":"get"}"#.into(),
        )
        .await
        .expect("call")
        .expect("valid");
    let v: serde_json::Value = serde_json::from_str(&normalized).expect("json");
    assert_eq!(v["method"], "GET");
    assert_eq!(v["maxRedirects"], 10);
    let problems = host
        .validate_monitor_config(
            &http,
            r#"{"url":"nope","method":"GET","maxRedirects":50}"#.into(),
        )
        .await
        .expect("call")
        .expect_err("invalid");
    let fields: Vec<_> = problems.iter().map(|p| p.field.as_str()).collect();
    assert_eq!(fields, ["url", "maxRedirects"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_refusals_and_the_compile_cache() {
    tocsin::crypto::install_provider();
    let cache = tempfile::tempdir().expect("tempdir");
    let mut host =
        PluginHost::new(Some(cache.path().to_path_buf()), &Default::default()).expect("runtime");
    assert!(
        host.load_all(PluginHost::builtin_sources())
            .await
            .is_empty()
    );
    let cached = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(cache.path())
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    };
    assert_eq!(
        cached().len(),
        0,
        "the built-ins come compiled by the build: nothing to compile or cache"
    );
    // A plugin from outside is compiled once and kept.
    assert!(host.load_all(vec![guest("fetch")]).await.is_empty());
    assert_eq!(cached().len(), 1, "one compiled artifact per component");
    let fetch_entry = cached().remove(0);

    // The same name twice is refused, naming the one already loaded.
    let again = host
        .load(PluginHost::builtin_sources().remove(0))
        .await
        .expect_err("clash");
    assert!(
        matches!(&again, LoadError::Clash { origin, .. } if origin == "builtin"),
        "{again}"
    );
    // Nor may a plugin take the name of the server's own `heartbeat` monitor type.
    let impostor = std::fs::read(
        std::path::Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join("tocsin_guest_impostor.wasm"),
    )
    .expect("the impostor guest");
    let refused = host
        .load(PluginSource {
            origin: "impostor.wasm".into(),
            bytes: impostor,
        })
        .await
        .expect_err("heartbeat is taken");
    assert!(
        matches!(&refused, LoadError::Clash { kind: "monitor", name, .. } if name == "heartbeat"),
        "{refused}"
    );
    assert!(refused.to_string().contains("built-in"), "{refused}");
    // Not a component at all.
    let junk = host
        .load(PluginSource {
            origin: "junk".into(),
            bytes: b"hello".to_vec(),
        })
        .await
        .expect_err("junk");
    assert!(matches!(junk, LoadError::Compile(_)), "{junk}");

    // A second host loads from the cache (and still works).
    let mut warm =
        PluginHost::new(Some(cache.path().to_path_buf()), &Default::default()).expect("runtime");
    let entries = cached().len();
    let before = std::fs::metadata(&fetch_entry)
        .and_then(|m| m.modified())
        .expect("cache entry");
    assert!(
        warm.load_all(PluginHost::builtin_sources())
            .await
            .is_empty()
    );
    assert!(warm.load_all(vec![guest("fetch")]).await.is_empty());
    assert!(warm.monitor("http").is_some());
    assert_eq!(cached().len(), entries);
    assert_eq!(
        std::fs::metadata(&fetch_entry)
            .and_then(|m| m.modified())
            .expect("cache entry"),
        before,
        "the second host read the cache entry rather than compiling again"
    );
    // A corrupt cache entry is ignored and replaced.
    for entry in cached() {
        std::fs::write(entry, b"corrupt").expect("corrupt");
    }
    let mut third =
        PluginHost::new(Some(cache.path().to_path_buf()), &Default::default()).expect("runtime");
    assert!(third.load_all(vec![guest("fetch")]).await.is_empty());
    assert!(third.monitor("test-fetch").is_some());
    assert_ne!(
        std::fs::read(&fetch_entry).expect("cache entry"),
        b"corrupt",
        "the corrupt entry was replaced"
    );
}

/// The built-ins, and the trap and spin guests loaded as the server loads its built-ins:
/// their instances are kept between one workspace's checks.
async fn keeping_host() -> Arc<PluginHost> {
    tocsin::crypto::install_provider();
    let mut host = PluginHost::new(None, &Default::default()).expect("runtime");
    let mut sources = PluginHost::builtin_sources();
    sources.extend(["spin", "trap"].map(|name| PluginSource {
        origin: "builtin".into(),
        ..guest(name)
    }));
    let refused = host.load_all(sources).await;
    assert!(refused.is_empty(), "refused: {refused:?}");
    Arc::new(host)
}

/// How many checks the instance that answered has made (the trap guest's `count` mode).
async fn calls(host: &PluginHost, workspace: &str) -> u64 {
    let trap = host.monitor("test-trap").expect("trap loaded");
    let outcome = host
        .check_for(workspace, &trap, request(r#"{"count":true}"#, 1000))
        .await
        .expect("counting check answers");
    let details: serde_json::Value = serde_json::from_str(&outcome.details).expect("json");
    details["calls"].as_u64().expect("calls")
}

/// A workspace's checks one after another share one instance of a built-in; another
/// workspace never gets it (no guest state crosses tenants), and an instance whose call
/// failed is never used again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_keeps_its_own_instances_and_never_a_failed_one() {
    let host = keeping_host().await;
    let trap = host.monitor("test-trap").expect("trap loaded");
    assert_eq!(
        calls(&host, "ws_a").await,
        1,
        "the first check starts an instance"
    );
    assert_eq!(calls(&host, "ws_a").await, 2, "the next one reuses it");
    assert_eq!(calls(&host, "ws_a").await, 3);
    assert_eq!(
        calls(&host, "ws_b").await,
        1,
        "another workspace: its own instance"
    );
    assert_eq!(calls(&host, "ws_a").await, 4, "and ws_a's is still its own");
    assert_eq!(host.kept_instances().reused(), 3);

    // A trap drops the instance it happened in: ws_a's next check starts afresh.
    match host.check_for("ws_a", &trap, request("{}", 1000)).await {
        Err(CallError::Trap(reason)) => assert!(reason.contains("unreachable"), "{reason}"),
        other => panic!("expected a trap, got {other:?}"),
    }
    assert_eq!(
        calls(&host, "ws_a").await,
        1,
        "a trapped instance is not kept"
    );

    // So does a deadline.
    let spin = host.monitor("test-spin").expect("spin loaded");
    let before = host.kept_instances().idle();
    assert!(matches!(
        host.check_for("ws_a", &spin, request("{}", 100)).await,
        Err(CallError::Deadline(_))
    ));
    assert_eq!(
        host.kept_instances().idle(),
        before,
        "a stopped instance is not kept"
    );

    // Plugins from files are never kept: each check gets a fresh instance.
    let plain = {
        let mut h = PluginHost::new(None, &Default::default()).expect("runtime");
        assert!(h.load_all(vec![guest("trap")]).await.is_empty());
        h
    };
    assert_eq!(calls(&plain, "ws_a").await, 1);
    assert_eq!(
        calls(&plain, "ws_a").await,
        1,
        "a plugin from a file is not kept"
    );
    assert_eq!(plain.kept_instances().reused(), 0);
}

/// The http built-in gives the same verdicts in a kept instance as in a fresh one: each
/// check sees its own configuration, never the last one's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_instance_checks_each_monitor_by_its_own_configuration() {
    let target = target::Target::start();
    let host = keeping_host().await;
    let http = host.monitor("http").expect("http loaded");
    let up = format!(r#"{{"url":"{}","method":"GET"}}"#, target.url("/ok"));
    let down = format!(r#"{{"url":"{}","method":"GET"}}"#, target.url("/nowhere"));
    for round in 0..3 {
        let a = host
            .check_for("ws_a", &http, request(&up, 2000))
            .await
            .expect("check runs");
        assert!(a.ok, "round {round}: {:?}", a.reason);
        let b = host
            .check_for("ws_a", &http, request(&down, 2000))
            .await
            .expect("check runs");
        assert!(!b.ok, "round {round}");
        assert_eq!(b.status_code, Some(404), "round {round}");
    }
    assert_eq!(
        host.kept_instances().reused(),
        5,
        "one instance served the six checks"
    );
}
