//! End to end: the chat and paging channels (Slack, Discord, Teams, Mattermost, Rocket.Chat,
//! Google Chat, Matrix, ntfy, Gotify, Pushover, PagerDuty, Opsgenie) against faithful fakes
//! of each provider's documented API on loopback (`support::providers`). Each is created as
//! a stored channel, tested with the test button, and then carries a real incident's
//! lifecycle: the outage (what failed, since when, where from, a link), the acknowledgement
//! and the recovery (how long it lasted), with PagerDuty's and Opsgenie's alerts following
//! Tocsin's incident. Rate limits are retried; a provider's permanent refusal is not, and
//! its own words reach the delivery log.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::providers::{
    self, GOTIFY_TOKEN, MATRIX_TOKEN, OPSGENIE_KEY, PAGERDUTY_KEY, PUSHOVER_TOKEN, PUSHOVER_USER,
    Providers,
};
use support::sinks::FakeTelegram;
use support::target::Target;
use support::{Api, Server, create, wait_for};

fn server(providers: &Providers) -> Server {
    server_with(providers, &[])
}

fn server_with(providers: &Providers, extra_env: &[(&str, &str)]) -> Server {
    let dir = tempfile::tempdir().expect("dir").keep();
    std::fs::write(
        dir.join("tocsin.toml"),
        format!(
            "[plugin_settings.pushover]\napiBase = \"{base}/pushover\"\n\
             [plugin_settings.pagerduty]\neventsUrl = \"{base}/pagerduty/v2/enqueue\"\n\
             [plugin_settings.opsgenie]\napiBase = \"{base}/opsgenie\"\n",
            base = providers.base
        ),
    )
    .expect("config");
    let mut env = vec![
        ("TOCSIN_WEBHOOK_RETRY_SCHEDULE", "300ms,300ms,300ms"),
        ("TOCSIN_PUBLIC_URL", "https://tocsin.test"),
    ];
    env.extend_from_slice(extra_env);
    Server::start_in(&dir, &env)
}

/// Every channel type, configured against the fakes.
fn channels(p: &Providers) -> Vec<(&'static str, Value)> {
    vec![
        (
            "slack",
            json!({"webhookUrl": p.url("/slack/services/T000/B000/XXXX")}),
        ),
        (
            "discord",
            json!({"webhookUrl": p.url("/discord/api/webhooks/123/tok")}),
        ),
        (
            "teams",
            json!({"webhookUrl": p.url("/teams/workflows/abc/triggers/manual/paths/invoke")}),
        ),
        (
            "mattermost",
            json!({"webhookUrl": p.url("/mattermost/hooks/xxx-generatedkey-xxx")}),
        ),
        (
            "rocketchat",
            json!({"webhookUrl": p.url("/rocketchat/hooks/intid/inttoken")}),
        ),
        (
            "googlechat",
            json!({"webhookUrl": p.url("/googlechat/v1/spaces/AAAA/messages?key=k&token=t")}),
        ),
        (
            "matrix",
            json!({"homeserverUrl": p.url("/matrix"), "roomId": "!ops:example.org", "accessToken": MATRIX_TOKEN}),
        ),
        (
            "ntfy",
            json!({"serverUrl": p.url("/ntfy"), "topic": "protected", "accessToken": "tk_good"}),
        ),
        (
            "gotify",
            json!({"serverUrl": p.url("/gotify"), "appToken": GOTIFY_TOKEN}),
        ),
        (
            "pushover",
            json!({"appToken": PUSHOVER_TOKEN, "userKey": PUSHOVER_USER}),
        ),
        ("pagerduty", json!({"routingKey": PAGERDUTY_KEY})),
        ("opsgenie", json!({"apiKey": OPSGENIE_KEY})),
    ]
}

/// "Checkout API", checked every second against `target` under `policy`, once it is up.
fn checkout_monitor_up(api: &Api, target: &Target, policy: &Value) -> String {
    let monitor = create(
        api,
        "/v1/monitors",
        json!({"name": "Checkout API", "type": "http", "url": target.url("/status"), "method": "GET",
               "interval": 1, "alertPolicyId": policy["id"]}),
    );
    let monitor_id = monitor["id"].as_str().expect("id").to_string();
    wait_for("the monitor up", Duration::from_secs(20), || {
        (api.get(&format!("/v1/monitors/{monitor_id}")).body["data"]["status"] == "up")
            .then_some(())
    });
    monitor_id
}

