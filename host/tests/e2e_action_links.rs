//! End to end: one-click links in alerts. A DOWN e-mail (over SMTP to a sink) carries
//! acknowledge, snooze and resolve links; opening one (a GET, as a mail scanner would)
//! changes nothing and shows who the action will be recorded as; its button (a POST,
//! without any session or key) acts once, on the incident's timeline and in the audit log.
//! A second use, an altered link and an expired one are refused; a snooze link holds the
//! monitor's next alert. Webhook receivers get the same links in the payload's `actions`.

use crate::support;

use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::sinks::{Receiver, SmtpSink};
use support::{Server, create, ping, wait_for};

/// The links of a mail's text part, by label (quoted-printable undone).
fn links_in(data: &str) -> Vec<(String, String)> {
    let text = data
        .replace("=\r\n", "")
        .replace("=\n", "")
        .replace("=3D", "=");
    let mut links = Vec::new();
    for label in ["Acknowledge", "Snooze 1 h", "Snooze until 09:00", "Resolve"] {
        let prefix = format!("{label}: ");
        if let Some(line) = text.lines().find(|l| l.starts_with(&prefix)) {
            links.push((label.to_string(), line[prefix.len()..].trim().to_string()));
        }
    }
    links
}

fn link<'a>(links: &'a [(String, String)], label: &str) -> &'a str {
    &links
        .iter()
        .find(|(l, _)| l == label)
        .unwrap_or_else(|| panic!("no {label} link in {links:?}"))
        .1
}

fn text(r: reqwest::blocking::Response) -> (u16, String) {
    let status = r.status().as_u16();
    (status, r.text().unwrap_or_default())
}

