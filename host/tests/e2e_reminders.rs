//! End to end: reminders. A policy's `repeatEvery` (minutes) sends an open incident's DOWN
//! again as `incident.reminder` to a webhook receiver over the wire, with how long it has
//! been down; an acknowledged incident gets none; bad settings are refused naming the
//! field, and the fields are in the OpenAPI document.

use crate::support;

use serde_json::json;
use std::time::{Duration, Instant};
use support::sinks::Receiver;
use support::{Server, create, ping, wait_for};

#[test]
fn an_unacknowledged_incident_is_reminded_and_an_acknowledged_one_is_not() {
    let receiver = Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();

    for (field, value) in [
        ("repeatEvery", json!(-1)),
        ("repeatEvery", json!(1441)),
        ("repeatEvery", json!("30")),
        ("repeatLimit", json!(0)),
        ("repeatLimit", json!(101)),
    ] {
        let r = api.post(
            "/v1/alert-policies",
            &json!({"name": "x", "channels": [{"type": "webhook", "url": receiver.url("/x")}], field: value}),
        );
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
    assert_eq!(
        api.get("/v1/alert-policies").body["pagination"]["total"],
        0,
        "refused policies change nothing"
    );

    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Remind", "failureThreshold": 1, "repeatEvery": 1,
               "channels": [{"type": "webhook", "url": receiver.url("/alerts")}]}),
    );
    assert_eq!(
        (&policy["repeatEvery"], &policy["repeatLimit"]),
        (&json!(1), &json!(10))
    );
    let id = policy["id"].as_str().expect("id");
    let r = api.patch(
        &format!("/v1/alert-policies/{id}"),
        &json!({"repeatLimit": 2}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = api.patch(
        &format!("/v1/alert-policies/{id}"),
        &json!({"name": "Remind me"}),
    );
    assert_eq!(
        (
            &r.body["data"]["repeatEvery"],
            &r.body["data"]["repeatLimit"]
        ),
        (&json!(1), &json!(2)),
        "{}",
        r.body
    );

    let monitor = |name: &str| {
        create(
            &api,
            "/v1/monitors",
            json!({"name": name, "type": "heartbeat", "period": 3600, "alertPolicyId": id}),
        )
    };
    let (left, acked) = (monitor("Left alone"), monitor("Acknowledged"));
    let opened = Instant::now();
    ping(&api, &left, "/fail");
    ping(&api, &acked, "/fail");
    let incident_of = |m: &serde_json::Value| {
        let list = api.get(&format!(
            "/v1/incidents?monitorId={}&status=open",
            m["id"].as_str().expect("id")
        ));
        list.body["data"][0].clone()
    };
    let (left_incident, acked_incident) = (incident_of(&left), incident_of(&acked));
    assert_eq!(left_incident["reminders"], 0, "{left_incident}");
    let created = chrono::DateTime::parse_from_rfc3339(
        left_incident["createdAt"].as_str().expect("createdAt"),
    )
    .expect("time");
    let next = chrono::DateTime::parse_from_rfc3339(
        left_incident["nextReminderAt"]
            .as_str()
            .expect("nextReminderAt"),
    )
    .expect("time");
    assert_eq!((next - created).num_seconds(), 60, "{left_incident}");
    let r = api.post(
        &format!(
            "/v1/incidents/{}/acknowledge",
            acked_incident["id"].as_str().expect("id")
        ),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["data"]["nextReminderAt"],
        serde_json::Value::Null,
        "{}",
        r.body
    );

    // A minute on: the incident left alone is reminded, over the wire.
    let reminder = wait_for("the reminder", Duration::from_secs(90), || {
        receiver
            .at("/alerts")
            .into_iter()
            .find(|r| r.json["event"] == "incident.reminder")
    });
    assert!(
        opened.elapsed() >= Duration::from_secs(59),
        "{:?}",
        opened.elapsed()
    );
    assert_eq!(
        reminder.json["incident"]["id"], left_incident["id"],
        "{}",
        reminder.json
    );
    assert_eq!(reminder.json["reminder"]["number"], 1, "{}", reminder.json);
    assert_eq!(reminder.json["reminder"]["limit"], 2, "{}", reminder.json);
    assert!(
        reminder.json["reminder"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("still down for 1 min")),
        "{}",
        reminder.json
    );
    assert_eq!(
        reminder.json["failure"]["reason"],
        left_incident["failure"]["reason"]
    );
    let shown = incident_of(&left);
    assert_eq!(shown["reminders"], 1, "{shown}");
    std::thread::sleep(Duration::from_secs(2));
    let reminded: Vec<_> = receiver
        .at("/alerts")
        .into_iter()
        .filter(|r| r.json["event"] == "incident.reminder")
        .collect();
    assert_eq!(reminded.len(), 1, "the acknowledged incident got none");

    let doc = api.get("/v1/openapi.json").body.to_string();
    for name in ["repeatEvery", "repeatLimit", "nextReminderAt"] {
        assert!(doc.contains(name), "{name} is in the OpenAPI document");
    }
}

#[test]
fn a_reminder_may_not_come_before_the_grouped_message_it_reminds_of() {
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let r = api.post(
        "/v1/alert-policies",
        &json!({"name": "x", "groupWindowSeconds": 120, "repeatEvery": 2,
                "channels": [{"type": "email", "target": "ops@tocsin.test"}]}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        r.body["error"]["details"][0]["field"], "repeatEvery",
        "{}",
        r.body
    );
    let made = api.post(
        "/v1/alert-policies",
        &json!({"name": "x", "groupWindowSeconds": 120, "repeatEvery": 3,
                "channels": [{"type": "email", "target": "ops@tocsin.test"}]}),
    );
    assert_eq!(made.status, 201, "{}", made.body);
}

#[test]
fn turning_reminders_on_reaches_incidents_already_open_and_off_stops_them() {
    let receiver = Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Quiet", "failureThreshold": 1,
               "channels": [{"type": "webhook", "url": receiver.url("/alerts")}]}),
    );
    let id = policy["id"].as_str().expect("id");
    let job = create(
        &api,
        "/v1/monitors",
        json!({"name": "Job", "type": "heartbeat", "period": 3600, "alertPolicyId": id}),
    );
    ping(&api, &job, "/fail");
    let incident = || {
        api.get(&format!(
            "/v1/incidents?monitorId={}&status=open",
            job["id"].as_str().expect("id")
        ))
        .body["data"][0]
            .clone()
    };
    assert_eq!(incident()["nextReminderAt"], serde_json::Value::Null);
    let r = api.patch(
        &format!("/v1/alert-policies/{id}"),
        &json!({"repeatEvery": 15}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let next = incident()["nextReminderAt"].clone();
    let at = chrono::DateTime::parse_from_rfc3339(next.as_str().expect("a next reminder"))
        .expect("time");
    let left = at.timestamp_millis() - chrono::Utc::now().timestamp_millis();
    assert!(
        (14 * 60_000..=15 * 60_000).contains(&left),
        "due in {left} ms"
    );
    // The incident's page says so.
    let owner = support::browser::sign_up_owner(&server);
    let page = owner
        .http
        .get(format!(
            "{}/incidents/{}",
            owner.base,
            incident()["id"].as_str().expect("id")
        ))
        .header(
            "cookie",
            format!(
                "tocsin_session={}",
                owner.cookie.as_deref().expect("signed in")
            ),
        )
        .send()
        .expect("page")
        .text()
        .expect("html");
    assert!(
        page.contains("<dt>Reminders</dt><dd>0 sent; the next at"),
        "{page}"
    );
    // A PATCH of something else leaves the schedule alone.
    let r = api.patch(
        &format!("/v1/alert-policies/{id}"),
        &json!({"name": "Less quiet"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(incident()["nextReminderAt"], next);
    let r = api.patch(
        &format!("/v1/alert-policies/{id}"),
        &json!({"repeatEvery": 0}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(incident()["nextReminderAt"], serde_json::Value::Null);
}
