//! End to end: what anonymous visitors can do with a status page's subscribe form.
//! A webhook URL on loopback (or any private address) is refused when it is given and
//! again when a delivery would be made (after DNS resolution, so a name that resolves to
//! loopback gets nothing either); a webhook subscriber hears nothing until a member
//! approves it and is signed with its own secret, shown once; every answer is the same
//! 202, whether the address is new, waiting or subscribed; and confirmation mails are
//! limited per mailbox, per page and per client address. Every packet stays on loopback.

mod support;

use serde_json::{Value, json};
use std::time::Duration;
use support::sinks::{Receiver, SmtpSink};
use support::{Api, Server, wait_for};

fn create(api: &Api, path: &str, body: Value) -> Value {
    let r = api.post(path, &body);
    assert_eq!(r.status, 201, "{path}: {}", r.body);
    r.body["data"].clone()
}

/// Long enough for the outbox to have sent anything it was going to send.
const SETTLE: Duration = Duration::from_millis(3500);

fn page(api: &Api, slug: &str) -> String {
    let p = create(
        api,
        "/v1/status-pages",
        json!({"slug": slug, "name": slug, "monitorIds": []}),
    );
    p["id"].as_str().expect("id").to_string()
}

fn update(api: &Api, page_id: &str, body: &str) -> Value {
    create(
        api,
        &format!("/v1/status-pages/{page_id}/updates"),
        json!({"status": "investigating", "body": body}),
    )
}

fn subscribers(api: &Api, page_id: &str) -> Vec<Value> {
    let r = api.get(&format!("/v1/status-pages/{page_id}/subscribers"));
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"].as_array().expect("list").clone()
}

#[test]
fn a_private_webhook_url_is_refused_and_never_posted_to() {
    let receiver = Receiver::start();
    let port = receiver.base.rsplit(':').next().expect("port").to_string();
    // The server's own preset allows loopback (a self-hoster's monitors use it); anonymous
    // input must not borrow it.
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let public = api.without_key();
    let page_id = page(&api, "private");
    for url in [
        receiver.url("/x"),
        format!("http://localhost:{port}/x"),
        format!("http://LOCALHOST.:{port}/x"),
        format!("http://app.localhost:{port}/x"),
        format!("http://[::1]:{port}/x"),
        format!("http://[::ffff:127.0.0.1]:{port}/x"),
        format!("http://0x7f000001:{port}/x"),
        format!("http://10.0.0.1:{port}/x"),
        format!("http://169.254.169.254:{port}/x"),
        format!("http://redis:{port}/x"),
        format!("http://db.internal:{port}/x"),
    ] {
        let r = public.post("/status/private/subscribe", &json!({"webhookUrl": url}));
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(
            r.body["error"]["details"][0]["field"], "webhookUrl",
            "{url}"
        );
    }
    assert_eq!(subscribers(&api, &page_id), Vec::<Value>::new());
    let u = update(&api, &page_id, "Something happened.");
    assert_eq!(u["sentTo"], 0, "{u}");
    std::thread::sleep(SETTLE);
    assert!(receiver.received().is_empty(), "{:?}", receiver.received());
}