#[test]
fn a_down_mail_links_act_once_after_confirmation_and_never_on_a_get() {
    let smtp = SmtpSink::start();
    let receiver = Receiver::start();
    let port = smtp.port.to_string();
    let lifetime_secs = 25;
    let lifetime = format!("{lifetime_secs}s");
    let server = Server::start(&[
        ("TOCSIN_SMTP_HOST", "127.0.0.1"),
        ("TOCSIN_SMTP_PORT", &port),
        ("TOCSIN_SMTP_TLS", "none"),
        ("TOCSIN_SMTP_FROM", "Tocsin <alerts@tocsin.test>"),
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_ACTION_LINK_LIFETIME", &lifetime),
    ]);
    let api = server.client();
    // A browser without session or key: redirects not followed, cookies not kept.
    let browser = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");

    // The workspace's time zone says when "until 09:00" is; a bad one is refused.
    api.patch("/v1/workspace", &json!({"timeZone": "Mars/Olympus"}))
        .assert_error(400, "VALIDATION_ERROR");
    let r = api.patch("/v1/workspace", &json!({"timeZone": "Europe/Paris"}));
    assert_eq!(r.body["data"]["timeZone"], "Europe/Paris", "{}", r.body);

    let channel = create(
        &api,
        "/v1/channels",
        json!({"name": "On-call mail", "type": "email", "target": "oncall@example.test"}),
    );
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Page", "failureThreshold": 1, "recoveryThreshold": 1,
               "channels": [{"channelId": channel["id"]},
                            {"type": "webhook", "url": receiver.url("/alerts")}]}),
    );
    let job = create(
        &api,
        "/v1/monitors",
        json!({"name": "Nightly export", "type": "heartbeat", "period": 3600,
               "alertPolicyId": policy["id"]}),
    );
    ping(&api, &job, "/fail");
    let minted = Instant::now();
    let mail = wait_for("the DOWN mail", Duration::from_secs(20), || {
        smtp.mails_to("oncall@example.test").into_iter().next()
    });
    let links = links_in(&mail.data);
    assert_eq!(links.len(), 4, "{}", mail.data);
    let incident = api.get(&format!(
        "/v1/incidents?monitorId={}",
        job["id"].as_str().expect("id")
    ));
    let incident_id = incident.body["data"][0]["id"]
        .as_str()
        .expect("incident")
        .to_string();
    for (_, url) in &links {
        assert!(url.starts_with(&format!("{}/act/", server.base)), "{url}");
    }
    // The webhook receiver gets links of its own, in the payload.
    let down = wait_for("the DOWN webhook", Duration::from_secs(20), || {
        receiver
            .at("/alerts")
            .into_iter()
            .find(|r| r.json["event"] == "incident.created")
    });
    let hooked = &down.json["actions"];
    for key in ["acknowledge", "snooze1h", "snoozeUntilMorning", "resolve"] {
        let url = hooked[key]
            .as_str()
            .unwrap_or_else(|| panic!("{key}: {}", down.json));
        assert!(
            !links.iter().any(|(_, u)| u == url),
            "each delivery has its own links"
        );
    }

    let ack = link(&links, "Acknowledge").to_string();
    let status_of = || {
        api.get(&format!("/v1/incidents/{incident_id}")).body["data"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // Opening the link (twice, as a scanner and a person would) changes nothing.
    for _ in 0..2 {
        let (status, page) = text(browser.get(&ack).send().expect("GET"));
        assert_eq!(status, 200, "{page}");
        assert!(
            page.contains("Acknowledge the incident on Nightly export?"),
            "{page}"
        );
        assert!(
            page.contains("On-call mail (email channel, from the alert)"),
            "{page}"
        );
        assert!(page.contains("<form method=\"post\">"), "{page}");
        assert_eq!(status_of(), "open");
    }
    let r = browser.get(&ack).send().expect("GET");
    let policy_header = r
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(
        policy_header.contains("frame-ancestors 'none'"),
        "{policy_header}"
    );
    assert_eq!(
        r.headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some("no-store")
    );

    // An altered link is no link at all.
    let mut altered = ack.clone();
    let last = altered.pop().expect("char");
    altered.push(if last == 'a' { 'b' } else { 'a' });
    assert_eq!(text(browser.get(&altered).send().expect("GET")).0, 404);
    assert_eq!(text(browser.post(&altered).send().expect("POST")).0, 404);
    assert_eq!(
        text(
            browser
                .post(format!("{}/act/not-a-token!", server.base))
                .send()
                .expect("POST")
        )
        .0,
        404
    );
    assert_eq!(status_of(), "open");

    // The button acts, as the channel's recipient, once.
    let (status, page) = text(browser.post(&ack).send().expect("POST"));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Acknowledged"), "{page}");
    let inc = api.get(&format!("/v1/incidents/{incident_id}")).body["data"].clone();
    assert_eq!(inc["status"], "acknowledged", "{inc}");
    assert_eq!(
        inc["acknowledgedBy"], "On-call mail (email channel, from the alert)",
        "{inc}"
    );
    let (status, page) = text(browser.post(&ack).send().expect("POST"));
    assert_eq!(status, 410, "{page}");
    assert!(page.contains("works once"), "{page}");
    assert_eq!(text(browser.get(&ack).send().expect("GET")).0, 410);
    // The webhook (told of acknowledgements) hears it once.
    wait_for(
        "the acknowledgement webhook",
        Duration::from_secs(20),
        || {
            receiver
                .at("/alerts")
                .into_iter()
                .find(|r| r.json["event"] == "incident.acknowledged")
        },
    );
    // The webhook's own acknowledge link now changes nothing, and stays usable for nothing
    // else than what it says.
    let hooked_ack = hooked["acknowledge"]
        .as_str()
        .expect("acknowledge")
        .to_string();
    let (status, page) = text(browser.post(&hooked_ack).send().expect("POST"));
    assert_eq!(status, 409, "{page}");
    // Members, even with a read key, see delivery payloads with the links redacted.
    let read = api.post("/v1/api-keys", &json!({"name": "reader", "role": "read"}));
    let reader = server
        .client()
        .with_key(read.body["data"]["secret"].as_str().expect("secret"));
    let listed = reader.get("/v1/webhook-deliveries?limit=100");
    assert_eq!(listed.status, 200, "{}", listed.body);
    let shown = listed.body.to_string();
    assert!(shown.contains("/act/[redacted]"), "{shown}");
    let token = hooked_ack.rsplit('/').next().expect("token");
    assert!(!shown.contains(token), "a live link shown to a reader");
    // In the audit log, with the link as the actor.
    let audit = api.get("/v1/audit-log?action=incident.acknowledge");
    let entry = audit.body["data"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["action"] == "incident.acknowledge"))
        .cloned()
        .unwrap_or_else(|| panic!("{}", audit.body));
    assert_eq!(entry["actor"]["type"], "link", "{entry}");
    assert_eq!(
        entry["actor"]["name"], "On-call mail (email channel, from the alert)",
        "{entry}"
    );
    assert_eq!(entry["resource"]["id"], incident_id.as_str(), "{entry}");

    // "Until 09:00" is the workspace's 09:00; snoozing from the link holds the next alert.
    let (status, page) = text(
        browser
            .get(link(&links, "Snooze until 09:00"))
            .send()
            .expect("GET"),
    );
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("09:00 (Europe/Paris)?"), "{page}");
    let snooze = link(&links, "Snooze 1 h").to_string();
    let monitor_path = format!("/v1/monitors/{}", job["id"].as_str().expect("id"));
    assert_eq!(text(browser.get(&snooze).send().expect("GET")).0, 200);
    assert_eq!(
        api.get(&monitor_path).body["data"]["snoozedUntil"],
        Value::Null,
        "a GET snoozes nothing"
    );
    let (status, page) = text(browser.post(&snooze).send().expect("POST"));
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("is snoozed until"), "{page}");
    let until = api.get(&monitor_path).body["data"]["snoozedUntil"].clone();
    let until =
        chrono::DateTime::parse_from_rfc3339(until.as_str().expect("snoozedUntil")).expect("time");
    let ahead = until
        .signed_duration_since(chrono::Utc::now())
        .num_minutes();
    assert!((55..=60).contains(&ahead), "{ahead} min");
    let timeline =
        api.get(&format!("/v1/incidents/{incident_id}")).body["data"]["timeline"].clone();
    assert!(
        timeline
            .as_array()
            .is_some_and(|t| t.iter().any(|e| e["kind"] == "snoozed")),
        "{timeline}"
    );
    // Back up, then down again: the new incident is held by the snooze, and no mail goes.
    ping(&api, &job, "");
    wait_for("the recovery", Duration::from_secs(20), || {
        (status_of() == "resolved").then_some(())
    });
    let mails_before = smtp.mails_to("oncall@example.test").len();
    ping(&api, &job, "/fail");
    let held = wait_for("the second incident", Duration::from_secs(20), || {
        let list = api.get(&format!(
            "/v1/incidents?monitorId={}&status=open",
            job["id"].as_str().expect("id")
        ));
        list.body["data"]
            .as_array()
            .and_then(|l| l.first().cloned())
    });
    assert_eq!(held["hold"]["reason"], "snoozed", "{held}");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        smtp.mails_to("oncall@example.test").len(),
        mails_before,
        "the snooze holds the mail"
    );

    // Resolve from the first mail: its incident is resolved already, so nothing changes.
    let (status, page) = text(browser.post(link(&links, "Resolve")).send().expect("POST"));
    assert_eq!(status, 409, "{page}");

    // Past the lifetime, an unused link is refused and changes nothing.
    let expired = link(&links, "Snooze until 09:00").to_string();
    let wait = Duration::from_secs(lifetime_secs + 1).saturating_sub(minted.elapsed());
    std::thread::sleep(wait);
    let (status, page) = text(browser.post(&expired).send().expect("POST"));
    assert_eq!(status, 410, "{page}");
    assert!(page.contains("expired"), "{page}");
    let after = api.get(&monitor_path).body["data"]["snoozedUntil"].clone();
    assert_eq!(
        chrono::DateTime::parse_from_rfc3339(after.as_str().expect("snoozedUntil")).expect("time"),
        until,
        "an expired link changes nothing"
    );
}

