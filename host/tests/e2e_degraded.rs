//! End to end: the degraded state. An http monitor with `degradedAfterMs` against a target
//! on loopback that starts answering slowly turns `degraded` after its policy's
//! `degradedThreshold` slow checks in a row, tells a webhook receiver
//! (`monitor.degraded`), shows "Degraded performance" on its public status page and keeps
//! 100 % uptime; when the target is fast again it is `up` and the receiver hears
//! `monitor.degraded_ended`. Bad settings are refused, naming the field, changing nothing.

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::sinks::Receiver;
use support::target::Target;
use support::{Server, create, wait_for};

#[test]
fn a_slow_target_makes_its_monitor_degraded_and_a_fast_one_up_again() {
    let target = Target::start();
    let receiver = Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();

    // Refused, naming the field; nothing is created.
    for (body, status, field) in [
        (json!({"degradedAfterMs": 0}), 400, "degradedAfterMs"),
        (json!({"degradedAfterMs": "fast"}), 400, "degradedAfterMs"),
        (
            json!({"degradedAfterMs": 3000, "timeout": 2}),
            422,
            "degradedAfterMs",
        ),
    ] {
        let mut monitor =
            json!({"name": "x", "type": "http", "url": target.url("/status"), "interval": 2});
        for (k, v) in body.as_object().expect("object") {
            monitor[k] = v.clone();
        }
        let r = api.post("/v1/monitors", &monitor);
        assert_eq!(r.status, status, "{body}: {}", r.body);
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
    let r = api.post(
        "/v1/monitors",
        &json!({"name": "hb", "type": "heartbeat", "period": 60, "degradedAfterMs": 500}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    for bad in [json!(0), json!(101), json!("3")] {
        let r = api.post(
            "/v1/alert-policies",
            &json!({"name": "x", "channels": [], "degradedThreshold": bad}),
        );
        r.assert_error(400, "VALIDATION_ERROR");
    }
    assert_eq!(api.get("/v1/monitors").body["pagination"]["total"], 0);
    assert_eq!(api.get("/v1/alert-policies").body["pagination"]["total"], 0);

    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Slow", "failureThreshold": 2, "degradedThreshold": 2, "notifyDegraded": true,
               "channels": [{"type": "webhook", "url": receiver.url("/alerts")}]}),
    );
    assert_eq!(
        (&policy["degradedThreshold"], &policy["notifyDegraded"]),
        (&json!(2), &json!(true))
    );
    let monitor = create(
        &api,
        "/v1/monitors",
        json!({"name": "Checkout", "type": "http", "url": target.url("/status"), "interval": 2,
               "timeout": 2, "degradedAfterMs": 400, "alertPolicyId": policy["id"]}),
    );
    assert_eq!(monitor["degradedAfterMs"], 400, "{monitor}");
    let id = monitor["id"].as_str().expect("id").to_string();
    let page = api.post(
        "/v1/status-pages",
        &json!({"slug": "shop", "name": "Shop", "monitorIds": [id]}),
    );
    assert_eq!(page.status, 201, "{}", page.body);
    let anon = api.without_key();
    let status_of = || {
        api.get(&format!("/v1/monitors/{id}")).body["data"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    wait_for("the monitor up", Duration::from_secs(20), || {
        (status_of() == "up").then_some(())
    });

    // Slow: degraded after two slow checks in a row, told once.
    target.set_delay_ms(900);
    wait_for("the monitor degraded", Duration::from_secs(30), || {
        (status_of() == "degraded").then_some(())
    });
    let told = wait_for("monitor.degraded", Duration::from_secs(20), || {
        receiver
            .at("/alerts")
            .into_iter()
            .find(|r| r.json["event"] == "monitor.degraded")
    });
    assert_eq!(told.json["monitor"]["id"], id.as_str(), "{}", told.json);
    assert_eq!(told.json["degraded"]["thresholdMs"], 400, "{}", told.json);
    assert_eq!(told.json["degraded"]["slowChecks"], 2, "{}", told.json);
    assert!(
        told.json["degraded"]["responseTime"]
            .as_u64()
            .is_some_and(|ms| ms >= 900),
        "{}",
        told.json
    );
    let public = anon.get("/status/shop.json");
    assert_eq!(
        public.body["status"], "degraded_performance",
        "{}",
        public.body
    );
    assert_eq!(
        public.body["monitors"][0]["status"], "degraded",
        "{}",
        public.body
    );
    let html = reqwest::blocking::get(format!("{}/status/shop", server.base))
        .expect("page")
        .text()
        .expect("text");
    assert!(html.contains("Degraded performance"), "{html}");
    // No incident, and uptime counts slow checks as up.
    let incidents = api.get(&format!("/v1/incidents?monitorId={id}"));
    assert_eq!(
        incidents.body["pagination"]["total"], 0,
        "{}",
        incidents.body
    );
    let uptime = api.get(&format!("/v1/monitors/{id}/uptime"));
    assert_eq!(
        uptime.body["data"]["uptimePercent"], 100.0,
        "{}",
        uptime.body
    );
    // Filtered and counted as its own state.
    let listed = api.get("/v1/monitors?status=degraded");
    assert_eq!(listed.body["pagination"]["total"], 1, "{}", listed.body);

    // Fast again: up at the next fast check, told once.
    target.set_delay_ms(0);
    wait_for("the monitor up again", Duration::from_secs(20), || {
        (status_of() == "up").then_some(())
    });
    let ended = wait_for("monitor.degraded_ended", Duration::from_secs(20), || {
        receiver
            .at("/alerts")
            .into_iter()
            .find(|r| r.json["event"] == "monitor.degraded_ended")
    });
    assert_eq!(ended.json["degraded"]["state"], "up", "{}", ended.json);
    std::thread::sleep(Duration::from_secs(2));
    let events: Vec<String> = receiver
        .at("/alerts")
        .into_iter()
        .map(|r| r.json["event"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        events,
        ["monitor.degraded", "monitor.degraded_ended"],
        "each change told once"
    );
    assert_eq!(anon.get("/status/shop.json").body["status"], "operational");
}
