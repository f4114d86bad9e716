//! A test plugin that misbehaves on purpose: panics in check. With `{"count": true}` it
//! answers instead, with how many checks this instance has made (`{"calls": N}`), which
//! shows whether an instance served an earlier check.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../../wit/v0.1.0",
    world: "monitor",
});

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::types::{FieldError, PluginInfo, PluginKind};

struct TrapGuest;

/// Checks this instance has been asked to make.
static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

impl Guest for TrapGuest {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-trap".into(),
            kind: PluginKind::Monitor,
            version: "0.1.0".into(),
            description: "Panics in check, or counts its checks.".into(),
            config_schema: r#"{"type":"object"}"#.into(),
            capabilities: vec![],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        Ok(config)
    }

    fn check(req: CheckRequest) -> CheckOutcome {
        let calls = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if req.config.contains("\"count\"") {
            return CheckOutcome {
                ok: true,
                reason: None,
                status_code: None,
                response_time_ms: None,
                details: format!("{{\"calls\":{calls}}}"),
            };
        }
        // A guest panic becomes a trap: the host must fail only this call.
        panic!("trap guest asked to check {}", req.monitor_id)
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(TrapGuest);
