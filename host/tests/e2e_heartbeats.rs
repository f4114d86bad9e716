//! End to end: heartbeat monitors. A job pings its secret URL over HTTP; on time it is up,
//! late it fails with a reason naming the last ping, `/fail` and exit statuses fail at
//! once, `/start` times a run, and a cron schedule's deadline survives a restart.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::sinks::Receiver;
use support::{Api, Server, wait_for};

fn create(api: &Api, path: &str, body: Value) -> Value {
    let r = api.post(path, &body);
    assert_eq!(r.status, 201, "{path}: {}", r.body);
    r.body["data"].clone()
}

/// The ping path of a monitor (its `pingUrl` without the public base).
fn ping_path(monitor: &Value) -> String {
    let url = monitor["pingUrl"].as_str().expect("pingUrl");
    let at = url.find("/ping/").expect("a /ping/ path");
    url[at..].to_string()
}

fn checks(api: &Api, id: &str) -> Vec<Value> {
    api.get(&format!("/v1/monitors/{id}/checks?limit=100")).body["data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Ping and expect `OK`.
fn ping(api: &Api, path: &str, body: &str) {
    let r = api
        .without_key()
        .raw("POST", path, Some("text/plain"), body.as_bytes().to_vec());
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    assert_eq!(r.body, Value::String("OK\n".into()));
}

/// The newest check once there are more than `after` checks.
fn next_check(api: &Api, id: &str, after: usize) -> Value {
    wait_for("a new check", Duration::from_secs(20), || {
        let all = checks(api, id);
        (all.len() > after).then(|| all[0].clone())
    })
}

#[test]
fn pings_on_time_late_failed_and_timed() {
    let receiver = Receiver::start();
    let server = Server::start(&[
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_PUBLIC_URL", "https://tocsin.test"),
    ]);
    let api = server.client();
    let policy = create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Jobs", "failureThreshold": 1, "recoveryThreshold": 1,
               "channels": [{"type": "webhook", "url": receiver.url("/jobs")}]}),
    );

    // The settings are checked like any monitor's.
    for (body, field) in [
        (json!({"name": "x", "type": "heartbeat"}), "period"),
        (
            json!({"name": "x", "type": "heartbeat", "period": 60, "cron": "* * * * *"}),
            "cron",
        ),
        (
            json!({"name": "x", "type": "heartbeat", "period": 60, "interval": 60}),
            "interval",
        ),
        (
            json!({"name": "x", "type": "heartbeat", "cron": "0 3 * *"}),
            "cron",
        ),
        (
            json!({"name": "x", "type": "heartbeat", "cron": "0 3 * * *", "timezone": "Moon/Base"}),
            "timezone",
        ),
        (
            json!({"name": "x", "type": "heartbeat", "period": 60, "url": "http://x"}),
            "type",
        ),
    ] {
        let r = api.post("/v1/monitors", &body);
        r.assert_error(400, "VALIDATION_ERROR");
        let fields: Vec<&str> = r.body["error"]["details"]
            .as_array()
            .expect("details")
            .iter()
            .filter_map(|d| d["field"].as_str())
            .collect();
        assert!(fields.contains(&field), "{body}: {}", r.body);
    }

    let job = create(
        &api,
        "/v1/monitors",
        json!({"name": "Nightly backup", "type": "heartbeat", "period": 2, "grace": 1,
               "maxDuration": 2, "alertPolicyId": policy["id"], "tags": ["jobs"]}),
    );
    let id = job["id"].as_str().expect("id").to_string();
    assert_eq!(job["period"], 2);
    assert_eq!(job["grace"], 1);
    assert_eq!(job["status"], "pending");
    let url = job["pingUrl"].as_str().expect("pingUrl");
    assert!(url.starts_with("https://tocsin.test/ping/"), "{url}");
    let path = ping_path(&job);
    // The list shows it too, and the plugin list names the type.
    let listed = api.get("/v1/monitors?tag=jobs").body;
    assert_eq!(listed["data"][0]["pingUrl"], url);
    let plugins = api.get("/v1/plugins?kind=monitor").body;
    assert!(
        plugins["data"]
            .as_array()
            .expect("plugins")
            .iter()
            .any(|p| p["name"] == "heartbeat" && p["topLevelFields"] == true),
        "{plugins}"
    );

    // On time: every ping is a passed check, its body kept.
    for n in 0..3 {
        ping(&api, &path, &format!("run {n}: 12 files"));
        std::thread::sleep(Duration::from_millis(700));
    }
    let all = checks(&api, &id);
    assert_eq!(all.len(), 3, "{all:?}");
    assert!(all.iter().all(|c| c["ok"] == true), "{all:?}");
    assert_eq!(all[0]["details"]["ping"]["body"], "run 2: 12 files");
    assert_eq!(all[0]["details"]["ping"]["method"], "POST");
    assert_eq!(
        api.get(&format!("/v1/monitors/{id}")).body["data"]["status"],
        "up"
    );

    // Late: past period + grace, the check fails and names the last ping.
    let late = next_check(&api, &id, 3);
    assert_eq!(late["ok"], false, "{late}");
    let reason = late["reason"].as_str().expect("reason");
    assert!(reason.starts_with("No ping since "), "{reason}");
    assert!(reason.contains("one was expected by "), "{reason}");
    assert!(late["details"]["expectedBy"].is_string(), "{late}");
    let created = wait_for("incident.created", Duration::from_secs(15), || {
        receiver
            .at("/jobs")
            .into_iter()
            .find(|r| r.json["event"] == "incident.created")
    });
    assert!(
        created.json["failure"]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("No ping since")),
        "{}",
        created.json
    );
    // A ping recovers it.
    ping(&api, &path, "");
    wait_for("incident.resolved", Duration::from_secs(15), || {
        receiver
            .at("/jobs")
            .into_iter()
            .find(|r| r.json["event"] == "incident.resolved")
    });

    // `/fail` and a non-zero exit status fail at once; `/0` passes.
    let before = checks(&api, &id).len();
    ping(&api, &format!("{path}/fail"), "disk full");
    let failed = checks(&api, &id)[0].clone();
    assert_eq!(failed["ok"], false);
    assert_eq!(failed["reason"], "The job reported a failure");
    assert_eq!(failed["details"]["ping"]["body"], "disk full");
    assert_eq!(checks(&api, &id).len(), before + 1);
    ping(&api, &format!("{path}/0"), "");
    assert_eq!(checks(&api, &id)[0]["ok"], true);
    ping(&api, &format!("{path}/7"), "");
    let exited = checks(&api, &id)[0].clone();
    assert_eq!(exited["reason"], "The job exited with status 7");
    assert_eq!(exited["details"]["ping"]["exitStatus"], 7);

    // `/start` then success: the run's duration is recorded; too long fails.
    ping(&api, &format!("{path}/start"), "");
    std::thread::sleep(Duration::from_millis(300));
    ping(&api, &path, "");
    let timed = checks(&api, &id)[0].clone();
    assert_eq!(timed["ok"], true, "{timed}");
    let ms = timed["details"]["ping"]["durationMs"].as_i64().expect("ms");
    assert!((300..2000).contains(&ms), "{timed}");
    assert_eq!(timed["responseTimeMs"], ms);
    ping(&api, &format!("{path}/start"), "");
    std::thread::sleep(Duration::from_millis(2300));
    ping(&api, &path, "");
    let slow = checks(&api, &id)
        .into_iter()
        .find(|c| {
            c["ok"] == false
                && c["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("maxDuration"))
        })
        .expect("a check failed for the long run");
    assert!(
        slow["reason"]
            .as_str()
            .is_some_and(|r| r.contains("longer than its maxDuration of 2 s")
                || r.contains("has not finished within its maxDuration of 2 s")),
        "{slow}"
    );

    // A large body is cut at 10 KiB and says so.
    ping(&api, &path, &"x".repeat(12 * 1024));
    let big = checks(&api, &id)[0].clone();
    assert_eq!(
        big["details"]["ping"]["body"].as_str().map(str::len),
        Some(10 * 1024)
    );
    assert_eq!(big["details"]["ping"]["bodyTruncated"], true);

    // GET works as well; unknown tokens and signals are 404 in the envelope.
    let r = api.without_key().get(&path);
    assert_eq!(r.status, 200);
    api.without_key()
        .get("/ping/nosuchtoken")
        .assert_error(404, "PING_URL_NOT_FOUND");
    api.without_key()
        .get(&format!("{path}/256"))
        .assert_error(404, "PING_URL_NOT_FOUND");
    api.without_key()
        .get(&format!("{path}/begin"))
        .assert_error(404, "PING_URL_NOT_FOUND");

    // Paused: pings are answered and not recorded, and no deadline runs.
    assert_eq!(
        api.post(&format!("/v1/monitors/{id}/pause"), &json!({}))
            .status,
        200
    );
    let count = checks(&api, &id).len();
    let r = api.without_key().get(&path);
    assert_eq!(r.status, 200);
    assert!(
        r.body.as_str().is_some_and(|t| t.contains("paused")),
        "{}",
        r.body
    );
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(checks(&api, &id).len(), count);
}

