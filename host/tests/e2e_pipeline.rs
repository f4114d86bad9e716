//! End to end: the alert pipeline. An alert policy lists steps (plugins of the `pipeline`
//! world) that each notification passes before it is sent. The built-in `oncall-rota`
//! routes alerts to whoever is on duty (an override over the weekly shifts), the built-in
//! `business-hours` lets critical monitors page and holds the rest until the hours begin,
//! then sends what it held for a channel as one summary; a third-party step
//! (`tests/guests/jam`, on the SDK) that traps, loops or answers nonsense (a route to a
//! channel the workspace does not have among it) never loses an
//! alert, and one that enriches or drops does what it says. Real incidents, real
//! deliveries to a webhook receiver on loopback, the timeline read through the API.

use crate::support;

use chrono::Timelike;
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;
use support::sinks::{Receiver, SmtpSink};
use support::{Api, Server, create, ping, wait_for};

/// Long enough for anything else the outbox would send to have arrived.
const SETTLE: Duration = Duration::from_millis(3000);

fn heartbeat(api: &Api, name: &str, policy: &Value, tags: &[&str]) -> Value {
    create(
        api,
        "/v1/monitors",
        json!({"name": name, "type": "heartbeat", "period": 3600, "tags": tags,
               "alertPolicyId": policy["id"]}),
    )
}

/// Have the receiver verify signatures with the workspace's webhook secret.
fn trust(api: &Api, receiver: &Receiver) {
    let secret = api.get("/v1/workspace/webhook-secret").body["data"]["secret"]
        .as_str()
        .expect("webhook secret")
        .to_string();
    receiver.set_secret(&secret);
}

fn webhook(api: &Api, receiver: &Receiver, name: &str) -> String {
    let c = create(
        api,
        "/v1/channels",
        json!({"name": name, "type": "webhook", "url": receiver.url(&format!("/{name}"))}),
    );
    c["id"].as_str().expect("channel id").to_string()
}

/// The timeline of the monitor's one incident.
fn timeline(api: &Api, monitor: &Value) -> Vec<Value> {
    let id = monitor["id"].as_str().expect("monitor id");
    let list = api.get(&format!("/v1/incidents?monitorId={id}")).body;
    let incident = list["data"][0]["id"]
        .as_str()
        .expect("an incident")
        .to_string();
    api.get(&format!("/v1/incidents/{incident}")).body["data"]["timeline"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn entries<'a>(timeline: &'a [Value], kind: &str) -> Vec<&'a Value> {
    timeline.iter().filter(|e| e["kind"] == kind).collect()
}

/// `HH:MM` of UTC now plus `minutes` (wrapping at midnight).
fn utc_plus(minutes: u32) -> (String, u32) {
    let now = chrono::Utc::now();
    let at = (now.hour() * 60 + now.minute() + minutes) % 1440;
    (format!("{:02}:{:02}", at / 60, at % 60), at)
}

fn stamp(offset: chrono::Duration) -> String {
    (chrono::Utc::now() + offset)
        .format("%Y-%m-%dT%H:%M")
        .to_string()
}