/// The first message `kind` has accepted whose text holds `words`, waited for.
fn told(p: &Providers, kind: &str, what: &str, words: &str) -> providers::Accepted {
    wait_for(
        &format!("{kind} told of {what}"),
        Duration::from_secs(30),
        || {
            p.accepted(kind)
                .into_iter()
                .find(|a| text_of(a).contains(words))
        },
    )
}

/// The text a provider's message carries, whatever its format.
fn text_of(a: &providers::Accepted) -> String {
    a.json.to_string()
}

fn delivery(api: &Api, id: &str) -> Value {
    api.get(&format!("/v1/webhook-deliveries/{id}")).body["data"].clone()
}

/// A fresh workspace's admin API: the test button allows 3 tests at once per workspace.
fn fresh_workspace(server: &Server, api: &Api, name: &str) -> Api {
    let ws = server.cli(&["workspace", "create", "--name", name]);
    assert!(ws.starts_with("ws_"), "{ws}");
    let key = server.cli(&["key", "create", "--workspace", &ws, "--role", "admin"]);
    api.with_key(&key)
}

#[test]
fn every_channel_is_a_stored_channel_with_a_test_button() {
    let p = Providers::start();
    let server = server(&p);
    let admin = server.client();
    let mut api = admin.clone();
    for (n, (kind, settings)) in channels(&p).into_iter().enumerate() {
        if n % 3 == 0 {
            api = fresh_workspace(&server, &admin, &format!("Team {n}"));
        }
        let mut body = settings.clone();
        body["name"] = json!(format!("{kind} channel"));
        body["type"] = json!(kind);
        let ch = create(&api, "/v1/channels", body);
        let id = ch["id"].as_str().expect("id").to_string();
        let shown = api.get(&format!("/v1/channels/{id}")).body["data"].clone();
        for secret in ["accessToken", "appToken", "routingKey", "apiKey"] {
            assert!(
                ch.get(secret).is_none() && shown.get(secret).is_none(),
                "{kind} shows {secret}: {shown}"
            );
        }
        let t = api.request("POST", &format!("/v1/channels/{id}/test"), None);
        assert_eq!(t.status, 200, "{kind}: {}", t.body);
        let delivery_id = t.body["data"]["id"]
            .as_str()
            .expect("delivery id")
            .to_string();
        let done = wait_for(
            &format!("{kind} test delivery"),
            Duration::from_secs(20),
            || {
                let d = delivery(&api, &delivery_id);
                (d["status"] != "pending").then_some(d)
            },
        );
        assert_eq!(done["status"], "succeeded", "{kind}: {done}");
        let got = p.accepted(kind);
        assert_eq!(got.len(), 1, "{kind}: one test message");
        assert!(
            text_of(&got[0]).contains("[Test]"),
            "{kind}: {}",
            got[0].json
        );
        // A stored channel keeps its secret when a client sends back what it read.
        let r = api.patch(
            &format!("/v1/channels/{id}"),
            &json!({"name": format!("{kind} renamed")}),
        );
        assert_eq!(r.status, 200, "{kind}: {}", r.body);
    }
}

