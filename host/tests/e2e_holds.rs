//! End to end: notifications held and let go. A parent's outage suppresses its children's
//! incidents (no notification) and those still down when it recovers are notified then;
//! a snoozed monitor or tag holds its notifications and sends one when the snooze ends.
//! Monitors here are heartbeat monitors, so a test sets each one up or down with one ping.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::sinks::{Received, Receiver};
use support::{Api, Server, wait_for};

fn create(api: &Api, path: &str, body: Value) -> Value {
    let r = api.post(path, &body);
    assert_eq!(r.status, 201, "{path}: {}", r.body);
    r.body["data"].clone()
}

/// Ping a heartbeat monitor's URL (`signal` "" for success, "/fail" for failure) and wait
/// until the check is committed (the ping answers then).
fn ping(api: &Api, monitor: &Value, signal: &str) {
    let url = monitor["pingUrl"].as_str().expect("pingUrl");
    let path = &url[url.find("/ping/").expect("ping path")..];
    let r = api
        .without_key()
        .raw("POST", &format!("{path}{signal}"), None, Vec::new());
    assert_eq!(r.status, 200, "{}", r.body);
}

fn job(api: &Api, name: &str, policy: &Value, extra: Value) -> Value {
    let mut body = json!({"name": name, "type": "heartbeat", "period": 3600,
                          "alertPolicyId": policy["id"]});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    create(api, "/v1/monitors", body)
}

fn incident_of(api: &Api, monitor: &Value) -> Value {
    let id = monitor["id"].as_str().expect("id");
    api.get(&format!("/v1/incidents?monitorId={id}")).body["data"][0].clone()
}