#[test]
fn a_webhook_subscriber_waits_for_approval_and_is_signed_with_its_own_secret() {
    let receiver = Receiver::start();
    let port = receiver.base.rsplit(':').next().expect("port").to_string();
    let temp = tempfile::tempdir().expect("tempdir");
    let lenient = [
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_SUBSCRIPTIONS_ALLOW_PRIVATE_TARGETS", "true"),
    ];
    let mut server = Server::start_in(temp.path(), &lenient);
    let api = server.client();
    let public = api.without_key();
    let page_id = page(&api, "hooks");

    // A name, so that the later refusal is the resolver's, not the subscribe check's.
    let url = format!("http://localhost:{port}/hook");
    let r = public.post("/status/hooks/subscribe", &json!({"webhookUrl": url}));
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["data"]["type"], "webhook", "{}", r.body);
    let secret = r.body["data"]["secret"]
        .as_str()
        .expect("a secret, shown once")
        .to_string();
    assert!(secret.starts_with("whsec_"), "{secret}");
    let subs = subscribers(&api, &page_id);
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0]["confirmed"], false, "{:?}", subs);
    assert!(subs[0].get("secret").is_none(), "{:?}", subs);
    let sub_id = subs[0]["id"].as_str().expect("id").to_string();

    // Waiting for approval: the update goes nowhere.
    let u = update(&api, &page_id, "Before approval.");
    assert_eq!(u["sentTo"], 0, "{u}");
    std::thread::sleep(SETTLE);
    assert!(receiver.received().is_empty());

    // A read key may not approve; an unknown subscriber is 404; a member does approve.
    let approve = format!("/v1/status-pages/{page_id}/subscribers/{sub_id}/approve");
    let read_key = create(&api, "/v1/api-keys", json!({"name": "r", "role": "read"}));
    api.with_key(read_key["secret"].as_str().expect("key"))
        .post(&approve, &json!({}))
        .assert_error(403, "FORBIDDEN");
    api.post(
        &format!("/v1/status-pages/{page_id}/subscribers/sub_00000000000000000000000000/approve"),
        &json!({}),
    )
    .assert_error(404, "SUBSCRIBER_NOT_FOUND");
    let r = api.post(&approve, &json!({}));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["confirmed"], true, "{}", r.body);

    // Now it hears, signed with its own secret and not the workspace's.
    receiver.set_secret(&secret);
    let u = update(&api, &page_id, "After approval.");
    assert_eq!(u["sentTo"], 1, "{u}");
    let got = wait_for("the approved update", Duration::from_secs(15), || {
        receiver.at("/hook").into_iter().next()
    });
    assert!(got.verified, "signed with the subscriber's secret: {got:?}");
    assert_eq!(got.json["event"], "status_page.update");
    let workspace_secret = api.get("/v1/workspace/webhook-secret").body["data"]["secret"]
        .as_str()
        .expect("workspace secret")
        .to_string();
    let timestamp: i64 = got.headers["x-service-timestamp"].parse().expect("ts");
    assert!(
        tocsin::outbox::signing::verify(
            &workspace_secret,
            timestamp,
            &got.body,
            &got.headers["x-service-signature"],
            timestamp,
            300
        )
        .is_err(),
        "the workspace secret must not sign a visitor's deliveries"
    );

    // The same server without the setting: the stored name resolves to loopback, and the
    // delivery is refused after resolution. Nothing reaches the receiver.
    server.stop();
    let server = Server::start_in(temp.path(), &[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let before = receiver.received().len();
    let u = update(&api, &page_id, "After the restart.");
    assert_eq!(u["sentTo"], 1, "{u}");
    let failed = wait_for("the refused delivery", Duration::from_secs(20), || {
        let list = api.get("/v1/webhook-deliveries").body["data"].clone();
        list.as_array()?
            .iter()
            .find(|d| d["event"] == "status_page.update" && !d["lastError"].is_null())
            .cloned()
    });
    assert!(
        failed["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("egress")),
        "{failed}"
    );
    std::thread::sleep(SETTLE);
    assert_eq!(
        receiver.received().len(),
        before,
        "nothing reached loopback"
    );
}

#[test]
fn every_subscribe_answer_is_the_same() {
    let receiver = Receiver::start();
    let smtp = SmtpSink::start();
    let smtp_port = smtp.port.to_string();
    let server = Server::start(&[
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_SUBSCRIPTIONS_ALLOW_PRIVATE_TARGETS", "true"),
        ("TOCSIN_SMTP_HOST", "127.0.0.1"),
        ("TOCSIN_SMTP_PORT", &smtp_port),
        ("TOCSIN_SMTP_TLS", "none"),
        ("TOCSIN_SMTP_FROM", "Tocsin <status@tocsin.test>"),
    ]);
    let api = server.client();
    let public = api.without_key();
    let page_id = page(&api, "same");
    let subscribe = |body: Value| {
        let r = public.post("/status/same/subscribe", &body);
        assert_eq!(r.status, 202, "{}", r.body);
        r.body["data"].clone()
    };

    // E-mail: new, waiting, then confirmed: three identical answers.
    let new = subscribe(json!({"email": "ann@example.test"}));
    let waiting = subscribe(json!({"email": "ann@example.test"}));
    let mail = wait_for("the confirmation", Duration::from_secs(15), || {
        smtp.mails().into_iter().next()
    });
    let text = mail
        .data
        .replace("=\r\n", "")
        .replace("=\n", "")
        .replace("=3D", "=");
    let at = text
        .find("/status/same/confirm/")
        .expect("a confirmation link");
    let link: String = text[at..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '<')
        .collect();
    assert_eq!(public.get(&link).status, 200);
    let confirmed = subscribe(json!({"email": "ann@example.test"}));
    let other = subscribe(json!({"email": "bob@example.test"}));
    assert_eq!(new, waiting);
    assert_eq!(new, confirmed);
    assert_eq!(new, other);
    assert!(new.get("confirmed").is_none(), "{new}");

    // Webhooks: new, waiting, approved: the same words and shape, a secret each time.
    let url = receiver.url("/same");
    let first = subscribe(json!({"webhookUrl": url}));
    let second = subscribe(json!({"webhookUrl": url}));
    let sub_id = subscribers(&api, &page_id)
        .into_iter()
        .find(|s| s["type"] == "webhook")
        .and_then(|s| s["id"].as_str().map(str::to_string))
        .expect("the webhook subscriber");
    let r = api.post(
        &format!("/v1/status-pages/{page_id}/subscribers/{sub_id}/approve"),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let third = subscribe(json!({"webhookUrl": url}));
    let fresh = subscribe(json!({"webhookUrl": receiver.url("/fresh")}));
    let shape = |v: &Value| {
        let mut keys: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
        keys.sort();
        (keys, v["type"].clone(), v["message"].clone())
    };
    for v in [&second, &third, &fresh] {
        assert_eq!(shape(&first), shape(v), "{first} {v}");
        assert!(
            v["secret"]
                .as_str()
                .is_some_and(|s| s.starts_with("whsec_"))
        );
    }
    assert_ne!(first["secret"], second["secret"]);
    // A second subscription of the same URL replaced the waiting one: one row.
    assert_eq!(
        subscribers(&api, &page_id)
            .iter()
            .filter(|s| s["type"] == "webhook")
            .count(),
        2
    );
    // The approved subscriber keeps the secret it was approved with (the second one):
    // an anonymous third request cannot take it over.
    receiver.set_secret(second["secret"].as_str().expect("secret"));
    update(&api, &page_id, "Signed with the kept secret.");
    let got = wait_for("the update", Duration::from_secs(15), || {
        receiver.at("/same").into_iter().next()
    });
    assert!(got.verified, "{got:?}");
    assert!(receiver.at("/fresh").is_empty(), "not approved");

    // The page's own form gets the same answer as a page, with the same status.
    for body in [
        &b"email=ann%40example.test"[..],
        &b"email=carl%40example.test"[..],
    ] {
        let form = public.raw(
            "POST",
            "/status/same/subscribe",
            Some("application/x-www-form-urlencoded"),
            body.to_vec(),
        );
        assert_eq!(form.status, 202);
        let html = form.body.as_str().expect("html").to_string();
        assert!(html.contains("Check your inbox"), "{html}");
        assert!(!html.contains("@example.test"), "{html}");
    }
}

#[test]
fn confirmation_mails_are_limited_per_mailbox_page_and_client() {
    let smtp = SmtpSink::start();
    let smtp_port = smtp.port.to_string();
    let server = Server::start(&[
        ("TOCSIN_SMTP_HOST", "127.0.0.1"),
        ("TOCSIN_SMTP_PORT", &smtp_port),
        ("TOCSIN_SMTP_TLS", "none"),
        ("TOCSIN_SMTP_FROM", "Tocsin <status@tocsin.test>"),
        ("TOCSIN_SUBSCRIPTIONS_CONFIRMATIONS_PER_MAILBOX", "2"),
        ("TOCSIN_SUBSCRIPTIONS_CONFIRMATIONS_PER_PAGE", "4"),
        ("TOCSIN_SUBSCRIPTIONS_CONFIRMATIONS_PER_CLIENT", "6"),
    ]);
    let api = server.client();
    let public = api.without_key();
    page(&api, "one");
    page(&api, "two");
    let mut answers: Vec<(String, Value)> = Vec::new();
    let mut subscribe = |slug: &str, email: &str| {
        let r = public.post(
            &format!("/status/{slug}/subscribe"),
            &json!({"email": email}),
        );
        assert_eq!(r.status, 202, "{email}: {}", r.body);
        answers.push((slug.to_string(), r.body["data"].clone()));
    };
    // One mailbox under many tags: two mails.
    for k in 1..=5 {
        subscribe("one", &format!("Victim+{k}@Example.test"));
    }
    subscribe("one", "victim@example.test");
    // The page's limit: two more mailboxes reach four mails for page one.
    for who in ["a", "b", "c"] {
        subscribe("one", &format!("{who}@example.test"));
    }
    // The client's limit: page two gets two more before this client's six.
    for who in ["d", "e", "f"] {
        subscribe("two", &format!("{who}@example.test"));
    }
    // Sent or not, every answer on a page is the same.
    assert!(
        answers
            .windows(2)
            .all(|w| w[0].0 != w[1].0 || w[0].1 == w[1].1),
        "{answers:?}"
    );

    wait_for("six mails", Duration::from_secs(20), || {
        (smtp.mails().len() >= 6).then_some(())
    });
    std::thread::sleep(SETTLE);
    let mut to: Vec<String> = smtp
        .mails()
        .iter()
        .flat_map(|m| m.to.clone())
        .map(|t| t.to_lowercase())
        .collect();
    assert_eq!(to.len(), 6, "{to:?}");
    let victim = to.iter().filter(|t| t.starts_with("victim")).count();
    assert_eq!(victim, 2, "{to:?}");
    to.retain(|t| !t.starts_with("victim"));
    to.sort();
    assert_eq!(
        to,
        [
            "a@example.test",
            "b@example.test",
            "d@example.test",
            "e@example.test"
        ],
    );
}
