//! End to end: what anonymous visitors can do with a status page's subscribe form.
//! A webhook URL on loopback (or any private address) is refused when it is given and
//! again when a delivery would be made (after DNS resolution, so a name that resolves to
//! loopback gets nothing either); a webhook subscriber hears nothing until a member
//! approves it and is signed with its own secret, shown once; every answer is the same
//! 202, whether the address is new, waiting or subscribed, and never changes a subscriber's
//! secret; confirmation mails are limited per mailbox, per page and per client address, and
//! new webhook subscribers per page and client address, so one client cannot fill a page;
//! subscribers that wait too long are forgotten; nobody sees a subscriber's link tokens in
//! the delivery log, and read keys not a ping token either; and addresses that hide
//! loopback inside IPv6, or are not public at all, are refused. Every packet stays on
//! loopback.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::sinks::{Receiver, SmtpSink};
use support::{Api, Server, ping, wait_for};

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
    let r = api.get(&format!("/v1/status-pages/{page_id}/subscribers?limit=100"));
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
    // A second subscription of the same URL made no second row.
    assert_eq!(
        subscribers(&api, &page_id)
            .iter()
            .filter(|s| s["type"] == "webhook")
            .count(),
        2
    );
    // The subscriber keeps the secret of its first answer: the later ones were never used.
    receiver.set_secret(first["secret"].as_str().expect("secret"));
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

fn smtp_env(smtp: &SmtpSink) -> Vec<(&'static str, String)> {
    vec![
        ("TOCSIN_SMTP_HOST", "127.0.0.1".to_string()),
        ("TOCSIN_SMTP_PORT", smtp.port.to_string()),
        ("TOCSIN_SMTP_TLS", "none".to_string()),
        (
            "TOCSIN_SMTP_FROM",
            "Tocsin <status@tocsin.test>".to_string(),
        ),
    ]
}

