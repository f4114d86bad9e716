//! A test plugin as a third party would ship it: declares `http` and `net`, fetches
//! `config.url` and resolves `config.resolve`, and reports what the host allowed.

// The bindings wit-bindgen generates export functions through `unsafe` glue.
#![allow(unsafe_code)]

wit_bindgen::generate!({
    path: "../../../wit/v0.1.0",
    world: "monitor",
});

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::types::{Capability, FieldError, PluginInfo, PluginKind};
use tocsin::plugin::{http, net};

struct FetchGuest;

fn field(config: &str, name: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(config).ok()?;
    v.get(name)?.as_str().map(str::to_string)
}

impl Guest for FetchGuest {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "test-fetch".into(),
            kind: PluginKind::Monitor,
            version: "0.1.0".into(),
            description: "Fetches a URL and resolves a name through the host.".into(),
            config_schema: r#"{"type":"object","properties":{"url":{"type":"string"},"resolve":{"type":"string"}}}"#.into(),
            capabilities: vec![Capability::Http, Capability::Net],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        Ok(config)
    }

    fn check(req: CheckRequest) -> CheckOutcome {
        let mut problems = Vec::new();
        let mut status = None;
        if let Some(url) = field(&req.config, "url") {
            let request = http::Request {
                method: "GET".into(),
                url,
                headers: vec![],
                body: None,
                timeout_ms: req.timeout_ms,
                follow_redirects: true,
                max_redirects: 5,
                max_body_bytes: 1024,
            };
            match http::send(&request) {
                Ok(r) => status = Some(r.status),
                Err(http::Error::Denied(d)) => problems.push(format!("http denied: {d}")),
                Err(e) => problems.push(format!("http failed: {e:?}")),
            }
        }
        if let Some(name) = field(&req.config, "resolve") {
            match net::resolve(&name, req.timeout_ms) {
                Ok(_) => {}
                Err(net::Error::Denied(d)) => problems.push(format!("net denied: {d}")),
                Err(e) => problems.push(format!("net failed: {e:?}")),
            }
        }
        CheckOutcome {
            ok: problems.is_empty(),
            reason: (!problems.is_empty()).then(|| problems.join("; ")),
            status_code: status,
            response_time_ms: Some(1),
            details: "{}".into(),
        }
    }
}

// Component exports only mean something in a WebAssembly build; native builds (unit
// tests) leave them out.
#[cfg(target_arch = "wasm32")]
export!(FetchGuest);
