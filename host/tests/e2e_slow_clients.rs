//! Slow and idle clients cannot hold connections: a request head that trickles in, a
//! kept-alive connection that goes quiet, and a body that never finishes are all cut off
//! by the server's timeouts, while ordinary requests go on being served. A body that keeps
//! trickling meets a deadline for the whole body, and one client address cannot hold more
//! than its share of connections.

use crate::support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use support::{ADMIN_KEY, Server};
use tocsin::api::serve::{BODY_TIMEOUT, HEADER_TIMEOUT};

fn connect(server: &Server) -> TcpStream {
    let address = server.base.trim_start_matches("http://");
    let s = TcpStream::connect(address).expect("connect");
    // Far longer than the server's timeouts: if the server holds on, this fails the test.
    s.set_read_timeout(Some(BODY_TIMEOUT * 3)).expect("timeout");
    s
}

/// Read until the server closes; what it sent, or None when our read timed out.
fn until_closed(s: &mut TcpStream) -> Option<String> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Some(String::from_utf8_lossy(&got).into_owned()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                return None;
            }
            // A reset is the server closing too.
            Err(_) => return Some(String::from_utf8_lossy(&got).into_owned()),
        }
    }
}

#[test]
fn slow_heads_idle_connections_and_stalled_bodies_are_cut_off() {
    let server = Server::start(&[]);

    // A body that stops after ten of its hundred bytes (run alongside the others).
    let stalled_body = {
        let mut s = connect(&server);
        std::thread::spawn(move || {
            let head = format!(
                "POST /v1/monitors HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {ADMIN_KEY}\r\n\
                 Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"name\":1"
            );
            s.write_all(head.as_bytes()).expect("write");
            until_closed(&mut s)
        })
    };

    // A head that never ends.
    let mut slow = connect(&server);
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\nX-Slow: ")
        .expect("write");
    assert!(
        until_closed(&mut slow).is_some(),
        "an unfinished request head held its connection past {HEADER_TIMEOUT:?}"
    );

    // A kept-alive connection that goes quiet after one answer.
    let mut idle = connect(&server);
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
        .expect("write");
    let answer = until_closed(&mut idle).expect("an idle connection was held open");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");

    let answer = stalled_body
        .join()
        .expect("stalled body")
        .expect("a stalled body held its connection");
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 4"),
        "a stalled body got: {answer}"
    );

    // Meanwhile and after, ordinary requests are served.
    let r = server.client().get("/v1/monitors");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["pagination"]["total"], 0,
        "the stalled create created nothing"
    );
}

/// A body that keeps trickling (a byte every 200 ms of a promised 100,000) is cut off by
/// the whole-body deadline (3 s here, `request_body_timeout`), not kept alive by each byte:
/// 408 in the envelope, and the connection closed, long before the trickle could end.
#[test]
fn a_trickling_body_meets_its_deadline() {
    let server = Server::start(&[("TOCSIN_REQUEST_BODY_TIMEOUT", "3s")]);
    for (path, auth) in [
        ("/v1/monitors", true),
        (
            "/v1/incidents/inc_01JD6Z3Y5N8Q2W7R4T6V9X0B1C/acknowledge",
            true,
        ),
        ("/status/acme/subscribe", false),
    ] {
        let address = server.base.trim_start_matches("http://");
        let mut s = TcpStream::connect(address).expect("connect");
        // The deadline is 3 s; a server that waited for the whole trickle (100,000 bytes
        // at 5 a second) would leave this read to time out.
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let key = if auth {
            format!("Authorization: Bearer {ADMIN_KEY}\r\n")
        } else {
            String::new()
        };
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: t\r\n{key}Content-Type: application/json\r\n\
             Accept: application/json\r\nContent-Length: 100000\r\n\r\n{{"
        );
        s.write_all(head.as_bytes()).expect("write");
        let mut writer = s.try_clone().expect("clone");
        let stop = Arc::new(AtomicBool::new(false));
        let trickle = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut sent = 0;
                while !stop.load(Ordering::Relaxed) && sent < 100 {
                    std::thread::sleep(Duration::from_millis(200));
                    if writer.write_all(b" ").is_err() {
                        break;
                    }
                    sent += 1;
                }
                sent
            })
        };
        let answer = until_closed(&mut s);
        stop.store(true, Ordering::Relaxed);
        let sent = trickle.join().expect("trickle");
        let answer = answer.unwrap_or_else(|| {
            panic!("{path}: a trickling body held its connection ({sent} bytes sent)")
        });
        assert!(
            answer.starts_with("HTTP/1.1 408"),
            "{path}: a trickling body got: {answer}"
        );
        assert!(answer.contains("\"REQUEST_TIMEOUT\""), "{path}: {answer}");
        assert!(answer.contains("\"success\":false"), "{path}: {answer}");
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{path}: {answer}"
        );
        assert!(sent < 100, "{path}: the whole trickle was waited for");
    }

    // A body that arrives whole is served as ever.
    let r = server.client().get("/v1/monitors");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["pagination"]["total"], 0, "nothing was created");
}

/// One client address holds at most `max_connections_per_address` connections (3 here);
/// the next is answered 429 in the envelope and closed at once, and a freed slot serves
/// again. Loopback is an address like any other.
#[test]
fn one_address_holds_a_bounded_number_of_connections() {
    let server = Server::start(&[("TOCSIN_MAX_CONNECTIONS_PER_ADDRESS", "3")]);
    let address = server.base.trim_start_matches("http://").to_string();
    let open = || {
        let s = TcpStream::connect(&address).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        s
    };
    /// One kept-alive request: the status line, or what the server said before closing.
    fn ask(s: &mut TcpStream) -> String {
        s.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
            .expect("write");
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    // Three connections served and kept alive (retried while the start-up's own
    // connections are still being closed by the server).
    let mut held: Vec<TcpStream> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while held.len() < 3 {
        let mut s = open();
        let answer = ask(&mut s);
        if answer.starts_with("HTTP/1.1 200") {
            held.push(s);
        } else {
            assert!(
                std::time::Instant::now() < deadline,
                "connection {} refused: {answer}",
                held.len() + 1
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    // A fourth is refused at once, in the envelope, and closed.
    let mut fourth = open();
    let refused = until_closed(&mut fourth).expect("the fourth connection was held");
    assert!(refused.starts_with("HTTP/1.1 429"), "{refused}");
    assert!(refused.contains("\"RATE_LIMITED\""), "{refused}");
    assert!(
        refused.to_ascii_lowercase().contains("retry-after: 1"),
        "{refused}"
    );

    // The held ones still work; closing one frees its slot.
    assert!(ask(&mut held[0]).starts_with("HTTP/1.1 200"));
    drop(held.pop());
    support::wait_for("a freed slot", Duration::from_secs(5), || {
        let mut s = open();
        ask(&mut s).starts_with("HTTP/1.1 200").then_some(())
    });
}
