//! A test plugin on the SDK's contract that opens `streams` TCP streams (or, with `udp`,
//! UDP sockets) to `host:port` and writes `bytes` bytes through the first, then reports in
//! its details what each step answered, so the host's stream and socket limits, grants and
//! egress policy can be tested.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tocsin_plugin_sdk::net::{DatagramRequest, StreamRequest, TcpStream, UdpSocket};
use tocsin_plugin_sdk::typed::TypedConfig;
use tocsin_plugin_sdk::{Capability, CheckContext, Info, Monitor, Outcome, export_monitor, tcp};

#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StreamsConfig {
    host: String,
    port: u16,
    streams: u32,
    #[serde(default)]
    bytes: u32,
    #[serde(default)]
    udp: bool,
}

impl TypedConfig for StreamsConfig {}

struct Streams;

impl Monitor for Streams {
    type Config = StreamsConfig;

    fn info() -> Info {
        Info {
            name: "test-streams",
            version: "0.2.0",
            description: "Opens TCP streams and writes through them, reporting each answer.",
            capabilities: &[Capability::Tcp, Capability::Udp],
        }
    }

    fn check(c: StreamsConfig, ctx: &CheckContext) -> Outcome {
        if c.udp {
            return datagrams(&c, ctx);
        }
        let mut open = Vec::new();
        let mut opened = 0;
        let mut open_error = None;
        for _ in 0..c.streams {
            match TcpStream::open(&StreamRequest {
                host: c.host.clone(),
                port: c.port,
                tls: None,
                timeout_ms: ctx.timeout_ms,
            }) {
                Ok(s) => {
                    opened += 1;
                    open.push(s);
                }
                Err(e) => {
                    open_error = Some(format!("{e:?}: {}", tcp::describe(&e)));
                    break;
                }
            }
        }
        let mut written = 0u32;
        let mut write_error = None;
        if let Some(first) = open.first() {
            let chunk = vec![b'x'; 64 * 1024];
            while written < c.bytes {
                match first.write(&chunk, ctx.timeout_ms) {
                    Ok(()) => written += chunk.len() as u32,
                    Err(e) => {
                        write_error = Some(format!("{e:?}: {}", tcp::describe(&e)));
                        break;
                    }
                }
            }
        }
        Outcome::pass(None).with_details(json!({
            "opened": opened,
            "openError": open_error,
            "written": written,
            "writeError": write_error,
        }))
    }
}

/// The same with UDP sockets: datagrams of 60,000 bytes through the first.
fn datagrams(c: &StreamsConfig, ctx: &CheckContext) -> Outcome {
    let mut open = Vec::new();
    let mut open_error = None;
    for _ in 0..c.streams {
        match UdpSocket::open(&DatagramRequest {
            host: c.host.clone(),
            port: c.port,
            timeout_ms: ctx.timeout_ms,
        }) {
            Ok(s) => open.push(s),
            Err(e) => {
                open_error = Some(format!("{e:?}: {}", tcp::describe(&e)));
                break;
            }
        }
    }
    let mut written = 0u32;
    let mut write_error = None;
    if let Some(first) = open.first() {
        let chunk = vec![b'x'; 60_000];
        while written < c.bytes {
            match first.send(&chunk) {
                Ok(()) => written += chunk.len() as u32,
                Err(e) => {
                    write_error = Some(format!("{e:?}: {}", tcp::describe(&e)));
                    break;
                }
            }
        }
    }
    Outcome::pass(None).with_details(json!({
        "opened": open.len(),
        "openError": open_error,
        "written": written,
        "writeError": write_error,
    }))
}

export_monitor!(Streams);
