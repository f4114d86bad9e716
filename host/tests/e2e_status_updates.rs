//! End to end: status-page updates and subscribers. A visitor subscribes by e-mail, gets
//! a confirmation link (and nothing else until following it), then receives each update and
//! each state change of the page's monitors, each message with a working one-click
//! unsubscribe link; a webhook subscriber hears once a member approves it. Updates show on
//! the page and in the Atom feed. (What anonymous visitors may not do is
//! e2e_subscribe_security.rs.)

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::sinks::{Mail, Receiver, SmtpSink};
use support::{Api, Server, wait_for};

fn create(api: &Api, path: &str, body: Value) -> Value {
    let r = api.post(path, &body);
    assert_eq!(r.status, 201, "{path}: {}", r.body);
    r.body["data"].clone()
}

/// A mail's text with quoted-printable soft line breaks undone.
fn text(mail: &Mail) -> String {
    mail.data
        .replace("=\r\n", "")
        .replace("=\n", "")
        .replace("=3D", "=")
}

/// The path of the first link in `mail` containing `marker` (e.g. `/confirm/`).
fn link_path(mail: &Mail, marker: &str) -> String {
    let t = text(mail);
    let at = t
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in {t}"));
    let start = t[..at].rfind("/status/").expect("a status link");
    t[start..]
        .split(|c: char| c.is_whitespace() || c == '"' || c == '<')
        .next()
        .expect("a link")
        .to_string()
}

fn hook_events(receiver: &Receiver) -> Vec<Value> {
    receiver.at("/sub").into_iter().map(|r| r.json).collect()
}

const SETTLE: Duration = Duration::from_millis(3500);

