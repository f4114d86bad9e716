//! End to end: fast re-checks. A monitor's `retryInterval` brings the check after a
//! failure forward until the policy's threshold decides: a 60 s monitor with a threshold
//! of 3 alerts a webhook receiver about 10 s after its first failure instead of two
//! minutes, then keeps its minute; a failure that passes on its re-check goes back to the
//! minute without an incident. Bad values are refused naming the field.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::sinks::Receiver;
use support::target::Target;
use support::{Api, Server, create, wait_for};

/// The monitor's checks, oldest first: (checked at, Unix ms; passed).
fn checks(api: &Api, id: &str) -> Vec<(i64, bool)> {
    let r = api.get(&format!("/v1/monitors/{id}/checks?limit=100"));
    assert_eq!(r.status, 200, "{}", r.body);
    let mut list: Vec<(i64, bool)> = r.body["data"]
        .as_array()
        .expect("checks")
        .iter()
        .map(|c| {
            let at =
                tocsin::time::parse_ms(c["checkedAt"].as_str().expect("checkedAt")).expect("time");
            (at, c["ok"] == true)
        })
        .collect();
    list.sort_unstable();
    list
}

#[test]
fn a_failure_is_checked_again_soon_and_alerts_at_the_threshold() {
    let receiver = Receiver::start();
    let target = Target::start();
    target.set_status(500);
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Three strikes", "failureThreshold": 3,
               "channels": [{"type": "webhook", "url": receiver.url("/alerts")}]}),
    );
    let http = |extra: Value| {
        // A 30 s timeout: after its re-checks the rhythm's next round starts at least that
        // long after the last one, well after this test's quiet spell.
        let mut body = json!({"name": "Shop", "type": "http", "url": target.url("/status"),
            "method": "GET", "interval": 60, "timeout": 30, "alertPolicyId": policy["id"]});
        for (k, v) in extra.as_object().expect("object") {
            body[k] = v.clone();
        }
        body
    };

    // Refused, naming the field, and nothing made.
    for (body, status, code) in [
        (http(json!({"retryInterval": 0})), 400, "VALIDATION_ERROR"),
        (http(json!({"retryInterval": "5"})), 400, "VALIDATION_ERROR"),
        (http(json!({"retryInterval": 5.5})), 400, "VALIDATION_ERROR"),
        (
            http(json!({"retryInterval": 61})),
            422,
            "UNPROCESSABLE_ENTITY",
        ),
        (
            http(json!({"retryInterval": 5, "regionalConfirmation": true})),
            400,
            "VALIDATION_ERROR",
        ),
        (
            json!({"name": "Job", "type": "heartbeat", "period": 60, "retryInterval": 5}),
            400,
            "VALIDATION_ERROR",
        ),
    ] {
        let r = api.post("/v1/monitors", &body);
        r.assert_error(status, code);
        assert_eq!(
            r.body["error"]["details"][0]["field"], "retryInterval",
            "{body}: {}",
            r.body
        );
    }
    assert_eq!(api.get("/v1/monitors").body["pagination"]["total"], 0);

    let monitor = create(&api, "/v1/monitors", http(json!({"retryInterval": 5})));
    assert_eq!(monitor["retryInterval"], 5, "{monitor}");
    let id = monitor["id"].as_str().expect("id");

    // The first check fails; two re-checks 5 s apart make three failures.
    let created = wait_for("the incident", Duration::from_secs(40), || {
        receiver
            .at("/alerts")
            .into_iter()
            .find(|r| r.json["event"] == "incident.created")
    });
    let seen = checks(&api, id);
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen.iter().all(|(_, ok)| !ok), "{seen:?}");
    for pair in seen.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(
            (4_000..=8_000).contains(&gap),
            "re-checks 5 s apart: {seen:?}"
        );
    }
    let opened = tocsin::time::parse_ms(
        created.json["incident"]["createdAt"]
            .as_str()
            .expect("createdAt"),
    )
    .expect("time");
    assert!(
        opened - seen[0].0 < 15_000,
        "alerted {} ms after the first failure",
        opened - seen[0].0
    );

    // Down: the minute's rhythm again, no more re-checks.
    std::thread::sleep(Duration::from_secs(12));
    assert_eq!(
        checks(&api, id).len(),
        3,
        "no re-check once the incident is open"
    );
    assert_eq!(
        api.get(&format!("/v1/monitors/{id}")).body["data"]["status"],
        "down"
    );

    // Edits keep the setting, and null turns it off.
    let r = api.patch(
        &format!("/v1/monitors/{id}"),
        &json!({"name": "Shop front"}),
    );
    assert_eq!(r.body["data"]["retryInterval"], 5, "{}", r.body);
    let r = api.patch(
        &format!("/v1/monitors/{id}"),
        &json!({"retryInterval": null}),
    );
    assert_eq!(r.body["data"]["retryInterval"], Value::Null, "{}", r.body);
    let doc = api.get("/v1/openapi.json").body.to_string();
    assert!(doc.contains("retryInterval"), "in the OpenAPI document");
}

#[test]
fn a_failure_that_passes_its_re_check_goes_back_to_the_interval() {
    let target = Target::start();
    // The first check fails; everything after passes.
    target.fail_next(1);
    let server = Server::start(&[]);
    let api = server.client();
    let monitor = create(
        &api,
        "/v1/monitors",
        json!({"name": "Blip", "type": "http", "url": target.url("/status"),
               "method": "GET", "interval": 30, "timeout": 20, "retryInterval": 2}),
    );
    let id = monitor["id"].as_str().expect("id");
    let seen = wait_for("the re-check", Duration::from_secs(30), || {
        let seen = checks(&api, id);
        (seen.len() >= 2).then_some(seen)
    });
    assert_eq!(
        seen.iter().map(|(_, ok)| *ok).collect::<Vec<_>>(),
        [false, true],
        "{seen:?}"
    );
    let gap = seen[1].0 - seen[0].0;
    assert!(
        (1_500..=5_000).contains(&gap),
        "re-checked 2 s later: {seen:?}"
    );
    // Passed: the next check is the interval's, not another re-check (the rhythm's next
    // round starts at least the 20 s timeout after the re-check), and it comes.
    std::thread::sleep(Duration::from_secs(10));
    let quiet = checks(&api, id);
    assert_eq!(quiet.len(), 2, "back to every 30 s: {quiet:?}");
    let seen = wait_for("the next round", Duration::from_secs(60), || {
        let seen = checks(&api, id);
        (seen.len() >= 3).then_some(seen)
    });
    assert!(seen[2].1, "{seen:?}");
    let gap = seen[2].0 - seen[1].0;
    assert!(
        (15_000..=55_000).contains(&gap),
        "the interval's round: {seen:?}"
    );
    let m = api.get(&format!("/v1/monitors/{id}")).body["data"].clone();
    assert_eq!(m["status"], "up", "{m}");
    assert_eq!(
        api.get(&format!("/v1/incidents?monitorId={id}")).body["pagination"]["total"],
        0
    );
}
