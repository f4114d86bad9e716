//! End to end: probes in private locations (`tocsin probe`). A probe process reaches the
//! server over HTTP only, checks its location's monitors and sends the results back; its
//! failures open incidents on the server. While the server is stopped the probe keeps
//! checking into its buffer on disk, survives `kill -9`, and when the server returns every
//! buffered result is stored once and in order. A probe's token reads only its own
//! location, posts results only for it, and once revoked stops the probe.

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use support::sinks::Receiver;
use support::target::Target;
use support::{Api, Server, verdicts, wait_for};

const CONFIG: &str = "[[regions]]\nname = \"local\"\n\n[[regions]]\nname = \"office\"\nprivate = true\n\n[[regions]]\nname = \"lab\"\nprivate = true\n";

fn configured_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("tocsin.toml"), CONFIG).expect("config");
    dir
}

/// Create a probe for `location`: (id, token).
fn new_probe(api: &Api, name: &str, location: &str) -> (String, String) {
    let r = api.post("/v1/probes", &json!({"name": name, "location": location}));
    assert_eq!(r.status, 201, "{}", r.body);
    let data = &r.body["data"];
    assert!(data.get("secretHash").is_none());
    (
        data["id"].as_str().expect("id").to_string(),
        data["token"].as_str().expect("token").to_string(),
    )
}

fn new_monitor(api: &Api, body: Value) -> String {
    let r = api.post("/v1/monitors", &body);
    assert_eq!(r.status, 201, "{}", r.body);
    r.body["data"]["id"].as_str().expect("id").to_string()
}

/// A running `tocsin probe`.
struct Probe {
    child: Child,
    log: std::path::PathBuf,
}

impl Probe {
    fn start(server: &str, token: &str, data_dir: &Path) -> Probe {
        Probe::start_with(server, token, data_dir, None, &[])
    }

    /// Start a probe, in network namespace `netns` when given, with extra environment.
    fn start_with(
        server: &str,
        token: &str,
        data_dir: &Path,
        netns: Option<&str>,
        env: &[(&str, &str)],
    ) -> Probe {
        let log = data_dir.join(format!(
            "probe-{}.log",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default()
        ));
        let mut command = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, env!("CARGO_BIN_EXE_tocsin")]);
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_tocsin")),
        };
        let child = command
            .arg("probe")
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("TOCSIN_SERVER_URL", server)
            .env("TOCSIN_PROBE_TOKEN", token)
            .env("TOCSIN_DATA_DIR", data_dir)
            .env(
                "TOCSIN_PLUGIN_CACHE_DIR",
                Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-cache"),
            )
            .env("TOCSIN_LOG", "info")
            .envs(env.iter().copied())
            .current_dir(data_dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start tocsin probe");
        Probe { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            eprintln!("probe log:\n{}", self.log());
        }
    }
}

