//! End to end on PostgreSQL: three nodes in two regions share one database. Migrations
//! started by three processes at once run once; every due check runs exactly once per
//! round, in a region the monitor allows; a node killed with SIGKILL has its work carried
//! on by the others; an outage opens one incident per monitor and each delivery arrives
//! once; a delivery whose node is killed mid-request is finished by another node with the
//! same `webhookId`. Skips (visibly) without `TOCSIN_TEST_DATABASE_URL`.

use crate::support;

use support::{sinks, target};

use sea_orm::{ConnectionTrait, Database, DatabaseConnection, Statement};
use serde_json::{Value, json};
use sinks::Receiver;
use std::collections::{HashMap, HashSet};
use std::process::Command;
use std::time::Duration;
use support::pg::TestDb;
use support::{Server, wait_for};
use target::Target;

const MONITORS: usize = 200;
const CONFIG: &str = "[[regions]]\nname = \"eu\"\nipv4 = [\"203.0.113.0/28\"]\n\n[[regions]]\nname = \"us\"\nipv4 = [\"198.51.100.0/28\"]\n";

/// (monitor id, checked_at, region) of every check in `[from, to)`.
async fn checks_between(db: &DatabaseConnection, from: i64, to: i64) -> Vec<(String, i64, String)> {
    db.query_all_raw(Statement::from_string(
        db.get_database_backend(),
        format!(
            "SELECT monitor_id, checked_at, region FROM check_results \
             WHERE checked_at >= {from} AND checked_at < {to} ORDER BY monitor_id, checked_at"
        ),
    ))
    .await
    .expect("query checks")
    .into_iter()
    .map(|r| {
        (
            r.try_get::<String>("", "monitor_id").expect("monitor_id"),
            r.try_get::<i64>("", "checked_at").expect("checked_at"),
            r.try_get::<String>("", "region").expect("region"),
        )
    })
    .collect()
}

/// The times of monitor `id`'s checks among rows from [`checks_between`], in order.
fn times_of(rows: &[(String, i64, String)], id: &str) -> Vec<i64> {
    rows.iter()
        .filter(|(m, _, _)| m == id)
        .map(|(_, at, _)| *at)
        .collect()
}

fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis(),
    )
    .expect("ms")
}

