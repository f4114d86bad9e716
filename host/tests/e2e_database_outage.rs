//! PostgreSQL goes away for 30 seconds and comes back. Meanwhile Tocsin stays up:
//! `/healthz` answers, `/readyz` says 503, API writes answer 503 `SERVICE_UNAVAILABLE` and
//! change nothing. Afterwards no incident and no delivery is lost or sent twice, the
//! results taken during the outage are recorded late (a recovery included), and checks go
//! on within an interval.

use crate::support;

use serde_json::json;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use support::pg::PrivatePg;
use support::sinks::Receiver;
use support::target::Target;
use support::{Server, wait_for};

const OUTAGE: Duration = Duration::from_secs(30);

#[test]
fn a_database_outage_loses_nothing_and_sends_nothing_twice() {
    let Some(pg) = PrivatePg::start("a_database_outage_loses_nothing_and_sends_nothing_twice")
    else {
        return;
    };
    let url = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(pg.database("tocsin"));
    let target = Target::start();
    let receiver = Receiver::start();
    let server = Server::start(&[
        ("TOCSIN_DATABASE_URL", &url),
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
    ]);
    let api = server.client();
    let secret = api.get("/v1/workspace/webhook-secret").body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    receiver.set_secret(&secret);
    let policy = api.post(
        "/v1/alert-policies",
        &json!({"name": "p", "failureThreshold": 1, "recoveryThreshold": 1,
                "channels": [{"type": "webhook", "url": receiver.url("/hook")}]}),
    );
    assert_eq!(policy.status, 201, "{}", policy.body);
    let monitor = api.post(
        "/v1/monitors",
        &json!({"name": "shop", "type": "http", "method": "GET", "url": target.url("/status"),
                "interval": 1, "alertPolicyId": policy.body["data"]["id"]}),
    );
    assert_eq!(monitor.status, 201, "{}", monitor.body);
    let id = monitor.body["data"]["id"].as_str().expect("id").to_string();

    // The target fails: an incident opens and its webhook arrives.
    target.set_status(503);
    wait_for("incident.created", Duration::from_secs(30), || {
        receiver
            .at("/hook")
            .iter()
            .any(|r| r.json["event"] == "incident.created" && r.answered == 200)
            .then_some(())
    });

    // The database goes away; the target recovers while it is away.
    pg.stop();
    let stopped = Instant::now();
    target.set_status(200);
    let bare = api.without_key();
    assert_eq!(bare.get("/healthz").status, 200, "healthz stays up");
    wait_for("readyz to say 503", Duration::from_secs(20), || {
        (bare.get("/readyz").status == 503).then_some(())
    });
    let refused = api.post(
        "/v1/monitors",
        &json!({"name": "during", "type": "http", "method": "GET", "url": target.url("/ok"), "interval": 60}),
    );
    refused.assert_error(503, "SERVICE_UNAVAILABLE");
    assert!(refused.headers.contains_key("retry-after"));
    std::thread::sleep(OUTAGE.saturating_sub(stopped.elapsed()));

    // It comes back.
    pg.start_again();
    wait_for("readyz to say 200", Duration::from_secs(30), || {
        (bare.get("/readyz").status == 200).then_some(())
    });
    wait_for("incident.resolved", Duration::from_secs(60), || {
        receiver
            .at("/hook")
            .iter()
            .any(|r| r.json["event"] == "incident.resolved" && r.answered == 200)
            .then_some(())
    });
    let back = chrono::Utc::now().timestamp_millis();
    // Checks go on: a result taken after the return is there within a few intervals.
    wait_for("a check after the outage", Duration::from_secs(20), || {
        let r = api.get(&format!("/v1/monitors/{id}/checks?limit=1"));
        let at = r.body["data"][0]["checkedAt"].as_str()?.to_string();
        let ms = chrono::DateTime::parse_from_rfc3339(&at)
            .ok()?
            .timestamp_millis();
        (ms > back).then_some(())
    });

    // One incident, opened and resolved; each event delivered exactly once.
    let incidents = api.get(&format!("/v1/incidents?monitorId={id}")).body;
    assert_eq!(incidents["pagination"]["total"], 1, "{incidents}");
    assert_eq!(incidents["data"][0]["status"], "resolved", "{incidents}");
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in receiver.at("/hook").iter().filter(|r| r.answered == 200) {
        assert!(r.verified, "a delivery with a bad signature: {}", r.body);
        *seen
            .entry(r.json["webhookId"].as_str().unwrap_or_default().to_string())
            .or_default() += 1;
    }
    assert!(
        seen.values().all(|n| *n == 1),
        "a delivery arrived twice: {seen:?}"
    );
    let events: Vec<String> = receiver
        .at("/hook")
        .iter()
        .filter(|r| r.answered == 200)
        .map(|r| r.json["event"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        events,
        ["incident.created", "incident.resolved"],
        "{events:?}"
    );
    // Nothing was created by the refused write.
    assert_eq!(api.get("/v1/monitors").body["pagination"]["total"], 1);
}