#[test]
fn every_channel_carries_an_incident_from_outage_to_recovery() {
    let p = Providers::start();
    let target = Target::start();
    let server = server(&p);
    let api = server.client();
    // Inline channels of one policy.
    let inline: Vec<Value> = channels(&p)
        .into_iter()
        .map(|(kind, mut settings)| {
            settings["type"] = json!(kind);
            settings
        })
        .collect();
    let kinds: Vec<&str> = channels(&p).iter().map(|(k, _)| *k).collect();

    // A policy with all of them, a monitor on it; the target fails.
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Everyone", "failureThreshold": 1, "recoveryThreshold": 1, "channels": inline}),
    );
    let shown = policy["channels"].to_string();
    for secret in [
        MATRIX_TOKEN,
        GOTIFY_TOKEN,
        PUSHOVER_TOKEN,
        PAGERDUTY_KEY,
        OPSGENIE_KEY,
        "tk_good",
    ] {
        assert!(
            !shown.contains(secret),
            "the policy shows a secret: {shown}"
        );
    }
    let monitor_id = checkout_monitor_up(&api, &target, &policy);
    target.set_status(503);
    let incident = wait_for("an incident", Duration::from_secs(20), || {
        api.get(&format!("/v1/incidents?monitorId={monitor_id}"))
            .body["data"][0]
            .as_object()
            .cloned()
    });
    let incident_id = incident["id"].as_str().expect("incident id").to_string();
    for kind in &kinds {
        let down = told(&p, kind, "the outage", "DOWN: Checkout API");
        let text = text_of(&down);
        assert!(text.contains("503"), "{kind} says what failed: {text}");
        assert!(
            text.contains(&format!("https://tocsin.test/incidents/{incident_id}")),
            "{kind} links the incident: {text}"
        );
        if !["pushover", "ntfy", "gotify"].contains(kind) {
            assert!(
                text.to_lowercase().contains("since"),
                "{kind} says since when: {text}"
            );
        }
    }
    // Provider shapes beyond the fakes' own checks.
    let slack = p.accepted("slack").pop().expect("slack");
    assert_eq!(slack.json["blocks"][0]["type"], "header");
    let discord = p.accepted("discord").pop().expect("discord");
    assert_eq!(discord.json["embeds"][0]["color"], 0xD7261E);
    let ntfy = p.accepted("ntfy").pop().expect("ntfy");
    assert_eq!(
        (ntfy.json["priority"].clone(), ntfy.json["tags"][0].clone()),
        (json!(5), json!("rotating_light"))
    );
    let pd = p.accepted("pagerduty").pop().expect("pagerduty");
    assert_eq!(pd.json["event_action"], "trigger");
    assert_eq!(pd.json["dedup_key"], incident_id.as_str());
    assert_eq!(pd.json["payload"]["severity"], "critical");
    assert_eq!(
        p.alert_state("pagerduty", &incident_id).as_deref(),
        Some("triggered")
    );
    assert_eq!(
        p.alert_state("opsgenie", &incident_id).as_deref(),
        Some("open")
    );

    // Acknowledged in Tocsin: acknowledged at PagerDuty and Opsgenie too.
    let r = api.post(
        &format!("/v1/incidents/{incident_id}/acknowledge"),
        &json!({}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    wait_for("PagerDuty acknowledged", Duration::from_secs(20), || {
        p.accepted("pagerduty")
            .iter()
            .any(|a| a.json["event_action"] == "acknowledge")
            .then_some(())
    });
    wait_for("Opsgenie acknowledged", Duration::from_secs(20), || {
        p.accepted("opsgenie")
            .iter()
            .any(|a| a.path.ends_with("/acknowledge"))
            .then_some(())
    });

    // Recovery: every channel says how long it lasted; the pagers resolve and close.
    target.set_status(200);
    for kind in &kinds {
        let up = wait_for(
            &format!("{kind} told of the recovery"),
            Duration::from_secs(30),
            || {
                p.accepted(kind).into_iter().find(|a| {
                    let t = text_of(a);
                    t.contains("RECOVERED: Checkout API")
                        || a.json["event_action"] == "resolve"
                        || a.path.ends_with("/close")
                })
            },
        );
        if !["pagerduty", "opsgenie"].contains(kind) {
            assert!(text_of(&up).contains("Down for"), "{kind}: {}", up.json);
        }
    }
    let resolve = p
        .accepted("pagerduty")
        .into_iter()
        .find(|a| a.json["event_action"] == "resolve")
        .expect("resolve");
    assert_eq!(resolve.json["dedup_key"], incident_id.as_str());
    let close = p
        .accepted("opsgenie")
        .into_iter()
        .find(|a| a.path.ends_with("/close"))
        .expect("close");
    assert!(
        close.path.contains(&incident_id),
        "closed by alias: {}",
        close.path
    );
    assert_eq!(
        p.alert_state("pagerduty", &incident_id).as_deref(),
        Some("resolved")
    );
    assert_eq!(
        p.alert_state("opsgenie", &incident_id).as_deref(),
        Some("closed")
    );
    // Matrix: every message its own transaction, none repeated.
    let events: Vec<String> = p
        .accepted("matrix")
        .iter()
        .map(|a| a.path.clone())
        .collect();
    let mut unique = events.clone();
    unique.dedup();
    assert_eq!(events, unique);
}

/// The chat channels: every channel but the pagers.
fn chat_channels(p: &Providers) -> Vec<(&'static str, Value)> {
    channels(p)
        .into_iter()
        .filter(|(kind, _)| !["pagerduty", "opsgenie"].contains(kind))
        .collect()
}

#[test]
fn chat_channels_shape_their_messages_by_their_templates() {
    let p = Providers::start();
    let telegram = FakeTelegram::start();
    let target = Target::start();
    let server = server_with(
        &p,
        &[
            ("TOCSIN_TELEGRAM_API_BASE", &telegram.base),
            ("TOCSIN_TELEGRAM_BOT_TOKEN", "123456:TEST-TOKEN"),
        ],
    );
    let api = server.client();

    // A template naming no variable, or left open, is refused by the channel's own check,
    // and nothing is created.
    for (field, bad, words) in [
        ("titleTemplate", "{{monitor.name}} down", "not a variable"),
        ("messageTemplate", "{{reason", "closing"),
    ] {
        let mut body =
            json!({"name": "s", "type": "slack", "webhookUrl": p.url("/slack/services/T/B/X")});
        body[field] = json!(bad);
        let r = api.post("/v1/channels", &body);
        r.assert_error(400, "VALIDATION_ERROR");
        let detail = r.body["error"]["details"][0].clone();
        assert!(
            detail["field"].as_str().is_some_and(|f| f.ends_with(field))
                && detail["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(words)),
            "{}",
            r.body
        );
    }
    assert_eq!(api.get("/v1/channels").body["data"], json!([]));

    // A stored channel keeps its templates and shows them (they are not secrets).
    let stored = create(
        &api,
        "/v1/channels",
        json!({"name": "ops", "type": "slack", "webhookUrl": p.url("/slack/services/T/B/X"),
               "titleTemplate": "  {{monitor}} is {{status}}  "}),
    );
    let shown = api.get(&format!(
        "/v1/channels/{}",
        stored["id"].as_str().expect("id")
    ));
    assert_eq!(
        shown.body["data"]["titleTemplate"],
        "{{monitor}} is {{status}}"
    );

    // Its test message is marked as a test, in the template's words.
    let stored_id = stored["id"].as_str().expect("id").to_string();
    let t = api.request("POST", &format!("/v1/channels/{stored_id}/test"), None);
    assert_eq!(t.status, 200, "{}", t.body);
    let tested = wait_for("the test message", Duration::from_secs(20), || {
        p.accepted("slack").into_iter().next()
    });
    let header = tested.json["blocks"][0]["text"]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        header.starts_with("[Test] ") && header.ends_with(" is down"),
        "{}",
        tested.json
    );
    // Null clears a template; the channel writes its own headline again.
    let cleared = api.patch(
        &format!("/v1/channels/{stored_id}"),
        &json!({"titleTemplate": null}),
    );
    assert_eq!(cleared.status, 200, "{}", cleared.body);
    let after = api.get(&format!("/v1/channels/{stored_id}")).body["data"].clone();
    assert_eq!(after["name"], "ops", "{after}");
    assert!(
        after.get("titleTemplate").is_none_or(Value::is_null),
        "{after}"
    );
    api.request("POST", &format!("/v1/channels/{stored_id}/test"), None);
    let retested = wait_for("the second test message", Duration::from_secs(20), || {
        p.accepted("slack").into_iter().nth(1)
    });
    assert!(
        retested.json["blocks"][0]["text"]["text"]
            .as_str()
            .is_some_and(|h| h.starts_with("[Test] DOWN: ")),
        "{}",
        retested.json
    );

    let title = "{{monitor}} is {{status}}, severity {{severity}}";
    let mut inline: Vec<Value> = chat_channels(&p)
        .into_iter()
        .map(|(kind, mut settings)| {
            settings["type"] = json!(kind);
            settings["titleTemplate"] = json!(title);
            settings["messageTemplate"] = json!(
                "Failed with {{reason}} on {{target}} <!channel> *now* [x](https://evil.test) @here"
            );
            settings
        })
        .collect();
    // Telegram reads HTML: the template's own text is escaped like the values.
    inline.push(
        json!({"type": "telegram", "chatId": "-1001", "titleTemplate": title,
                       "messageTemplate": "<i>{{reason}}</i> for {{duration}}"}),
    );
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Templated", "failureThreshold": 1, "recoveryThreshold": 1, "channels": inline}),
    );
    checkout_monitor_up(&api, &target, &policy);
    target.set_status(503);
    for (kind, _) in chat_channels(&p) {
        let down = told(
            &p,
            kind,
            "the outage",
            "Checkout API is down, severity critical",
        );
        let text = text_of(&down);
        assert!(
            text.contains("Failed with ") && text.contains("503"),
            "{kind} carries the template's text: {text}"
        );
        assert!(
            text.contains(&target.url("/status")),
            "{kind} fills the target: {text}"
        );
        assert!(
            !text.contains("DOWN: Checkout API") && !text.contains("Reason"),
            "{kind} keeps its own headline or facts: {text}"
        );
    }
    // The text is escaped as each channel escapes its own words: no mention, no link.
    let slack = p.accepted("slack").pop().expect("slack");
    let section = slack.json["blocks"][1]["text"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        section.starts_with("Failed with ")
            && section.ends_with("&lt;!channel&gt; *now* [x](https://evil.test) @here"),
        "{}",
        slack.json
    );
    assert!(
        !slack.json["text"].to_string().contains("<!channel>"),
        "{}",
        slack.json
    );
    let discord = p.accepted("discord").pop().expect("discord");
    let description = discord.json["embeds"][0]["description"]
        .as_str()
        .unwrap_or_default();
    let escaped = "\\<!channel\\> \\*now\\* \\[x\\](https://evil.test) @\u{200B}here";
    assert!(description.ends_with(escaped), "{}", discord.json);
    // Markdown channels: no link, no bold, no @here (a zero-width space after the @).
    for kind in ["mattermost", "rocketchat"] {
        let m = p.accepted(kind).pop().expect(kind);
        let text = m.json["attachments"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.ends_with(escaped), "{kind}: {}", m.json);
    }
    let teams = p.accepted("teams").pop().expect("teams");
    let needle = json!(escaped).to_string();
    assert!(
        teams.json.to_string().contains(needle.trim_matches('"')),
        "{}",
        teams.json
    );
    let matrix = p.accepted("matrix").pop().expect("matrix");
    assert_eq!(matrix.json["m.mentions"], json!({}), "{}", matrix.json);
    assert!(
        matrix.json["formatted_body"].as_str().is_some_and(|h| h
            .contains("&lt;!channel&gt; *now*")
            && !h.contains("<a href=\"https://evil")),
        "{}",
        matrix.json
    );
    let down = wait_for(
        "Telegram told of the outage",
        Duration::from_secs(30),
        || {
            telegram.messages().into_iter().find(|m| {
                m.body["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(" is down,"))
            })
        },
    );
    let text = down.body["text"].as_str().expect("text").to_string();
    assert!(
        text.starts_with("<b>Checkout API is down, severity critical</b>\n&lt;i&gt;")
            && text.contains("503")
            && text.contains("&lt;/i&gt; for\n"),
        "{text}"
    );

    // The recovery fills the state and how long it lasted.
    target.set_status(200);
    for (kind, _) in chat_channels(&p) {
        told(
            &p,
            kind,
            "the recovery",
            "Checkout API is up, severity resolved",
        );
    }
    let up = wait_for(
        "Telegram told of the recovery",
        Duration::from_secs(30),
        || {
            telegram.messages().into_iter().find(|m| {
                m.body["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(" is up,"))
            })
        },
    );
    let text = up.body["text"].as_str().expect("text");
    assert!(
        text.starts_with("<b>Checkout API is up, severity resolved</b>")
            && text.contains("&lt;/i&gt; for ")
            && text.contains(" s\n"),
        "the recovery says how long: {text}"
    );
}

#[test]
fn rate_limits_are_retried_and_refusals_are_final_in_the_providers_words() {
    let p = Providers::start();
    let server = server(&p);
    let api = server.client();

    // Configuration is checked field by field, before anything is stored.
    let r = api.post(
        "/v1/channels",
        &json!({"name": "pd", "type": "pagerduty", "routingKey": "short"}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        r.body["error"]["details"][0]["field"], "routingKey",
        "{}",
        r.body
    );
    let r = api.post(
        "/v1/channels",
        &json!({"name": "s", "type": "slack", "webhookUrl": "hooks.slack.com/x"}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    let r = api.post("/v1/channels", &json!({"name": "m", "type": "matrix", "homeserverUrl": "https://m.example", "roomId": "ops", "accessToken": "x"}));
    assert_eq!(
        r.body["error"]["details"][0]["field"], "roomId",
        "{}",
        r.body
    );
    assert_eq!(api.get("/v1/channels").body["pagination"]["total"], 0);

    // Each test in a workspace of its own: the test button allows 3 at once per workspace.
    let made = std::cell::Cell::new(0);
    let test = |body: Value| -> Value {
        made.set(made.get() + 1);
        let api = fresh_workspace(&server, &api, &format!("Team {}", made.get()));
        let ch = create(&api, "/v1/channels", body);
        let t = api.request(
            "POST",
            &format!("/v1/channels/{}/test", ch["id"].as_str().expect("id")),
            None,
        );
        assert_eq!(t.status, 200, "{}", t.body);
        let id = t.body["data"]["id"].as_str().expect("delivery").to_string();
        wait_for("the delivery to finish", Duration::from_secs(30), || {
            let d = delivery(&api, &id);
            (d["status"] == "succeeded" || d["status"] == "failed").then_some(d)
        })
    };

    // Rate limited twice (Discord's 429, PagerDuty's throttle), then accepted.
    p.fail_next("discord", 2, 429);
    let d = test(
        json!({"name": "d", "type": "discord", "webhookUrl": p.url("/discord/api/webhooks/1/t")}),
    );
    assert_eq!(d["status"], "succeeded", "{d}");
    assert_eq!(p.answers("discord"), [429, 429, 200]);
    p.fail_next("pagerduty", 1, 429);
    let d = test(json!({"name": "p", "type": "pagerduty", "routingKey": PAGERDUTY_KEY}));
    assert_eq!(d["status"], "succeeded", "{d}");
    assert_eq!(p.answers("pagerduty"), [429, 202]);

    // Refusals: one attempt, the provider's words in the log.
    let refusals = [
        (
            json!({"name": "gone", "type": "slack", "webhookUrl": p.url("/slack/services/gone")}),
            "slack",
            "no_service",
        ),
        (
            json!({"name": "unknown", "type": "discord", "webhookUrl": p.url("/discord/api/webhooks/0/t")}),
            "discord",
            "Unknown Webhook",
        ),
        (
            json!({"name": "stale", "type": "matrix", "homeserverUrl": p.url("/matrix"), "roomId": "!r:x", "accessToken": "wrong"}),
            "matrix",
            "Invalid access token passed.",
        ),
        (
            json!({"name": "locked", "type": "ntfy", "serverUrl": p.url("/ntfy"), "topic": "protected"}),
            "ntfy",
            "forbidden",
        ),
        (
            json!({"name": "nobody", "type": "pushover", "appToken": PUSHOVER_TOKEN, "userKey": "uQiRzpo4DXghDmr9QzzfQu27cmVRsX"}),
            "pushover",
            "user identifier is not a valid user",
        ),
        (
            json!({"name": "badkey", "type": "opsgenie", "apiKey": "wrong"}),
            "opsgenie",
            "Could not authenticate",
        ),
        (
            json!({"name": "nokey", "type": "gotify", "serverUrl": p.url("/gotify"), "appToken": "wrong"}),
            "gotify",
            "Unauthorized",
        ),
        (
            json!({"name": "unrouted", "type": "pagerduty", "routingKey": "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ"}),
            "pagerduty",
            "Invalid routing key",
        ),
    ];
    for (body, provider, words) in refusals {
        let before = p.answers(provider).len();
        assert_refused_once(&test(body), provider, words);
        assert_eq!(p.answers(provider).len(), before + 1);
    }
    // The rest refuse in their own formats (told to, as a revoked webhook would).
    for (kind, words) in [
        ("teams", "did not match its schema definition"),
        ("mattermost", "Invalid webhook."),
        ("rocketchat", "Invalid integration id or token provided."),
        ("googlechat", "Invalid JSON payload received."),
    ] {
        let (_, settings) = channels(&p)
            .into_iter()
            .find(|(k, _)| *k == kind)
            .expect("configured");
        let mut body = settings;
        body["name"] = json!(format!("{kind} refused"));
        body["type"] = json!(kind);
        p.fail_next(kind, 1, 400);
        assert_refused_once(&test(body), kind, words);
    }
}

/// A delivery the provider refused: failed after one attempt, its words in the log.
fn assert_refused_once(d: &Value, provider: &str, words: &str) {
    assert_eq!(d["status"], "failed", "{provider}: {d}");
    assert_eq!(d["attempts"], 1, "{provider} is not retried: {d}");
    let error = d["attemptLog"][0]["error"].as_str().unwrap_or("");
    assert!(error.contains(words), "{provider}: {error}");
}
