//! One workspace with far more hanging checks than the node has room for: its checks use
//! at most their workspace's share of the check instances, rounds that cannot start are
//! skipped instead of queued, and another workspace's API calls, checks and alerts go on
//! as usual. (The time B's alert took is printed, not asserted: see docs/performance.md
//! for the benchmark figures.)

mod support;

use serde_json::json;
use std::time::{Duration, Instant};
use support::sinks::{Receiver, Silent};
use support::{Server, free_port, wait_for};

/// Hanging monitors of workspace A: more than the node's check instances.
const FLOOD: usize = 1_100;

#[test]
fn a_flood_of_hanging_checks_in_one_workspace_leaves_room_for_another() {
    let silent = Silent::start();
    let receiver = Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let a = server.client();

    // Workspace A: 1,100 monitors against a target that accepts and never answers.
    let creators: Vec<_> = (0..4)
        .map(|t| {
            let (a, url) = (a.clone(), silent.url());
            std::thread::spawn(move || {
                for i in (t..FLOOD).step_by(4) {
                    let r = a.post(
                        "/v1/monitors",
                        &json!({"name": format!("hang {i}"), "type": "http", "method": "GET",
                                "url": url, "interval": 20, "timeout": 20}),
                    );
                    assert_eq!(r.status, 201, "{}", r.body);
                }
            })
        })
        .collect();
    for c in creators {
        c.join().expect("creator");
    }
    let share = tocsin::plugins::limits::CHECKS_PER_WORKSPACE as i64;
    wait_for("A's checks hanging", Duration::from_secs(60), || {
        (silent.open() >= share).then_some(())
    });

    // Workspace B, meanwhile: its API validates, its check runs, its alert goes out.
    let ws_b = server.cli(&["workspace", "create", "--name", "B", "--plan", "business"]);
    let b = a.with_key(&server.cli(&["key", "create", "--workspace", &ws_b]));
    let started = Instant::now();
    let policy = b.post(
        "/v1/alert-policies",
        &json!({"name": "b", "failureThreshold": 1, "channels": [{"type": "webhook", "url": receiver.url("/b")}]}),
    );
    assert_eq!(policy.status, 201, "{}", policy.body);
    let monitor = b.post(
        "/v1/monitors",
        &json!({"name": "b", "type": "http", "method": "GET", "interval": 10,
                "url": format!("http://127.0.0.1:{}/", free_port()),
                "alertPolicyId": policy.body["data"]["id"]}),
    );
    assert_eq!(monitor.status, 201, "{}", monitor.body);
    wait_for("B's incident webhook", Duration::from_secs(60), || {
        (!receiver.at("/b").is_empty()).then_some(())
    });
    println!(
        "workspace B's incident webhook arrived {:.1} s after its policy was created, \
         with {FLOOD} of workspace A's checks hanging ({} connections open, peak {})",
        started.elapsed().as_secs_f64(),
        silent.open(),
        silent.peak()
    );
    assert!(
        silent.peak() <= share,
        "A held {} checks at once, more than its share of {share}",
        silent.peak()
    );
}
