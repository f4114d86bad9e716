//! End to end: the monitor types built on contract 0.2.0's TCP streams, against real
//! servers. `tcp` against a banner server and a TLS server on loopback; `redis` against the
//! machine's Redis (127.0.0.1:6379), with a key it sets itself, wrong credentials and a
//! closed port; `smtp` against the SMTP sink and a mail server that completes STARTTLS;
//! `postgres` against the machine's PostgreSQL and a private cluster that wants a SCRAM
//! password; `mqtt` against the machine's Mosquitto and a private one that wants a
//! password; and JSON assertions of `http` and `keyword` checks. Every failure has a reason
//! a person can act on.

use crate::support;

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use support::sinks::SmtpSink;
use support::tls::{StartTlsSmtp, TestCa, TlsProxy, TlsServer};
use support::{Api, Server, create, free_port, wait_for};

const REDIS: &str = "127.0.0.1:6379";

/// A port nothing listens on.
fn closed_port() -> u16 {
    free_port()
}

/// A server that greets every connection with `banner` and closes.
fn banner_server(banner: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let _ = s.write_all(banner.as_bytes());
        }
    });
    port
}

/// The first check of a new monitor.
fn first_check(api: &Api, body: Value) -> Value {
    let m = create(api, "/v1/monitors", body);
    let id = m["id"].as_str().expect("id").to_string();
    wait_for("a check", Duration::from_secs(30), || {
        api.get(&format!("/v1/monitors/{id}/checks")).body["data"][0]
            .as_object()
            .cloned()
            .map(Value::Object)
    })
}

fn monitor(name: &str, kind: &str, config: Value) -> Value {
    json!({"name": name, "type": kind, "interval": 60, "timeout": 5, "config": config})
}

fn reason(check: &Value) -> String {
    check["reason"].as_str().unwrap_or("").to_string()
}