#[test]
fn telegram_buttons_act_through_the_bots_updates_once_and_only_with_the_secret() {
    use support::sinks::FakeTelegram;
    let telegram = FakeTelegram::start();
    let server = Server::start(&[
        ("TOCSIN_TELEGRAM_API_BASE", &telegram.base),
        ("TOCSIN_TELEGRAM_BOT_TOKEN", "123456:TEST-TOKEN"),
        ("TOCSIN_TELEGRAM_WEBHOOK_SECRET", "hook-Secret_1"),
    ]);
    let api = server.client();
    let channel = create(
        &api,
        "/v1/channels",
        json!({"name": "Ops chat", "type": "telegram", "chatId": "-100200"}),
    );
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Chat", "failureThreshold": 1, "channels": [{"channelId": channel["id"]}]}),
    );
    let job = create(
        &api,
        "/v1/monitors",
        json!({"name": "Backup", "type": "heartbeat", "period": 3600, "alertPolicyId": policy["id"]}),
    );
    ping(&api, &job, "/fail");
    let message = wait_for("the DOWN message", Duration::from_secs(20), || {
        telegram.messages().into_iter().next()
    });
    // Buttons that call back (the public URL is plain http: links could not be buttons).
    let keyboard = &message.body["reply_markup"]["inline_keyboard"];
    assert_eq!(keyboard[0][0]["text"], "Acknowledge", "{}", message.body);
    let data = keyboard[0][0]["callback_data"]
        .as_str()
        .expect("callback_data")
        .to_string();
    assert!(data.starts_with("a:") && data.len() <= 64, "{data}");
    assert!(keyboard[0][0].get("url").is_none());
    assert!(
        !message.body["text"]
            .as_str()
            .unwrap_or("")
            .contains("/act/")
    );

    let press = |secret: Option<&str>, data: &str, id: &str| {
        let mut req = reqwest::blocking::Client::new()
            .post(format!("{}/telegram/updates", server.base))
            .json(&json!({"update_id": 1, "callback_query": {
                "id": id, "data": data,
                "from": {"id": 4242, "is_bot": false, "first_name": "Alice", "username": "alice_oncall"},
                "message": {"message_id": 1, "chat": {"id": -100200}}}}));
        if let Some(s) = secret {
            req = req.header("X-Telegram-Bot-Api-Secret-Token", s);
        }
        req.send().expect("update").status().as_u16()
    };
    let incident = || {
        let list = api.get(&format!(
            "/v1/incidents?monitorId={}",
            job["id"].as_str().expect("id")
        ));
        list.body["data"][0].clone()
    };
    // Without the secret, or with another, nothing happens.
    assert_eq!(press(None, &data, "q0"), 401);
    assert_eq!(press(Some("hook-Secret_2"), &data, "q0"), 401);
    assert_eq!(incident()["status"], "open");
    assert!(telegram.answers().is_empty());
    // Other updates are ignored.
    assert_eq!(press(Some("hook-Secret_1"), "something else", "q1"), 200);
    assert_eq!(incident()["status"], "open");

    // The press acknowledges, as the person in the channel, and says so.
    assert_eq!(press(Some("hook-Secret_1"), &data, "q2"), 200);
    let inc = incident();
    assert_eq!(inc["status"], "acknowledged", "{inc}");
    assert_eq!(
        inc["acknowledgedBy"],
        "@alice_oncall in Telegram, via Ops chat (telegram channel, from the alert)",
        "{inc}"
    );
    let answers = telegram.answers();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0].token, "123456:TEST-TOKEN");
    assert_eq!(answers[0].body["callback_query_id"], "q2");
    assert_eq!(answers[0].body["text"], "Acknowledged");
    // Pressed again: used, nothing changes.
    assert_eq!(press(Some("hook-Secret_1"), &data, "q3"), 200);
    let again = telegram.answers();
    assert_eq!(again.len(), 2);
    assert!(
        again[1].body["text"]
            .as_str()
            .unwrap_or("")
            .contains("used already"),
        "{:?}",
        again[1].body
    );
    // A made-up token is no button.
    assert_eq!(
        press(
            Some("hook-Secret_1"),
            "a:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "q4"
        ),
        200
    );
    assert_eq!(
        telegram.answers()[2].body["text"],
        "This button is not valid"
    );

    // A server that does not receive updates has no such route to act through.
    let plain = Server::start(&[]);
    let r = reqwest::blocking::Client::new()
        .post(format!("{}/telegram/updates", plain.base))
        .header("X-Telegram-Bot-Api-Secret-Token", "anything")
        .json(&json!({}))
        .send()
        .expect("update");
    assert_eq!(r.status().as_u16(), 404);
}
