//! A test plugin built against contract 0.2.0 (wit/v0.2.0), to show how the server tells
//! contract versions apart: it reports the attempt number it was given and, with
//! `{"echoPort": N}`, what a TCP stream (0.2.0's `net.tcp-stream`) to 127.0.0.1:N answered
//! to `ping`, so the 0.2.0 stream keeps working under a newer server.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../../wit/v0.2.0",
    world: "monitor",
});

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::net::{StreamRequest, TcpStream};
use tocsin::plugin::types::{Capability, FieldError, PluginInfo, PluginKind};

struct NextGuest;

impl Guest for NextGuest {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-next".into(),
            kind: PluginKind::Monitor,
            version: "0.2.0".into(),
            description: "Built against contract 0.2.0; reports the attempt number it was given."
                .into(),
            config_schema: r#"{"type":"object"}"#.into(),
            capabilities: vec![Capability::Tcp],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        Ok(config)
    }

    fn check(req: CheckRequest) -> CheckOutcome {
        let echoed = echo_port(&req.config).map(|port| echo(port, req.timeout_ms));
        let details = match echoed {
            Some(text) => format!(
                "{{\"attempt\":{},\"echoed\":\"{}\"}}",
                req.attempt,
                text.escape_default()
            ),
            None => format!("{{\"attempt\":{}}}", req.attempt),
        };
        CheckOutcome {
            ok: true,
            reason: None,
            status_code: None,
            response_time_ms: None,
            details,
        }
    }
}

/// The number after `"echoPort":` in the configuration, if any.
fn echo_port(config: &str) -> Option<u16> {
    let rest = config.split("\"echoPort\"").nth(1)?;
    let digits: String = rest
        .trim_start_matches([':', ' '])
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Send `ping` over a stream to 127.0.0.1:`port` and return the answer (or the error).
fn echo(port: u16, timeout_ms: u32) -> String {
    let stream = match TcpStream::open(&StreamRequest {
        host: "127.0.0.1".into(),
        port,
        tls: None,
        timeout_ms,
    }) {
        Ok(s) => s,
        Err(e) => return format!("open: {e:?}"),
    };
    if let Err(e) = stream.write(b"ping", timeout_ms) {
        return format!("write: {e:?}");
    }
    match stream.read(64, timeout_ms) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => format!("read: {e:?}"),
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(NextGuest);
