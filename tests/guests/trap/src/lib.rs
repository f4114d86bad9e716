//! A test plugin that misbehaves on purpose: panics in check.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../../wit/v0.1.0",
    world: "monitor",
});

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::types::{FieldError, PluginInfo, PluginKind};

struct TrapGuest;

impl Guest for TrapGuest {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-trap".into(),
            kind: PluginKind::Monitor,
            version: "0.1.0".into(),
            description: "Panics in check.".into(),
            config_schema: r#"{"type":"object"}"#.into(),
            capabilities: vec![],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        Ok(config)
    }

    #[allow(clippy::empty_loop)]
    fn check(req: CheckRequest) -> CheckOutcome {
        // A guest panic becomes a trap: the host must fail only this call.
        panic!("trap guest asked to check {}", req.monitor_id)
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(TrapGuest);
