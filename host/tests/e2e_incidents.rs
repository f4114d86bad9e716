//! End to end: an outage of a real target opens one incident, every channel type hears
//! about it over the wire (signed webhook, real SMTP, Telegram Bot API over HTTP),
//! recovery resolves it, deliveries retry with the same `webhookId`, and escalation fires
//! unless acknowledged.

use crate::support;

use support::{sinks, target};

use serde_json::{Value, json};
use sinks::{FakeTelegram, Receiver, SmtpSink};
use std::time::Duration;
use support::{Api, Server, wait_for};
use target::Target;

struct World {
    target: Target,
    receiver: Receiver,
    smtp: SmtpSink,
    telegram: FakeTelegram,
    server: Server,
    api: Api,
}

fn world(schedule: &str) -> World {
    let target = Target::start();
    let receiver = Receiver::start();
    let smtp = SmtpSink::start();
    let telegram = FakeTelegram::start();
    let port = smtp.port.to_string();
    let server = Server::start(&[
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_WEBHOOK_RETRY_SCHEDULE", schedule),
        ("TOCSIN_SMTP_HOST", "127.0.0.1"),
        ("TOCSIN_SMTP_PORT", &port),
        ("TOCSIN_SMTP_TLS", "none"),
        ("TOCSIN_SMTP_FROM", "Tocsin <alerts@tocsin.test>"),
        ("TOCSIN_TELEGRAM_API_BASE", &telegram.base),
        ("TOCSIN_TELEGRAM_BOT_TOKEN", "123456:TEST-TOKEN"),
        ("TOCSIN_PUBLIC_URL", "https://tocsin.test"),
    ]);
    let api = server.client();
    let secret = api.get("/v1/workspace/webhook-secret").body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    assert!(secret.starts_with("whsec_"));
    receiver.set_secret(&secret);
    World {
        target,
        receiver,
        smtp,
        telegram,
        server,
        api,
    }
}

fn create(api: &Api, path: &str, body: Value) -> String {
    let r = api.post(path, &body);
    assert_eq!(r.status, 201, "{path}: {}", r.body);
    r.body["data"]["id"].as_str().expect("id").to_string()
}