#[test]
fn a_rota_routes_each_alert_to_whoever_is_on_duty_once() {
    let receiver = Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    trust(&api, &receiver);
    let day = webhook(&api, &receiver, "day");
    let holiday = webhook(&api, &receiver, "holiday");

    let listed = api.get("/v1/plugins?kind=pipeline").body;
    let names: Vec<&str> = listed["data"]
        .as_array()
        .expect("plugins")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(names, ["business-hours", "oncall-rota"], "{listed}");
    assert_eq!(listed["data"][1]["kind"], "pipeline");
    assert_eq!(listed["data"][1]["contract"], "0.3.0");

    // Around the clock, every day: the day channel; an override for the hours around now
    // (in the rota's own zone) wins over it.
    let shifts = json!([{"days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
                         "from": "00:00", "to": "24:00", "channelIds": [day]}]);
    let on_holiday = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "rota with an override", "failureThreshold": 1, "notifyOnRecovery": true,
               "channels": [{"type": "webhook", "url": receiver.url("/team")},
                            {"type": "webhook", "url": receiver.url("/team-2")}],
               "pipeline": [{"plugin": "oncall-rota", "config": {
                   "timeZone": "UTC", "shifts": shifts,
                   "overrides": [{"from": stamp(chrono::Duration::hours(-2)),
                                  "to": stamp(chrono::Duration::hours(2)),
                                  "channelIds": [holiday]}]}}]}),
    );
    assert_eq!(
        on_holiday["pipeline"][0]["plugin"], "oncall-rota",
        "{on_holiday}"
    );
    assert_eq!(on_holiday["pipeline"][0]["config"]["timeZone"], "UTC");
    let weekly = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "weekly rota", "failureThreshold": 1, "notifyOnRecovery": false,
               "channels": [{"type": "webhook", "url": receiver.url("/team")}],
               "pipeline": [{"plugin": "oncall-rota", "config": {"timeZone": "Europe/Berlin", "shifts": shifts}}]}),
    );

    let cron = heartbeat(&api, "nightly-backup", &on_holiday, &[]);
    let report = heartbeat(&api, "weekly-report", &weekly, &[]);
    ping(&api, &cron, "/fail");
    ping(&api, &report, "/fail");
    wait_for("the holiday cover paged", Duration::from_secs(20), || {
        (!receiver.at("/holiday").is_empty()).then_some(())
    });
    let on_day = wait_for("the day shift paged", Duration::from_secs(20), || {
        let got = receiver.at("/day");
        (!got.is_empty()).then_some(got)
    });
    // Its recovery goes the same way.
    ping(&api, &cron, "");
    wait_for("the recovery routed too", Duration::from_secs(20), || {
        (receiver.at("/holiday").len() >= 2).then_some(())
    });
    std::thread::sleep(SETTLE);
    let held = receiver.at("/holiday");
    let events: Vec<&str> = held
        .iter()
        .filter_map(|h| h.json["event"].as_str())
        .collect();
    assert_eq!(
        events,
        ["incident.created", "incident.resolved"],
        "two policy channels routed to one person: each event once"
    );
    assert!(held.iter().all(|h| h.verified), "signed as webhooks are");
    assert_eq!(held[0].json["monitor"]["name"], "nightly-backup");
    let ids: Vec<&str> = held
        .iter()
        .filter_map(|h| h.json["webhookId"].as_str())
        .collect();
    assert_eq!(
        ids[0], held[0].headers["x-service-webhook-id"],
        "the payload names its own delivery"
    );
    assert_eq!(on_day.len(), 1, "{on_day:?}");
    assert_eq!(on_day[0].json["monitor"]["name"], "weekly-report");
    assert!(receiver.at("/team").is_empty() && receiver.at("/team-2").is_empty());

    // The timeline says where each went; the deliveries to the team say they were routed.
    let t = timeline(&api, &cron);
    let routed = entries(&t, "routed");
    assert_eq!(routed.len(), 4, "two events, two channels each: {t:?}");
    assert!(
        routed
            .iter()
            .all(|e| e["details"]["plugin"] == "oncall-rota"
                && e["details"]["channelIds"] == json!([holiday])),
        "{routed:?}"
    );
    let deliveries = api
        .get("/v1/webhook-deliveries?status=routed&limit=50")
        .body;
    let routed_rows = deliveries["data"].as_array().expect("deliveries");
    assert_eq!(routed_rows.len(), 5, "{deliveries}");
    assert!(routed_rows.iter().all(|d| {
        d["lastError"]
            .as_str()
            .is_some_and(|e| e.starts_with("Routed to ch_"))
    }));

    // What the API refuses, changing nothing.
    let before = api.get("/v1/alert-policies").body["data"]
        .as_array()
        .map(Vec::len);
    for (body, status, field) in [
        (
            json!({"plugin": "pager-roulette"}),
            422,
            "pipeline[0].plugin",
        ),
        (
            json!({"plugin": "oncall-rota", "config": {"shifts": []}}),
            400,
            "pipeline[0].config.shifts",
        ),
        (
            json!({"plugin": "oncall-rota", "config": {"timeZone": "Mars/Olympus", "shifts": shifts}}),
            400,
            "pipeline[0].config.timeZone",
        ),
        (
            json!({"plugin": "oncall-rota", "config": {"shifts": [{"days": ["mon"], "from": "09:00", "to": "17:00",
                 "channelIds": ["ch_01JD6Z3Y5N8Q2W7R4T6V9X0B1C"]}]}}),
            422,
            "pipeline[0].config",
        ),
        (
            json!({"plugin": "business-hours", "extra": 1}),
            400,
            "pipeline[0].extra",
        ),
    ] {
        let r = api.post(
            "/v1/alert-policies",
            &json!({"name": "refused", "channels": [{"channelId": day}], "pipeline": [body]}),
        );
        assert_eq!(r.status, status, "{body}: {}", r.body);
        let fields: Vec<&str> = r.body["error"]["details"]
            .as_array()
            .map(|d| d.iter().filter_map(|f| f["field"].as_str()).collect())
            .unwrap_or_default();
        assert!(fields.contains(&field), "{body}: {}", r.body);
    }
    let nine = json!({"plugin": "business-hours"});
    let r = api.post(
        "/v1/alert-policies",
        &json!({"name": "too long", "channels": [{"channelId": day}], "pipeline": vec![nine; 9]}),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        api.get("/v1/alert-policies").body["data"]
            .as_array()
            .map(Vec::len),
        before
    );
}

