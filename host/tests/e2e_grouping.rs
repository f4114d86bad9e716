//! End to end: a policy's group window. A burst of ten incidents goes out as one e-mail
//! and one Telegram message listing them all, while the webhook receiver gets ten events
//! at once, each with the same `incident.groupId`. Monitors are heartbeat monitors, so a
//! test fails one with one ping.

use crate::support;

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::time::Duration;
use support::sinks::{FakeTelegram, Receiver, SmtpSink};
use support::{Server, create, ping, wait_for};

/// Long enough for anything else the outbox would send to have arrived.
const SETTLE: Duration = Duration::from_millis(3500);
/// The policy's window: long enough to hold the whole burst on a slow machine.
const WINDOW_SECS: u64 = 15;

#[test]
fn a_burst_of_incidents_is_one_email_one_telegram_message_and_ten_webhooks() {
    let receiver = Receiver::start();
    let smtp = SmtpSink::start();
    let telegram = FakeTelegram::start();
    let port = smtp.port.to_string();
    let server = Server::start(&[
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_SMTP_HOST", "127.0.0.1"),
        ("TOCSIN_SMTP_PORT", &port),
        ("TOCSIN_SMTP_TLS", "none"),
        ("TOCSIN_SMTP_FROM", "Tocsin <alerts@tocsin.test>"),
        ("TOCSIN_TELEGRAM_API_BASE", &telegram.base),
        ("TOCSIN_TELEGRAM_BOT_TOKEN", "123456:TEST-TOKEN"),
        ("TOCSIN_PUBLIC_URL", "https://tocsin.test"),
    ]);
    let api = server.client();
    let channels = json!([
        {"type": "email", "target": "ops@tocsin.test"},
        {"type": "telegram", "chatId": "-1001"},
        {"type": "webhook", "url": receiver.url("/alerts")},
    ]);

    // The window is 0 to 3600 seconds; anything else is refused.
    for bad in [json!(-1), json!(3601), json!("60"), json!(1.5)] {
        let r = api.post(
            "/v1/alert-policies",
            &json!({"name": "x", "channels": [], "groupWindowSeconds": bad}),
        );
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(
            r.body["error"]["details"][0]["field"], "groupWindowSeconds",
            "{}",
            r.body
        );
    }
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Fleet", "failureThreshold": 1, "recoveryThreshold": 1,
               "notifyOnRecovery": false, "groupWindowSeconds": WINDOW_SECS,
               "channels": channels}),
    );
    assert_eq!(policy["groupWindowSeconds"], WINDOW_SECS);
    let unchanged = api.patch(
        &format!("/v1/alert-policies/{}", policy["id"].as_str().expect("id")),
        &json!({"name": "Fleet of ten"}),
    );
    assert_eq!(
        unchanged.body["data"]["groupWindowSeconds"], WINDOW_SECS,
        "{}",
        unchanged.body
    );

    let names: Vec<String> = (1..=10).map(|n| format!("worker-{n:02}")).collect();
    let monitors: Vec<Value> = names
        .iter()
        .map(|n| {
            create(
                &api,
                "/v1/monitors",
                json!({"name": n, "type": "heartbeat", "period": 3600,
                       "alertPolicyId": policy["id"]}),
            )
        })
        .collect();

    // The burst: ten failures in a row.
    for m in &monitors {
        ping(&api, m, "/fail");
    }

    // Webhooks: ten events at once, one per incident, sharing one group id.
    let events = wait_for("ten webhook events", Duration::from_secs(20), || {
        let got = receiver.at("/alerts");
        (got.len() >= 10).then_some(got)
    });
    let group_ids: BTreeSet<String> = events
        .iter()
        .map(|e| {
            assert_eq!(e.json["event"], "incident.created", "{}", e.json);
            e.json["incident"]["groupId"]
                .as_str()
                .expect("groupId")
                .to_string()
        })
        .collect();
    assert_eq!(group_ids.len(), 1, "{group_ids:?}");
    let group_id = group_ids.into_iter().next().expect("a group");
    assert!(group_id.starts_with("grp_"), "{group_id}");
    let webhook_names: BTreeSet<String> = events
        .iter()
        .map(|e| e.json["monitor"]["name"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(webhook_names.len(), 10);
    // The incidents show the group too.
    let listed = api.get("/v1/incidents?limit=100").body;
    let incidents = listed["data"].as_array().expect("incidents");
    assert_eq!(incidents.len(), 10, "{listed}");
    assert!(incidents.iter().all(|i| i["groupId"] == group_id.as_str()));

    // E-mail and Telegram: one message each when the window closes, naming all ten.
    let mails = wait_for(
        "the grouped e-mail",
        Duration::from_secs(WINDOW_SECS + 30),
        || {
            let m = smtp.mails();
            (!m.is_empty()).then_some(m)
        },
    );
    let messages = wait_for(
        "the grouped Telegram message",
        Duration::from_secs(30),
        || {
            let m = telegram.messages();
            (!m.is_empty()).then_some(m)
        },
    );
    std::thread::sleep(SETTLE);
    let mails_after = smtp.mails();
    assert_eq!(mails_after.len(), 1, "{mails_after:?}");
    let mail = &mails[0];
    assert!(
        mail.data.contains(
            "Subject: DOWN: 10 monitors down: worker-01, worker-02, worker-03 and 7 more"
        ),
        "{}",
        mail.data
    );
    for n in &names {
        assert!(mail.data.contains(n.as_str()), "{n} missing: {}", mail.data);
    }
    assert_eq!(telegram.messages().len(), 1);
    let text = messages[0].body["text"].as_str().expect("text");
    assert!(text.contains("10 monitors down"), "{text}");
    for n in &names {
        assert!(text.contains(n.as_str()), "{n} missing: {text}");
    }
    assert_eq!(receiver.at("/alerts").len(), 10, "one webhook per incident");
}