/// Events the receiver got, as (event, monitor name).
fn events(receiver: &Receiver) -> Vec<(String, String)> {
    receiver
        .at("/alerts")
        .into_iter()
        .map(|r: Received| {
            (
                r.json["event"].as_str().unwrap_or("").to_string(),
                r.json["monitor"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn has(receiver: &Receiver, event: &str, name: &str) -> bool {
    events(receiver)
        .iter()
        .any(|(e, n)| e == event && n == name)
}

/// Long enough for the release sweep (every second) to have acted on anything it would.
const SETTLE: Duration = Duration::from_millis(3500);

#[test]
fn a_parent_outage_suppresses_its_children_until_it_recovers() {
    let receiver = Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Site", "failureThreshold": 1, "recoveryThreshold": 1,
               "channels": [{"type": "webhook", "url": receiver.url("/alerts")}]}),
    );
    let router = job(&api, "Core router", &policy, json!({}));
    let children: Vec<Value> = ["Web", "Database", "Queue"]
        .iter()
        .map(|n| job(&api, n, &policy, json!({"dependsOn": [router["id"]]})))
        .collect();
    assert_eq!(children[0]["dependsOn"], json!([router["id"]]));

    // Loops and unknown parents are refused, and change nothing.
    let r = api.patch(
        &format!("/v1/monitors/{}", router["id"].as_str().expect("id")),
        &json!({"dependsOn": [children[0]["id"]]}),
    );
    r.assert_error(422, "UNPROCESSABLE_ENTITY");
    assert_eq!(
        r.body["error"]["details"][0]["field"], "dependsOn",
        "{}",
        r.body
    );
    let r = api.patch(
        &format!("/v1/monitors/{}", children[1]["id"].as_str().expect("id")),
        &json!({"dependsOn": ["mon_00000000000000000000000000"]}),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        api.get(&format!(
            "/v1/monitors/{}",
            router["id"].as_str().expect("id")
        ))
        .body["data"]["dependsOn"],
        json!([])
    );

    // The parent goes down and is notified.
    ping(&api, &router, "/fail");
    wait_for("the router's alert", Duration::from_secs(15), || {
        has(&receiver, "incident.created", "Core router").then_some(())
    });

    // The children fail too: their incidents open suppressed, naming the parent.
    for c in &children {
        ping(&api, c, "/fail");
    }
    for c in &children {
        let inc = incident_of(&api, c);
        assert_eq!(inc["status"], "suppressed", "{inc}");
        assert_eq!(inc["notified"], false, "{inc}");
        assert_eq!(inc["hold"]["reason"], "dependency", "{inc}");
        assert_eq!(inc["hold"]["monitorName"], "Core router", "{inc}");
        assert_eq!(inc["hold"]["monitorId"], router["id"], "{inc}");
    }
    // The suppressed list filter finds them.
    let listed = api.get("/v1/incidents?status=suppressed").body;
    assert_eq!(listed["data"].as_array().map(Vec::len), Some(3), "{listed}");

    // One child recovers during the parent's outage: nobody hears of it at all.
    ping(&api, &children[2], "");
    let queue = incident_of(&api, &children[2]);
    assert_eq!(queue["status"], "resolved", "{queue}");
    std::thread::sleep(SETTLE);
    let only_router: Vec<(String, String)> = events(&receiver);
    assert_eq!(
        only_router,
        vec![("incident.created".to_string(), "Core router".to_string())],
        "children were notified during the parent's outage"
    );

    // The parent recovers; the two children still down are notified then, once each.
    ping(&api, &router, "");
    for name in ["Web", "Database"] {
        wait_for(name, Duration::from_secs(15), || {
            has(&receiver, "incident.created", name).then_some(())
        });
    }
    std::thread::sleep(SETTLE);
    let mut got = events(&receiver);
    got.sort();
    assert_eq!(
        got,
        vec![
            ("incident.created".to_string(), "Core router".to_string()),
            ("incident.created".to_string(), "Database".to_string()),
            ("incident.created".to_string(), "Web".to_string()),
            ("incident.resolved".to_string(), "Core router".to_string()),
        ]
    );
    for c in &children[..2] {
        let inc = incident_of(&api, c);
        assert_eq!(inc["status"], "open", "{inc}");
        assert_eq!(inc["notified"], true, "{inc}");
        assert_eq!(inc["hold"], Value::Null, "{inc}");
        let full = api.get(&format!(
            "/v1/incidents/{}",
            inc["id"].as_str().expect("id")
        ));
        let kinds: Vec<&str> = full.body["data"]["timeline"]
            .as_array()
            .expect("timeline")
            .iter()
            .filter_map(|e| e["kind"].as_str())
            .collect();
        assert_eq!(
            kinds,
            ["created", "held", "released", "notified"],
            "{kinds:?}"
        );
    }
    // Their recovery is notified like any other.
    ping(&api, &children[0], "");
    wait_for("Web's recovery", Duration::from_secs(15), || {
        has(&receiver, "incident.resolved", "Web").then_some(())
    });
}

#[test]
fn a_snooze_holds_notifications_and_lets_one_go_when_it_ends() {
    let receiver = Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Ops", "failureThreshold": 1, "recoveryThreshold": 1,
               "channels": [{"type": "webhook", "url": receiver.url("/alerts")}]}),
    );
    let backup = job(&api, "Backup", &policy, json!({}));
    let backup_id = backup["id"].as_str().expect("id").to_string();

    // Bad requests are refused with the field named, and snooze nothing.
    for (body, field) in [
        (json!({}), "until"),
        (json!({"minutes": 0}), "minutes"),
        (json!({"minutes": 600000}), "minutes"),
        (
            json!({"minutes": 5, "until": "2099-01-01T00:00:00Z"}),
            "until",
        ),
        (json!({"until": "2000-01-01T00:00:00Z"}), "until"),
        (json!({"until": "tomorrow"}), "until"),
        (json!({"hours": 1}), "hours"),
    ] {
        let r = api.post(&format!("/v1/monitors/{backup_id}/snooze"), &body);
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(
            r.body["error"]["details"][0]["field"], field,
            "{body}: {}",
            r.body
        );
    }
    api.post(
        "/v1/monitors/mon_00000000000000000000000000/snooze",
        &json!({"minutes": 5}),
    )
    .assert_error(404, "MONITOR_NOT_FOUND");
    assert_eq!(
        api.get(&format!("/v1/monitors/{backup_id}")).body["data"]["snoozedUntil"],
        Value::Null
    );

    // Snoozed for an hour, the monitor fails: the incident opens held, nobody is told.
    let r = api.post(
        &format!("/v1/monitors/{backup_id}/snooze"),
        &json!({"minutes": 60}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let until = r.body["data"]["snoozedUntil"]
        .as_str()
        .expect("until")
        .to_string();
    let listed = api.get("/v1/snoozes").body;
    assert_eq!(
        listed["data"]["monitors"][0]["monitorId"],
        backup_id.as_str(),
        "{listed}"
    );
    assert_eq!(listed["data"]["monitors"][0]["until"], until.as_str());
    ping(&api, &backup, "/fail");
    let inc = incident_of(&api, &backup);
    assert_eq!(inc["status"], "open", "{inc}");
    assert_eq!(inc["notified"], false, "{inc}");
    assert_eq!(inc["hold"]["reason"], "snoozed", "{inc}");
    assert_eq!(inc["hold"]["until"], until.as_str(), "{inc}");
    std::thread::sleep(SETTLE);
    assert!(events(&receiver).is_empty(), "{:?}", events(&receiver));

    // Ending the snooze while it is still down sends one notification.
    let r = api.delete(&format!("/v1/monitors/{backup_id}/snooze"));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["snoozedUntil"], Value::Null);
    wait_for("the held notification", Duration::from_secs(15), || {
        has(&receiver, "incident.created", "Backup").then_some(())
    });

    // Snoozed again, it recovers: the recovery is held until the snooze ends.
    api.post(
        &format!("/v1/monitors/{backup_id}/snooze"),
        &json!({"minutes": 30}),
    );
    ping(&api, &backup, "");
    let inc = incident_of(&api, &backup);
    assert_eq!(inc["status"], "resolved", "{inc}");
    assert_eq!(inc["hold"]["reason"], "snoozed", "{inc}");
    std::thread::sleep(SETTLE);
    assert!(!has(&receiver, "incident.resolved", "Backup"));
    api.delete(&format!("/v1/monitors/{backup_id}/snooze"));
    wait_for("the held recovery", Duration::from_secs(15), || {
        has(&receiver, "incident.resolved", "Backup").then_some(())
    });

    // A tag's snooze covers every monitor with the tag, and ends by itself.
    let db = job(&api, "Replica lag", &policy, json!({"tags": ["db"]}));
    let other = job(&api, "Cache", &policy, json!({"tags": ["cache"]}));
    let end = chrono::Utc::now() + chrono::Duration::seconds(6);
    let r = api.post(
        "/v1/tags/db/snooze",
        &json!({"until": end.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["monitorCount"], 1, "{}", r.body);
    let listed = api.get("/v1/snoozes").body;
    assert_eq!(listed["data"]["tags"][0]["tag"], "db", "{listed}");
    ping(&api, &db, "/fail");
    ping(&api, &other, "/fail");
    wait_for(
        "the unsnoozed monitor's alert",
        Duration::from_secs(15),
        || has(&receiver, "incident.created", "Cache").then_some(()),
    );
    assert_eq!(incident_of(&api, &db)["hold"]["reason"], "snoozed");
    assert!(!has(&receiver, "incident.created", "Replica lag"));
    // Still down when the snooze runs out: notified once, then.
    wait_for("the tag snooze's end", Duration::from_secs(20), || {
        has(&receiver, "incident.created", "Replica lag").then_some(())
    });
    std::thread::sleep(SETTLE);
    let count = events(&receiver)
        .iter()
        .filter(|(e, n)| e == "incident.created" && n == "Replica lag")
        .count();
    assert_eq!(count, 1);
    api.delete("/v1/tags/db/snooze")
        .assert_error(404, "SNOOZE_NOT_FOUND");
    api.post("/v1/tags/no%20spaces/snooze", &json!({"minutes": 5}))
        .assert_error(400, "VALIDATION_ERROR");
}