fn incidents_of(api: &Api, monitor: &str) -> Vec<Value> {
    api.get(&format!("/v1/incidents?monitorId={monitor}")).body["data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn events_at(r: &Receiver, path: &str, event: &str) -> Vec<sinks::Received> {
    r.at(path)
        .into_iter()
        .filter(|x| x.json["event"] == event)
        .collect()
}

#[test]
fn an_outage_notifies_every_channel_once_and_recovery_closes_it() {
    let w = world("200ms,200ms,200ms");
    let (shop, blog) = shop_on_a_loud_policy_and_blog_on_a_quiet_one(&w);
    w.target.set_status(503);
    the_outage_is_announced_once_on_every_channel(&w, &shop, &blog);
    w.target.set_status(200);
    the_recovery_is_announced_where_the_policy_asks_and_closes_the_story(&w, &shop, &blog);
    drop(w.server);
}

/// Shop's policy tells e-mail, Telegram and a webhook, also of recoveries; Blog's tells a
/// webhook of outages only. Both monitors are up. Returns their ids.
fn shop_on_a_loud_policy_and_blog_on_a_quiet_one(w: &World) -> (String, String) {
    let api = &w.api;
    let loud = create(
        api,
        "/v1/alert-policies",
        json!({
        "name": "Production", "failureThreshold": 2, "recoveryThreshold": 2,
        "channels": [
            {"type": "email", "target": "oncall@tocsin.test"},
            {"type": "telegram", "chatId": "-1001"},
            {"type": "webhook", "url": w.receiver.url("/hooks/loud")}
        ]}),
    );
    let quiet = create(
        api,
        "/v1/alert-policies",
        json!({
        "name": "Quiet", "notifyOnRecovery": false, "channels": [{"type": "webhook", "url": w.receiver.url("/hooks/quiet")}]}),
    );
    let policy = api.get(&format!("/v1/alert-policies/{loud}")).body;
    assert_eq!(
        policy["data"]["channels"][1],
        json!({"type": "telegram", "chatId": "-1001"})
    );
    assert_eq!(policy["data"]["notifyOnRecovery"], true);

    let a = create(
        api,
        "/v1/monitors",
        json!({"name": "Shop", "type": "http", "url": w.target.url("/status"), "method": "GET", "interval": 1, "alertPolicyId": loud}),
    );
    let b = create(
        api,
        "/v1/monitors",
        json!({"name": "Blog", "type": "http", "url": w.target.url("/status"), "method": "GET", "interval": 1, "alertPolicyId": quiet}),
    );
    wait_for("monitors up", Duration::from_secs(15), || {
        [&a, &b]
            .iter()
            .all(|id| api.get(&format!("/v1/monitors/{id}")).body["data"]["status"] == "up")
            .then_some(())
    });
    (a, b)
}

/// The outage: one incident per monitor, each channel told once, signed and complete.
fn the_outage_is_announced_once_on_every_channel(w: &World, a: &str, b: &str) {
    let api = &w.api;
    let created = wait_for("incident.created for Shop", Duration::from_secs(20), || {
        events_at(&w.receiver, "/hooks/loud", "incident.created")
            .into_iter()
            .next()
    });
    wait_for("incident.created for Blog", Duration::from_secs(20), || {
        events_at(&w.receiver, "/hooks/quiet", "incident.created")
            .into_iter()
            .next()
    });
    // Signed, with the spec's headers and payload.
    assert!(
        created.verified,
        "signature or timestamp did not verify: {:?}",
        created.headers
    );
    assert_eq!(created.headers["content-type"], "application/json");
    assert_eq!(created.headers["x-service-event"], "incident.created");
    let webhook_id = created.json["webhookId"].as_str().expect("webhookId");
    assert!(webhook_id.starts_with("whd_"));
    assert_eq!(created.headers["x-service-webhook-id"], webhook_id);
    assert!(created.headers["x-service-signature"].starts_with("sha256="));
    let p = &created.json;
    assert_eq!(
        p["monitor"],
        json!({"id": a, "name": "Shop", "type": "http", "url": w.target.url("/status")})
    );
    assert_eq!(p["incident"]["status"], "open");
    assert!(
        p["incident"]["url"]
            .as_str()
            .is_some_and(|u| u.starts_with("https://tocsin.test/incidents/inc_"))
    );
    assert_eq!(p["failure"]["reason"], "Expected status 200, got 503");
    assert_eq!(p["failure"]["statusCode"], 503);
    assert_eq!(p["failure"]["region"], "local");
    assert_eq!(p["workspace"]["name"], "Default");
    assert!(p["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));

    // E-mail over real SMTP and Telegram over its HTTP API.
    let mail = wait_for("the DOWN e-mail", Duration::from_secs(20), || {
        w.smtp.mails().into_iter().next()
    });
    assert_eq!(mail.to, ["oncall@tocsin.test"]);
    assert_eq!(mail.from, "alerts@tocsin.test");
    assert!(mail.data.contains("Subject: DOWN: Shop"), "{}", mail.data);
    assert!(
        mail.data.contains("Expected status 200, got 503"),
        "{}",
        mail.data
    );
    let tg = wait_for("the DOWN Telegram message", Duration::from_secs(20), || {
        w.telegram.messages().into_iter().next()
    });
    assert_eq!(tg.token, "123456:TEST-TOKEN");
    assert_eq!(tg.body["chat_id"], "-1001");
    assert_eq!(tg.body["parse_mode"], "HTML");
    assert!(
        tg.body["text"]
            .as_str()
            .is_some_and(|t| t.contains("<b>DOWN</b>: Shop")),
        "{}",
        tg.body
    );

    // Further failures open no second incident and notify no one again.
    std::thread::sleep(Duration::from_secs(3));
    let open = incidents_of(api, a);
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(open[0]["status"], "open");
    assert_eq!(
        api.get(&format!("/v1/monitors/{a}")).body["data"]["status"],
        "down"
    );
    assert_eq!(
        events_at(&w.receiver, "/hooks/loud", "incident.created").len(),
        1
    );
    assert_eq!(w.smtp.mails().len(), 1);
    assert_eq!(w.telegram.messages().len(), 1);
    assert_eq!(incidents_of(api, b).len(), 1);
}

/// The recovery: resolved incidents, RECOVERED messages where `notifyOnRecovery` is on,
/// a complete timeline and every delivery succeeded.
fn the_recovery_is_announced_where_the_policy_asks_and_closes_the_story(
    w: &World,
    a: &str,
    b: &str,
) {
    let api = &w.api;
    let resolved = wait_for(
        "incident.resolved for Shop",
        Duration::from_secs(20),
        || {
            events_at(&w.receiver, "/hooks/loud", "incident.resolved")
                .into_iter()
                .next()
        },
    );
    assert!(resolved.verified);
    assert_eq!(resolved.json["incident"]["status"], "resolved");
    assert!(
        resolved.json["incident"]["durationSeconds"]
            .as_i64()
            .is_some()
    );
    assert!(resolved.json.get("failure").is_none());
    wait_for("the RECOVERED e-mail", Duration::from_secs(20), || {
        w.smtp
            .mails()
            .iter()
            .any(|m| m.data.contains("Subject: RECOVERED: Shop"))
            .then_some(())
    });
    wait_for(
        "the RECOVERED Telegram message",
        Duration::from_secs(20),
        || {
            w.telegram
                .messages()
                .iter()
                .any(|m| {
                    m.body["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("RECOVERED"))
                })
                .then_some(())
        },
    );
    let inc = &incidents_of(api, a)[0];
    assert_eq!(inc["status"], "resolved");
    assert!(inc["durationSeconds"].as_i64().is_some());
    wait_for("Blog resolved", Duration::from_secs(20), || {
        (incidents_of(api, b)[0]["status"] == "resolved").then_some(())
    });
    // notifyOnRecovery false: the quiet policy's webhook hears nothing of the recovery.
    std::thread::sleep(Duration::from_secs(2));
    assert!(events_at(&w.receiver, "/hooks/quiet", "incident.resolved").is_empty());
    assert_eq!(
        api.get(&format!("/v1/monitors/{a}")).body["data"]["status"],
        "up"
    );

    // The timeline tells the story.
    let full = api
        .get(&format!(
            "/v1/incidents/{}",
            inc["id"].as_str().expect("id")
        ))
        .body;
    let kinds: Vec<&str> = full["data"]["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["created", "notified", "resolved", "notified"]);
    assert_eq!(full["data"]["failure"]["statusCode"], 503);
    // Every delivery succeeded.
    let deliveries = api
        .get(&format!(
            "/v1/webhook-deliveries?incidentId={}",
            inc["id"].as_str().expect("id")
        ))
        .body;
    assert_eq!(deliveries["pagination"]["total"], 6);
    assert!(
        deliveries["data"]
            .as_array()
            .expect("data")
            .iter()
            .all(|d| d["status"] == "succeeded"),
        "{deliveries}"
    );
}

#[test]
fn deliveries_retry_with_the_same_webhook_id_and_redirects_fail() {
    let w = world("300ms,300ms,300ms");
    let api = &w.api;
    let flaky = create(
        api,
        "/v1/channels",
        json!({"name": "flaky", "type": "webhook", "url": w.receiver.url("/flaky")}),
    );
    w.receiver.fail_next("/flaky", 2);
    let first = api.request("POST", &format!("/v1/channels/{flaky}/test"), None);
    assert_eq!(first.status, 200, "{}", first.body);
    let id = first.body["data"]["id"].as_str().expect("id").to_string();
    assert_eq!(first.body["data"]["payload"]["test"], true);
    assert_eq!(first.body["data"]["payload"]["event"], "incident.created");
    let done = wait_for(
        "the flaky delivery to succeed",
        Duration::from_secs(20),
        || {
            let d = api.get(&format!("/v1/webhook-deliveries/{id}")).body;
            (d["data"]["status"] == "succeeded").then_some(d)
        },
    );
    assert_eq!(done["data"]["attempts"], 3);
    let log: Vec<(Value, Value)> = done["data"]["attemptLog"]
        .as_array()
        .expect("log")
        .iter()
        .map(|a| (a["ok"].clone(), a["statusCode"].clone()))
        .collect();
    assert_eq!(
        log,
        [
            (json!(false), json!(500)),
            (json!(false), json!(500)),
            (json!(true), json!(200))
        ]
    );
    let seen = w.receiver.at("/flaky");
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|r| r.json["webhookId"] == id.as_str()
        && r.headers["x-service-webhook-id"] == id
        && r.verified));
    // Each retry is signed afresh.
    assert!(seen.iter().all(|r| r.body == seen[0].body));

    // A redirect is a failure; after the schedule the delivery is failed.
    let moved = create(
        api,
        "/v1/channels",
        json!({"name": "moved", "type": "webhook", "url": w.receiver.url("/moved/here")}),
    );
    let first = api.request("POST", &format!("/v1/channels/{moved}/test"), None);
    let id = first.body["data"]["id"].as_str().expect("id").to_string();
    let failed = wait_for(
        "the redirected delivery to fail",
        Duration::from_secs(20),
        || {
            let d = api.get(&format!("/v1/webhook-deliveries/{id}")).body;
            (d["data"]["status"] == "failed").then_some(d)
        },
    );
    assert_eq!(failed["data"]["attempts"], 4, "1 attempt + 3 retries");
    assert!(
        failed["data"]["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("301")),
        "{failed}"
    );
    assert_eq!(w.receiver.at("/moved/here").len(), 4);
    // Redelivery by hand: one more attempt with the same id.
    let r = api.request(
        "POST",
        &format!("/v1/webhook-deliveries/{id}/redeliver"),
        None,
    );
    assert_eq!(r.body["data"]["status"], "pending");
    wait_for("the redelivery", Duration::from_secs(10), || {
        (w.receiver.at("/moved/here").len() == 5).then_some(())
    });
    assert!(
        w.receiver
            .at("/moved/here")
            .iter()
            .all(|r| r.json["webhookId"] == id.as_str())
    );
    // Failed once its fifth attempt's answer is written (just after the receiver saw it).
    wait_for(
        "the delivery listed as failed",
        Duration::from_secs(10),
        || {
            api.get("/v1/webhook-deliveries?status=failed").body["data"]
                .as_array()
                .and_then(|l| l.iter().find(|d| d["id"] == id.as_str()).cloned())
        },
    );
    api.get("/v1/webhook-deliveries/whd_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")
        .assert_error(404, "DELIVERY_NOT_FOUND");
}

#[test]
fn acknowledge_resolve_and_escalation() {
    let w = world("200ms");
    let api = &w.api;
    let policy = create(
        api,
        "/v1/alert-policies",
        json!({
        "name": "Escalating", "failureThreshold": 1,
        "channels": [{"type": "webhook", "url": w.receiver.url("/first")}],
        "escalation": {"delayMinutes": 1, "channels": [{"type": "webhook", "url": w.receiver.url("/second")}]}}),
    );
    let ignored = create(
        api,
        "/v1/monitors",
        json!({"name": "Ignored", "type": "http", "url": w.target.url("/status"), "method": "GET", "interval": 1, "alertPolicyId": policy}),
    );
    let watched = create(
        api,
        "/v1/monitors",
        json!({"name": "Watched", "type": "http", "url": w.target.url("/status"), "method": "GET", "interval": 1, "alertPolicyId": policy}),
    );
    w.target.set_status(500);
    let inc_of = |m: &str| {
        wait_for("an incident", Duration::from_secs(20), || {
            incidents_of(api, m).first().cloned()
        })
    };
    let watched_inc = inc_of(&watched)["id"].as_str().expect("id").to_string();
    let ignored_inc = inc_of(&ignored)["id"].as_str().expect("id").to_string();

    // Acknowledge one, with a note; again is a no-op.
    let r = api.post(
        &format!("/v1/incidents/{watched_inc}/acknowledge"),
        &json!({"note": "looking"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["status"], "acknowledged");
    assert_eq!(r.body["data"]["acknowledgedBy"], "bootstrap admin");
    let acked_at = r.body["data"]["acknowledgedAt"].clone();
    let again = api.request(
        "POST",
        &format!("/v1/incidents/{watched_inc}/acknowledge"),
        None,
    );
    assert_eq!(
        (again.status, &again.body["data"]["acknowledgedAt"]),
        (200, &acked_at)
    );
    let ack_event = wait_for("incident.acknowledged", Duration::from_secs(10), || {
        events_at(&w.receiver, "/first", "incident.acknowledged")
            .into_iter()
            .next()
    });
    assert_eq!(ack_event.json["incident"]["status"], "acknowledged");
    api.raw(
        "POST",
        &format!("/v1/incidents/{watched_inc}/acknowledge"),
        Some("text/plain"),
        b"hi".to_vec(),
    )
    .assert_error(400, "INVALID_CONTENT_TYPE");

    // The unacknowledged one escalates after a minute; the acknowledged one does not.
    let escalated = wait_for("escalation", Duration::from_secs(90), || {
        events_at(&w.receiver, "/second", "incident.created")
            .into_iter()
            .next()
    });
    assert_eq!(escalated.json["incident"]["id"], ignored_inc.as_str());
    assert!(escalated.verified);
    std::thread::sleep(Duration::from_secs(3));
    let second: Vec<_> = events_at(&w.receiver, "/second", "incident.created");
    assert_eq!(
        second.len(),
        1,
        "escalation fires once, and never for the acknowledged incident"
    );
    let inc = api.get(&format!("/v1/incidents/{ignored_inc}")).body;
    assert!(inc["data"]["escalatedAt"].as_str().is_some());
    assert!(
        inc["data"]["timeline"]
            .as_array()
            .expect("timeline")
            .iter()
            .any(|e| e["kind"] == "escalated")
    );
    assert_eq!(
        api.get(&format!("/v1/incidents/{watched_inc}")).body["data"]["escalatedAt"],
        Value::Null
    );

    // Manual resolve: the same event as recovery, to the escalation channels too.
    let r = api.request(
        "POST",
        &format!("/v1/incidents/{ignored_inc}/resolve"),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["status"], "resolved");
    wait_for(
        "incident.resolved to the escalation channel",
        Duration::from_secs(10),
        || {
            events_at(&w.receiver, "/second", "incident.resolved")
                .into_iter()
                .next()
        },
    );
    api.request(
        "POST",
        &format!("/v1/incidents/{ignored_inc}/acknowledge"),
        None,
    )
    .assert_error(409, "INCIDENT_RESOLVED");
    api.request(
        "POST",
        "/v1/incidents/inc_01JD6Z3Y5N8Q2W7R4T6V9X0B1C/acknowledge",
        None,
    )
    .assert_error(404, "INCIDENT_NOT_FOUND");
    // Resolving from acknowledged works too.
    let r = api.request(
        "POST",
        &format!("/v1/incidents/{watched_inc}/resolve"),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["status"], "resolved");
    let listed = api.get("/v1/incidents?status=resolved").body;
    assert_eq!(listed["pagination"]["total"], 2);
}

#[test]
fn policies_and_channels_validate_and_respect_plans() {
    let w = world("1s");
    let api = &w.api;
    api.post("/v1/alert-policies", &json!({"name": "x", "channels": []}))
        .assert_error(400, "VALIDATION_ERROR");
    api.post("/v1/alert-policies", &json!({"name": "x", "failureThreshold": 0, "channels": [{"type": "email", "target": "a@b.test"}]})).assert_error(400, "VALIDATION_ERROR");
    let r = api.post(
        "/v1/alert-policies",
        &json!({"name": "x", "channels": [{"type": "email", "target": "not-an-address"}]}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(r.body["error"]["details"][0]["field"], "channels[0].target");
    api.post(
        "/v1/alert-policies",
        &json!({"name": "x", "channels": [{"type": "pager"}]}),
    )
    .assert_error(422, "UNPROCESSABLE_ENTITY");
    api.post(
        "/v1/alert-policies",
        &json!({"name": "x", "channels": [{"channelId": "ch_01JD6Z3Y5N8Q2W7R4T6V9X0B1C"}]}),
    )
    .assert_error(422, "UNPROCESSABLE_ENTITY");
    api.post("/v1/monitors", &json!({"name": "m", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60, "alertPolicyId": "pol_01JD6Z3Y5N8Q2W7R4T6V9X0B1C"})).assert_error(422, "UNPROCESSABLE_ENTITY");

    // Stored channels: unique names, write-only tokens, references from policies.
    let ch = create(
        api,
        "/v1/channels",
        json!({"name": "ops", "type": "telegram", "chatId": "42", "botToken": "9:SECRET"}),
    );
    let shown = api.get(&format!("/v1/channels/{ch}")).body;
    assert_eq!(shown["data"]["chatId"], "42");
    assert!(shown["data"].get("botToken").is_none(), "write-only");
    api.post(
        "/v1/channels",
        &json!({"name": "ops", "type": "email", "target": "a@b.test"}),
    )
    .assert_error(409, "CONFLICT");
    let r = api.patch(&format!("/v1/channels/{ch}"), &json!({"chatId": "43"}));
    assert_eq!(r.body["data"]["chatId"], "43");
    let pol = create(
        api,
        "/v1/alert-policies",
        json!({"name": "by ref", "channels": [{"channelId": ch}]}),
    );
    let m = create(
        api,
        "/v1/monitors",
        json!({"name": "m", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60, "alertPolicyId": pol}),
    );
    // The test button uses the stored token.
    let t = api.request("POST", &format!("/v1/channels/{ch}/test"), None);
    assert_eq!(t.body["data"]["status"], "succeeded", "{}", t.body);
    let msg = w.telegram.messages().pop().expect("sent");
    assert_eq!(
        (msg.token.as_str(), &msg.body["chat_id"]),
        ("9:SECRET", &json!("43"))
    );
    assert!(
        msg.body["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("[Test]"))
    );

    // Webhooks must be https unless the server allows otherwise (this one does).
    let r = api.post(
        "/v1/channels",
        &json!({"name": "hook", "type": "webhook", "url": "ftp://x.test/"}),
    );
    r.assert_error(400, "VALIDATION_ERROR");

    // Detach and delete.
    assert_eq!(
        api.patch(
            &format!("/v1/monitors/{m}"),
            &json!({"alertPolicyId": null})
        )
        .body["data"]["alertPolicyId"],
        Value::Null
    );
    assert_eq!(
        api.patch(&format!("/v1/monitors/{m}"), &json!({"alertPolicyId": pol}))
            .body["data"]["alertPolicyId"],
        pol.as_str()
    );
    assert_eq!(api.delete(&format!("/v1/alert-policies/{pol}")).status, 204);
    assert_eq!(
        api.get(&format!("/v1/monitors/{m}")).body["data"]["alertPolicyId"],
        Value::Null,
        "deleting a policy detaches it"
    );
    api.get(&format!("/v1/alert-policies/{pol}"))
        .assert_error(404, "ALERT_POLICY_NOT_FOUND");
    assert_eq!(api.delete(&format!("/v1/channels/{ch}")).status, 204);
    api.get(&format!("/v1/channels/{ch}"))
        .assert_error(404, "CHANNEL_NOT_FOUND");

    // Escalation needs a Business or Enterprise workspace.
    let free = Server::start(&[("TOCSIN_BOOTSTRAP_PLAN", "pro")]);
    let fapi = free.client();
    fapi.post(
        "/v1/alert-policies",
        &json!({"name": "e", "channels": [{"type": "email", "target": "a@b.test"}],
        "escalation": {"delayMinutes": 5, "channels": [{"type": "email", "target": "b@b.test"}]}}),
    )
    .assert_error(403, "PLAN_UPGRADE_REQUIRED");
    assert_eq!(
        fapi.post(
            "/v1/alert-policies",
            &json!({"name": "e", "channels": [{"type": "email", "target": "a@b.test"}]})
        )
        .status,
        201
    );
}

#[test]
fn a_crash_between_an_incident_and_its_delivery_loses_nothing() {
    let target = Target::start();
    let receiver = Receiver::start();
    let temp = tempfile::tempdir().expect("tempdir");
    let env = [
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_WEBHOOK_RETRY_SCHEDULE", "2s,2s,2s"),
    ];
    let mut first = Server::start_in(temp.path(), &env);
    let api = first.client();
    let secret = api.get("/v1/workspace/webhook-secret").body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    receiver.set_secret(&secret);
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "p", "failureThreshold": 1,
        "channels": [{"type": "webhook", "url": receiver.url("/pending")}, {"type": "webhook", "url": receiver.url("/done")}]}),
    );
    // /pending cannot take deliveries yet; /done can.
    receiver.fail_next("/pending", 1000);
    create(
        &api,
        "/v1/monitors",
        json!({"name": "m", "type": "http", "url": target.url("/status"), "method": "GET", "interval": 1, "alertPolicyId": policy}),
    );
    target.set_status(500);
    wait_for("the first attempts", Duration::from_secs(20), || {
        (!receiver.at("/pending").is_empty() && !receiver.at("/done").is_empty()).then_some(())
    });
    // Crash with /pending's delivery queued for a retry, once /done's success is on record
    // (a crash between the receiver's 200 and that record sends it again, with the same
    // webhookId: at least once, never lost).
    let done_id = receiver.at("/done")[0].json["webhookId"]
        .as_str()
        .expect("webhookId")
        .to_string();
    wait_for(
        "/done recorded as delivered",
        Duration::from_secs(10),
        || {
            (api.get(&format!("/v1/webhook-deliveries/{done_id}")).body["data"]["status"]
                == "succeeded")
                .then_some(())
        },
    );
    first.kill();
    receiver.fail_next("/pending", 0);

    let second = Server::start_in(temp.path(), &env);
    let api = second.client();
    let delivered = wait_for(
        "delivery after the restart",
        Duration::from_secs(20),
        || {
            receiver
                .at("/pending")
                .into_iter()
                .find(|r| r.answered == 200)
        },
    );
    std::thread::sleep(Duration::from_secs(4));
    let pending: Vec<_> = receiver
        .at("/pending")
        .into_iter()
        .filter(|r| r.answered == 200)
        .collect();
    assert_eq!(pending.len(), 1, "delivered once after the restart");
    assert!(
        receiver
            .at("/pending")
            .iter()
            .all(|r| r.json["webhookId"] == delivered.json["webhookId"])
    );
    // What succeeded before the crash is never sent again (the monitor is still failing, so
    // no new incident either).
    let done: Vec<_> = receiver
        .at("/done")
        .into_iter()
        .filter(|r| r.json["event"] == "incident.created")
        .collect();
    assert_eq!(done.len(), 1);
    assert_eq!(api.get("/v1/incidents").body["pagination"]["total"], 1);
    let id = delivered.json["webhookId"].as_str().expect("id");
    assert_eq!(
        api.get(&format!("/v1/webhook-deliveries/{id}")).body["data"]["status"],
        "succeeded"
    );
}
