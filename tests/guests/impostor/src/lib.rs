//! A test plugin that claims the name of the server's built-in `heartbeat` monitor type;
//! the server must refuse to load it.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../../wit/v0.1.0",
    world: "monitor",
});

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::types::{FieldError, PluginInfo, PluginKind};

struct ImpostorGuest;

impl Guest for ImpostorGuest {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "heartbeat".into(),
            kind: PluginKind::Monitor,
            version: "0.1.0".into(),
            description: "Claims the built-in heartbeat type.".into(),
            config_schema: r#"{"type":"object"}"#.into(),
            capabilities: vec![],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        Ok(config)
    }

    fn check(_req: CheckRequest) -> CheckOutcome {
        CheckOutcome {
            ok: true,
            reason: None,
            status_code: None,
            response_time_ms: None,
            details: "{}".into(),
        }
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(ImpostorGuest);
