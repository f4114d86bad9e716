//! End to end: maintenance windows. While a window covers a monitor its checks are kept
//! (marked `maintenance`) but open no incident, send nothing and are left out of uptime;
//! the status page says "Under maintenance" and announces scheduled windows. One-off and
//! recurring (RRULE and cron) windows; bad schedules are refused and change nothing.
//! Monitors are heartbeat monitors, so a test fails one with one ping.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::sinks::Receiver;
use support::{Api, Server, create, ping, wait_for};

fn job(api: &Api, name: &str, policy: &Value, extra: Value) -> Value {
    let mut body = json!({"name": name, "type": "heartbeat", "period": 3600,
                          "alertPolicyId": policy["id"]});
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        b.extend(e.clone());
    }
    create(api, "/v1/monitors", body)
}

fn id(v: &Value) -> &str {
    v["id"].as_str().expect("id")
}

fn incidents_of(api: &Api, monitor: &Value) -> Vec<Value> {
    api.get(&format!("/v1/incidents?monitorId={}", id(monitor)))
        .body["data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn latest_check(api: &Api, monitor: &Value) -> Value {
    api.get(&format!("/v1/monitors/{}/checks?limit=1", id(monitor)))
        .body["data"][0]
        .clone()
}

/// Alert events received, as (event, monitor name).
fn events(receiver: &Receiver) -> Vec<(String, String)> {
    receiver
        .at("/alerts")
        .into_iter()
        .map(|r| {
            (
                r.json["event"].as_str().unwrap_or("").to_string(),
                r.json["monitor"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn iso(ms: i64) -> String {
    tocsin::time::format_ms(ms)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Long enough for the outbox and the release sweep to have acted on anything they would.
const SETTLE: Duration = Duration::from_millis(3500);
const MINUTE: i64 = 60_000;

fn setup() -> (Receiver, Server) {
    let receiver = Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    (receiver, server)
}

fn policy(api: &Api, receiver: &Receiver) -> Value {
    create(
        api,
        "/v1/alert-policies",
        json!({"name": "Ops", "failureThreshold": 1, "recoveryThreshold": 1,
               "channels": [{"type": "webhook", "url": receiver.url("/alerts")}]}),
    )
}

#[test]
fn a_one_off_window_suppresses_an_outage_and_shows_on_the_status_page() {
    let (receiver, server) = setup();
    let api = server.client();
    let policy = policy(&api, &receiver);
    let shop = job(&api, "Shop", &policy, json!({"tags": ["prod"]}));
    let billing = job(&api, "Billing", &policy, json!({}));
    ping(&api, &shop, "");
    ping(&api, &billing, "");

    // Bad windows are refused with the field named, and create nothing.
    let now = now_ms();
    let start = iso(now - MINUTE);
    let end = iso(now + 60 * MINUTE);
    for (body, field) in [
        (json!({"start": start, "end": end}), "name"),
        (json!({"name": "x", "start": start}), "end"),
        (json!({"name": "x", "start": "soon", "end": end}), "start"),
        (json!({"name": "x", "start": end, "end": start}), "end"),
        (
            json!({"name": "x", "start": start, "end": iso(now + 400 * 1440 * MINUTE)}),
            "end",
        ),
        (
            json!({"name": "x", "start": start, "rrule": "FREQ=MINUTELY", "durationMinutes": 5}),
            "rrule",
        ),
        (
            json!({"name": "x", "start": start, "rrule": "FREQ=DAILY;BYHOUR=25", "durationMinutes": 5}),
            "rrule",
        ),
        (
            json!({"name": "x", "start": start, "rrule": "FREQ=DAILY"}),
            "durationMinutes",
        ),
        (
            json!({"name": "x", "start": start, "cron": "0 3 * *", "durationMinutes": 5}),
            "cron",
        ),
        (
            json!({"name": "x", "start": start, "cron": "0 3 * * *", "durationMinutes": 0}),
            "durationMinutes",
        ),
        (
            json!({"name": "x", "start": start, "end": end, "timezone": "Mars/Olympus"}),
            "timezone",
        ),
        (
            json!({"name": "x", "start": start, "end": end, "tags": ["no spaces"]}),
            "tags",
        ),
        (
            json!({"name": "x", "start": start, "end": end, "active": true}),
            "active",
        ),
        (
            json!({"name": "x", "start": start, "end": end, "colour": "red"}),
            "colour",
        ),
    ] {
        let r = api.post("/v1/maintenance-windows", &body);
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(
            r.body["error"]["details"][0]["field"], field,
            "{body}: {}",
            r.body
        );
    }
    api.post(
        "/v1/maintenance-windows",
        &json!({"name": "x", "start": start, "end": end,
                "monitorIds": ["mon_00000000000000000000000000"]}),
    )
    .assert_error(422, "UNPROCESSABLE_ENTITY");
    let listed = api.get("/v1/maintenance-windows").body;
    assert_eq!(listed["data"], json!([]), "{listed}");

    // A one-off window over the `prod` tag, in force now.
    let window = create(
        &api,
        "/v1/maintenance-windows",
        json!({"name": "Database upgrade", "description": "Checkout is read-only.",
               "start": start, "end": end, "tags": ["prod"]}),
    );
    assert_eq!(window["active"], true, "{window}");
    assert_eq!(window["current"]["end"], iso(now + 60 * MINUTE), "{window}");
    assert_eq!(window["upcoming"], json!([]), "{window}");
    assert!(id(&window).starts_with("mw_"), "{window}");
    let got = api.get(&format!("/v1/maintenance-windows/{}", id(&window)));
    assert_eq!(got.body["data"]["name"], "Database upgrade", "{}", got.body);
    api.get("/v1/maintenance-windows/mw_00000000000000000000000000")
        .assert_error(404, "MAINTENANCE_WINDOW_NOT_FOUND");

    let page = create(
        &api,
        "/v1/status-pages",
        json!({"slug": "acme", "name": "Acme", "monitorIds": [shop["id"], billing["id"]]}),
    );
    assert_eq!(page["slug"], "acme");

    // The covered monitor fails: the check is kept, marked, and nothing opens or is sent.
    ping(&api, &shop, "/fail");
    let check = latest_check(&api, &shop);
    assert_eq!(check["ok"], false, "{check}");
    assert_eq!(check["maintenance"], true, "{check}");
    assert_eq!(check["counted"], false, "{check}");
    assert!(incidents_of(&api, &shop).is_empty());
    // A monitor outside the window is alerted as usual.
    ping(&api, &billing, "/fail");
    wait_for("Billing's alert", Duration::from_secs(15), || {
        events(&receiver)
            .contains(&("incident.created".into(), "Billing".into()))
            .then_some(())
    });
    std::thread::sleep(SETTLE);
    assert_eq!(
        events(&receiver),
        vec![("incident.created".to_string(), "Billing".to_string())],
        "a monitor under maintenance was notified"
    );
    let shop_now = api.get(&format!("/v1/monitors/{}", id(&shop))).body["data"].clone();
    assert_eq!(shop_now["status"], "up", "{shop_now}");

    // The status page: Shop under maintenance (not counted down), the window announced.
    let public = server.client().without_key();
    let facts = public.get("/status/acme.json").body;
    assert_eq!(facts["status"], "partial_outage", "{facts}");
    assert_eq!(facts["monitors"][0]["maintenance"], true, "{facts}");
    assert_eq!(facts["monitors"][1]["maintenance"], false, "{facts}");
    assert_eq!(
        facts["maintenance"][0]["name"], "Database upgrade",
        "{facts}"
    );
    assert_eq!(facts["maintenance"][0]["active"], true, "{facts}");
    assert_eq!(
        facts["maintenance"][0]["monitors"],
        json!(["Shop"]),
        "{facts}"
    );
    let html = public.get("/status/acme").body;
    let html = html.as_str().expect("an HTML page");
    assert!(html.contains("Under maintenance"), "{html}");
    assert!(html.contains("Scheduled maintenance"), "{html}");
    assert!(html.contains("Checkout is read-only."), "{html}");

    // Billing recovers: with Shop under maintenance only, the page says so.
    ping(&api, &billing, "");
    let facts = public.get("/status/acme.json").body;
    assert_eq!(facts["status"], "under_maintenance", "{facts}");

    // Uptime leaves the maintenance check out: one good check, nothing else.
    let uptime = api.get(&format!("/v1/monitors/{}/uptime", id(&shop))).body;
    assert_eq!(uptime["data"]["totalChecks"], 1, "{uptime}");
    assert_eq!(uptime["data"]["upChecks"], 1, "{uptime}");

    // Ending the window early (a PATCH of `end`) makes the next failure count.
    let ended = api.patch(
        &format!("/v1/maintenance-windows/{}", id(&window)),
        &json!({"end": iso(now_ms())}),
    );
    assert_eq!(ended.status, 200, "{}", ended.body);
    assert_eq!(ended.body["data"]["active"], false, "{}", ended.body);
    ping(&api, &shop, "/fail");
    wait_for("Shop's alert", Duration::from_secs(15), || {
        events(&receiver)
            .contains(&("incident.created".into(), "Shop".into()))
            .then_some(())
    });
    assert_eq!(latest_check(&api, &shop)["maintenance"], false);
    let facts = public.get("/status/acme.json").body;
    assert_eq!(facts["status"], "partial_outage", "{facts}");
    assert_eq!(facts["maintenance"], json!([]), "{facts}");

    // Deleting it is audited like any change, and it is gone.
    let r = api.delete(&format!("/v1/maintenance-windows/{}", id(&window)));
    assert_eq!(r.status, 204, "{}", r.body);
    api.get(&format!("/v1/maintenance-windows/{}", id(&window)))
        .assert_error(404, "MAINTENANCE_WINDOW_NOT_FOUND");
    let audit = api.get("/v1/audit-log").body;
    let actions: Vec<&str> = audit["data"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["action"].as_str())
        .filter(|a| a.starts_with("maintenance_window."))
        .collect();
    assert_eq!(
        actions,
        [
            "maintenance_window.delete",
            "maintenance_window.update",
            "maintenance_window.create"
        ],
        "{audit}"
    );
}

#[test]
fn recurring_windows_cover_each_occurrence_and_are_announced_ahead() {
    let (receiver, server) = setup();
    let api = server.client();
    let policy = policy(&api, &receiver);
    let web = job(&api, "Web", &policy, json!({}));
    let batch = job(&api, "Nightly batch", &policy, json!({}));
    ping(&api, &web, "");
    ping(&api, &batch, "");

    // Every day, 30 minutes, from five minutes ago (Berlin time): in force now, and the
    // next occurrences a day apart at the same local time.
    let now = now_ms();
    let first = now / 1000 * 1000 - 5 * MINUTE;
    let daily = create(
        &api,
        "/v1/maintenance-windows",
        json!({"name": "Daily restart", "start": iso(first), "rrule": "RRULE:FREQ=DAILY",
               "durationMinutes": 30, "timezone": "Europe/Berlin",
               "monitorIds": [web["id"]]}),
    );
    assert_eq!(daily["active"], true, "{daily}");
    assert_eq!(daily["current"]["start"], iso(first), "{daily}");
    assert_eq!(daily["current"]["end"], iso(first + 30 * MINUTE), "{daily}");
    let upcoming = daily["upcoming"].as_array().expect("upcoming");
    assert_eq!(upcoming.len(), 5, "{daily}");
    let next =
        tocsin::time::parse_ms(upcoming[0]["start"].as_str().expect("start")).expect("a time");
    // A day later, give or take a daylight-saving change.
    assert!(
        (next - first - 1440 * MINUTE).abs() <= 60 * MINUTE,
        "{daily}"
    );

    // A nightly cron window that is not in force now (its hour is two hours away).
    let hour = (now / (60 * MINUTE) + 2) % 24;
    let nightly = create(
        &api,
        "/v1/maintenance-windows",
        json!({"name": "Nightly batch window", "start": iso(now - 1440 * MINUTE),
               "cron": format!("0 {hour} * * *"), "durationMinutes": 45,
               "monitorIds": [batch["id"]], "description": "Batch jobs restart."}),
    );
    assert_eq!(nightly["active"], false, "{nightly}");
    let next = tocsin::time::parse_ms(nightly["upcoming"][0]["start"].as_str().expect("start"))
        .expect("a time");
    assert!(next > now && next <= now + 2 * 60 * MINUTE, "{nightly}");

    let page = create(
        &api,
        "/v1/status-pages",
        json!({"slug": "ops", "name": "Ops", "monitorIds": [web["id"], batch["id"]]}),
    );
    assert_eq!(page["slug"], "ops");

    // Web, in its daily window, fails without an incident; the batch job, outside its
    // window, fails and is alerted.
    ping(&api, &web, "/fail");
    assert_eq!(latest_check(&api, &web)["maintenance"], true);
    ping(&api, &batch, "/fail");
    wait_for("the batch job's alert", Duration::from_secs(15), || {
        events(&receiver)
            .contains(&("incident.created".into(), "Nightly batch".into()))
            .then_some(())
    });
    std::thread::sleep(SETTLE);
    assert!(incidents_of(&api, &web).is_empty());
    assert!(
        !events(&receiver).iter().any(|(_, n)| n == "Web"),
        "Web was notified during its window"
    );

    // The page announces both: the daily one in progress, the nightly one scheduled.
    let facts = server.client().without_key().get("/status/ops.json").body;
    let entries = facts["maintenance"].as_array().expect("maintenance");
    let in_progress: Vec<&Value> = entries.iter().filter(|e| e["active"] == true).collect();
    assert_eq!(in_progress.len(), 1, "{facts}");
    assert_eq!(in_progress[0]["name"], "Daily restart", "{facts}");
    let scheduled = entries
        .iter()
        .find(|e| e["name"] == "Nightly batch window")
        .expect("the nightly window announced");
    assert_eq!(scheduled["active"], false, "{facts}");
    assert_eq!(scheduled["monitors"], json!(["Nightly batch"]), "{facts}");
    assert_eq!(facts["monitors"][0]["maintenance"], true, "{facts}");
    assert_eq!(facts["monitors"][1]["maintenance"], false, "{facts}");

    // Moving the daily window's start an hour back by PATCH takes it out of force now.
    let moved = api.patch(
        &format!("/v1/maintenance-windows/{}", id(&daily)),
        &json!({"start": iso(first - 60 * MINUTE)}),
    );
    assert_eq!(moved.status, 200, "{}", moved.body);
    assert_eq!(moved.body["data"]["active"], false, "{}", moved.body);
    // Switching it to a one-off window needs an end: refused, and nothing changes.
    let r = api.patch(
        &format!("/v1/maintenance-windows/{}", id(&daily)),
        &json!({"rrule": null, "durationMinutes": null}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(r.body["error"]["details"][0]["field"], "end", "{}", r.body);
    let kept = api
        .get(&format!("/v1/maintenance-windows/{}", id(&daily)))
        .body;
    assert_eq!(kept["data"]["rrule"], "RRULE:FREQ=DAILY", "{kept}");

    ping(&api, &web, "/fail");
    wait_for("Web's alert", Duration::from_secs(15), || {
        events(&receiver)
            .contains(&("incident.created".into(), "Web".into()))
            .then_some(())
    });
}
