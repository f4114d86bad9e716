//! A test plugin that misbehaves on purpose: loops forever in check.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../../wit/v0.1.0",
    world: "monitor",
});

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::types::{FieldError, PluginInfo, PluginKind};

struct SpinGuest;

impl Guest for SpinGuest {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-spin".into(),
            kind: PluginKind::Monitor,
            version: "0.1.0".into(),
            description: "Loops forever in check.".into(),
            config_schema: r#"{"type":"object"}"#.into(),
            capabilities: vec![],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        Ok(config)
    }

    #[allow(clippy::empty_loop)]
    fn check(req: CheckRequest) -> CheckOutcome {
        // Never returns: the host must stop it at its deadline.
        let mut n: u64 = req.timeout_ms as u64;
        loop {
            n = std::hint::black_box(n.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(SpinGuest);
