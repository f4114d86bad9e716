//! End to end: `GET /metrics` as Prometheus reads it. A real Prometheus server (Debian's
//! package) scrapes a running `tocsin serve` on loopback with an API key and answers a
//! query for a monitor's status; `promtool check metrics` finds nothing to lint; the
//! access settings (`key`, `public`, `off`) and Uptime Kuma's names behave as documented.

use crate::support;

use serde_json::{Value, json};
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use support::target::Target;
use support::{Api, Server, free_port, wait_for};

fn create(api: &Api, body: Value) -> String {
    let r = api.post("/v1/monitors", &body);
    assert_eq!(r.status, 201, "create failed: {}", r.body);
    r.body["data"]["id"].as_str().expect("id").to_string()
}

/// The exposition as text, with its content type.
fn scrape(base: &str, key: Option<&str>) -> (u16, String, String) {
    let mut req = reqwest::blocking::Client::new().get(format!("{base}/metrics"));
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let r = req.send().expect("scrape");
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    (status, ct, r.text().unwrap_or_default())
}

/// The value of the first sample of `metric` whose labels include every `labels` pair.
fn sample(text: &str, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find(|l| {
            l.starts_with(&format!("{metric}{{"))
                && labels
                    .iter()
                    .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

/// `text` percent-encoded for a query string.
fn escape(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b == b'_' {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

struct Prometheus {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Prometheus server scraping `target` (host:port) every second with `key`.
fn prometheus(binary: &str, target: &str, key: &str) -> Prometheus {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("prometheus.yml");
    let mut f = std::fs::File::create(&config).expect("config");
    write!(
        f,
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
         scrape_configs:\n  - job_name: tocsin\n    metrics_path: /metrics\n\
         \x20   authorization:\n      credentials: {key}\n\
         \x20   static_configs:\n      - targets: ['{target}']\n"
    )
    .expect("write config");
    let port = free_port();
    let log = std::fs::File::create(dir.path().join("prometheus.log")).expect("log");
    let child = Command::new(binary)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start prometheus");
    Prometheus {
        child,
        base: format!("http://127.0.0.1:{port}"),
        _dir: dir,
    }
}

#[test]
fn prometheus_scrapes_the_server_and_a_query_answers_the_monitors_status() {
    let data = tempfile::tempdir().expect("tempdir");
    let roots = data.path().join("roots.pem");
    let ca = support::tls::TestCa::new("Tocsin Test CA");
    std::fs::write(&roots, &ca.pem).expect("roots");
    let server = Server::start_in(
        data.path(),
        &[
            ("TOCSIN_TLS_EXTRA_ROOTS", roots.to_str().expect("path")),
            ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ],
    );
    let api = server.client();
    let target = Target::start();
    let up = create(
        &api,
        json!({"name": "api", "type": "http", "interval": 1, "url": target.url("/ok"),
               "method": "GET", "tags": ["prod", "edge"]}),
    );
    let closed = free_port();
    // Its incident is delivered to a webhook receiver.
    let receiver = support::sinks::Receiver::start();
    let policy = api.post(
        "/v1/alert-policies",
        &json!({"name": "hooks", "channels": [{"type": "webhook", "url": receiver.url("/hook")}]}),
    );
    assert_eq!(policy.status, 201, "{}", policy.body);
    let down = create(
        &api,
        json!({"name": "gone", "type": "tcp", "interval": 1,
               "config": {"host": "127.0.0.1", "port": closed},
               "alertPolicyId": policy.body["data"]["id"]}),
    );
    // A certificate 40 days from expiry, from a CA the server trusts.
    let tls = support::tls::TlsServer::start(&ca.leaf(&["localhost"], -1, 40));
    let cert = create(
        &api,
        json!({"name": "cert", "type": "ssl", "hostname": "localhost", "port": tls.port,
               "interval": 1}),
    );
    // Another workspace's monitor is not in this key's scrape.
    let ws = server.cli(&[
        "workspace",
        "create",
        "--name",
        "other",
        "--plan",
        "enterprise",
    ]);
    let other_key = server.cli(&["key", "create", "--workspace", &ws, "--role", "admin"]);
    let other = create(
        &api.with_key(&other_key),
        json!({"name": "theirs", "type": "http", "interval": 1, "url": target.url("/ok"),
               "method": "GET"}),
    );

    // Without a key: the error envelope, as every API route answers.
    let r = api.without_key().get("/metrics");
    r.assert_error(401, "UNAUTHORIZED");

    let key = support::ADMIN_KEY;
    let text = wait_for(
        "every monitor series and a delivery in /metrics",
        Duration::from_secs(60),
        || {
            let (status, ct, text) = scrape(&server.base, Some(key));
            assert_eq!(status, 200, "{text}");
            assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
            (sample(&text, "tocsin_monitor_status", &[("monitor_id", &down)]) == Some(0.0)
                && sample(
                    &text,
                    "tocsin_monitor_uptime_ratio",
                    &[("monitor_id", &up), ("window", "30d")],
                )
                .is_some()
                && sample(
                    &text,
                    "tocsin_monitor_certificate_expires_timestamp_seconds",
                    &[("monitor_id", &cert)],
                )
                .is_some()
                && sample(
                    &text,
                    "tocsin_monitor_checks_total",
                    &[("monitor_id", &up), ("outcome", "up")],
                )
                .is_some_and(|n| n >= 2.0)
                && sample(
                    &text,
                    "tocsin_deliveries_total",
                    &[("channel_type", "webhook"), ("outcome", "delivered")],
                )
                .is_some())
            .then_some(text)
        },
    );
    let days = sample(
        &text,
        "tocsin_monitor_certificate_expires_timestamp_seconds",
        &[("monitor_id", &cert)],
    )
    .expect("certificate days");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    let days = (days - now) / 86_400.0;
    assert!((39.0..=40.01).contains(&days), "{days}");
    assert_eq!(
        sample(
            &text,
            "tocsin_monitor_uptime_ratio",
            &[("monitor_id", &up), ("window", "1d")]
        ),
        Some(1.0)
    );
    assert_eq!(
        sample(
            &text,
            "tocsin_monitor_uptime_ratio",
            &[("monitor_id", &down), ("window", "30d")]
        ),
        Some(0.0)
    );
    // A monitor's names are on its info series; the others carry its id.
    let ws = api.workspace_id();
    let labels = [
        ("workspace", ws.as_str()),
        ("monitor_id", up.as_str()),
        ("monitor", "api"),
        ("type", "http"),
        ("tags", "edge,prod"),
    ];
    assert_eq!(sample(&text, "tocsin_monitor_info", &labels), Some(1.0));
    assert_eq!(
        sample(&text, "tocsin_monitor_status", &[("monitor_id", &up)]),
        Some(1.0)
    );
    assert!(
        sample(
            &text,
            "tocsin_monitor_response_time_seconds",
            &[("monitor_id", &up), ("region", "local")]
        )
        .is_some(),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "tocsin_monitor_response_seconds_count",
            &[("monitor_id", &up)]
        )
        .is_some_and(|n| n >= 2.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "tocsin_monitor_checks_total",
            &[("monitor_id", &down), ("outcome", "down")]
        )
        .is_some_and(|n| n >= 2.0)
    );
    assert!(
        sample(
            &text,
            "tocsin_plugin_calls_total",
            &[("plugin", "http"), ("call", "check"), ("result", "ok")]
        )
        .is_some_and(|n| n >= 2.0)
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("tocsin_checks_due_total ")),
        "{text}"
    );
    assert!(text.contains("tocsin_build_info{version=\""), "{text}");
    assert!(
        text.contains(
            "tocsin_http_requests_total{route=\"/v1/monitors\",method=\"POST\",status=\"201\"}"
        ),
        "requests are counted by route pattern: {text}"
    );
    assert!(!text.contains(&other), "another workspace's monitor leaked");

    // Every series the shipped Grafana dashboard queries is exposed.
    let dashboard = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/grafana/tocsin.json"),
    )
    .expect("examples/grafana/tocsin.json");
    let dashboard: Value = serde_json::from_str(&dashboard).expect("dashboard JSON");
    let mut used = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for t in panel["targets"].as_array().expect("targets") {
            let expr = t["expr"].as_str().expect("expr");
            let mut rest = expr;
            while let Some(i) = rest.find("tocsin_") {
                let name: String = rest[i..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                rest = &rest[i + name.len()..];
                used.push(name);
            }
        }
    }
    assert!(used.len() > 10, "{used:?}");
    for name in used {
        assert!(
            text.lines()
                .any(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} "))),
            "the dashboard queries {name}, which /metrics does not expose"
        );
    }

    // promtool's linter has nothing to say.
    let promtool = support::debian::command_from(&["promtool"], "prometheus")
        .expect("promtool (Debian's prometheus package) could not be installed");
    let mut check = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool");
    check
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("feed promtool");
    let out = check.wait_with_output().expect("promtool");
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // A real Prometheus scrapes it and answers a query for the down monitor.
    let binary = support::debian::command_from(&["prometheus"], "prometheus")
        .expect("prometheus could not be installed");
    let prom = prometheus(binary, server.base.trim_start_matches("http://"), key);
    // By name, through the info series, as the Grafana dashboard asks.
    let query = "tocsin_monitor_status * on (monitor_id) group_left (monitor, type) \
                 tocsin_monitor_info{monitor=\"gone\"}"
        .to_string();
    let result = wait_for(
        "Prometheus to answer the query",
        Duration::from_secs(60),
        || {
            let r = reqwest::blocking::Client::new()
                .get(format!(
                    "{}/api/v1/query?query={}",
                    prom.base,
                    escape(&query)
                ))
                .send()
                .ok()?;
            let body: Value = r.json().ok()?;
            let first = body["data"]["result"].as_array()?.first()?.clone();
            Some(first)
        },
    );
    assert_eq!(result["metric"]["monitor"], "gone", "{result}");
    assert_eq!(result["metric"]["monitor_id"], down.as_str(), "{result}");
    assert_eq!(result["metric"]["type"], "tcp", "{result}");
    assert_eq!(result["value"][1], "0", "down is 0: {result}");
    let up_query = format!("tocsin_monitor_status{{monitor_id=\"{up}\"}}");
    let r: Value = reqwest::blocking::Client::new()
        .get(format!(
            "{}/api/v1/query?query={}",
            prom.base,
            escape(&up_query)
        ))
        .send()
        .expect("query")
        .json()
        .expect("json");
    assert_eq!(r["data"]["result"][0]["value"][1], "1", "{r}");
}

#[test]
fn public_and_off_settings_and_uptime_kuma_names() {
    let target = Target::start();
    let server = Server::start(&[
        ("TOCSIN_METRICS", "public"),
        ("TOCSIN_METRICS_KUMA_NAMES", "true"),
        ("TOCSIN_METRICS_HISTOGRAMS", "false"),
    ]);
    let api = server.client();
    let port = target.port().to_string();
    let id = create(
        &api,
        json!({"name": "shop", "type": "tcp", "interval": 1,
               "config": {"host": "127.0.0.1", "port": target.port()}}),
    );
    let text = wait_for(
        "the monitor up in /metrics",
        Duration::from_secs(30),
        || {
            let (status, _, text) = scrape(&server.base, None);
            assert_eq!(status, 200, "public needs no key: {text}");
            (sample(&text, "tocsin_monitor_status", &[("monitor_id", &id)]) == Some(1.0))
                .then_some(text)
        },
    );
    assert_eq!(
        sample(
            &text,
            "monitor_status",
            &[
                ("monitor_name", "shop"),
                ("monitor_type", "tcp"),
                ("monitor_hostname", "127.0.0.1"),
                ("monitor_port", &port)
            ]
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(&text, "monitor_response_time", &[("monitor_name", "shop")]).is_some(),
        "{text}"
    );
    // Without per-monitor histograms, the rest is still there.
    assert!(
        !text.contains("tocsin_monitor_response_seconds_bucket"),
        "{text}"
    );
    assert!(
        sample(&text, "tocsin_monitor_checks_total", &[("monitor_id", &id)]).is_some(),
        "{text}"
    );
    drop(server);

    let off = Server::start(&[("TOCSIN_METRICS", "off")]);
    off.client().get("/metrics").assert_error(404, "NOT_FOUND");
}

/// Every route that checks a credential outside `/v1` counts the refused ones against
/// the client address, as a bad key on `/v1` does: `/metrics` with a wrong key, a ping URL
/// with a wrong token, the dashboard with an unknown session cookie. Once the address's
/// bucket is empty they answer 429 in the envelope with `Retry-After`; a right key or
/// token is never refused for the address's failures.
#[test]
fn refused_credentials_are_rate_limited_per_address() {
    // A burst of 3 that refills once a minute: the test never waits for a refill.
    let server = Server::start(&[
        ("TOCSIN_RATE_LIMIT_PER_MINUTE", "1"),
        ("TOCSIN_RATE_LIMIT_BURST", "3"),
    ]);
    let api = server.client();
    let job = api.post(
        "/v1/monitors",
        &json!({"name": "nightly", "type": "heartbeat", "period": 3600, "grace": 60}),
    );
    assert_eq!(job.status, 201, "{}", job.body);
    let ping = job.body["data"]["pingUrl"]
        .as_str()
        .expect("pingUrl")
        .trim_start_matches(&server.base)
        .to_string();
    let http = reqwest::blocking::Client::new();
    let wrong_key = || {
        support::reply(
            http.get(format!("{}/metrics", server.base))
                .bearer_auth("tcs_WrongKey000000000000000000000000000000000")
                .send()
                .expect("scrape"),
        )
    };

    for attempt in 1..=3 {
        let r = wrong_key();
        r.assert_error(401, "UNAUTHORIZED");
        assert_eq!(
            r.headers["x-ratelimit-remaining"],
            (3 - attempt).to_string(),
            "attempt {attempt}"
        );
    }
    let r = wrong_key();
    r.assert_error(429, "RATE_LIMITED");
    assert!(r.headers.contains_key("retry-after"), "{:?}", r.headers);

    // The same address's wrong ping token and unknown session are refused for it too.
    let r = support::reply(
        http.post(format!("{}/ping/not-a-token", server.base))
            .send()
            .expect("ping"),
    );
    r.assert_error(429, "RATE_LIMITED");
    let r = support::reply(
        http.get(format!("{}/", server.base))
            .header("cookie", "tocsin_session=not-a-session")
            .send()
            .expect("dashboard"),
    );
    r.assert_error(429, "RATE_LIMITED");

    // Right credentials still work: the ping is recorded, the key scrapes.
    let r = http
        .post(format!("{}{ping}", server.base))
        .send()
        .expect("ping");
    assert_eq!(r.status(), 200);
    let (status, _, text) = scrape(&server.base, Some(support::ADMIN_KEY));
    assert_eq!(status, 200, "{text}");
}
