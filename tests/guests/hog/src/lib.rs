//! A test plugin that misbehaves on purpose: allocates memory until it runs out.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../../wit/v0.1.0",
    world: "monitor",
});

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::types::{FieldError, PluginInfo, PluginKind};

struct HogGuest;

impl Guest for HogGuest {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-hog".into(),
            kind: PluginKind::Monitor,
            version: "0.1.0".into(),
            description: "Allocates memory until it runs out.".into(),
            config_schema: r#"{"type":"object"}"#.into(),
            capabilities: vec![],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        Ok(config)
    }

    #[allow(clippy::empty_loop)]
    fn check(req: CheckRequest) -> CheckOutcome {
        // Grows memory without bound: the host must stop it at its memory cap.
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            hoard.push(vec![req.timeout_ms as u8; 1 << 20]);
            std::hint::black_box(&hoard);
        }
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(HogGuest);