/// Send one Redis command over a plain socket (the test's own client).
fn redis(args: &[&str]) -> Option<String> {
    let mut s = TcpStream::connect(REDIS).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    let mut cmd = format!("*{}\r\n", args.len());
    for a in args {
        cmd.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    s.write_all(cmd.as_bytes()).ok()?;
    let mut buf = [0u8; 512];
    let n = s.read(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

#[test]
fn tcp_checks_ports_banners_and_tls() {
    let ca = TestCa::new("Catalogue CA");
    let dir = tempfile::tempdir().expect("dir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.pem).expect("ca");
    let server = Server::start(&[("TOCSIN_TLS_EXTRA_ROOTS", ca_file.to_str().expect("path"))]);
    let api = server.client();

    let ssh = banner_server("SSH-2.0-OpenSSH_9.6 test\r\n");
    let c = first_check(
        &api,
        monitor(
            "ssh",
            "tcp",
            json!({"host": "127.0.0.1", "port": ssh, "expect": "SSH-2.0"}),
        ),
    );
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["details"]["address"], format!("127.0.0.1:{ssh}"), "{c}");
    let c = first_check(
        &api,
        monitor(
            "ftp",
            "tcp",
            json!({"host": "127.0.0.1", "port": ssh, "expect": "220 FTP"}),
        ),
    );
    assert_eq!(c["ok"], false, "{c}");
    assert!(
        reason(&c).contains("Expected an answer containing \"220 FTP\"")
            && reason(&c).contains("SSH-2.0-OpenSSH_9.6"),
        "{c}"
    );
    let closed = closed_port();
    let c = first_check(
        &api,
        monitor(
            "closed",
            "tcp",
            json!({"host": "127.0.0.1", "port": closed}),
        ),
    );
    assert_eq!(c["ok"], false, "{c}");
    assert_eq!(
        reason(&c),
        format!("127.0.0.1:{closed} refused the connection")
    );

    // TLS: a request sent over the stream and the answer checked.
    let tls = TlsServer::start(&ca.leaf(&["localhost"], -1, 90));
    let c = first_check(
        &api,
        monitor(
            "https",
            "tcp",
            json!({"host": "localhost", "port": tls.port, "tls": true,
                                          "send": "GET / HTTP/1.0\r\n\r\n", "expect": "200 OK"}),
        ),
    );
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["details"]["tls"], "TLSv1.3", "{c}");
    // A certificate for another name is refused, unless told to accept it.
    let other = TlsServer::start(&ca.leaf(&["other.test"], -1, 90));
    let c = first_check(
        &api,
        monitor(
            "wrong name",
            "tcp",
            json!({"host": "localhost", "port": other.port, "tls": true}),
        ),
    );
    assert_eq!(c["ok"], false, "{c}");
    assert!(reason(&c).contains("not valid for"), "{c}");
    let c = first_check(
        &api,
        monitor(
            "accepted",
            "tcp",
            json!({"host": "localhost", "port": other.port, "tls": true, "ignoreTlsErrors": true}),
        ),
    );
    assert_eq!(c["ok"], true, "{c}");

    // Configuration errors answer per field.
    for (config, field) in [
        (json!({"host": "127.0.0.1", "port": 0}), "config.port"),
        (json!({"host": "a b", "port": 22}), "config.host"),
        (
            json!({"host": "db", "port": 22, "ignoreTlsErrors": true}),
            "config.ignoreTlsErrors",
        ),
    ] {
        let r = api.post("/v1/monitors", &monitor("bad", "tcp", config));
        assert_eq!(r.status, 422, "{}", r.body);
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
}

#[test]
fn redis_is_pinged_authenticated_and_its_keys_checked() {
    if redis(&["PING"]).is_none_or(|r| !r.contains("PONG")) {
        panic!(
            "the machine's Redis at {REDIS} does not answer; start it (see the README's test requirements)"
        );
    }
    let key = format!("tocsin-test-{}", std::process::id());
    assert!(redis(&["SET", &key, "ready"]).is_some_and(|r| r.contains("OK")));
    let server = Server::start(&[]);
    let api = server.client();

    let c = first_check(
        &api,
        monitor("cache", "redis", json!({"host": "127.0.0.1"})),
    );
    assert_eq!(c["ok"], true, "{c}");
    let c = first_check(
        &api,
        monitor(
            "flag",
            "redis",
            json!({"host": "127.0.0.1", "key": key, "expectedValue": "ready"}),
        ),
    );
    assert_eq!(c["ok"], true, "{c}");
    let c = first_check(
        &api,
        monitor(
            "flag wrong",
            "redis",
            json!({"host": "127.0.0.1", "key": key, "expectedValue": "done"}),
        ),
    );
    assert_eq!(c["ok"], false, "{c}");
    assert!(
        reason(&c).contains(&format!(
            "the key \"{key}\" holds \"ready\", expected \"done\""
        )),
        "{c}"
    );
    let c = first_check(
        &api,
        monitor(
            "missing",
            "redis",
            json!({"host": "127.0.0.1", "key": format!("{key}-absent")}),
        ),
    );
    assert!(reason(&c).contains("does not exist"), "{c}");
    // Wrong credentials: the server's own words.
    let c = first_check(
        &api,
        monitor(
            "auth",
            "redis",
            json!({"host": "127.0.0.1", "username": "nobody", "password": "wrong"}),
        ),
    );
    assert_eq!(c["ok"], false, "{c}");
    assert!(reason(&c).contains("authentication failed"), "{c}");
    let closed = closed_port();
    let c = first_check(
        &api,
        monitor(
            "down",
            "redis",
            json!({"host": "127.0.0.1", "port": closed}),
        ),
    );
    assert_eq!(
        reason(&c),
        format!("Redis at 127.0.0.1:{closed} refused the connection")
    );
    // Not Redis at all.
    let ssh = banner_server("SSH-2.0-OpenSSH_9.6\r\n");
    let c = first_check(
        &api,
        monitor(
            "not redis",
            "redis",
            json!({"host": "127.0.0.1", "port": ssh}),
        ),
    );
    assert!(reason(&c).contains("does not speak Redis"), "{c}");
    let _ = redis(&["DEL", &key]);
}

#[test]
fn smtp_greets_and_upgrades_with_starttls() {
    let ca = TestCa::new("Mail CA");
    let dir = tempfile::tempdir().expect("dir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.pem).expect("ca");
    let server = Server::start(&[("TOCSIN_TLS_EXTRA_ROOTS", ca_file.to_str().expect("path"))]);
    let api = server.client();

    let sink = SmtpSink::start();
    let c = first_check(
        &api,
        monitor(
            "relay",
            "smtp",
            json!({"host": "127.0.0.1", "port": sink.port}),
        ),
    );
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["details"]["greeting"], "sink.test ESMTP ready", "{c}");
    assert_eq!(c["details"]["starttls"], false, "{c}");
    let c = first_check(
        &api,
        monitor(
            "relay tls",
            "smtp",
            json!({"host": "127.0.0.1", "port": sink.port, "requireStarttls": true}),
        ),
    );
    assert_eq!(c["ok"], false, "{c}");
    assert_eq!(
        reason(&c),
        format!(
            "Mail server at 127.0.0.1:{}: STARTTLS is not offered",
            sink.port
        )
    );
    assert!(sink.mails().is_empty(), "no mail is sent");

    let mx = StartTlsSmtp::start(&ca.leaf(&["localhost"], -1, 90));
    let c = first_check(
        &api,
        monitor(
            "mx",
            "smtp",
            json!({"host": "localhost", "port": mx.port, "tls": "starttls"}),
        ),
    );
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["details"]["tls"], "TLSv1.3", "{c}");
    assert_eq!(mx.upgrades.load(std::sync::atomic::Ordering::SeqCst), 1);
    let closed = closed_port();
    let c = first_check(
        &api,
        monitor("gone", "smtp", json!({"host": "127.0.0.1", "port": closed})),
    );
    assert_eq!(
        reason(&c),
        format!("The mail server at 127.0.0.1:{closed} refused the connection")
    );
}

#[test]
fn postgres_signs_in_queries_and_names_what_went_wrong() {
    let server = Server::start(&[]);
    let api = server.client();
    let pg = |name: &str, config: Value| {
        let mut config = config;
        config["host"] = json!("127.0.0.1");
        first_check(&api, monitor(name, "postgres", config))
    };

    // The machine's PostgreSQL (trust on loopback).
    let c = pg(
        "db",
        json!({"user": "postgres", "database": "postgres", "query": "SELECT 1", "expectedValue": "1"}),
    );
    assert_eq!(c["ok"], true, "{c}");
    assert!(c["details"]["serverVersion"].is_string(), "{c}");
    let c = pg(
        "db count",
        json!({"query": "SELECT 2", "expectedValue": "1", "database": "postgres"}),
    );
    assert_eq!(
        reason(&c).split_once(": ").map(|x| x.1),
        Some("the query answered \"2\", expected \"1\""),
        "{c}"
    );
    let c = pg(
        "db typo",
        json!({"query": "SELEC 1", "database": "postgres"}),
    );
    assert!(
        reason(&c).contains("the query failed: syntax error") && reason(&c).contains("42601"),
        "{c}"
    );
    let c = pg("db gone", json!({"database": "tocsin_no_such_database"}));
    assert!(
        reason(&c).contains("database \"tocsin_no_such_database\" does not exist (SQLSTATE 3D000)"),
        "{c}"
    );
    let closed = closed_port();
    let c = pg("db down", json!({"port": closed}));
    assert_eq!(
        reason(&c),
        format!("PostgreSQL at 127.0.0.1:{closed} refused the connection")
    );
    // TLS as the server offers it (Debian's cluster has a self-signed certificate).
    let ssl = pg("ssl?", json!({"database": "postgres", "query": "SHOW ssl"}));
    let c = pg(
        "db tls",
        json!({"database": "postgres", "tls": true, "ignoreTlsErrors": true}),
    );
    if ssl["details"]["value"] == "on" {
        assert_eq!(c["ok"], true, "{c}");
        assert!(
            c["details"]["tls"]
                .as_str()
                .is_some_and(|t| t.starts_with("TLSv1.")),
            "{c}"
        );
    } else {
        assert!(reason(&c).contains("does not accept TLS"), "{c}");
    }

    // A cluster of the test's own that wants a password (SCRAM-SHA-256).
    let Some(private) =
        support::pg::PrivatePg::start_with_password("postgres monitor", "s3cret-Pa55")
    else {
        return;
    };
    let port = private.port;
    let c = pg(
        "scram",
        json!({"port": port, "password": "s3cret-Pa55", "query": "SELECT current_user", "expectedValue": "postgres"}),
    );
    assert_eq!(c["ok"], true, "{c}");
    let c = pg("scram wrong", json!({"port": port, "password": "wrong"}));
    assert!(
        reason(&c)
            .contains("password authentication failed for user \"postgres\" (SQLSTATE 28P01)"),
        "{c}"
    );
    let c = pg("scram none", json!({"port": port}));
    assert!(reason(&c).contains("asks for a password"), "{c}");

    // The password is write-only: never shown, kept by an edit that leaves it out.
    let m = create(
        &api,
        "/v1/monitors",
        monitor(
            "kept",
            "postgres",
            json!({"host": "127.0.0.1", "port": port, "password": "s3cret-Pa55"}),
        ),
    );
    let id = m["id"].as_str().expect("id").to_string();
    assert!(m["config"].get("password").is_none(), "{m}");
    let shown = api.get(&format!("/v1/monitors/{id}")).body["data"].clone();
    assert!(
        shown["config"].get("password").is_none() && shown["config"]["port"] == port,
        "{shown}"
    );
    let r = api.patch(
        &format!("/v1/monitors/{id}"),
        &json!({"name": "kept, renamed", "interval": 5, "config": {"query": "SELECT 1"}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    wait_for(
        "a check with the kept password",
        Duration::from_secs(30),
        || {
            let checks = api.get(&format!("/v1/monitors/{id}/checks")).body["data"].clone();
            checks
                .as_array()
                .and_then(|a| a.first())
                .filter(|c| c["ok"] == true && c["details"]["value"] == "1")
                .map(|_| ())
        },
    );
}

/// A Mosquitto broker of the test's own that wants `user`/`password`, on a free port.
struct PrivateBroker {
    port: u16,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl Drop for PrivateBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn private_broker(user: &str, password: &str) -> Option<PrivateBroker> {
    let dir = tempfile::tempdir().expect("dir");
    let passwords = dir.path().join("passwords");
    let made = std::process::Command::new("mosquitto_passwd")
        .args(["-c", "-b"])
        .arg(&passwords)
        .args([user, password])
        .output()
        .ok()?;
    if !made.status.success() {
        return None;
    }
    let port = free_port();
    let conf = dir.path().join("mosquitto.conf");
    std::fs::write(
        &conf,
        format!(
            "listener {port} 127.0.0.1\nallow_anonymous false\npassword_file {}\npersistence false\n",
            passwords.display()
        ),
    )
    .expect("conf");
    let child = std::process::Command::new("mosquitto")
        .arg("-c")
        .arg(&conf)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let broker = PrivateBroker {
        port,
        child,
        _dir: dir,
    };
    wait_for("the private broker", Duration::from_secs(10), || {
        TcpStream::connect(("127.0.0.1", port)).ok().map(|_| ())
    });
    Some(broker)
}

#[test]
fn mqtt_connects_signs_in_and_makes_a_round_trip() {
    let server = Server::start(&[]);
    let api = server.client();
    let mqtt = |name: &str, config: Value| {
        let mut config = config;
        config["host"] = json!("127.0.0.1");
        first_check(&api, monitor(name, "mqtt", config))
    };
    // The machine's Mosquitto (anonymous on loopback).
    let c = mqtt("broker", json!({}));
    assert_eq!(c["ok"], true, "{c}");
    let c = mqtt(
        "round trip",
        json!({"topic": format!("tocsin/test/{}", std::process::id())}),
    );
    assert_eq!(c["ok"], true, "{c}");
    assert!(c["details"]["roundTripMs"].is_u64(), "{c}");
    let closed = closed_port();
    let c = mqtt("gone", json!({"port": closed}));
    assert_eq!(
        reason(&c),
        format!("The MQTT broker at 127.0.0.1:{closed} refused the connection")
    );

    // A broker that wants a password.
    let Some(broker) = private_broker("tocsin", "hunter22") else {
        panic!("mosquitto and mosquitto_passwd are needed for this test");
    };
    let c = mqtt(
        "signed in",
        json!({"port": broker.port, "username": "tocsin", "password": "hunter22", "topic": "t/1"}),
    );
    assert_eq!(c["ok"], true, "{c}");
    let c = mqtt(
        "wrong password",
        json!({"port": broker.port, "username": "tocsin", "password": "nope"}),
    );
    assert!(
        reason(&c).contains("not authorized") || reason(&c).contains("bad user name or password"),
        "{c}"
    );
    let c = mqtt("anonymous", json!({"port": broker.port}));
    assert!(reason(&c).contains("not authorized"), "{c}");
}

/// An HTTP server that answers every request with `body` as JSON.
fn json_server(body: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    format!("http://127.0.0.1:{port}/health")
}

#[test]
fn json_assertions_name_every_field_that_failed() {
    let server = Server::start(&[]);
    let api = server.client();
    let url = json_server(
        r#"{"status":"degraded","queue":{"depth":340},"replicas":["eu-1","eu-2"],"version":"2.4.1"}"#,
    );
    let check = |name: &str, kind: &str, assertions: Value, extra: Value| {
        let mut body = json!({"name": name, "type": kind, "url": url, "method": "GET",
                              "interval": 60, "jsonAssertions": assertions});
        for (k, v) in extra.as_object().expect("object") {
            body[k] = v.clone();
        }
        first_check(&api, body)
    };
    let c = check(
        "healthy",
        "http",
        json!([{"path": "$.replicas", "op": "contains", "value": "eu-2"},
               {"path": "$.version", "op": "matches", "value": "^2\\.4\\."},
               {"path": "$.queue.depth", "op": "gt", "value": 10}]),
        json!({}),
    );
    assert_eq!(c["ok"], true, "{c}");
    let c = check(
        "unhealthy",
        "keyword",
        json!([{"path": "$.status", "op": "eq", "value": "ok"},
               {"path": "$.queue.depth", "op": "lt", "value": 100},
               {"path": "$.replicas", "op": "exists"}]),
        json!({"keyword": "status"}),
    );
    assert_eq!(c["ok"], false, "{c}");
    assert_eq!(
        reason(&c),
        "2 JSON assertions failed: $.status eq \"ok\" (got \"degraded\"); $.queue.depth lt 100 (got 340)"
    );
    // A malformed assertion is refused by field (http's fields sit at the top level).
    let r = api.post(
        "/v1/monitors",
        &json!({"name": "bad", "type": "http", "url": url, "method": "GET", "interval": 60,
                "jsonAssertions": [{"path": "$.a", "op": "lt", "value": "ten"}]}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        r.body["error"]["details"][0]["field"], "jsonAssertions[0].value",
        "{}",
        r.body
    );
}

#[test]
fn mysql_signs_in_queries_and_names_what_went_wrong() {
    let server = Server::start(&[]);
    let api = server.client();
    let my = |name: &str, config: Value| {
        let mut config = config;
        config["host"] = json!("127.0.0.1");
        first_check(&api, monitor(name, "mysql", config))
    };
    // The machine's MariaDB (root, no password, database test).
    let c = my(
        "maria",
        json!({"user": "root", "database": "test", "query": "SELECT 1 + 1", "expectedValue": "2"}),
    );
    assert_eq!(c["ok"], true, "{c}");
    assert!(
        c["details"]["serverVersion"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{c}"
    );
    let c = my(
        "maria value",
        json!({"query": "SELECT 'degraded'", "expectedValue": "ok"}),
    );
    assert!(
        reason(&c).ends_with("the query answered \"degraded\", expected \"ok\""),
        "{c}"
    );
    let c = my("maria typo", json!({"query": "SELEC 1"}));
    assert!(
        reason(&c).contains("the query failed:") && reason(&c).contains("error 1064"),
        "{c}"
    );
    let c = my("maria db", json!({"database": "tocsin_no_such_database"}));
    assert!(
        reason(&c).contains("Unknown database 'tocsin_no_such_database'")
            && reason(&c).contains("1049"),
        "{c}"
    );
    // Wrong credentials: the server's own words.
    let c = my(
        "maria password",
        json!({"user": "root", "password": "wrong"}),
    );
    assert!(
        reason(&c).contains("Access denied for user 'root'") && reason(&c).contains("error 1045"),
        "{c}"
    );
    let closed = closed_port();
    let c = my("maria down", json!({"port": closed}));
    assert_eq!(
        reason(&c),
        format!("MySQL at 127.0.0.1:{closed} refused the connection")
    );
    let ssh = banner_server("SSH-2.0-OpenSSH_9.6\r\n");
    let c = my("not mysql", json!({"port": ssh}));
    assert_eq!(c["ok"], false, "{c}");
}

/// A fake RDAP service: `/bootstrap/domain/{name}` redirects (as rdap.org does) to
/// `/rdap/domain/{name}`, which answers an RDAP domain object whose registration expires
/// in `days` (from the name: `in100.test`, `in5.test`), or RDAP's 404 error object.
fn rdap_server() -> String {
    use axum::extract::Path as UrlPath;
    use axum::response::IntoResponse;
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let app = axum::Router::new()
        .route(
            "/bootstrap/domain/{name}",
            axum::routing::get(|UrlPath(name): UrlPath<String>| async move {
                axum::response::Redirect::temporary(&format!("/rdap/domain/{name}"))
            }),
        )
        .route(
            "/rdap/domain/{name}",
            axum::routing::get(|UrlPath(name): UrlPath<String>| async move {
                let days = name
                    .strip_prefix("in")
                    .and_then(|n| n.strip_suffix(".test"))
                    .and_then(|n| n.parse::<i64>().ok());
                let Some(days) = days else {
                    return (
                        axum::http::StatusCode::NOT_FOUND,
                        [("content-type", "application/rdap+json")],
                        json!({"errorCode": 404, "title": "Not Found", "rdapConformance": ["rdap_level_0"]}).to_string(),
                    )
                        .into_response();
                };
                let expires = (chrono::Utc::now() + chrono::Duration::days(days) + chrono::Duration::hours(1))
                    .format("%Y-%m-%dT%H:%M:%SZ")
                    .to_string();
                (
                    [("content-type", "application/rdap+json")],
                    json!({"objectClassName": "domain", "ldhName": name.to_uppercase(),
                           "rdapConformance": ["rdap_level_0"],
                           "events": [{"eventAction": "registration", "eventDate": "1995-08-14T04:00:00Z"},
                                      {"eventAction": "expiration", "eventDate": expires}]})
                    .to_string(),
                )
                    .into_response()
            }),
        );
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let _ = axum::serve(listener, app).await;
        });
    });
    base
}

#[test]
fn domain_expiry_asks_rdap_and_fails_when_close() {
    let server = Server::start(&[]);
    let api = server.client();
    let rdap = rdap_server();
    let check = |name: &str, domain: &str| {
        first_check(
            &api,
            monitor(
                name,
                "domain-expiry",
                json!({"domain": domain, "rdapServer": format!("{rdap}/bootstrap")}),
            ),
        )
    };
    let c = check("far", "in100.test");
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(
        (
            c["details"]["daysRemaining"].clone(),
            c["details"]["expiry"].clone()
        ),
        (json!(100), json!("ok")),
        "{c}"
    );
    let c = check("warn", "in20.test");
    assert_eq!(
        (c["ok"].clone(), c["details"]["expiry"].clone()),
        (json!(true), json!("warning")),
        "{c}"
    );
    let c = check("close", "in5.test");
    assert_eq!(c["ok"], false, "{c}");
    assert!(
        reason(&c).starts_with("The registration of in5.test expires in 5 days ("),
        "{c}"
    );
    let c = check("unknown", "nobody.test");
    assert!(
        reason(&c).contains("RDAP does not know nobody.test (404)"),
        "{c}"
    );
    let r = api.post(
        "/v1/monitors",
        &monitor("bad", "domain-expiry", json!({"domain": "localhost"})),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        r.body["error"]["details"][0]["field"], "config.domain",
        "{}",
        r.body
    );
}

/// A DNS answer to query `q` for `example.test` (A, AAAA, MX, TXT, NS, SOA) and
/// `alias.example.test` (CNAME); any other name is NXDOMAIN. With `truncated`, an empty
/// answer with the TC bit set, as a server gives over UDP when the answer is too long.
fn dns_response(q: &[u8], truncated: bool) -> Option<Vec<u8>> {
    fn name(labels: &str) -> Vec<u8> {
        let mut out = Vec::new();
        for l in labels.split('.') {
            out.push(l.len() as u8);
            out.extend_from_slice(l.as_bytes());
        }
        out.push(0);
        out
    }
    fn answer(qname: &str, qtype: u16) -> Option<Vec<(u16, Vec<u8>)>> {
        let ip4 = |a: [u8; 4]| (1u16, a.to_vec());
        match (qname, qtype) {
            ("example.test", 1) => Some(vec![ip4([192, 0, 2, 10]), ip4([192, 0, 2, 11])]),
            ("example.test", 28) => Some(vec![(
                28,
                "2001:db8::1"
                    .parse::<std::net::Ipv6Addr>()
                    .expect("ip")
                    .octets()
                    .to_vec(),
            )]),
            ("example.test", 15) => Some(vec![(
                15,
                [vec![0, 10], name("mail.example.test")].concat(),
            )]),
            ("example.test", 16) => Some(vec![(16, [vec![11], b"v=spf1 -all".to_vec()].concat())]),
            ("example.test", 2) => Some(vec![(2, name("ns1.example.test"))]),
            ("example.test", 6) => {
                let mut soa = [name("ns1.example.test"), name("hostmaster.example.test")].concat();
                for n in [2_026_112_501u32, 3600, 600, 86400, 300] {
                    soa.extend_from_slice(&n.to_be_bytes());
                }
                Some(vec![(6, soa)])
            }
            ("alias.example.test", 5) => Some(vec![(5, name("example.test"))]),
            ("example.test" | "alias.example.test", _) => Some(vec![]),
            _ => None,
        }
    }
    // The question: labels from byte 12, then type and class.
    let mut at = 12;
    let mut labels = Vec::new();
    while at < q.len() && q[at] != 0 {
        let l = usize::from(q[at]);
        labels.push(String::from_utf8_lossy(q.get(at + 1..at + 1 + l)?).into_owned());
        at += 1 + l;
    }
    let question_end = at + 5;
    let qtype = u16::from_be_bytes([*q.get(at + 1)?, *q.get(at + 2)?]);
    let records = answer(&labels.join("."), qtype);
    let mut r = q[..2].to_vec();
    let flags = if truncated { 0x83 } else { 0x81 };
    r.extend_from_slice(&[flags, if records.is_some() { 0x80 } else { 0x83 }, 0, 1]);
    let records = if truncated {
        Vec::new()
    } else {
        records.unwrap_or_default()
    };
    r.extend_from_slice(&(records.len() as u16).to_be_bytes());
    r.extend_from_slice(&[0, 0, 0, 0]);
    r.extend_from_slice(q.get(12..question_end)?);
    for (rtype, data) in records {
        r.extend_from_slice(&[0xc0, 0x0c]);
        r.extend_from_slice(&rtype.to_be_bytes());
        r.extend_from_slice(&[0, 1, 0, 0, 0x0e, 0x10]);
        r.extend_from_slice(&(data.len() as u16).to_be_bytes());
        r.extend_from_slice(&data);
    }
    Some(r)
}

/// A DNS server over TCP on `listener` (see [`dns_response`]).
fn serve_dns_over_tcp(listener: TcpListener) {
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut len = [0u8; 2];
            if s.read_exact(&mut len).is_err() {
                continue;
            }
            let mut q = vec![0u8; usize::from(u16::from_be_bytes(len))];
            if s.read_exact(&mut q).is_err() {
                continue;
            }
            let Some(r) = dns_response(&q, false) else {
                continue;
            };
            let mut framed = (r.len() as u16).to_be_bytes().to_vec();
            framed.extend_from_slice(&r);
            let _ = s.write_all(&framed);
        }
    });
}

/// A DNS server over UDP on `socket` (see [`dns_response`]); with `truncated`, every
/// answer is cut (TC set), so only a client that asks again over TCP learns anything.
/// Counts the queries it got.
fn serve_dns_over_udp(socket: std::net::UdpSocket, truncated: bool) -> Arc<AtomicUsize> {
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1500];
        while let Ok((n, from)) = socket.recv_from(&mut buf) {
            count.fetch_add(1, Ordering::SeqCst);
            if let Some(r) = dns_response(&buf[..n], truncated) {
                let _ = socket.send_to(&r, from);
            }
        }
    });
    asked
}

