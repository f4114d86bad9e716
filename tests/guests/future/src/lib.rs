//! A test plugin built against contract 0.4.0 (tests/fixtures/wit), a version no server
//! supports yet, to show that such a plugin is refused with a reason.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../fixtures/wit/v0.4.0",
    world: "monitor",
});

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::types::{FieldError, PluginInfo, PluginKind};

struct FutureGuest;

impl Guest for FutureGuest {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-future".into(),
            kind: PluginKind::Monitor,
            version: "0.4.0".into(),
            description: "Built against contract 0.4.0.".into(),
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

// Component exports only mean something in a WebAssembly build.
#[cfg(target_arch = "wasm32")]
export!(FutureGuest);
