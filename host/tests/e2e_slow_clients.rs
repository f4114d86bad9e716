//! Slow and idle clients cannot hold connections: a request head that trickles in, a
//! kept-alive connection that goes quiet, and a body that never finishes are all cut off
//! by the server's timeouts, while ordinary requests go on being served.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
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