/// Checks of a monitor as stored, oldest first: (id, checkedAt ms, ok, region).
fn checks(api: &Api, id: &str) -> Vec<(String, i64, bool, String)> {
    let r = api.get(&format!("/v1/monitors/{id}/checks?limit=100"));
    assert_eq!(r.status, 200, "{}", r.body);
    let mut list: Vec<(String, i64, bool, String)> = r.body["data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_string(),
                chrono::DateTime::parse_from_rfc3339(c["checkedAt"].as_str().unwrap_or_default())
                    .map(|t| t.timestamp_millis())
                    .unwrap_or_default(),
                c["ok"].as_bool().unwrap_or_default(),
                c["region"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    list.sort_by_key(|c| c.1);
    list
}

/// The first incident of `monitor`, waited for up to `secs` seconds.
fn first_incident(api: &Api, monitor: &str, what: &str, secs: u64) -> Value {
    wait_for(what, Duration::from_secs(secs), || {
        let r = api.get(&format!("/v1/incidents?monitorId={monitor}"));
        r.body["data"].as_array().and_then(|l| l.first().cloned())
    })
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[test]
fn a_probe_checks_its_location_and_its_failures_open_incidents() {
    let target = Target::start();
    let dir = configured_dir();
    let server = Server::start_in(dir.path(), &[]);
    let api = server.client();
    // Only admins make probes, only for a private location.
    let r = api.post("/v1/probes", &json!({"name": "x", "location": "local"}));
    r.assert_error(400, "VALIDATION_ERROR");
    assert!(r.body.to_string().contains("office"), "{}", r.body);
    let write = api.post("/v1/api-keys", &json!({"name": "w", "role": "write"}));
    let writer = api.with_key(write.body["data"]["secret"].as_str().expect("secret"));
    writer
        .post("/v1/probes", &json!({"name": "x", "location": "office"}))
        .assert_error(403, "FORBIDDEN");
    writer.get("/v1/probes").assert_error(403, "FORBIDDEN");
    // A monitor may name a private location; "every region" leaves it out.
    let office = new_monitor(
        &api,
        json!({"name": "office web", "type": "http", "url": target.url("/status"), "method": "GET", "interval": 1, "regions": ["office"]}),
    );
    let everywhere = new_monitor(
        &api,
        json!({"name": "everywhere", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 1}),
    );
    assert_eq!(
        api.get(&format!("/v1/monitors/{everywhere}")).body["data"]["regions"],
        json!(["local"])
    );
    let (probe_id, token) = new_probe(&api, "rack 2", "office");
    let probe_dir = tempfile::tempdir().expect("probe dir");
    let _probe = Probe::start(&server.base, &token, probe_dir.path());
    let stored = wait_for("the probe's checks", Duration::from_secs(60), || {
        let c = checks(&api, &office);
        (c.len() >= 3).then_some(c)
    });
    assert!(stored.iter().all(|c| c.3 == "office" && c.2), "{stored:?}");
    // The node never checks from the private location; the probe never checks the rest.
    assert!(checks(&api, &everywhere).iter().all(|c| c.3 == "local"));
    // A failure the probe sees opens an incident naming its location.
    target.set_status(503);
    let incident = first_incident(&api, &office, "an incident", 60);
    assert_eq!(incident["failure"]["region"], "office", "{incident}");
    // The listing shows the probe as it reported.
    let listed = wait_for("the probe listed", Duration::from_secs(20), || {
        let r = api.get("/v1/probes");
        let p = r.body["data"][0].clone();
        (p["lastSequence"].as_i64().unwrap_or(0) > 0).then_some(p)
    });
    assert_eq!(listed["id"], probe_id.as_str());
    assert_eq!(listed["location"], "office");
    assert_eq!(listed["online"], true);
    assert_eq!(listed["version"], env!("CARGO_PKG_VERSION"));
    assert!(listed.get("token").is_none());
}

#[test]
fn a_probe_buffers_while_the_server_is_away_and_nothing_is_lost_or_doubled() {
    let target = Target::start();
    let dir = configured_dir();
    let listen = format!("127.0.0.1:{}", support::free_port());
    let env = [("TOCSIN_LISTEN", listen.as_str())];
    let mut server = Server::start_in(dir.path(), &env);
    let api = server.client();
    let monitor = new_monitor(
        &api,
        json!({"name": "office web", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 1, "regions": ["office"]}),
    );
    let (_, token) = new_probe(&api, "rack 2", "office");
    let probe_dir = tempfile::tempdir().expect("probe dir");
    let mut probe = Probe::start(&server.base, &token, probe_dir.path());
    wait_for("the probe's first checks", Duration::from_secs(60), || {
        (checks(&api, &monitor).len() >= 3).then_some(())
    });
    // The server goes away for 30 s; halfway through the probe is killed and restarted.
    server.stop();
    let away = now_ms();
    std::thread::sleep(Duration::from_secs(15));
    probe.kill();
    let mut probe = Probe::start(&server.base, &token, probe_dir.path());
    std::thread::sleep(Duration::from_secs(15));
    let server = Server::start_in(dir.path(), &env);
    let back = now_ms();
    let api = server.client();
    let stored = wait_for("the buffered results", Duration::from_secs(60), || {
        let c = checks(&api, &monitor);
        c.iter().any(|c| c.1 > back + 2_000).then_some(c)
    });
    let during: Vec<i64> = stored
        .iter()
        .map(|c| c.1)
        .filter(|at| (away..back).contains(at))
        .collect();
    // About one a second for 30 s, less the second or two the restart took.
    assert!(
        during.len() >= 22,
        "{} results from the 30 s away: {during:?}",
        during.len()
    );
    // Each stored once: no two results of one check.
    let mut times: Vec<i64> = stored.iter().map(|c| c.1).collect();
    times.dedup();
    assert_eq!(
        times.len(),
        stored.len(),
        "a result stored twice: {stored:?}"
    );
    // In order: ids are given as results are stored, and they sort as the checks ran.
    let mut by_id = stored.clone();
    by_id.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        by_id.iter().map(|c| c.1).collect::<Vec<_>>(),
        stored.iter().map(|c| c.1).collect::<Vec<_>>(),
        "stored out of order"
    );
    // Nothing is left waiting.
    let listed = wait_for("an empty buffer", Duration::from_secs(20), || {
        let p = api.get("/v1/probes").body["data"][0].clone();
        (p["buffered"].as_i64() == Some(0) && p["shed"].as_i64() == Some(0)).then_some(p)
    });
    assert_eq!(listed["online"], true);
    probe.kill();
}

#[test]
fn a_probe_token_reaches_only_its_location_and_a_revoked_probe_stops() {
    let target = Target::start();
    let dir = configured_dir();
    let server = Server::start_in(dir.path(), &[]);
    let api = server.client();
    let office = new_monitor(
        &api,
        json!({"name": "office", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 60, "regions": ["office"], "headers": {"Authorization": "Bearer office-secret"}}),
    );
    let lab = new_monitor(
        &api,
        json!({"name": "lab", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 60, "regions": ["lab"]}),
    );
    new_monitor(
        &api,
        json!({"name": "anywhere", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 60}),
    );
    let (probe_id, token) = new_probe(&api, "rack 2", "office");
    let as_probe = api.with_key(&token);
    // Its own location's monitors, with the secrets its checks need; nothing else.
    let r = as_probe.get("/v1/probe/assignments");
    assert_eq!(r.status, 200, "{}", r.body);
    let monitors = r.body["data"]["monitors"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ids: Vec<&str> = monitors.iter().filter_map(|m| m["id"].as_str()).collect();
    assert_eq!(ids, [office.as_str()]);
    assert!(r.body.to_string().contains("office-secret"));
    as_probe
        .get("/v1/probe/assignments?location=lab")
        .assert_error(403, "FORBIDDEN");
    // A probe token is no API key, and an API key is no probe token.
    as_probe
        .get("/v1/monitors")
        .assert_error(401, "UNAUTHORIZED");
    as_probe
        .get(&format!("/v1/monitors/{lab}"))
        .assert_error(401, "UNAUTHORIZED");
    api.get("/v1/probe/assignments")
        .assert_error(401, "UNAUTHORIZED");
    // Results for another location's monitor are refused, and nothing of the batch kept.
    let result = |seq: i64, monitor: &str| json!({"seq": seq, "monitorId": monitor, "checkedAtMs": now_ms() - 1000 + seq, "ok": true, "responseTimeMs": 5});
    let batch = |results: Vec<Value>| json!({"version": "test", "buffered": results.len(), "shed": 0, "lagMs": 10, "checksPerSecond": 1.0, "results": results});
    let r = as_probe.post(
        "/v1/probe/results",
        &batch(vec![result(1, &office), result(2, &lab)]),
    );
    r.assert_error(403, "PROBE_RESULT_REFUSED");
    assert_eq!(r.body["error"]["details"][0]["field"], "results.2");
    assert!(checks(&api, &lab).is_empty());
    assert!(checks(&api, &office).is_empty());
    // A batch sent twice (the answer was lost) is stored once.
    let three = batch(vec![
        result(1, &office),
        result(2, &office),
        result(3, &office),
    ]);
    for _ in 0..2 {
        let r = as_probe.post("/v1/probe/results", &three);
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.body["data"]["lastSequence"], 3);
    }
    let r = as_probe.post(
        "/v1/probe/results",
        &batch(vec![
            result(2, &office),
            result(3, &office),
            result(4, &office),
        ]),
    );
    assert_eq!(r.body["data"]["lastSequence"], 4, "{}", r.body);
    let stored = checks(&api, &office);
    assert_eq!(stored.len(), 4, "{stored:?}");
    assert!(stored.iter().all(|c| c.3 == "office"));
    // Out of order is refused.
    as_probe
        .post(
            "/v1/probe/results",
            &batch(vec![result(6, &office), result(5, &office)]),
        )
        .assert_error(400, "VALIDATION_ERROR");
    // A probe process with a fresh buffer continues after the last stored result.
    let probe_dir = tempfile::tempdir().expect("probe dir");
    let mut probe = Probe::start(&server.base, &token, probe_dir.path());
    wait_for(
        "the probe's assignments kept",
        Duration::from_secs(60),
        || {
            probe_dir
                .path()
                .join("probe-assignments.json")
                .is_file()
                .then_some(())
        },
    );
    // A second process with the same token is refused while the first runs.
    let other_dir = tempfile::tempdir().expect("other probe dir");
    let mut other = Probe::start(&server.base, &token, other_dir.path());
    wait_for("the second probe refused", Duration::from_secs(30), || {
        other.log().contains("Another running probe").then_some(())
    });
    assert!(!other_dir.path().join("probe-assignments.json").exists());
    other.kill();
    // Revoked: the probe is refused within seconds and stops, keeping no secrets.
    assert_eq!(api.delete(&format!("/v1/probes/{probe_id}")).status, 204);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = probe.child.try_wait().expect("wait") {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the revoked probe still runs:\n{}",
            probe.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(!status.success());
    assert!(probe.log().contains("refused"), "{}", probe.log());
    assert!(!probe_dir.path().join("probe-assignments.json").exists());
    as_probe
        .get("/v1/probe/assignments")
        .assert_error(401, "UNAUTHORIZED");
    assert!(
        api.get("/v1/probes").body["data"]
            .as_array()
            .is_some_and(Vec::is_empty)
    );
}

#[test]
fn a_probe_behind_a_boundary_checks_what_the_server_cannot_reach() {
    use std::io::BufRead;
    use support::tls::{NetnsHost, TestCa, TlsProxy};
    let host = match NetnsHost::create() {
        Ok(h) => h,
        Err(why) => {
            eprintln!("SKIPPED: cannot create a network namespace for the probe: {why}");
            return;
        }
    };
    let dir = configured_dir();
    let server = Server::start_in(dir.path(), &[]);
    let api = server.client();
    // The server behind TLS on the link to the namespace, with a private CA the probe
    // trusts through `tls_extra_roots`.
    let ca = TestCa::new("probe test CA");
    let leaf = ca.leaf(&[&host.host_address], -1, 30);
    let upstream: std::net::SocketAddr = server
        .base
        .trim_start_matches("http://")
        .parse()
        .expect("server address");
    let proxy = TlsProxy::start(&leaf, &format!("{}:0", host.host_address), upstream);
    let probe_dir = tempfile::tempdir().expect("probe dir");
    let roots = probe_dir.path().join("ca.pem");
    std::fs::write(&roots, &ca.pem).expect("ca");
    // A target inside the namespace, on its own loopback: out of the server's reach.
    let mut target = Command::new("ip")
        .args([
            "netns",
            "exec",
            &host.name,
            env!("CARGO_BIN_EXE_tocsin"),
            "bench-target",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the target in the namespace");
    let mut lines = std::io::BufReader::new(target.stdout.take().expect("stdout")).lines();
    let port: u16 = lines
        .next()
        .and_then(Result::ok)
        .and_then(|l| l.strip_prefix("PORT ").and_then(|p| p.trim().parse().ok()))
        .expect("the target's port");
    let inside = |path: &str| format!("http://127.0.0.1:{port}{path}");
    let up = new_monitor(
        &api,
        json!({"name": "inside", "type": "http", "url": inside("/ok"), "method": "GET", "interval": 1, "regions": ["office"]}),
    );
    let down = new_monitor(
        &api,
        json!({"name": "inside, failing", "type": "http", "url": inside("/fail"), "method": "GET", "interval": 1, "regions": ["office"]}),
    );
    let from_server = new_monitor(
        &api,
        json!({"name": "from the server", "type": "http", "url": inside("/ok"), "method": "GET", "interval": 1}),
    );
    let (_, token) = new_probe(&api, "behind the boundary", "office");
    let url = format!("https://{}", proxy.address);
    let roots_text = roots.display().to_string();
    let _probe = Probe::start_with(
        &url,
        &token,
        probe_dir.path(),
        Some(&host.name),
        &[("TOCSIN_TLS_EXTRA_ROOTS", roots_text.as_str())],
    );
    let reached = wait_for(
        "the probe's checks of the inside",
        Duration::from_secs(60),
        || {
            let c = checks(&api, &up);
            (c.len() >= 2).then_some(c)
        },
    );
    assert!(
        reached.iter().all(|c| c.2 && c.3 == "office"),
        "{reached:?}"
    );
    // The server itself cannot reach that address: its own checks fail.
    let own = wait_for("the server's own check", Duration::from_secs(30), || {
        let c = checks(&api, &from_server);
        (!c.is_empty()).then_some(c)
    });
    assert!(own.iter().all(|c| !c.2 && c.3 == "local"), "{own:?}");
    // A failure behind the boundary opens an incident on the server.
    let incident = first_incident(&api, &down, "an incident from the probe", 60);
    assert_eq!(incident["failure"]["region"], "office", "{incident}");
    let _ = target.kill();
    let _ = target.wait();
}

#[test]
fn a_silent_probe_marks_its_location_offline_and_tells_once_without_an_incident() {
    let target = Target::start();
    let receiver = Receiver::start();
    let dir = configured_dir();
    let server = Server::start_in(dir.path(), &[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let secret = api.get("/v1/workspace/webhook-secret").body["data"]["secret"]
        .as_str()
        .expect("secret")
        .to_string();
    receiver.set_secret(&secret);
    // Two monitors of the location share one policy; a third alerts through another
    // policy with the same channel: the channel hears of the location once.
    let hook = receiver.url("/hooks/office");
    let policy = |name: &str| {
        let r = api.post(
            "/v1/alert-policies",
            &json!({"name": name, "channels": [{"type": "webhook", "url": hook}]}),
        );
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["data"]["id"].as_str().expect("id").to_string()
    };
    let (first, second) = (policy("office"), policy("office too"));
    let office = new_monitor(
        &api,
        json!({"name": "office web", "type": "http", "url": target.url("/ok"), "method": "GET",
               "interval": 1, "regions": ["office"], "alertPolicyId": first}),
    );
    let printer = new_monitor(
        &api,
        json!({"name": "office printer", "type": "http", "url": target.url("/ok"), "method": "GET",
               "interval": 1, "regions": ["office"], "alertPolicyId": second}),
    );
    // Checked from the office and from the nodes: never stale.
    let both = new_monitor(
        &api,
        json!({"name": "both", "type": "http", "url": target.url("/ok"), "method": "GET",
               "interval": 1, "regions": ["office", "local"], "alertPolicyId": first}),
    );
    let heartbeat = new_monitor(
        &api,
        json!({"name": "office probes", "type": "heartbeat", "period": 10, "grace": 5}),
    );
    let location = |name: &str| {
        let all = api.get("/v1/locations").body["data"].clone();
        all.as_array()
            .and_then(|l| l.iter().find(|x| x["name"] == name).cloned())
            .unwrap_or_else(|| panic!("no {name} in {all}"))
    };
    // Before any probe: a location nobody has heard from is unknown, not offline.
    assert_eq!(location("office")["status"], "unknown");
    assert_eq!(location("office")["monitors"], 3);
    assert_eq!(location("local")["status"], "online");
    assert_eq!(location("local")["private"], false);
    // Only a heartbeat monitor of the workspace will do.
    api.post(
        "/v1/probes",
        &json!({"name": "x", "location": "office", "heartbeatMonitorId": office}),
    )
    .assert_error(400, "VALIDATION_ERROR");
    let r = api.post("/v1/probes", &json!({"name": "rack", "location": "office"}));
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["data"]["heartbeatMonitorId"], Value::Null);
    let token = r.body["data"]["token"].as_str().expect("token").to_string();
    let probe_id = r.body["data"]["id"].as_str().expect("id").to_string();
    // Linked (and renamed) afterwards; its location cannot change.
    let path = format!("/v1/probes/{probe_id}");
    api.patch(&path, &json!({"location": "lab"}))
        .assert_error(400, "VALIDATION_ERROR");
    api.patch(&path, &json!({"heartbeatMonitorId": office}))
        .assert_error(400, "VALIDATION_ERROR");
    let r = api.patch(
        &path,
        &json!({"name": "rack 2", "heartbeatMonitorId": heartbeat}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["name"], "rack 2");
    assert_eq!(r.body["data"]["heartbeatMonitorId"], heartbeat.as_str());
    assert_eq!(r.body["data"]["location"], "office");
    let probe_dir = tempfile::tempdir().expect("probe dir");
    let mut probe = Probe::start(&server.base, &token, probe_dir.path());
    wait_for(
        "the probe's checks and pings",
        Duration::from_secs(60),
        || {
            let pinged = checks(&api, &heartbeat)
                .iter()
                .any(|c| c.2 && c.3 == "office");
            (pinged && checks(&api, &office).len() >= 3 && checks(&api, &printer).len() >= 3)
                .then_some(())
        },
    );
    let here = location("office");
    assert_eq!(here["status"], "online", "{here}");
    assert_eq!(
        (here["probes"].clone(), here["onlineProbes"].clone()),
        (json!(1), json!(1))
    );
    let viewer = api.get(&format!("/v1/monitors/{office}")).body["data"].clone();
    assert_eq!(viewer["stale"], false, "{viewer}");
    // The probe goes silent (a lost machine).
    probe.kill();
    let silent = now_ms();
    // After 45 s of silence the location is offline, and the channel is told once.
    let told = wait_for("the location's alert", Duration::from_secs(90), || {
        let got: Vec<_> = receiver
            .at("/hooks/office")
            .into_iter()
            .filter(|x| x.json["event"] == "location.offline")
            .collect();
        (!got.is_empty()).then_some(got)
    });
    let body = &told[0].json;
    assert!(told[0].verified, "the alert is signed like any delivery");
    assert_eq!(body["location"]["name"], "office", "{body}");
    assert_eq!(body["location"]["status"], "offline", "{body}");
    assert_eq!(body["location"]["monitors"], 3, "{body}");
    assert_eq!(body["location"]["onlineProbes"], 0, "{body}");
    assert!(body["location"]["offlineSince"].is_string(), "{body}");
    assert!(body.get("monitor").is_none(), "{body}");
    let here = location("office");
    assert_eq!(here["status"], "offline", "{here}");
    assert!(here["offlineSince"].is_string(), "{here}");
    // Its monitors keep their state, marked stale; the one the nodes also check is not.
    for id in [&office, &printer] {
        let m = api.get(&format!("/v1/monitors/{id}")).body["data"].clone();
        assert_eq!(
            (m["status"].clone(), m["stale"].clone()),
            (json!("up"), json!(true)),
            "{m}"
        );
    }
    let m = api.get(&format!("/v1/monitors/{both}")).body["data"].clone();
    assert_eq!(m["stale"], false, "{m}");
    let listed = api.get("/v1/monitors?limit=100").body["data"].clone();
    let stale: Vec<&str> = listed
        .as_array()
        .expect("list")
        .iter()
        .filter(|m| m["stale"] == true)
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(stale.len(), 2, "{listed}");
    // No result since the silence, and no incident for them.
    assert!(checks(&api, &office).iter().all(|c| c.1 < silent + 2_000));
    for id in [&office, &printer] {
        let r = api.get(&format!("/v1/incidents?monitorId={id}"));
        assert_eq!(r.body["data"], json!([]), "{}", r.body);
    }
    // The location's heartbeat, for those who link one, misses and opens its incident.
    let incident = first_incident(&api, &heartbeat, "the location's heartbeat incident", 90);
    assert_eq!(incident["monitorId"], heartbeat.as_str(), "{incident}");
    let p = api.get("/v1/probes").body["data"][0].clone();
    assert_eq!(p["online"], false, "{p}");
    assert!(p["lastContactAt"].is_string(), "{p}");
    // Told once, however many passes, monitors and policies.
    std::thread::sleep(Duration::from_secs(6));
    let offline: Vec<_> = receiver
        .at("/hooks/office")
        .into_iter()
        .filter(|x| x.json["event"] == "location.offline")
        .collect();
    assert_eq!(offline.len(), 1, "{offline:?}");
    // The probe comes back: the location is online, told once, and checks resume.
    let mut probe = Probe::start(&server.base, &token, probe_dir.path());
    let back = wait_for("the location back", Duration::from_secs(60), || {
        let got: Vec<_> = receiver
            .at("/hooks/office")
            .into_iter()
            .filter(|x| x.json["event"] == "location.online")
            .collect();
        (!got.is_empty()).then_some(got)
    });
    assert_eq!(back[0].json["location"]["status"], "online");
    assert_eq!(location("office")["status"], "online");
    wait_for("fresh checks", Duration::from_secs(30), || {
        let m = api.get(&format!("/v1/monitors/{office}")).body["data"].clone();
        (m["stale"] == false && checks(&api, &office).iter().any(|c| c.1 > silent + 2_000))
            .then_some(())
    });
    // Revoking its last probe takes the location down on purpose: nobody is told.
    let id = api.get("/v1/probes").body["data"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    assert_eq!(api.delete(&format!("/v1/probes/{id}")).status, 204);
    wait_for("the revoked probe to stop", Duration::from_secs(30), || {
        probe.child.try_wait().expect("wait")
    });
    assert_eq!(location("office")["status"], "unknown");
    // A pass or two later, still nothing (the revoked probe is no silent one).
    std::thread::sleep(Duration::from_secs(8));
    let told: Vec<_> = receiver
        .at("/hooks/office")
        .into_iter()
        .filter(|x| x.json["event"] == "location.offline")
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
}

#[test]
fn regional_confirmation_asks_a_location_only_while_it_is_online() {
    let target = Target::start();
    let receiver = Receiver::start();
    let dir = configured_dir();
    let server = Server::start_in(dir.path(), &[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let policy = api.post(
        "/v1/alert-policies",
        &json!({"name": "hook", "channels": [{"type": "webhook", "url": receiver.url("/hook")}]}),
    );
    assert_eq!(policy.status, 201, "{}", policy.body);
    let policy = policy.body["data"]["id"].as_str().expect("id").to_string();
    let (probe_id, token) = new_probe(&api, "rack 1", "office");
    let probe_dir = tempfile::tempdir().expect("probe dir");
    let mut probe = Probe::start(&server.base, &token, probe_dir.path());
    let confirmed = |name: &str, path: &str| {
        new_monitor(
            &api,
            json!({"name": name, "type": "http", "url": target.url(path), "method": "GET",
                   "interval": 1, "regions": ["office", "local"], "regionalConfirmation": true,
                   "alertPolicyId": policy}),
        )
    };
    // Only the probe sees the first fail, only the node the second.
    let office_sees = confirmed("fails in the office", "/fails-in/office");
    let node_sees = confirmed("fails from the node", "/fails-in/local");
    // The probe's failures are asked of the node, which clears them...
    let history = wait_for(
        "office failures cleared by the node",
        Duration::from_secs(60),
        || {
            let v = verdicts(&api, &office_sees);
            (v.iter().filter(|c| c.3 == "cleared").count() >= 2).then_some(v)
        },
    );
    // Before the first answer the other side may not have been seen live yet: such a
    // failure counts as it is ("unavailable"); never after.
    let first = history.iter().position(|c| c.3 == "cleared").unwrap_or(0);
    for (i, (region, ok, counted, status)) in history.iter().enumerate() {
        match status.as_str() {
            "unavailable" if i < first => assert!(region == "office" && !ok, "{history:?}"),
            "unconfirmed" => assert!(region == "office" && !ok && !counted, "{history:?}"),
            "cleared" => assert!(region == "local" && *ok && *counted, "{history:?}"),
            "" => assert!(*ok, "an office failure counted unasked: {history:?}"),
            other => panic!("unexpected status {other}: {history:?}"),
        }
    }
    // ...and the node's are asked of the online location, whose probe clears them.
    let history = wait_for(
        "node failures cleared by the probe",
        Duration::from_secs(60),
        || {
            let v = verdicts(&api, &node_sees);
            (v.iter().filter(|c| c.3 == "cleared").count() >= 2).then_some(v)
        },
    );
    // Before the first answer the other side may not have been seen live yet: such a
    // failure counts as it is ("unavailable"); never after.
    let first = history.iter().position(|c| c.3 == "cleared").unwrap_or(0);
    for (i, (region, ok, counted, status)) in history.iter().enumerate() {
        match status.as_str() {
            "unavailable" if i < first => assert!(region == "local" && !ok, "{history:?}"),
            "unconfirmed" => assert!(region == "local" && !ok && !counted, "{history:?}"),
            "cleared" => assert!(region == "office" && *ok && *counted, "{history:?}"),
            "" => assert!(*ok, "a node failure counted unasked: {history:?}"),
            other => panic!("unexpected status {other}: {history:?}"),
        }
    }
    for id in [&office_sees, &node_sees] {
        let r = api.get(&format!("/v1/incidents?monitorId={id}"));
        assert_eq!(r.body["data"], json!([]), "{}", r.body);
    }
    // The location goes offline: it is asked no more, so the node's failures count as
    // they are ("unavailable") and open an incident.
    probe.kill();
    wait_for("office offline", Duration::from_secs(90), || {
        let all = api.get("/v1/locations").body["data"].clone();
        all.as_array()
            .and_then(|l| l.iter().find(|x| x["name"] == "office").cloned())
            .filter(|o| o["status"] == "offline")
    });
    // (Until then, within the 45 s of silence, a request nobody answers expires and the
    // failure counts at its deadline.)
    wait_for(
        "a node failure counted as it is",
        Duration::from_secs(30),
        || {
            verdicts(&api, &node_sees)
                .iter()
                .any(|c| c.0 == "local" && !c.1 && c.2 && c.3 == "unavailable")
                .then_some(())
        },
    );
    let incident = first_incident(&api, &node_sees, "the node's unconfirmable failure", 60);
    assert_eq!(incident["failure"]["region"], "local", "{incident}");
    // Its lost probe revoked while the location is offline: the location's alert closes
    // (`location.online`, nothing checks from it now).
    let events = |name: &str| -> Vec<Value> {
        receiver
            .at("/hook")
            .into_iter()
            .filter(|x| x.json["event"] == name)
            .map(|x| x.json)
            .collect()
    };
    wait_for("the offline alert", Duration::from_secs(30), || {
        (!events("location.offline").is_empty()).then_some(())
    });
    assert_eq!(api.delete(&format!("/v1/probes/{probe_id}")).status, 204);
    let closed = wait_for("the closing alert", Duration::from_secs(30), || {
        events("location.online").first().cloned()
    });
    assert_eq!(closed["location"]["status"], "unknown", "{closed}");
    assert_eq!(closed["location"]["probes"], 0, "{closed}");
    assert_eq!(events("location.offline").len(), 1);
}

#[test]
fn two_probes_share_a_location_and_one_takes_over_when_the_other_goes_silent() {
    let target = Target::start();
    let dir = configured_dir();
    let server = Server::start_in(dir.path(), &[]);
    let api = server.client();
    let monitors: Vec<String> = (0..10)
        .map(|i| {
            new_monitor(
                &api,
                json!({"name": format!("office {i}"), "type": "http", "url": target.url("/ok"),
                       "method": "GET", "interval": 1, "regions": ["office"]}),
            )
        })
        .collect();
    let (first_id, first_token) = new_probe(&api, "rack 1", "office");
    let (second_id, second_token) = new_probe(&api, "rack 2", "office");
    let (first_dir, second_dir) = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let mut first = Probe::start(&server.base, &first_token, first_dir.path());
    let _second = Probe::start(&server.base, &second_token, second_dir.path());
    let rate = |id: &str| -> f64 {
        api.get("/v1/probes").body["data"]
            .as_array()
            .and_then(|l| l.iter().find(|p| p["id"] == id).cloned())
            .and_then(|p| p["checksPerSecond"].as_f64())
            .unwrap_or(0.0)
    };
    // Both check, each its own share of the location's monitors, and every monitor is
    // checked.
    wait_for("both probes checking", Duration::from_secs(60), || {
        let all = monitors.iter().all(|m| checks(&api, m).len() >= 2);
        (all && rate(&first_id) > 0.0 && rate(&second_id) > 0.0).then_some(())
    });
    let (one, two) = (rate(&first_id), rate(&second_id));
    assert!(
        one < 10.0 && two < 10.0,
        "the share is split, not doubled: {one} and {two} checks a second for 10 monitors at 1 s"
    );
    // The first goes silent: after 45 s the second takes its monitors over, and every
    // monitor is checked again.
    first.kill();
    let silent = now_ms();
    wait_for(
        "the second probe checking everything",
        Duration::from_secs(90),
        || {
            monitors
                .iter()
                .all(|m| checks(&api, m).iter().any(|c| c.1 > silent + 45_000))
                .then_some(())
        },
    );
    let office = api.get("/v1/locations").body["data"]
        .as_array()
        .and_then(|l| l.iter().find(|x| x["name"] == "office").cloned())
        .expect("office");
    assert_eq!(office["status"], "online", "{office}");
    assert_eq!(
        (office["probes"].clone(), office["onlineProbes"].clone()),
        (json!(2), json!(1))
    );
    for m in &monitors {
        let r = api.get(&format!("/v1/incidents?monitorId={m}"));
        assert_eq!(r.body["data"], json!([]), "{}", r.body);
    }
}
