//! End to end: planned maintenance told to status-page subscribers. A window's
//! `subscriberNoticeMinutes` before it starts (a day by default; a minute here, for a
//! window 40 s away) the confirmed subscribers of a public page showing a monitor it
//! covers get `status_page.maintenance` (`scheduled`), by e-mail and signed webhook, once;
//! when it ends, `ended`. A window covering none of the page's monitors, or with notices
//! off, tells nobody. Bad values are refused naming the field.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::sinks::{Receiver, SmtpSink};
use support::{Server, create, wait_for};

fn maintenance_events(receiver: &Receiver) -> Vec<Value> {
    receiver
        .at("/sub")
        .into_iter()
        .map(|r| r.json)
        .filter(|j| j["event"] == "status_page.maintenance")
        .collect()
}

#[test]
fn subscribers_hear_of_planned_maintenance_before_it_starts_and_when_it_ends() {
    let receiver = Receiver::start();
    let smtp = SmtpSink::start();
    let port = smtp.port.to_string();
    let server = Server::start(&[
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        // The receiver listens on loopback.
        ("TOCSIN_SUBSCRIPTIONS_ALLOW_PRIVATE_TARGETS", "true"),
        ("TOCSIN_SMTP_HOST", "127.0.0.1"),
        ("TOCSIN_SMTP_PORT", &port),
        ("TOCSIN_SMTP_TLS", "none"),
        ("TOCSIN_SMTP_FROM", "Tocsin <status@tocsin.test>"),
    ]);
    let api = server.client();
    let public = api.without_key();
    let heartbeat = |name: &str| {
        create(
            &api,
            "/v1/monitors",
            json!({"name": name, "type": "heartbeat", "period": 3600}),
        )
    };
    let (shop, search, internal) = (
        heartbeat("Shop"),
        heartbeat("Search"),
        heartbeat("Internal"),
    );
    let page = create(
        &api,
        "/v1/status-pages",
        json!({"slug": "shop", "name": "Shop status", "monitorIds": [shop["id"], search["id"]]}),
    );
    let page_id = page["id"].as_str().expect("id");

    // A webhook subscriber, approved; an e-mail subscriber, confirmed.
    let r = public.post(
        "/status/shop/subscribe",
        &json!({"webhookUrl": receiver.url("/sub")}),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    receiver.set_secret(r.body["data"]["secret"].as_str().expect("secret"));
    let subs = api.get(&format!("/v1/status-pages/{page_id}/subscribers"));
    let hook = subs.body["data"][0]["id"].as_str().expect("id").to_string();
    let r = api.post(
        &format!("/v1/status-pages/{page_id}/subscribers/{hook}/approve"),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = public.post(
        "/status/shop/subscribe",
        &json!({"email": "ann@example.test"}),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let confirmation = wait_for("the confirmation", Duration::from_secs(15), || {
        smtp.mails_to("ann@example.test").into_iter().next()
    });
    // Quoted-printable soft line breaks undone.
    let text = confirmation
        .data
        .replace("=\r\n", "")
        .replace("=\n", "")
        .replace("=3D", "=");
    let at = text.find("/confirm/").expect("a confirmation link");
    let start = text[..at].rfind("/status/").expect("a status link");
    let link: String = text[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '<')
        .collect();
    assert_eq!(public.get(&link).status, 200);

    // Refused, naming the field.
    let now = chrono::Utc::now();
    let at = |secs: i64| (now + chrono::Duration::seconds(secs)).to_rfc3339();
    for bad in [json!(-1), json!(10_081), json!("60"), json!(1.5)] {
        let r = api.post(
            "/v1/maintenance-windows",
            &json!({"name": "x", "start": at(40), "end": at(60), "subscriberNoticeMinutes": bad}),
        );
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(
            r.body["error"]["details"][0]["field"], "subscriberNoticeMinutes",
            "{bad}: {}",
            r.body
        );
    }

    // 40 s away, told a minute ahead: at once. The others tell nobody.
    let window = create(
        &api,
        "/v1/maintenance-windows",
        json!({"name": "Database upgrade", "description": "Checkout pauses.",
               "start": at(40), "end": at(60), "monitorIds": [shop["id"], internal["id"]],
               "subscriberNoticeMinutes": 1}),
    );
    assert_eq!(window["subscriberNoticeMinutes"], 1, "{window}");
    create(
        &api,
        "/v1/maintenance-windows",
        json!({"name": "Internal only", "start": at(40), "end": at(60),
               "monitorIds": [internal["id"]], "subscriberNoticeMinutes": 1}),
    );
    let quiet = create(
        &api,
        "/v1/maintenance-windows",
        json!({"name": "Unannounced", "start": at(40), "end": at(60),
               "monitorIds": [shop["id"]], "subscriberNoticeMinutes": 0}),
    );
    assert_eq!(quiet["subscriberNoticeMinutes"], 0);
    let defaulted = create(
        &api,
        "/v1/maintenance-windows",
        json!({"name": "Next year", "start": at(366 * 86_400), "end": at(366 * 86_400 + 60)}),
    );
    assert_eq!(
        defaulted["subscriberNoticeMinutes"], 1440,
        "a day by default"
    );

    let told = wait_for("the notice", Duration::from_secs(38), || {
        maintenance_events(&receiver).into_iter().next()
    });
    let started = chrono::Utc::now();
    assert!(
        started < now + chrono::Duration::seconds(40),
        "before it starts"
    );
    assert_eq!(told["maintenance"]["phase"], "scheduled", "{told}");
    assert_eq!(told["maintenance"]["name"], "Database upgrade");
    assert_eq!(told["maintenance"]["description"], "Checkout pauses.");
    assert_eq!(
        told["maintenance"]["startsAt"], window["start"],
        "{told} {window}"
    );
    assert!(told["maintenance"].get("id").is_none(), "no internal id");
    // Only the page's monitors the window covers, by name.
    assert_eq!(told["monitors"], json!([{"name": "Shop"}]), "{told}");
    assert_eq!(told["page"]["name"], "Shop status");
    assert!(
        receiver
            .at("/sub")
            .iter()
            .filter(|r| r.json["event"] == "status_page.maintenance")
            .all(|r| r.verified),
        "signed with the subscriber's own secret"
    );
    let mail = wait_for("the e-mail notice", Duration::from_secs(15), || {
        smtp.mails_to("ann@example.test")
            .into_iter()
            .find(|m| m.data.contains("Planned maintenance"))
    });
    assert!(
        mail.data
            .contains("Subject: [Shop status] Planned maintenance: Database upgrade"),
        "{}",
        mail.data
    );

    // Its end is told once it has ended; nothing else was told in between.
    let ended = wait_for("the end", Duration::from_secs(90), || {
        maintenance_events(&receiver)
            .into_iter()
            .find(|e| e["maintenance"]["phase"] == "ended")
    });
    assert_eq!(ended["maintenance"]["name"], "Database upgrade");
    assert_eq!(ended["maintenance"]["startsAt"], window["start"]);
    assert!(chrono::Utc::now() >= now + chrono::Duration::seconds(60));
    let all = maintenance_events(&receiver);
    assert_eq!(
        all.len(),
        2,
        "one notice of each phase, of one window: {all:?}"
    );
}