#[test]
fn business_hours_page_for_critical_monitors_and_hold_the_rest_for_the_morning() {
    let receiver = Receiver::start();
    let smtp = SmtpSink::start();
    let port = smtp.port.to_string();
    let server = Server::start(&[
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_SMTP_HOST", "127.0.0.1"),
        ("TOCSIN_SMTP_PORT", &port),
        ("TOCSIN_SMTP_TLS", "none"),
        ("TOCSIN_SMTP_FROM", "Tocsin <alerts@tocsin.test>"),
    ]);
    let api = server.client();
    trust(&api, &receiver);
    // Hours that begin in two minutes (UTC, every day): until then it is "night".
    let (from, from_minutes) = utc_plus(2);
    let to_minutes = (from_minutes + 60).min(1440).max(from_minutes + 1);
    let to = format!("{:02}:{:02}", to_minutes / 60, to_minutes % 60);
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "office hours", "failureThreshold": 1, "notifyOnRecovery": true,
               "channels": [{"type": "email", "target": "ops@example.com"},
                            {"type": "webhook", "url": receiver.url("/ops")}],
               "pipeline": [{"plugin": "business-hours", "config": {
                   "timeZone": "UTC", "days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
                   "from": from, "to": to}}]}),
    );
    assert_eq!(
        policy["pipeline"][0]["config"]["criticalTag"], "critical",
        "{policy}"
    );
    assert_eq!(policy["pipeline"][0]["config"]["summary"], true);
    let database = heartbeat(&api, "database", &policy, &["critical"]);
    let backup = heartbeat(&api, "backup", &policy, &[]);
    let report = heartbeat(&api, "report", &policy, &["team:finance"]);
    ping(&api, &database, "/fail");
    ping(&api, &backup, "/fail");
    ping(&api, &report, "/fail");
    // The backup recovers in the night: its recovery waits too.
    ping(&api, &backup, "");

    wait_for("the critical page", Duration::from_secs(20), || {
        (!receiver.at("/ops").is_empty() && !smtp.mails().is_empty()).then_some(())
    });
    std::thread::sleep(SETTLE);
    let night = receiver.at("/ops");
    assert_eq!(
        night.len(),
        1,
        "only the critical monitor pages at night: {night:?}"
    );
    assert_eq!(night[0].json["monitor"]["name"], "database");
    assert_eq!(smtp.mails().len(), 1);

    // Held: pending until the hours begin, the timeline saying so.
    let pending = api
        .get("/v1/webhook-deliveries?status=pending&limit=50")
        .body;
    let waiting = pending["data"].as_array().expect("deliveries");
    assert_eq!(
        waiting.len(),
        6,
        "two DOWNs and a recovery, to each channel: {pending}"
    );
    let until = waiting[0]["nextAttemptAt"]
        .as_str()
        .expect("due")
        .to_string();
    assert!(
        until.contains(&format!("T{from}:00")),
        "held until {from}: {until}"
    );
    assert!(waiting.iter().all(|d| d["nextAttemptAt"] == until.as_str()));
    let t = timeline(&api, &backup);
    let delayed = entries(&t, "delayed");
    assert_eq!(delayed.len(), 4, "{t:?}");
    assert_eq!(delayed[0]["details"]["plugin"], "business-hours");
    assert_eq!(delayed[0]["details"]["summary"], true);

    // The morning: e-mail, which groups, gets one summary of the three; the webhook, which
    // does not, gets each as it was, so a receiver written for incident events misses none.
    let summary = wait_for("the morning summary", Duration::from_secs(200), || {
        smtp.mails()
            .into_iter()
            .find(|m| m.data.contains("Summary: 3 alerts held by business-hours"))
    });
    wait_for("the webhook's three", Duration::from_secs(30), || {
        (receiver.at("/ops").len() >= 4).then_some(())
    });
    std::thread::sleep(SETTLE);
    assert_eq!(smtp.mails().len(), 2, "the page and one summary");
    for line in ["backup: DOWN", "backup: RECOVERED", "report: DOWN"] {
        assert!(summary.data.contains(line), "{line} in {}", summary.data);
    }
    let morning = receiver.at("/ops");
    assert_eq!(morning.len(), 4, "{morning:?}");
    let mut seen: Vec<(String, String)> = morning[1..]
        .iter()
        .map(|h| {
            (
                h.json["monitor"]["name"].as_str().unwrap_or("").to_string(),
                h.json["event"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("backup".to_string(), "incident.created".to_string()),
            ("backup".to_string(), "incident.resolved".to_string()),
            ("report".to_string(), "incident.created".to_string()),
        ]
    );
    assert!(morning.iter().all(|h| h.verified));
    let t = timeline(&api, &report);
    assert_eq!(entries(&t, "summarised").len(), 1, "{t:?}");
    let summarised = api
        .get("/v1/webhook-deliveries?status=routed&limit=50")
        .body;
    assert_eq!(
        summarised["data"].as_array().map(Vec::len),
        Some(3),
        "{summarised}"
    );
    let sent = api
        .get("/v1/webhook-deliveries?status=succeeded&limit=50")
        .body;
    assert!(
        sent["data"]
            .as_array()
            .expect("deliveries")
            .iter()
            .any(|d| d["event"] == "alert.summary"),
        "{sent}"
    );
}

/// A data directory whose plugins directory holds the jam step.
fn with_jam() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).expect("plugins dir");
    std::fs::copy(
        Path::new(env!("TOCSIN_TEST_GUESTS_DIR")).join("tocsin_guest_jam.wasm"),
        plugins.join("jam.wasm"),
    )
    .expect("copy the jam step");
    dir
}

