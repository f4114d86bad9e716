//! Secrets and deliveries kept as a team relies on: read keys do not see header values or
//! webhook paths, a PATCH keeps write-only settings it did not touch, a channel in use
//! cannot be deleted from under its policies, turning `allow_insecure_webhooks` off stops
//! `http://` deliveries of channels saved before, and a delivery being attempted is never
//! sent a second time at once.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::sinks::Receiver;
use support::{Api, Server, wait_for};

fn id(r: &support::Reply) -> String {
    assert!(r.status == 200 || r.status == 201, "{}", r.body);
    r.body["data"]["id"].as_str().expect("id").to_string()
}

fn read_key(api: &Api) -> Api {
    let r = api.post(
        "/v1/api-keys",
        &json!({"name": "dashboard", "role": "read"}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    api.with_key(r.body["data"]["secret"].as_str().expect("secret"))
}

#[test]
fn read_keys_see_secrets_redacted_and_writers_see_them_whole() {
    let server = Server::start(&[]);
    let admin = server.client();
    let reader = read_key(&admin);

    let monitor = id(&admin.post(
        "/v1/monitors",
        &json!({"name": "api", "type": "http", "method": "GET", "url": "http://127.0.0.1:9/health",
                "interval": 60, "headers": {"Authorization": "Bearer s3cret", "X-Tenant": "t1"}}),
    ));
    let hook = "https://hooks.example.test/services/T000/B000/XXXXSECRET?sig=1";
    let channel = id(&admin.post(
        "/v1/channels",
        &json!({"name": "chat", "type": "webhook", "url": hook}),
    ));
    let policy = id(&admin.post(
        "/v1/alert-policies",
        &json!({"name": "p", "channels": [{"type": "webhook", "url": hook}, {"channelId": channel}],
                "escalation": {"delayMinutes": 5, "channels": [{"type": "webhook", "url": hook}]}}),
    ));

    // The reader: header names but no values, webhook origins but no paths.
    let m = reader.get(&format!("/v1/monitors/{monitor}")).body;
    assert_eq!(m["data"]["headers"]["Authorization"], "[redacted]", "{m}");
    assert_eq!(m["data"]["headers"]["X-Tenant"], "[redacted]");
    assert_eq!(m["data"]["url"], "http://127.0.0.1:9/health");
    let listed = reader.get("/v1/monitors").body;
    assert_eq!(listed["data"][0]["headers"]["Authorization"], "[redacted]");
    let c = reader.get(&format!("/v1/channels/{channel}")).body;
    assert_eq!(
        c["data"]["url"], "https://hooks.example.test/[redacted]",
        "{c}"
    );
    assert_eq!(
        reader.get("/v1/channels").body["data"][0]["url"],
        "https://hooks.example.test/[redacted]"
    );
    let p = reader.get(&format!("/v1/alert-policies/{policy}")).body;
    assert_eq!(
        p["data"]["channels"][0]["url"],
        "https://hooks.example.test/[redacted]"
    );
    assert_eq!(p["data"]["channels"][1]["channelId"], channel.as_str());
    assert_eq!(
        p["data"]["escalation"]["channels"][0]["url"],
        "https://hooks.example.test/[redacted]"
    );
    let text = format!("{m}{c}{p}{listed}");
    assert!(
        !text.contains("s3cret") && !text.contains("XXXXSECRET"),
        "{text}"
    );

    // The admin (and a write key) sees what it saved.
    let m = admin.get(&format!("/v1/monitors/{monitor}")).body;
    assert_eq!(m["data"]["headers"]["Authorization"], "Bearer s3cret");
    assert_eq!(
        admin.get(&format!("/v1/channels/{channel}")).body["data"]["url"],
        hook
    );
    let p = admin.get(&format!("/v1/alert-policies/{policy}")).body;
    assert_eq!(p["data"]["escalation"]["channels"][0]["url"], hook);
}

/// The stored row of a policy, read from the server's database.
fn stored_policy(server: &Server, workspace: &str, policy: &str) -> (String, Option<String>) {
    support::on_store(server, |store| async move {
        let row = store
            .alert_policy(workspace, policy)
            .await
            .expect("read")
            .expect("policy row");
        (store, (row.channels, row.escalation))
    })
}

#[test]
fn a_patch_keeps_write_only_tokens_and_used_channels_cannot_be_deleted() {
    let server = Server::start(&[]);
    let api = server.client();
    let workspace = api.workspace_id();
    let stored = id(&api.post(
        "/v1/channels",
        &json!({"name": "ops mail", "type": "email", "target": "ops@example.test"}),
    ));
    let policy = id(&api.post(
        "/v1/alert-policies",
        &json!({"name": "on call",
                "channels": [{"type": "telegram", "chatId": "42", "botToken": "111:first-token"}, {"channelId": stored}],
                "escalation": {"delayMinutes": 5, "channels": [{"type": "telegram", "chatId": "7", "botToken": "222:boss-token"}]}}),
    ));
    let shown = api.get(&format!("/v1/alert-policies/{policy}")).body;
    assert!(!shown.to_string().contains("token"), "{shown}");

    // Renaming keeps both tokens, in `channels` and in the escalation.
    let r = api.patch(
        &format!("/v1/alert-policies/{policy}"),
        &json!({"name": "on call (renamed)"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let (channels, escalation) = stored_policy(&server, &workspace, &policy);
    assert!(channels.contains("111:first-token"), "{channels}");
    assert!(
        escalation
            .as_deref()
            .is_some_and(|e| e.contains("222:boss-token")),
        "{escalation:?}"
    );

    // Sending back the escalation as it was read (no token) keeps it too; a new token
    // replaces it.
    let mut escalation_as_read = shown["data"]["escalation"].clone();
    escalation_as_read["delayMinutes"] = json!(10);
    let r = api.patch(
        &format!("/v1/alert-policies/{policy}"),
        &json!({"escalation": escalation_as_read}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let (_, escalation) = stored_policy(&server, &workspace, &policy);
    let e: Value = serde_json::from_str(escalation.as_deref().expect("escalation")).expect("json");
    assert_eq!(e["delayMinutes"], 10);
    assert_eq!(e["channels"][0]["botToken"], "222:boss-token");
    let r = api.patch(
        &format!("/v1/alert-policies/{policy}"),
        &json!({"escalation": {"delayMinutes": 10, "channels": [{"type": "telegram", "chatId": "7", "botToken": "333:new-token"}]}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let (_, escalation) = stored_policy(&server, &workspace, &policy);
    assert!(
        escalation
            .as_deref()
            .is_some_and(|e| e.contains("333:new-token"))
    );

    // The stored channel is in use: 409 names the policy and nothing is deleted.
    let r = api.delete(&format!("/v1/channels/{stored}"));
    r.assert_error(409, "CONFLICT");
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("on call (renamed)") && message.contains(&policy),
        "{message}"
    );
    assert_eq!(api.get(&format!("/v1/channels/{stored}")).status, 200);

    // Once no policy names it, it goes.
    let r = api.patch(
        &format!("/v1/alert-policies/{policy}"),
        &json!({"channels": [{"type": "email", "target": "else@example.test"}]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(api.delete(&format!("/v1/channels/{stored}")).status, 204);
    assert_eq!(api.get(&format!("/v1/channels/{stored}")).status, 404);
}

#[test]
fn turning_insecure_webhooks_off_stops_existing_http_channels() {
    let receiver = Receiver::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = Server::start_in(dir.path(), &[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let channel = id(&api.post(
        "/v1/channels",
        &json!({"name": "plain", "type": "webhook", "url": receiver.url("/plain")}),
    ));
    let sent = api.request("POST", &format!("/v1/channels/{channel}/test"), None);
    assert_eq!(sent.body["data"]["status"], "succeeded", "{}", sent.body);
    assert_eq!(receiver.at("/plain").len(), 1);
    server.stop();

    // The operator turns the switch off: the saved http:// channel no longer receives.
    let server = Server::start_in(dir.path(), &[]);
    let api = server.client();
    let refused = api.request("POST", &format!("/v1/channels/{channel}/test"), None);
    assert_eq!(refused.status, 200, "{}", refused.body);
    assert_eq!(refused.body["data"]["status"], "failed", "{}", refused.body);
    let reason = refused.body["data"]["lastError"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("allow_insecure_webhooks is off"),
        "{}",
        refused.body
    );
    assert_eq!(receiver.at("/plain").len(), 1, "nothing more was sent");
}

#[test]
fn a_delivery_being_attempted_is_not_redelivered_at_the_same_time() {
    let receiver = Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let channel = id(&api.post(
        "/v1/channels",
        &json!({"name": "slow", "type": "webhook", "url": receiver.url("/held")}),
    ));
    // The receiver holds the first request past the 10 s delivery deadline.
    receiver.hold_next("/held", 1);
    let tester = {
        let api = api.clone();
        let path = format!("/v1/channels/{channel}/test");
        std::thread::spawn(move || api.request("POST", &path, None))
    };
    wait_for("the held attempt", Duration::from_secs(20), || {
        (receiver.at("/held").len() == 1).then_some(())
    });
    let delivery = api.get("/v1/webhook-deliveries").body["data"][0]["id"]
        .as_str()
        .expect("delivery id")
        .to_string();
    let r = api.request(
        "POST",
        &format!("/v1/webhook-deliveries/{delivery}/redeliver"),
        None,
    );
    r.assert_error(409, "CONFLICT");
    assert_eq!(receiver.at("/held").len(), 1, "sent twice at once");

    // When the attempt has ended (timed out), a redelivery goes out, once.
    let first = tester.join().expect("test call");
    assert_eq!(first.body["data"]["attempts"], 1, "{}", first.body);
    let r = api.request(
        "POST",
        &format!("/v1/webhook-deliveries/{delivery}/redeliver"),
        None,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    wait_for("the redelivery", Duration::from_secs(20), || {
        let d = api.get(&format!("/v1/webhook-deliveries/{delivery}")).body;
        (d["data"]["status"] == "succeeded").then_some(())
    });
    let got = receiver.at("/held");
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].json["webhookId"], got[1].json["webhookId"]);
}

/// Taking one inline channel off a policy moves no secret to the channel after it: each
/// channel sent back as shown keeps its own write-only value, wherever it now stands; two
/// channels that look the same are refused until the value is given again.
#[test]
fn taking_an_inline_channel_off_moves_no_secret_to_its_neighbour() {
    let server = Server::start(&[]);
    let api = server.client();
    let workspace = api.workspace_id();
    let policy = id(&api.post(
        "/v1/alert-policies",
        &json!({"name": "paging",
        "channels": [
            {"type": "pagerduty", "routingKey": "R0000000000000000000000000000a0a", "severity": "critical"},
            {"type": "telegram", "chatId": "42", "botToken": "111:token-of-b"},
            {"type": "pagerduty", "routingKey": "R0000000000000000000000000000c0c", "severity": "warning"}
        ]}),
    ));
    let shown = api.get(&format!("/v1/alert-policies/{policy}")).body;
    let as_shown = shown["data"]["channels"]
        .as_array()
        .expect("channels")
        .clone();
    assert!(!shown.to_string().contains("R000000"), "{shown}");

    // The first taken off: the other two keep their own values.
    let r = api.patch(
        &format!("/v1/alert-policies/{policy}"),
        &json!({"channels": [as_shown[1], as_shown[2]]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let (channels, _) = stored_policy(&server, &workspace, &policy);
    let stored: Value = serde_json::from_str(&channels).expect("json");
    assert_eq!(stored[0]["botToken"], "111:token-of-b", "{stored}");
    assert_eq!(
        stored[1]["routingKey"], "R0000000000000000000000000000c0c",
        "{stored}"
    );
    assert!(
        !channels.contains("R0000000000000000000000000000a0a"),
        "{channels}"
    );

    // Two that look the same: which value each keeps cannot be told, so it is asked for.
    let twins = id(&api.post(
        "/v1/alert-policies",
        &json!({"name": "twins",
        "channels": [
            {"type": "pagerduty", "routingKey": "R00000000000000000000000000001e1", "severity": "error"},
            {"type": "pagerduty", "routingKey": "R00000000000000000000000000002e2", "severity": "error"}
        ]}),
    ));
    let shown = api.get(&format!("/v1/alert-policies/{twins}")).body;
    let one = shown["data"]["channels"][0].clone();
    let r = api.patch(
        &format!("/v1/alert-policies/{twins}"),
        &json!({"channels": [one]}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    assert!(
        r.body.to_string().contains("channels[0].routingKey"),
        "{}",
        r.body
    );
    let (channels, _) = stored_policy(&server, &workspace, &twins);
    assert!(
        channels.contains("R00000000000000000000000000001e1")
            && channels.contains("R00000000000000000000000000002e2"),
        "nothing changed: {channels}"
    );
    // A rename sends both back as shown, in place: each keeps its own.
    let r = api.patch(
        &format!("/v1/alert-policies/{twins}"),
        &json!({"name": "twins (renamed)"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let (channels, _) = stored_policy(&server, &workspace, &twins);
    let stored: Value = serde_json::from_str(&channels).expect("json");
    assert_eq!(
        stored[0]["routingKey"], "R00000000000000000000000000001e1",
        "{stored}"
    );
    assert_eq!(
        stored[1]["routingKey"], "R00000000000000000000000000002e2",
        "{stored}"
    );
}

#[test]
fn escalation_steps_keep_their_tokens_hide_them_and_refuse_bad_steps() {
    let server = Server::start(&[]);
    let api = server.client();
    let reader = read_key(&api);
    let workspace = api.workspace_id();
    let step = |after: u64, channels: Value| json!({"afterMinutes": after, "channels": channels});
    let hook = json!([{"type": "webhook", "url": "https://hooks.example.test/first/s3cr3t"}]);
    let bot = json!([{"type": "telegram", "chatId": "7", "botToken": "222:boss-token"}]);

    // Refused, naming the field; nothing is created.
    for (escalation, field) in [
        (
            json!({"steps": [step(10, hook.clone()), step(10, bot.clone())]}),
            "escalation.steps[1].afterMinutes",
        ),
        (json!({"steps": []}), "escalation.steps"),
        (
            json!({"steps": (1..=11).map(|m| step(m, hook.clone())).collect::<Vec<_>>()}),
            "escalation.steps",
        ),
        (
            json!({"steps": [step(0, hook.clone())]}),
            "escalation.steps[0].afterMinutes",
        ),
        (
            json!({"steps": [step(5, hook.clone())], "delayMinutes": 5}),
            "escalation.delayMinutes",
        ),
        (
            json!({"steps": [step(5, hook.clone())], "repeat": "yes"}),
            "escalation.repeat",
        ),
    ] {
        let r = api.post(
            "/v1/alert-policies",
            &json!({"name": "bad", "channels": [{"type": "email", "target": "ops@example.test"}], "escalation": escalation}),
        );
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
    assert_eq!(api.get("/v1/alert-policies").body["pagination"]["total"], 0);

    let policy = id(&api.post(
        "/v1/alert-policies",
        &json!({"name": "rota", "channels": [{"type": "email", "target": "ops@example.test"}],
                "escalation": {"steps": [step(5, hook.clone()), step(15, bot.clone())], "repeat": true}}),
    ));
    let shown = api.get(&format!("/v1/alert-policies/{policy}")).body;
    let e = &shown["data"]["escalation"];
    assert_eq!(
        (
            &e["steps"][0]["afterMinutes"],
            &e["steps"][1]["afterMinutes"],
            &e["repeat"]
        ),
        (&json!(5), &json!(15), &json!(true)),
        "{shown}"
    );
    assert!(!shown.to_string().contains("token"), "{shown}");
    // A read key sees the webhook's secret path hidden, in every step.
    let read = reader.get(&format!("/v1/alert-policies/{policy}")).body;
    assert!(!read.to_string().contains("s3cr3t"), "{read}");
    assert_eq!(read["data"]["escalation"]["steps"][1]["afterMinutes"], 15);

    // A rename, and the escalation sent back as read, keep the token of step 2.
    let r = api.patch(
        &format!("/v1/alert-policies/{policy}"),
        &json!({"name": "rota 2"}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let mut as_read = shown["data"]["escalation"].clone();
    as_read["steps"][1]["afterMinutes"] = json!(20);
    let r = api.patch(
        &format!("/v1/alert-policies/{policy}"),
        &json!({"escalation": as_read}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let (_, stored) = stored_policy(&server, &workspace, &policy);
    let stored: Value = serde_json::from_str(stored.as_deref().expect("escalation")).expect("json");
    assert_eq!(stored["steps"][1]["afterMinutes"], 20);
    assert_eq!(
        stored["steps"][1]["channels"][0]["botToken"],
        "222:boss-token"
    );
    // The one-step form still reads and is shown as it was written.
    let r = api.patch(
        &format!("/v1/alert-policies/{policy}"),
        &json!({"escalation": {"delayMinutes": 7, "channels": hook}}),
    );
    assert_eq!(
        r.body["data"]["escalation"]["delayMinutes"], 7,
        "{}",
        r.body
    );
    assert!(
        r.body["data"]["escalation"].get("steps").is_none(),
        "{}",
        r.body
    );
}