/// A DNS server over TCP only on loopback: its port has no UDP listener.
fn dns_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    serve_dns_over_tcp(listener);
    port
}

#[test]
fn dns_asks_the_chosen_resolver_for_each_record_type() {
    let server = Server::start(&[]);
    let api = server.client();
    let port = dns_server();
    let dns = |name: &str, config: Value| {
        let mut config = config;
        config["resolver"] = json!("127.0.0.1");
        config["port"] = json!(port);
        first_check(&api, monitor(name, "dns", config))
    };
    let cases = [
        ("A", json!(["192.0.2.10", "192.0.2.11"])),
        ("AAAA", json!(["2001:db8::1"])),
        ("MX", json!(["10 mail.example.test."])),
        ("TXT", json!(["v=spf1 -all"])),
        ("NS", json!(["NS1.example.test"])),
        (
            "SOA",
            json!(["ns1.example.test hostmaster.example.test 2026112501 3600 600 86400 300"]),
        ),
    ];
    for (kind, expected) in cases {
        let c = dns(
            kind,
            json!({"hostname": "example.test", "recordType": kind, "expected": expected}),
        );
        assert_eq!(c["ok"], true, "{kind}: {c}");
    }
    let c = dns(
        "cname",
        json!({"hostname": "alias.example.test", "recordType": "CNAME", "expected": ["example.test"]}),
    );
    assert_eq!(c["ok"], true, "{c}");
    let c = dns(
        "wrong",
        json!({"hostname": "example.test", "expected": ["192.0.2.99"]}),
    );
    assert_eq!(
        reason(&c),
        "example.test A does not hold \"192.0.2.99\"; it holds \"192.0.2.10\", \"192.0.2.11\""
    );
    let c = dns(
        "none",
        json!({"hostname": "alias.example.test", "recordType": "MX"}),
    );
    assert!(
        reason(&c).starts_with("alias.example.test has no MX record"),
        "{c}"
    );
    let c = dns("missing", json!({"hostname": "nowhere.test"}));
    assert!(
        reason(&c).contains("the name does not exist (NXDOMAIN)"),
        "{c}"
    );
    let closed = closed_port();
    let c = first_check(
        &api,
        monitor(
            "no resolver",
            "dns",
            json!({"hostname": "example.test", "resolver": "127.0.0.1", "port": closed}),
        ),
    );
    assert!(reason(&c).contains("refused the connection"), "{c}");
    for (config, field) in [
        (json!({"hostname": "a b"}), "config.hostname"),
        (
            json!({"hostname": "example.test", "recordType": "PTR"}),
            "config.recordType",
        ),
    ] {
        let r = api.post("/v1/monitors", &monitor("bad", "dns", config));
        assert_eq!(r.status, 422, "{}", r.body);
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
}

/// A real gRPC health server (tonic-health) on loopback, plaintext HTTP/2: the server as
/// a whole and `shop.Cart` serving, `shop.Stock` not; every call must carry the metadata
/// `authorization: Bearer letmein` (an interceptor answers UNAUTHENTICATED otherwise).
fn grpc_health_server() -> std::net::SocketAddr {
    let address: std::net::SocketAddr = ([127, 0, 0, 1], free_port()).into();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            use tonic_health::ServingStatus;
            let (reporter, _) = tonic_health::server::health_reporter();
            reporter
                .set_service_status("shop.Cart", ServingStatus::Serving)
                .await;
            reporter
                .set_service_status("shop.Stock", ServingStatus::NotServing)
                .await;
            let service = tonic_health::pb::health_server::HealthServer::with_interceptor(
                tonic_health::server::HealthService::from_health_reporter(reporter),
                |request: tonic::Request<()>| match request.metadata().get("authorization") {
                    Some(v) if v == "Bearer letmein" => Ok(request),
                    _ => Err(tonic::Status::unauthenticated("no valid token")),
                },
            );
            let _ = tonic::transport::Server::builder()
                .add_service(service)
                .serve(address)
                .await;
        });
    });
    // Ready once it accepts connections.
    wait_for("the gRPC server", Duration::from_secs(10), || {
        TcpStream::connect(address).ok()
    });
    address
}