#[test]
fn a_cron_deadline_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = Server::start_in(dir.path(), &[]);
    let api = server.client();
    // Every 3 seconds (six fields: seconds first), 1 second of grace.
    let job = create(
        &api,
        "/v1/monitors",
        json!({"name": "Every three seconds", "type": "heartbeat", "cron": "*/3 * * * * *",
               "timezone": "Europe/Berlin", "grace": 1}),
    );
    let id = job["id"].as_str().expect("id").to_string();
    assert_eq!(job["timezone"], "Europe/Berlin");
    let path = ping_path(&job);
    ping(&api, &path, "");
    assert_eq!(checks(&api, &id).len(), 1);
    let first = checks(&api, &id)[0]["checkedAt"].clone();
    server.stop();
    // The deadline passes while no server runs.
    std::thread::sleep(Duration::from_secs(5));
    let server = Server::start_in(dir.path(), &[]);
    let api = server.client();
    let missed = next_check(&api, &id, 1);
    assert_eq!(missed["ok"], false, "{missed}");
    let reason = missed["reason"].as_str().expect("reason");
    assert!(
        reason.starts_with(&format!("No ping since {}", first.as_str().expect("time"))),
        "{reason}"
    );
    // The expected time is a schedule time: a whole multiple of three seconds.
    let expected = missed["details"]["expectedBy"]
        .as_str()
        .expect("expectedBy");
    let seconds: u32 = expected[17..19].parse().expect("seconds");
    assert_eq!(seconds % 3, 0, "{expected}");
    assert!(expected.ends_with(".000Z"), "{expected}");
    // One miss is recorded once, not again on every sweep.
    std::thread::sleep(Duration::from_millis(1500));
    let after = checks(&api, &id);
    assert!(after.len() <= 3, "{after:?}");
}
