//! A test plugin built against contract 0.2.0 (wit/v0.2.0), to
//! show how the server tells contract versions apart.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../../wit/v0.2.0",
    world: "monitor",
});

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::types::{FieldError, PluginInfo, PluginKind};

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
            capabilities: vec![],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        Ok(config)
    }

    fn check(req: CheckRequest) -> CheckOutcome {
        CheckOutcome {
            ok: true,
            reason: None,
            status_code: None,
            response_time_ms: None,
            details: format!("{{\"attempt\":{}}}", req.attempt),
        }
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(NextGuest);