#[test]
fn grpc_asks_the_standard_health_service_over_http2_and_tls() {
    let ca = TestCa::new("gRPC CA");
    let dir = tempfile::tempdir().expect("dir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.pem).expect("ca");
    let server = Server::start(&[("TOCSIN_TLS_EXTRA_ROOTS", ca_file.to_str().expect("path"))]);
    let api = server.client();
    let grpc = grpc_health_server();
    let token = json!({"authorization": "Bearer letmein"});
    let ask = |name: &str, url: &str, service: &str, metadata: &Value| {
        first_check(
            &api,
            monitor(
                name,
                "grpc",
                json!({"url": url, "service": service, "metadata": metadata}),
            ),
        )
    };
    let plain = format!("http://{grpc}");

    let c = ask("server", &plain, "", &token);
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["details"]["status"], "SERVING", "{c}");
    assert_eq!(c["details"]["http"], "HTTP/2.0", "{c}");
    let c = ask("cart", &plain, "shop.Cart", &token);
    assert_eq!(c["ok"], true, "{c}");
    let c = ask("stock", &plain, "shop.Stock", &token);
    assert_eq!(c["ok"], false, "{c}");
    assert_eq!(reason(&c), "The service `shop.Stock` is NOT_SERVING", "{c}");
    let c = ask("unknown", &plain, "shop.Gone", &token);
    assert!(
        reason(&c).contains("gRPC status 5 NOT_FOUND"),
        "the status of an error travels in a trailers-only answer's headers: {c}"
    );
    // Metadata reaches the server: without the token, the interceptor refuses.
    let c = ask("no token", &plain, "shop.Cart", &json!({}));
    assert!(reason(&c).contains("16 UNAUTHENTICATED"), "{c}");
    assert!(reason(&c).contains("no valid token"), "{c}");

    // Over TLS, through a TLS front that the server trusts by the test CA.
    let leaf = ca.leaf(&["localhost"], -1, 30);
    let front = TlsProxy::start(&leaf, "127.0.0.1:0", grpc);
    let tls = format!("https://localhost:{}", front.address.port());
    let c = ask("over tls", &tls, "shop.Cart", &token);
    assert_eq!(c["ok"], true, "{c}");

    // Nothing there.
    let c = ask(
        "nobody",
        &format!("http://127.0.0.1:{}", closed_port()),
        "",
        &token,
    );
    assert!(reason(&c).contains("refused the connection"), "{c}");
    for (config, field) in [
        (json!({"url": "grpc://x:1"}), "config.url"),
        (json!({"url": "http://x:1/path"}), "config.url"),
        (
            json!({"url": "http://x:1", "metadata": {"Bad Name": "v"}}),
            "config.metadata.Bad Name",
        ),
    ] {
        let r = api.post("/v1/monitors", &monitor("bad", "grpc", config));
        assert_eq!(r.status, 422, "{}", r.body);
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
    // A read key never sees the metadata's values.
    let m = create(
        &api,
        "/v1/monitors",
        monitor("secret", "grpc", json!({"url": plain, "metadata": token})),
    );
    let key = api.post("/v1/api-keys", &json!({"name": "reader", "role": "read"}));
    let reader = api.with_key(key.body["data"]["secret"].as_str().expect("secret"));
    let seen = reader.get(&format!("/v1/monitors/{}", m["id"].as_str().expect("id")));
    assert!(!seen.body.to_string().contains("letmein"), "{}", seen.body);
}

#[test]
fn dns_asks_over_udp_and_again_over_tcp_when_the_answer_is_truncated() {
    let server = Server::start(&[]);
    let api = server.client();
    let ask = |name: &str, port: u16, extra: Value| {
        let mut config = json!({"hostname": "example.test", "expected": ["192.0.2.10"],
                                "resolver": "127.0.0.1", "port": port});
        for (k, v) in extra.as_object().expect("object") {
            config[k] = v.clone();
        }
        first_check(&api, monitor(name, "dns", config))
    };

    // A resolver that answers over UDP only, as home routers do.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind udp");
    let udp_port = udp.local_addr().expect("addr").port();
    let asked = serve_dns_over_udp(udp, false);
    let c = ask("udp only", udp_port, json!({}));
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["details"]["transport"], "udp", "{c}");
    assert!(asked.load(Ordering::SeqCst) >= 1);
    // Told to use TCP, the same resolver is not reached.
    let c = ask("tcp only", udp_port, json!({"transport": "tcp"}));
    assert_eq!(c["ok"], false, "{c}");
    assert!(reason(&c).contains("refused the connection"), "{c}");

    // A resolver whose UDP answers are truncated: the answer comes over TCP (RFC 7766).
    let tcp = TcpListener::bind("127.0.0.1:0").expect("bind tcp");
    let port = tcp.local_addr().expect("addr").port();
    let udp = std::net::UdpSocket::bind(("127.0.0.1", port)).expect("bind udp on the same port");
    serve_dns_over_tcp(tcp);
    let truncating = serve_dns_over_udp(udp, true);
    let c = ask("truncated", port, json!({}));
    assert_eq!(c["ok"], true, "{c}");
    assert_eq!(c["details"]["transport"], "tcp", "{c}");
    assert!(
        truncating.load(Ordering::SeqCst) >= 1,
        "asked over UDP first"
    );

    // Nothing listens on either.
    let closed = closed_port();
    let c = ask("nobody", closed, json!({}));
    assert!(reason(&c).contains("over UDP and over TCP"), "{c}");
    let r = api.post(
        "/v1/monitors",
        &monitor(
            "bad",
            "dns",
            json!({"hostname": "example.test", "transport": "quic"}),
        ),
    );
    assert_eq!(r.status, 422, "{}", r.body);
    assert_eq!(
        r.body["error"]["details"][0]["field"], "config.transport",
        "{}",
        r.body
    );
}
