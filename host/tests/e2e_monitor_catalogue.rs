//! End to end: the monitor types built on contract 0.2.0's TCP streams, against real
//! servers. `tcp` against a banner server and a TLS server on loopback; `redis` against the
//! machine's Redis (127.0.0.1:6379), with a key it sets itself, wrong credentials and a
//! closed port; `smtp` against the SMTP sink and a mail server that completes STARTTLS.
//! Every failure has a reason a person can act on.

mod support;

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;
use support::sinks::SmtpSink;
use support::tls::{StartTlsSmtp, TestCa, TlsServer};
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
