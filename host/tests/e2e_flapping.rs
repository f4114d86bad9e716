//! End to end: a flapping target. With a policy watching for flapping (more than three
//! changes within a minute), the first three changes are told as usual; the fourth makes
//! the monitor flapping and is told as that, once (`monitor.flapping_started`), and nothing
//! more is sent until it has been stable for a minute; then one summary goes out
//! (`monitor.flapping` to the webhook, a FLAPPING e-mail).

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::sinks::{Receiver, SmtpSink};
use support::{Server, create, ping, wait_for};

fn events(receiver: &Receiver) -> Vec<String> {
    receiver
        .at("/alerts")
        .into_iter()
        .map(|r| r.json["event"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_flapping_target_is_told_once_in_a_summary() {
    let receiver = Receiver::start();
    let smtp = SmtpSink::start();
    let port = smtp.port.to_string();
    let server = Server::start(&[
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_SMTP_HOST", "127.0.0.1"),
        ("TOCSIN_SMTP_PORT", &port),
        ("TOCSIN_SMTP_TLS", "none"),
        ("TOCSIN_SMTP_FROM", "Tocsin <alerts@tocsin.test>"),
    ]);
    let api = server.client();

    // Bad settings are refused, naming the field.
    for (flapping, field) in [
        (
            json!({"changes": 1, "windowMinutes": 5}),
            "flapping.changes",
        ),
        (
            json!({"changes": 3, "windowMinutes": 0}),
            "flapping.windowMinutes",
        ),
        (json!({"changes": 3}), "flapping.windowMinutes"),
        (
            json!({"changes": 3, "windowMinutes": 5, "x": 1}),
            "flapping.x",
        ),
        (json!(true), "flapping"),
    ] {
        let r = api.post(
            "/v1/alert-policies",
            &json!({"name": "x", "channels": [], "flapping": flapping}),
        );
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Flaky", "failureThreshold": 1, "recoveryThreshold": 1,
               "flapping": {"changes": 3, "windowMinutes": 1},
               "channels": [{"type": "webhook", "url": receiver.url("/alerts")},
                            {"type": "email", "target": "ops@tocsin.test"}]}),
    );
    assert_eq!(
        policy["flapping"],
        json!({"changes": 3, "windowMinutes": 1})
    );
    let job = create(
        &api,
        "/v1/monitors",
        json!({"name": "Flaky job", "type": "heartbeat", "period": 3600,
               "alertPolicyId": policy["id"]}),
    );

    // Down, up, down: told as usual.
    for signal in ["/fail", "", "/fail"] {
        ping(&api, &job, signal);
    }
    wait_for("three alerts", Duration::from_secs(15), || {
        (events(&receiver).len() >= 3).then_some(())
    });
    // Up, down, up, down: flapping from the fourth change, told once; nothing more is
    // sent.
    for signal in ["", "/fail", "", "/fail"] {
        ping(&api, &job, signal);
    }
    let started = wait_for("the start of the flapping", Duration::from_secs(15), || {
        receiver
            .at("/alerts")
            .into_iter()
            .find(|r| r.json["event"] == "monitor.flapping_started")
    });
    assert_eq!(
        (
            &started.json["flapping"]["changes"],
            &started.json["flapping"]["windowMinutes"],
            &started.json["flapping"]["state"],
        ),
        (&json!(4), &json!(1), &json!("up")),
        "{}",
        started.json
    );
    assert!(
        started.json["flapping"]["since"].is_string(),
        "{}",
        started.json
    );
    let started_mail = wait_for("the start's e-mail", Duration::from_secs(15), || {
        smtp.mails().into_iter().find(|m| {
            m.data
                .contains("Subject: FLAPPING: Flaky job changed state 4 times in 1 min")
        })
    });
    assert!(
        started_mail
            .data
            .contains("alerts are held until it settles"),
        "{}",
        started_mail.data
    );
    let held = api.get(&format!(
        "/v1/incidents?monitorId={}&status=open",
        job["id"].as_str().expect("id")
    ));
    assert_eq!(
        held.body["data"][0]["hold"]["reason"], "flapping",
        "{}",
        held.body
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        events(&receiver),
        [
            "incident.created",
            "incident.resolved",
            "incident.created",
            "monitor.flapping_started"
        ],
        "notified while flapping"
    );

    // A minute without a change: one summary, saying it is down now.
    let summary = wait_for("the summary", Duration::from_secs(90), || {
        receiver
            .at("/alerts")
            .into_iter()
            .find(|r| r.json["event"] == "monitor.flapping")
    });
    assert_eq!(
        summary.json["flapping"]["state"], "down",
        "{}",
        summary.json
    );
    assert_eq!(summary.json["flapping"]["changes"], 7, "{}", summary.json);
    assert_eq!(summary.json["monitor"]["name"], "Flaky job");
    assert!(
        summary.json["incident"]["id"].is_string(),
        "{}",
        summary.json
    );
    let mail = wait_for("the summary e-mail", Duration::from_secs(15), || {
        smtp.mails().into_iter().find(|m| {
            m.data
                .contains("Subject: FLAPPING: Flaky job changed state 7")
        })
    });
    assert!(
        mail.data.contains("changed state 7 times, now DOWN"),
        "{}",
        mail.data
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(events(&receiver).len(), 5, "exactly one summary");
    let mails = smtp.mails();
    assert_eq!(
        mails
            .iter()
            .filter(|m| m.data.contains("Subject: FLAPPING"))
            .count(),
        2,
        "the start and the summary"
    );

    // Once settled, a recovery is told like any other.
    ping(&api, &job, "");
    wait_for("the recovery", Duration::from_secs(15), || {
        (events(&receiver).last().map(String::as_str) == Some("incident.resolved")).then_some(())
    });
}