#[test]
fn a_step_that_traps_loops_or_answers_nonsense_never_loses_the_alert() {
    let receiver = Receiver::start();
    let dir = with_jam();
    let server = Server::start_in(dir.path(), &[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let jam = |behaviour: &str| json!({"plugin": "test-jam", "config": {"behaviour": behaviour}});
    let broken = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "broken steps", "failureThreshold": 1, "notifyOnRecovery": false,
               "channels": [{"type": "webhook", "url": receiver.url("/hook")}],
               "pipeline": [jam("trap"), jam("spin"), jam("nonsense"), jam("stranger"), jam("enrich")]}),
    );
    let quiet = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "quiet", "failureThreshold": 1, "notifyOnRecovery": false,
               "channels": [{"type": "webhook", "url": receiver.url("/quiet")}],
               "pipeline": [jam("drop")]}),
    );
    let r = api.post(
        "/v1/alert-policies",
        &json!({"name": "refused", "channels": [{"type": "webhook", "url": receiver.url("/x")}],
                "pipeline": [{"plugin": "test-jam", "config": {"behaviour": "dance"}}]}),
    );
    assert_eq!(r.status, 400, "{}", r.body);

    let api_monitor = heartbeat(&api, "api", &broken, &["critical", "team:web"]);
    let noisy = heartbeat(&api, "noisy", &quiet, &[]);
    ping(&api, &api_monitor, "/fail");
    ping(&api, &noisy, "/fail");

    let got = wait_for(
        "the alert, past every broken step",
        Duration::from_secs(30),
        || {
            let got = receiver.at("/hook");
            (!got.is_empty()).then_some(got)
        },
    );
    assert_eq!(got[0].json["event"], "incident.created");
    assert_eq!(
        got[0].json["enrichment"],
        json!({"runbook": "https://runbooks.example/incident.created", "tags": 2}),
        "the step after the broken ones still ran"
    );
    let t = timeline(&api, &api_monitor);
    let failed = entries(&t, "pipeline_failed");
    assert_eq!(failed.len(), 4, "{t:?}");
    let steps: Vec<u64> = failed
        .iter()
        .filter_map(|e| e["details"]["step"].as_u64())
        .collect();
    assert_eq!(steps, [0, 1, 2, 3]);
    assert!(
        failed[3]["details"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("not a channel of this workspace")),
        "{failed:?}"
    );
    assert!(
        failed[2]["details"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("ch_nobody")),
        "{failed:?}"
    );

    // Dropped: not sent, the reason on the timeline and the delivery.
    let dropped = wait_for("the drop recorded", Duration::from_secs(20), || {
        let t = timeline(&api, &noisy);
        entries(&t, "dropped").first().map(|e| (*e).clone())
    });
    assert_eq!(dropped["details"]["reason"], "incident.created is noise");
    std::thread::sleep(SETTLE);
    assert!(receiver.at("/quiet").is_empty());
    let rows = api.get("/v1/webhook-deliveries?status=dropped").body;
    assert_eq!(
        rows["data"][0]["lastError"], "Dropped by test-jam: incident.created is noise",
        "{rows}"
    );
}