fn start(env: &[(&'static str, String)]) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Server::start(&env)
}

/// The link in a mail, quoted-printable undone.
fn link_in(mail: &str, marker: &str) -> String {
    let text = mail
        .replace("=\r\n", "")
        .replace("=\n", "")
        .replace("=3D", "=");
    let at = text.find(marker).expect("a link");
    text[at..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '<')
        .collect()
}

#[test]
fn a_repeat_subscribe_never_changes_the_secret() {
    let receiver = Receiver::start();
    let server = Server::start(&[
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_SUBSCRIPTIONS_ALLOW_PRIVATE_TARGETS", "true"),
    ]);
    let api = server.client();
    let public = api.without_key();
    let page_id = page(&api, "victim");
    let url = receiver.url("/victim");
    let subscribe = || {
        let r = public.post("/status/victim/subscribe", &json!({"webhookUrl": url}));
        assert_eq!(r.status, 202, "{}", r.body);
        r.body["data"]["secret"]
            .as_str()
            .expect("a secret")
            .to_string()
    };
    // The subscriber's own request, then anyone's, while it waits and once approved.
    let own = subscribe();
    let while_waiting = subscribe();
    assert_ne!(own, while_waiting, "every answer looks fresh");
    let subs = subscribers(&api, &page_id);
    assert_eq!(subs.len(), 1, "{subs:?}");
    let sub_id = subs[0]["id"].as_str().expect("id");
    let r = api.post(
        &format!("/v1/status-pages/{page_id}/subscribers/{sub_id}/approve"),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let once_approved = subscribe();

    receiver.set_secret(&own);
    update(&api, &page_id, "Signed with the first secret.");
    let got = wait_for("the update", Duration::from_secs(15), || {
        receiver.at("/victim").into_iter().next()
    });
    assert!(
        got.verified,
        "signed with the subscriber's own secret: {got:?}"
    );
    let timestamp: i64 = got.headers["x-service-timestamp"].parse().expect("ts");
    for other in [&while_waiting, &once_approved] {
        assert!(
            tocsin::outbox::signing::verify(
                other,
                timestamp,
                &got.body,
                &got.headers["x-service-signature"],
                timestamp,
                300
            )
            .is_err(),
            "a later answer's secret must sign nothing"
        );
    }
}

#[test]
fn read_principals_never_see_subscribers_or_ping_tokens() {
    let receiver = Receiver::start();
    let smtp = SmtpSink::start();
    let mut env = smtp_env(&smtp);
    env.push(("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true".into()));
    env.push(("TOCSIN_SUBSCRIPTIONS_ALLOW_PRIVATE_TARGETS", "true".into()));
    let server = start(&env);
    let api = server.client();
    let public = api.without_key();
    let page_id = page(&api, "tokens");

    // An e-mail subscriber's confirmation, and an approved webhook's update.
    let r = public.post(
        "/status/tokens/subscribe",
        &json!({"email": "ann@example.test"}),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let mail = wait_for("the confirmation", Duration::from_secs(15), || {
        smtp.mails().into_iter().next()
    });
    let confirm = link_in(&mail.data, "/status/tokens/confirm/");
    let confirm_token = confirm.rsplit('/').next().expect("token").to_string();
    let r = public.post(
        "/status/tokens/subscribe",
        &json!({"webhookUrl": receiver.url("/sub")}),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let hook = subscribers(&api, &page_id)
        .into_iter()
        .find(|s| s["type"] == "webhook")
        .expect("the webhook");
    let r = api.post(
        &format!(
            "/v1/status-pages/{page_id}/subscribers/{}/approve",
            hook["id"].as_str().expect("id")
        ),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    update(&api, &page_id, "Tokens.");
    let got = wait_for("the update", Duration::from_secs(15), || {
        receiver.at("/sub").into_iter().next()
    });
    let unsubscribe = got.json["unsubscribeUrl"]
        .as_str()
        .expect("an unsubscribe link")
        .to_string();
    let unsubscribe_token = unsubscribe.rsplit('/').next().expect("token").to_string();

    // A heartbeat monitor's failure, alerted to a webhook.
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "P", "failureThreshold": 1, "recoveryThreshold": 1,
               "channels": [{"type": "webhook", "url": receiver.url("/alerts")}]}),
    );
    let beat = create(
        &api,
        "/v1/monitors",
        json!({"name": "nightly", "type": "heartbeat", "period": 3600,
               "alertPolicyId": policy["id"]}),
    );
    let ping_url = beat["pingUrl"].as_str().expect("pingUrl").to_string();
    let ping_token = ping_url.rsplit('/').next().expect("token").to_string();
    ping(&api, &beat, "/fail");
    wait_for("the alert", Duration::from_secs(15), || {
        receiver.at("/alerts").into_iter().next()
    });

    let read_key = create(&api, "/v1/api-keys", json!({"name": "r", "role": "read"}));
    let reader = api.with_key(read_key["secret"].as_str().expect("key"));
    let list = reader.get("/v1/webhook-deliveries");
    assert_eq!(list.status, 200, "{}", list.body);
    let items = list.body["data"].as_array().expect("list").clone();
    let events: Vec<&str> = items.iter().filter_map(|d| d["event"].as_str()).collect();
    for event in [
        "status_page.confirm",
        "status_page.update",
        "incident.created",
    ] {
        assert!(events.contains(&event), "{events:?}");
    }
    let mut shown = vec![list.body.to_string()];
    for d in &items {
        let one = reader.get(&format!(
            "/v1/webhook-deliveries/{}",
            d["id"].as_str().expect("id")
        ));
        assert_eq!(one.status, 200, "{}", one.body);
        shown.push(one.body.to_string());
    }
    for text in &shown {
        for token in [&confirm_token, &unsubscribe_token, &ping_token] {
            assert!(
                !text.contains(token.as_str()),
                "a read key sees {token}: {text}"
            );
        }
    }
    let confirm_payload = items
        .iter()
        .find(|d| d["event"] == "status_page.confirm")
        .expect("the confirmation");
    assert!(
        confirm_payload["payload"]["confirmUrl"]
            .as_str()
            .is_some_and(|u| u.ends_with("/status/tokens/confirm/[redacted]")),
        "{confirm_payload}"
    );
    assert!(
        confirm_payload["payload"]["unsubscribeUrl"]
            .as_str()
            .is_some_and(|u| u.ends_with("/unsubscribe/[redacted]")),
        "{confirm_payload}"
    );

    // Nobody but the mailbox confirms it: not even an admin is shown the subscribers'
    // link tokens (an unsubscribe link carries the same token).
    let admin_list = api.get("/v1/webhook-deliveries");
    let admin_text = admin_list.body.to_string();
    for token in [&confirm_token, &unsubscribe_token] {
        assert!(!admin_text.contains(token.as_str()), "{admin_text}");
    }
    // What a read key saw confirms nothing and removes nobody.
    let redacted = "/status/tokens/confirm/[redacted]";
    assert_eq!(public.get(redacted).status, 404);
    assert_eq!(
        subscribers(&api, &page_id)
            .iter()
            .filter(|s| s["confirmed"] == true)
            .count(),
        1,
        "only the approved webhook"
    );
    // The mailbox's own link still works.
    assert_eq!(
        public
            .get(&confirm[confirm.find("/status/").expect("path")..])
            .status,
        200
    );
}

/// An API client whose requests come from another loopback address.
fn client_from(api: &Api, source: &str) -> Api {
    Api {
        base: api.base.clone(),
        key: None,
        http: reqwest::blocking::Client::builder()
            .local_address(source.parse::<std::net::IpAddr>().expect("address"))
            .build()
            .expect("client"),
    }
}

#[test]
fn one_client_address_cannot_fill_a_page() {
    let smtp = SmtpSink::start();
    let mut env = smtp_env(&smtp);
    env.push(("TOCSIN_SUBSCRIPTIONS_WEBHOOKS_PER_CLIENT", "3".into()));
    env.push(("TOCSIN_SUBSCRIPTIONS_WEBHOOKS_PER_PAGE", "20".into()));
    let server = start(&env);
    let api = server.client();
    let page_id = page(&api, "crowded");
    let one = client_from(&api, "127.0.0.1");
    // Public names, never approved: nothing is ever sent to them.
    let mut answers = Vec::new();
    for k in 0..50 {
        let r = one.post(
            "/status/crowded/subscribe",
            &json!({"webhookUrl": format!("https://hook-{k}.example.com/x")}),
        );
        assert_eq!(r.status, 202, "{}", r.body);
        let mut d = r.body["data"].clone();
        d["secret"] = Value::Null;
        answers.push(d);
        let r = one.post(
            "/status/crowded/subscribe",
            &json!({"email": format!("visitor-{k}@example.test")}),
        );
        assert_eq!(r.status, 202, "{}", r.body);
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
    wait_for("ten mails", Duration::from_secs(20), || {
        (smtp.mails().len() >= 10).then_some(())
    });
    std::thread::sleep(SETTLE);
    assert_eq!(smtp.mails().len(), 10, "the client's mail limit");
    let subs = subscribers(&api, &page_id);
    let count = |kind: &str| subs.iter().filter(|s| s["type"] == kind).count();
    // A row only for a mail that went out, and three webhooks an hour from one client.
    assert_eq!((count("email"), count("webhook")), (10, 3), "{subs:?}");

    // Someone else still gets in.
    let other = client_from(&api, "127.0.0.2");
    for body in [
        json!({"webhookUrl": "https://other.example.com/x"}),
        json!({"email": "other@example.test"}),
    ] {
        let r = other.post("/status/crowded/subscribe", &body);
        assert_eq!(r.status, 202, "{}", r.body);
    }
    let targets: Vec<String> = subscribers(&api, &page_id)
        .iter()
        .filter_map(|s| s["target"].as_str().map(str::to_string))
        .collect();
    assert!(
        targets.contains(&"https://other.example.com/x".to_string()),
        "{targets:?}"
    );
    assert!(
        targets.contains(&"other@example.test".to_string()),
        "{targets:?}"
    );
}

#[test]
fn pending_subscribers_expire_and_leave_room() {
    use tocsin::store::Store;
    use tocsin::store::subscriptions::SubscriberRow;
    const DAY: i64 = 86_400_000;
    let temp = tempfile::tempdir().expect("tempdir");
    let mut server = Server::start_in(temp.path(), &[]);
    let api = server.client();
    let page_id = page(&api, "stale");
    let ws = api.workspace_id();
    server.stop();

    // The page filled with subscribers that never confirmed, days ago, beside a confirmed
    // one and a webhook a day old that still waits.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("time")
        .as_millis() as i64;
    let url = format!("sqlite://{}", temp.path().join("tocsin.db").display());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let stale_token = runtime.block_on(async {
        let store = Store::connect(&url).await.expect("store");
        let row = |n: usize, kind: &str, confirmed: bool, age: i64| SubscriberRow {
            id: format!("sub_{n:026}"),
            workspace_id: ws.clone(),
            page_id: page_id.clone(),
            kind: kind.to_string(),
            target: match kind {
                "email" => format!("stale-{n}@example.test"),
                _ => format!("https://stale-{n}.example.com/x"),
            },
            token: format!("{n:040}"),
            confirmed,
            created_at: now - age,
            secret: None,
        };
        let tx = store.begin_write().await.expect("tx");
        for n in 0..10_000 {
            let r = if n % 2 == 0 {
                row(n, "email", false, 3 * DAY)
            } else {
                row(n, "webhook", false, 8 * DAY)
            };
            tx.insert_subscriber(r).await.expect("insert");
        }
        tx.insert_subscriber(row(10_000, "email", true, 30 * DAY))
            .await
            .expect("insert");
        tx.insert_subscriber(row(10_001, "webhook", false, DAY))
            .await
            .expect("insert");
        tx.commit().await.expect("commit");
        store.close().await;
        format!("{:040}", 0)
    });

    let server = Server::start_in(temp.path(), &[]);
    let api = server.client();
    let public = api.without_key();
    // An expired confirmation link confirms nothing.
    let r = public.get(&format!("/status/stale/confirm/{stale_token}"));
    assert_eq!(r.status, 404);
    // The expired ones neither block nor stay.
    let r = public.post(
        "/status/stale/subscribe",
        &json!({"webhookUrl": "https://fresh.example.com/x"}),
    );
    assert_eq!(r.status, 202, "{}", r.body);
    let r = api.get(&format!("/v1/status-pages/{page_id}/subscribers?limit=100"));
    assert_eq!(r.status, 200, "{}", r.body);
    let mut targets: Vec<String> = r.body["data"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|s| s["target"].as_str().map(str::to_string))
        .collect();
    targets.sort();
    assert_eq!(
        targets,
        [
            "https://fresh.example.com/x",
            "https://stale-10001.example.com/x",
            "stale-10000@example.test",
        ]
    );
}

#[test]
fn addresses_that_hide_loopback_or_are_not_public_are_refused() {
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let public = api.without_key();
    let page_id = page(&api, "ranges");
    // Refused when given: nothing is stored, so nothing is ever sent to them.
    for url in [
        "http://[::127.0.0.1]/",
        "http://[::ffff:0:7f00:1]/",
        "http://[fec0::1]/",
        "http://[2002:7f00:1::]/",
        "http://198.51.100.1/",
    ] {
        let r = public.post("/status/ranges/subscribe", &json!({"webhookUrl": url}));
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(
            r.body["error"]["details"][0]["field"], "webhookUrl",
            "{url}"
        );
    }
    assert_eq!(subscribers(&api, &page_id), Vec::<Value>::new());
}