/// The tests here each run several nodes; they take turns so their timing holds on 2 cores.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// This test's turn, a runtime and a fresh database; None (after saying so) without
/// `TOCSIN_TEST_DATABASE_URL`.
fn cluster_test(
    name: &str,
) -> Option<(
    std::sync::MutexGuard<'static, ()>,
    tokio::runtime::Runtime,
    TestDb,
)> {
    let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Ok(base) = std::env::var("TOCSIN_TEST_DATABASE_URL") else {
        eprintln!(
            "SKIPPED {name}: set TOCSIN_TEST_DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/test) to test several nodes on PostgreSQL"
        );
        return None;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let test_db = rt.block_on(TestDb::create(&base));
    Some((turn, rt, test_db))
}

#[test]
fn three_nodes_two_regions_one_database() {
    let Some((_turn, rt, test_db)) = cluster_test("three_nodes_two_regions_one_database") else {
        return;
    };
    let db = rt
        .block_on(Database::connect(&test_db.url))
        .expect("connect");

    // Migrations started by three processes at once run once, and all three succeed.
    let migrators: Vec<_> = (0..3)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_tocsin"))
                .arg("migrate")
                .env("TOCSIN_DATABASE_URL", &test_db.url)
                .env("TOCSIN_LOG", "warn")
                .spawn()
                .expect("start tocsin migrate")
        })
        .collect();
    for mut m in migrators {
        assert!(
            m.wait().expect("wait").success(),
            "a concurrent migrate failed"
        );
    }
    let applied = rt
        .block_on(db.query_one_raw(Statement::from_string(
            db.get_database_backend(),
            "SELECT COUNT(*) AS n FROM seaql_migrations".to_string(),
        )))
        .expect("count")
        .expect("row")
        .try_get::<i64>("", "n")
        .expect("n");
    assert_eq!(
        applied,
        i64::try_from(
            <tocsin_migrations::Migrator as tocsin_migrations::MigratorTrait>::migrations().len()
        )
        .expect("n")
    );

    let target = Target::start();
    let receiver = Receiver::start();
    let start = |region: &str| {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("tocsin.toml"), CONFIG).expect("config");
        let server = Server::start_in(
            dir.path(),
            &[
                ("TOCSIN_REGION", region),
                ("TOCSIN_DATABASE_URL", test_db.url.as_str()),
                ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
            ],
        );
        (server, dir)
    };
    let (eu1, _d1) = start("eu");
    let (mut eu2, _d2) = start("eu");
    let (us, _d3) = start("us");
    let api = eu1.client();
    // All three see one workspace: the bootstrap ran once.
    assert_eq!(
        us.client().get("/v1/workspace").body["data"]["id"],
        api.get("/v1/workspace").body["data"]["id"]
    );
    // Every node's first heartbeat is in (a node answers before its first one lands).
    let probe = wait_for("three live nodes", Duration::from_secs(10), || {
        let probe = api.get("/v1/probe-ips").body["data"].clone();
        (probe[0]["nodes"] == json!(2) && probe[1]["nodes"] == json!(1)).then_some(probe)
    });
    assert_eq!(
        (probe[0]["region"].clone(), probe[0]["nodes"].clone()),
        (json!("eu"), json!(2)),
        "{probe}"
    );
    assert_eq!(probe[1]["nodes"], 1, "{probe}");

    let policy = api.post(
        "/v1/alert-policies",
        &json!({"name": "p", "failureThreshold": 2,
                "channels": [{"type": "webhook", "url": receiver.url("/hook")}]}),
    );
    assert_eq!(policy.status, 201, "{}", policy.body);
    let policy = policy.body["data"]["id"].as_str().expect("id").to_string();

    // 200 monitors at 1 s: a third in eu, a third in us, a third in both. The first 20
    // watch `/status`, which will fail, and alert through the policy; the rest `/ok`.
    let mut allowed: HashMap<String, Vec<&str>> = HashMap::new();
    let mut failing = Vec::new();
    for i in 0..MONITORS {
        let regions: Vec<&str> = match i % 3 {
            0 => vec!["eu"],
            1 => vec!["us"],
            _ => vec!["eu", "us"],
        };
        let alerting = i < 20;
        let mut body = json!({"name": format!("m{i}"), "type": "http", "method": "GET",
            "url": target.url(if alerting { "/status" } else { "/ok" }), "interval": 1, "timeout": 1,
            "regions": regions});
        if alerting {
            body["alertPolicyId"] = json!(policy);
        }
        let r = api.post("/v1/monitors", &body);
        assert_eq!(r.status, 201, "{}", r.body);
        let id = r.body["data"]["id"].as_str().expect("id").to_string();
        if alerting {
            failing.push(id.clone());
        }
        allowed.insert(id, regions);
    }

    // A window of rounds with all three nodes up.
    std::thread::sleep(Duration::from_secs(4));
    let from = now_ms();
    std::thread::sleep(Duration::from_secs(6));
    let to = now_ms();
    // A batch of passing results is written up to a second after its checks: read the
    // window once the last of its checks are in the database.
    std::thread::sleep(Duration::from_secs(2));
    let window = rt.block_on(checks_between(&db, from, to));
    let mut per_monitor: HashMap<&str, Vec<i64>> = HashMap::new();
    for (monitor, at, region) in &window {
        let ok_regions = allowed.get(monitor).expect("a monitor of ours");
        assert!(
            ok_regions.contains(&region.as_str()),
            "{monitor} checked from {region}, allowed {ok_regions:?}"
        );
        per_monitor.entry(monitor).or_default().push(*at);
    }
    assert_eq!(per_monitor.len(), MONITORS, "every monitor was checked");
    for (monitor, times) in &per_monitor {
        // Exactly once per round: never two checks of one monitor in one round, and
        // (6 s window, 1 s rounds) no round left out beyond scheduling jitter. When few
        // checks are due a node starts them up to half a second early in groups, so a
        // late check and the next round's early one can be under half a round apart on a
        // loaded machine (450 ms was seen); two nodes claiming the same round would check
        // within a few milliseconds of each other.
        for pair in times.windows(2) {
            assert!(
                pair[1] - pair[0] >= 250,
                "{monitor} checked twice in one round: {times:?}"
            );
        }
        assert!(
            (5..=7).contains(&times.len()),
            "{monitor}: {} checks in 6 s: {times:?}",
            times.len()
        );
    }

    // SIGKILL one eu node: the other eu node takes its share within three seconds. The
    // killed node's claims cover the rest of the second it died in, and the next second
    // when it started that second's first check a moment early.
    eu2.kill();
    let killed = now_ms();
    std::thread::sleep(Duration::from_secs(6));
    let after = rt.block_on(checks_between(&db, killed, now_ms()));
    let eu_only: HashSet<&String> = allowed
        .iter()
        .filter(|(_, r)| **r == ["eu"])
        .map(|(id, _)| id)
        .collect();
    for id in &eu_only {
        let times = times_of(&after, id);
        let first = times.first().copied().unwrap_or(i64::MAX);
        assert!(
            first - killed <= 3_000,
            "{id}: first check {} ms after the kill: {times:?}",
            first - killed
        );
        assert!(times.len() >= 3, "{id}: {times:?}");
    }

    // An outage: one incident per failing monitor, each notification delivered once.
    target.set_status(500);
    let incidents = wait_for(
        "an incident per failing monitor",
        Duration::from_secs(30),
        || {
            let r = api.get("/v1/incidents?limit=100");
            (r.body["pagination"]["total"].as_u64()
                == Some(u64::try_from(failing.len()).expect("n")))
            .then_some(r.body)
        },
    );
    let mut seen = HashSet::new();
    for inc in incidents["data"].as_array().expect("list") {
        assert!(
            seen.insert(inc["monitorId"].as_str().expect("monitor").to_string()),
            "two incidents for one monitor: {inc}"
        );
    }
    wait_for(
        "20 incident.created deliveries",
        Duration::from_secs(30),
        || {
            let got = receiver
                .at("/hook")
                .into_iter()
                .filter(|r| r.json["event"] == "incident.created")
                .count();
            (got >= failing.len()).then_some(())
        },
    );
    std::thread::sleep(Duration::from_secs(3));
    let created: Vec<Value> = receiver
        .at("/hook")
        .into_iter()
        .filter(|r| r.json["event"] == "incident.created")
        .map(|r| r.json)
        .collect();
    let ids: HashSet<&str> = created
        .iter()
        .filter_map(|e| e["webhookId"].as_str())
        .collect();
    assert_eq!(
        (created.len(), ids.len()),
        (failing.len(), failing.len()),
        "each delivery arrives once"
    );
    drop((eu1, us, created));
    rt.block_on(db.close()).ok();
    rt.block_on(test_db.drop());
}