#[test]
fn an_update_reaches_a_confirmed_subscriber_and_the_feed() {
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
    let job = create(
        &api,
        "/v1/monitors",
        json!({"name": "Backup job", "type": "heartbeat", "period": 3600}),
    );
    let page = create(
        &api,
        "/v1/status-pages",
        json!({"slug": "news", "name": "News", "monitorIds": [job["id"]]}),
    );
    let updates = format!(
        "/v1/status-pages/{}/updates",
        page["id"].as_str().expect("id")
    );

    // Bad updates are refused and change nothing.
    for (body, field) in [
        (json!({"status": "fixed", "body": "x"}), "status"),
        (json!({"status": "identified"}), "body"),
        (json!({"status": "identified", "body": "   "}), "body"),
        (
            json!({"status": "identified", "body": "x", "tone": "calm"}),
            "tone",
        ),
    ] {
        let r = api.post(&updates, &body);
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
    api.post(
        &updates,
        &json!({"status": "identified", "body": "x", "incidentId": "inc_00000000000000000000000000"}),
    )
    .assert_error(422, "UNPROCESSABLE_ENTITY");
    api.post(
        "/v1/status-pages/sp_00000000000000000000000000/updates",
        &json!({"status": "identified", "body": "x"}),
    )
    .assert_error(404, "STATUS_PAGE_NOT_FOUND");
    assert_eq!(api.get(&updates).body["data"], json!([]));

    // Subscribing: bad input is refused, an unknown page is 404.
    for body in [
        json!({"email": "not an address"}),
        json!({}),
        json!({"email": "a@b.test", "webhookUrl": "http://x.test/"}),
    ] {
        let r = public.post("/status/news/subscribe", &body);
        r.assert_error(400, "VALIDATION_ERROR");
    }
    public
        .post(
            "/status/nope/subscribe",
            &json!({"email": "ann@example.test"}),
        )
        .assert_error(404, "STATUS_PAGE_NOT_FOUND");
    let r = public.post(
        "/status/news/subscribe",
        &json!({"email": "Ann@Example.test"}),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let r = public.post(
        "/status/news/subscribe",
        &json!({"webhookUrl": receiver.url("/sub")}),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    receiver.set_secret(r.body["data"]["secret"].as_str().expect("secret"));
    // A member approves the webhook.
    let page_id = page["id"].as_str().expect("id");
    let subs = api.get(&format!("/v1/status-pages/{page_id}/subscribers"));
    let hook = subs.body["data"]
        .as_array()
        .and_then(|l| l.iter().find(|s| s["type"] == "webhook"))
        .and_then(|s| s["id"].as_str())
        .expect("the webhook subscriber")
        .to_string();
    let r = api.post(
        &format!("/v1/status-pages/{page_id}/subscribers/{hook}/approve"),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // The page's own form (a form post) works too.
    let form = public.raw(
        "POST",
        "/status/news/subscribe",
        Some("application/x-www-form-urlencoded"),
        b"email=bob%40example.test".to_vec(),
    );
    assert_eq!(form.status, 202);
    assert!(
        form.body
            .as_str()
            .is_some_and(|h| h.contains("Check your inbox")),
        "{}",
        form.body
    );

    // One confirmation message, with a link.
    let confirmation = wait_for("the confirmation", Duration::from_secs(15), || {
        smtp.mails_to("ann@example.test").into_iter().next()
    });
    assert!(
        confirmation
            .data
            .contains("Subject: Confirm your subscription to News"),
        "{}",
        confirmation.data
    );
    let confirm = link_path(&confirmation, "/confirm/");

    // Before confirming, an update reaches the webhook subscriber only.
    let first = create(
        &api,
        &updates,
        json!({"status": "investigating", "body": "Backups are late tonight."}),
    );
    assert_eq!(first["sentTo"], 1, "{first}");
    let got = wait_for("the webhook's update", Duration::from_secs(15), || {
        receiver
            .at("/sub")
            .into_iter()
            .find(|r| r.json["event"] == "status_page.update")
    });
    assert!(got.verified, "signed with the subscriber's own secret");
    std::thread::sleep(SETTLE);
    assert_eq!(
        smtp.mails_to("ann@example.test").len(),
        1,
        "only the confirmation"
    );

    // Confirming (the link as a person follows it).
    let r = public.get(&confirm);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.as_str().is_some_and(|h| h.contains("Subscribed")));
    assert_eq!(public.get("/status/news/confirm/notatoken").status, 404);

    // Now an update reaches Ann, with an unsubscribe link.
    let second = create(
        &api,
        &updates,
        json!({"status": "identified", "body": "A full disk on the backup host.\nWe are adding space."}),
    );
    assert_eq!(second["sentTo"], 2, "{second}");
    let update_mail = wait_for("Ann's update", Duration::from_secs(15), || {
        smtp.mails_to("ann@example.test")
            .into_iter()
            .find(|m| m.data.contains("Subject: [News] Identified"))
    });
    assert!(text(&update_mail).contains("A full disk on the backup host."));
    let unsubscribe = link_path(&update_mail, "/unsubscribe/");

    // A state change of the page's monitor reaches subscribers too.
    let url = job["pingUrl"].as_str().expect("pingUrl");
    let path = &url[url.find("/ping/").expect("ping")..];
    // Without a policy, two failures open an incident.
    for _ in 0..2 {
        let r = public.raw("POST", &format!("{path}/fail"), None, Vec::new());
        assert_eq!(r.status, 200);
    }
    wait_for("Ann's state change", Duration::from_secs(15), || {
        smtp.mails_to("ann@example.test")
            .into_iter()
            .find(|m| m.data.contains("Subject: [News] Backup job is down"))
    });
    let state = wait_for(
        "the webhook's state change",
        Duration::from_secs(15),
        || {
            hook_events(&receiver)
                .into_iter()
                .find(|e| e["event"] == "status_page.monitor")
        },
    );
    assert_eq!(
        state["monitor"],
        json!({"name": "Backup job", "status": "down"})
    );
    assert!(
        state["unsubscribeUrl"]
            .as_str()
            .is_some_and(|u| u.contains("/unsubscribe/"))
    );

    // The page and its feed show the updates, newest first.
    let facts = public.get("/status/news.json").body;
    assert_eq!(facts["updates"][0]["status"], "identified", "{facts}");
    assert_eq!(
        facts["updates"][1]["body"], "Backups are late tonight.",
        "{facts}"
    );
    let html = public.get("/status/news").body;
    assert!(
        html.as_str()
            .is_some_and(|h| h.contains("Backups are late tonight."))
    );
    let feed = public.get("/status/news/feed.atom");
    assert_eq!(feed.status, 200);
    assert!(
        feed.headers["content-type"]
            .to_str()
            .is_ok_and(|c| c.starts_with("application/atom+xml"))
    );
    let xml = feed.body.as_str().expect("xml").to_string();
    assert!(
        xml.contains("<feed xmlns=\"http://www.w3.org/2005/Atom\""),
        "{xml}"
    );
    assert!(xml.contains("<title>Identified: News</title>"), "{xml}");
    assert!(xml.contains("Backups are late tonight."), "{xml}");
    assert_eq!(xml.matches("<entry>").count(), 2, "{xml}");
    assert_eq!(public.get("/status/nope/feed.atom").status, 404);

    // One click on the link ends it; the next update does not reach Ann.
    let r = public.get(&unsubscribe);
    assert_eq!(r.status, 200);
    assert!(r.body.as_str().is_some_and(|h| h.contains("Unsubscribed")));
    let before = smtp.mails_to("ann@example.test").len();
    let third = create(
        &api,
        &updates,
        json!({"status": "resolved", "body": "Backups ran."}),
    );
    assert_eq!(third["sentTo"], 1, "{third}");
    wait_for("the webhook's last update", Duration::from_secs(15), || {
        hook_events(&receiver)
            .iter()
            .any(|e| e["update"]["status"] == "resolved")
            .then_some(())
    });
    std::thread::sleep(SETTLE);
    assert_eq!(smtp.mails_to("ann@example.test").len(), before);

    // The workspace sees who is subscribed (Bob has not confirmed).
    let subs = api.get(&format!(
        "/v1/status-pages/{}/subscribers",
        page["id"].as_str().expect("id")
    ));
    let list = subs.body["data"].as_array().expect("subscribers").clone();
    assert_eq!(list.len(), 2, "{}", subs.body);
    assert!(
        list.iter()
            .any(|s| s["type"] == "webhook" && s["confirmed"] == true)
    );
    assert!(
        list.iter()
            .any(|s| s["target"] == "bob@example.test" && s["confirmed"] == false)
    );
}

/// A posted update can be corrected: the page, its JSON and the Atom feed show the new
/// text marked as edited, subscribers are not told again, and bad input, a read key and
/// another workspace change nothing.
#[test]
fn an_update_is_corrected_without_telling_subscribers_again() {
    let receiver = Receiver::start();
    let server = Server::start(&[
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_SUBSCRIPTIONS_ALLOW_PRIVATE_TARGETS", "true"),
    ]);
    let api = server.client();
    let public = api.without_key();
    let page = create(
        &api,
        "/v1/status-pages",
        json!({"slug": "fixes", "name": "Fixes", "monitorIds": []}),
    );
    let page_id = page["id"].as_str().expect("id").to_string();
    let sub = public.post(
        "/status/fixes/subscribe",
        &json!({"webhookUrl": receiver.url("/sub")}),
    );
    assert_eq!(sub.status, 202, "{}", sub.body);
    receiver.set_secret(sub.body["data"]["secret"].as_str().expect("secret"));
    let subscriber = api
        .get(&format!("/v1/status-pages/{page_id}/subscribers"))
        .body["data"][0]["id"]
        .as_str()
        .expect("subscriber")
        .to_string();
    let approved = api.post(
        &format!("/v1/status-pages/{page_id}/subscribers/{subscriber}/approve"),
        &json!({}),
    );
    assert_eq!(approved.status, 200, "{}", approved.body);
    let posted = create(
        &api,
        &format!("/v1/status-pages/{page_id}/updates"),
        json!({"status": "investigating", "body": "The databse is slow."}),
    );
    assert_eq!(posted["updatedAt"], Value::Null, "{posted}");
    let update = format!(
        "/v1/status-pages/{page_id}/updates/{}",
        posted["id"].as_str().expect("id")
    );
    wait_for("the update delivered", Duration::from_secs(20), || {
        (hook_events(&receiver).len() == 1).then_some(())
    });

    // Bad input is refused and changes nothing.
    api.patch(&update, &json!({"status": "fixed"}))
        .assert_error(400, "VALIDATION_ERROR");
    api.patch(&update, &json!({"body": "  "}))
        .assert_error(400, "VALIDATION_ERROR");
    api.patch(&update, &json!({"createdAt": "2020-01-01T00:00:00Z"}))
        .assert_error(400, "VALIDATION_ERROR");
    api.patch(&update, &json!({"incidentId": "inc_nope"}))
        .assert_error(422, "UNPROCESSABLE_ENTITY");
    let read = api.post("/v1/api-keys", &json!({"name": "reader", "role": "read"}));
    let read = read.body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    api.with_key(&read)
        .patch(&update, &json!({"body": "Read keys cannot."}))
        .assert_error(403, "FORBIDDEN");
    let ws_b = server.cli(&["workspace", "create", "--name", "B"]);
    let key_b = server.cli(&["key", "create", "--workspace", &ws_b, "--role", "admin"]);
    api.with_key(&key_b)
        .patch(&update, &json!({"body": "Not mine."}))
        .assert_error(404, "STATUS_PAGE_NOT_FOUND");
    api.patch(
        &format!("/v1/status-pages/{page_id}/updates/upd_nope"),
        &json!({"body": "Nothing here."}),
    )
    .assert_error(404, "STATUS_UPDATE_NOT_FOUND");
    let listed = api.get(&format!("/v1/status-pages/{page_id}/updates")).body;
    assert_eq!(listed["data"][0]["body"], "The databse is slow.");
    assert_eq!(listed["data"][0]["updatedAt"], Value::Null);

    // Saving it unchanged changes nothing: not marked as edited.
    let same = api.patch(
        &update,
        &json!({"body": "The databse is slow.", "status": "investigating"}),
    );
    assert_eq!(same.status, 200, "{}", same.body);
    assert_eq!(same.body["data"]["updatedAt"], Value::Null, "{}", same.body);

    // The correction: the text and the status, one field at a time.
    let fixed = api.patch(&update, &json!({"body": "The database is slow."}));
    assert_eq!(fixed.status, 200, "{}", fixed.body);
    assert_eq!(fixed.body["data"]["body"], "The database is slow.");
    assert_eq!(fixed.body["data"]["status"], "investigating");
    assert!(
        fixed.body["data"]["updatedAt"].is_string(),
        "{}",
        fixed.body
    );
    let fixed = api.patch(&update, &json!({"status": "identified"}));
    assert_eq!(fixed.status, 200, "{}", fixed.body);
    assert_eq!(fixed.body["data"]["body"], "The database is slow.");
    assert_eq!(fixed.body["data"]["status"], "identified");
    assert_eq!(fixed.body["data"]["createdAt"], posted["createdAt"]);

    let facts = public.get("/status/fixes.json").body;
    assert_eq!(
        facts["updates"][0]["body"], "The database is slow.",
        "{facts}"
    );
    assert_eq!(facts["updates"][0]["status"], "identified");
    assert!(facts["updates"][0]["updatedAt"].is_string(), "{facts}");
    let html = public.get("/status/fixes").body;
    let html = html.as_str().expect("html");
    assert!(html.contains("The database is slow."), "{html}");
    assert!(html.contains("edited"), "{html}");
    assert!(!html.contains("databse"), "{html}");
    let feed = public.get("/status/fixes/feed.atom").body;
    let feed = feed.as_str().expect("xml");
    assert!(feed.contains("The database is slow."), "{feed}");
    assert!(!feed.contains("databse"), "{feed}");

    // The audit log has the change, and the subscriber heard only the first post.
    let audit = api.get("/v1/audit-log").body;
    assert!(
        audit["data"]
            .as_array()
            .expect("entries")
            .iter()
            .any(|e| e["action"] == "status_update.update"),
        "{audit}"
    );
    std::thread::sleep(SETTLE);
    assert_eq!(hook_events(&receiver).len(), 1, "an edit is not sent again");
}