#[test]
fn a_delivery_cut_off_by_a_node_kill_is_finished_by_another_node() {
    let Some((_turn, rt, test_db)) =
        cluster_test("a_delivery_cut_off_by_a_node_kill_is_finished_by_another_node")
    else {
        return;
    };
    let target = Target::start();
    let receiver = Receiver::start();
    let start = || {
        let dir = tempfile::tempdir().expect("dir");
        let server = Server::start_in(
            dir.path(),
            &[
                ("TOCSIN_DATABASE_URL", test_db.url.as_str()),
                ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
            ],
        );
        (server, dir)
    };
    // Node A alone: it opens the incident and takes the delivery.
    let (mut a, _da) = start();
    let api_a = a.client();
    let secret = api_a.get("/v1/workspace/webhook-secret").body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    receiver.set_secret(&secret);
    receiver.hold_next("/hook", 1);
    let policy = api_a.post(
        "/v1/alert-policies",
        &json!({"name": "p", "failureThreshold": 1,
                "channels": [{"type": "webhook", "url": receiver.url("/hook")}]}),
    );
    assert_eq!(policy.status, 201, "{}", policy.body);
    target.set_status(500);
    let r = api_a.post(
        "/v1/monitors",
        &json!({"name": "down", "type": "http", "method": "GET", "url": target.url("/status"),
                "interval": 1, "alertPolicyId": policy.body["data"]["id"]}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    // The receiver hangs on A's request; A dies before it answers.
    let held = wait_for(
        "node A's delivery to reach the receiver",
        Duration::from_secs(30),
        || receiver.at("/hook").into_iter().next(),
    );
    a.kill();
    assert_eq!(held.answered, 0, "held, never answered");
    let webhook_id = held.json["webhookId"]
        .as_str()
        .expect("webhookId")
        .to_string();

    // Node B finishes it once A's lease runs out: same webhookId, delivered once more.
    let (b, _db) = start();
    let api_b = b.client();
    let finished = wait_for(
        "node B to finish the delivery",
        Duration::from_secs(60),
        || {
            let got = receiver.at("/hook");
            got.iter()
                .any(|r| r.answered == 200 && r.json["webhookId"] == webhook_id.as_str())
                .then_some(got)
        },
    );
    let same: Vec<_> = finished
        .iter()
        .filter(|r| r.json["webhookId"] == webhook_id.as_str())
        .collect();
    assert_eq!(same.len(), 2, "A's cut-off request and B's: {finished:?}");
    assert!(
        same.iter().all(|r| r.verified),
        "both signed with the workspace secret"
    );
    assert_eq!(
        same[1]
            .headers
            .get("x-service-webhook-id")
            .map(String::as_str),
        Some(webhook_id.as_str())
    );
    let delivery = wait_for(
        "the delivery to read succeeded",
        Duration::from_secs(10),
        || {
            let d = api_b
                .get(&format!("/v1/webhook-deliveries/{webhook_id}"))
                .body;
            (d["data"]["status"] == "succeeded").then_some(d)
        },
    );
    assert_eq!(
        delivery["data"]["attempts"], 1,
        "the attempt A never finished is not recorded; B's is: {delivery}"
    );
    // Nothing is sent a third time.
    std::thread::sleep(Duration::from_secs(2));
    let count = receiver
        .at("/hook")
        .iter()
        .filter(|r| r.json["webhookId"] == webhook_id.as_str())
        .count();
    assert_eq!(count, 2);
    drop((b, a));
    rt.block_on(test_db.drop());
}

#[test]
fn heartbeat_deadlines_are_kept_once_across_nodes() {
    let Some((_turn, _rt, test_db)) =
        cluster_test("heartbeat_deadlines_are_kept_once_across_nodes")
    else {
        return;
    };
    let receiver = Receiver::start();
    let start = || {
        let dir = tempfile::tempdir().expect("dir");
        let server = Server::start_in(
            dir.path(),
            &[
                ("TOCSIN_DATABASE_URL", test_db.url.as_str()),
                ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
            ],
        );
        (server, dir)
    };
    let (mut a, _da) = start();
    let (b, _db) = start();
    let api_a = a.client();
    let api_b = b.client();
    let policy = api_a.post(
        "/v1/alert-policies",
        &json!({"name": "jobs", "failureThreshold": 1, "recoveryThreshold": 1,
                "channels": [{"type": "webhook", "url": receiver.url("/hook")}]}),
    );
    assert_eq!(policy.status, 201, "{}", policy.body);
    // Made on node A, pinged through node B.
    let job = api_a.post(
        "/v1/monitors",
        &json!({"name": "nightly", "type": "heartbeat", "period": 2, "grace": 1,
                "alertPolicyId": policy.body["data"]["id"]}),
    );
    assert_eq!(job.status, 201, "{}", job.body);
    let id = job.body["data"]["id"].as_str().expect("id").to_string();
    let url = job.body["data"]["pingUrl"].as_str().expect("pingUrl");
    let path = url[url.find("/ping/").expect("ping path")..].to_string();
    let ping = |api: &support::Api, signal: &str| {
        let r = api
            .without_key()
            .raw("POST", &format!("{path}{signal}"), None, Vec::new());
        assert_eq!(r.status, 200, "{}", r.body);
    };
    ping(&api_b, "");
    let created = |r: &Receiver| {
        r.at("/hook")
            .iter()
            .filter(|e| e.json["event"] == "incident.created")
            .count()
    };
    // The missed deadline is seen once, with both nodes watching: one incident, one alert.
    wait_for("the missed deadline", Duration::from_secs(30), || {
        (created(&receiver) >= 1).then_some(())
    });
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(created(&receiver), 1);
    let checks = api_b
        .get(&format!("/v1/monitors/{id}/checks?limit=100"))
        .body;
    let missed: Vec<i64> = checks["data"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["ok"] == false)
        .filter_map(|c| tocsin::time::parse_ms(c["checkedAt"].as_str()?))
        .collect();
    assert!(!missed.is_empty(), "{checks}");
    for pair in missed.windows(2) {
        assert!(
            (pair[0] - pair[1]).abs() >= 1500,
            "one deadline was judged twice: {missed:?}"
        );
    }

    // Node A dies; node B alone keeps the schedule: a ping resolves, the next miss alerts.
    a.kill();
    ping(&api_b, "");
    wait_for("the recovery", Duration::from_secs(20), || {
        receiver
            .at("/hook")
            .iter()
            .any(|e| e.json["event"] == "incident.resolved")
            .then_some(())
    });
    wait_for("the next missed deadline", Duration::from_secs(30), || {
        (created(&receiver) >= 2).then_some(())
    });
}

/// A node stopped normally (SIGTERM) leaves at once: it is gone from the node list
/// without waiting for its heartbeat to age, no claim from the second it left in on
/// is left to it, and the other node of its region checks every monitor from then on,
/// its share included, within about a round.
#[test]
fn a_node_stopped_normally_hands_its_checks_over_at_once() {
    let Some((_turn, rt, test_db)) =
        cluster_test("a_node_stopped_normally_hands_its_checks_over_at_once")
    else {
        return;
    };
    let db = rt
        .block_on(Database::connect(&test_db.url))
        .expect("connect");
    let target = Target::start();
    let start = || {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("tocsin.toml"), CONFIG).expect("config");
        let server = Server::start_in(
            dir.path(),
            &[
                ("TOCSIN_REGION", "eu"),
                ("TOCSIN_DATABASE_URL", test_db.url.as_str()),
            ],
        );
        (server, dir)
    };
    let (a, _da) = start();
    let (mut b, _db) = start();
    let api = a.client();
    let nodes = || api.get("/v1/probe-ips").body["data"][0]["nodes"].clone();
    wait_for("two live nodes", Duration::from_secs(10), || {
        (nodes() == json!(2)).then_some(())
    });
    // The monitors are made on the node that will stop: it reads them at once, the other
    // node at its next sync, so it starts their rounds first and holds slots.
    let api_b = b.client();
    let mut ids = Vec::new();
    for i in 0..48 {
        let r = api_b.post(
            "/v1/monitors",
            &json!({"name": format!("m{i}"), "type": "http", "method": "GET",
                    "url": target.url("/ok"), "interval": 1, "timeout": 1, "regions": ["eu"]}),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        ids.push(r.body["data"]["id"].as_str().expect("id").to_string());
    }
    // The node to stop runs rounds: it holds slots of its own.
    std::thread::sleep(Duration::from_secs(5));
    let holders = |from_slot: i64| -> Vec<(String, i64)> {
        rt.block_on(db.query_all_raw(Statement::from_string(
            db.get_database_backend(),
            format!(
                "SELECT node_id, slot FROM check_slot_claims WHERE slot >= {from_slot} \
                 AND node_id NOT IN (SELECT id FROM nodes)"
            ),
        )))
        .expect("claims")
        .into_iter()
        .map(|r| {
            (
                r.try_get::<String>("", "node_id").expect("node"),
                r.try_get::<i64>("", "slot").expect("slot"),
            )
        })
        .collect()
    };
    let held_by_b = rt
        .block_on(db.query_one_raw(Statement::from_string(
            db.get_database_backend(),
            format!(
                "SELECT COUNT(*) AS n FROM check_slot_claims WHERE slot >= {} AND node_id = \
                 (SELECT id FROM nodes ORDER BY started_at DESC LIMIT 1)",
                now_ms() / 1000 - 5
            ),
        )))
        .expect("count")
        .expect("row")
        .try_get::<i64>("", "n")
        .expect("n");
    assert!(
        held_by_b > 0,
        "the node to stop holds slots before the stop"
    );

    b.stop();
    let stopped = now_ms();
    assert_eq!(nodes(), json!(1), "the stopped node left the node list");
    // It gave back every slot from the second it left in, which is at the latest the
    // second it had exited by.
    assert_eq!(
        holders(stopped / 1000),
        Vec::new(),
        "no slot from the second it left in is left to the stopped node"
    );
    std::thread::sleep(Duration::from_secs(5));
    let after = rt.block_on(checks_between(&db, stopped, now_ms()));
    for id in &ids {
        let times = times_of(&after, id);
        let first = times.first().copied().unwrap_or(i64::MAX);
        assert!(
            first - stopped <= 2_000,
            "{id}: first check {} ms after the stop: {times:?}",
            first - stopped
        );
        assert!(times.len() >= 3, "{id}: {times:?}");
    }
    drop(a);
    rt.block_on(db.close()).ok();
    rt.block_on(test_db.drop());
}

#[test]
/// A dashboard open on one node hears what another node commits: a monitor created there,
/// its checks, and its deletion.
fn a_dashboard_on_one_node_hears_what_another_node_commits() {
    let Some((_turn, _rt, test_db)) =
        cluster_test("a_dashboard_on_one_node_hears_what_another_node_commits")
    else {
        return;
    };
    let target = Target::start();
    let start = || {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("tocsin.toml"), CONFIG).expect("config");
        let server = Server::start_in(
            dir.path(),
            &[
                ("TOCSIN_REGION", "eu"),
                ("TOCSIN_DATABASE_URL", test_db.url.as_str()),
            ],
        );
        (server, dir)
    };
    let (a, _da) = start();
    let (b, _db) = start();
    let ws = a.client().workspace_id();
    let out = a.cli_with(
        &[
            "user",
            "create",
            "--email",
            "olive@example.com",
            "--workspace",
            &ws,
            "--role",
            "admin",
        ],
        &[("TOCSIN_DATABASE_URL", test_db.url.as_str())],
    );
    let mut olive = support::browser::Browser::new(&a.base);
    let set = olive.post(
        "/v1/auth/password-reset/confirm",
        &json!({"token": support::browser::token_in(&out, "/reset-password"), "password": "olive-password-1"}),
    );
    assert_eq!(set.status, 204, "{}", set.body);
    assert_eq!(
        olive.login("olive@example.com", "olive-password-1").status,
        200
    );
    let hears = crate::e2e_live::Stream::open(&olive);
    // Node a announces its open dashboard as the stream opens; give it a moment to reach b.
    std::thread::sleep(Duration::from_millis(500));

    let api_b = b.client();
    let made = api_b.post(
        "/v1/monitors",
        &json!({"name": "Made on b", "type": "http", "method": "GET", "url": target.url("/ok"),
                "interval": 1, "timeout": 1, "regions": ["eu"]}),
    );
    assert_eq!(made.status, 201, "{}", made.body);
    let id = made.body["data"]["id"].as_str().expect("id").to_string();
    let (seen, created) = hears.until(Duration::from_secs(10), |c| {
        c["kind"] == "monitor" && c["monitorId"] == id.as_str() && c["deleted"] == false
    });
    assert!(
        created,
        "the monitor made on node b was told on node a: {seen:?}"
    );
    let (seen, checked) = hears.until(Duration::from_secs(15), |c| {
        c["kind"] == "check" && c["monitorId"] == id.as_str() && c["ok"] == true
    });
    assert!(checked, "its checks were told on node a: {seen:?}");
    assert_eq!(api_b.delete(&format!("/v1/monitors/{id}")).status, 204);
    let (seen, deleted) = hears.until(Duration::from_secs(10), |c| {
        c["kind"] == "monitor" && c["monitorId"] == id.as_str() && c["deleted"] == true
    });
    assert!(
        deleted,
        "its deletion on node b was told on node a: {seen:?}"
    );
}
