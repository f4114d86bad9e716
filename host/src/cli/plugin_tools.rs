//! `tocsin plugin check` and `tocsin plugin new`: what a plugin author runs before dropping
//! a component into the plugins directory; `tocsin plugin precompile`, what a packager runs.

use crate::plugins::{
    CallError, CheckRequest, FieldError, HostSettings, Notification, PluginHost, PluginSource,
};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The contract every scaffold is built against.
const WIT: &str = include_str!("../../../wit/v0.3.0/plugin.wit");

/// Compile the built-ins and the plugins of `plugins_dir` into the compile cache, printing
/// where each one's machine code comes from. Fails when any plugin fails to compile.
pub fn precompile(config: &crate::config::Config) -> anyhow::Result<()> {
    let host = crate::app::plugin_runtime(config)?;
    let mut failed = 0;
    for (origin, outcome) in host.precompile(&config.plugins_dir) {
        match outcome {
            Ok((how, took)) => println!("{origin}: {} ({} ms)", how.as_str(), took.as_millis()),
            Err(e) => {
                failed += 1;
                println!("{origin}: cannot be compiled: {e}");
            }
        }
    }
    println!("compile cache: {}", config.plugin_cache_dir.display());
    if failed > 0 {
        anyhow::bail!("{failed} plugin(s) could not be compiled");
    }
    Ok(())
}

/// Load `file`, describe it, and when `config` is given validate it and run one call.
/// Returns the report and whether everything passed.
pub async fn check(file: &Path, config: Option<&str>, timeout: Duration) -> (String, bool) {
    let mut out = String::new();
    let bytes = match std::fs::read(file) {
        Ok(b) => b,
        Err(e) => return (format!("cannot read {}: {e}\n", file.display()), false),
    };
    let settings = HostSettings {
        grant_declared: true,
        ..HostSettings::default()
    };
    let mut host = match PluginHost::new(None, &settings) {
        Ok(h) => h,
        Err(e) => return (format!("cannot start the plugin runtime: {e:#}\n"), false),
    };
    let started = Instant::now();
    let d = match host
        .load(PluginSource {
            origin: file.display().to_string(),
            bytes,
        })
        .await
    {
        Ok(d) => d,
        Err(e) => return (format!("refused: {e}\n"), false),
    };
    let _ = writeln!(
        out,
        "loaded in {} ms: a {} plugin built against tocsin:plugin@{}",
        started.elapsed().as_millis(),
        d.kind,
        d.contract
    );
    let _ = writeln!(out, "name:         {}", d.name);
    let _ = writeln!(out, "version:      {}", d.version);
    let _ = writeln!(out, "description:  {}", d.description);
    let _ = writeln!(out, "capabilities: {}", list(&d.capabilities));
    if d.kind == "channel" {
        let _ = writeln!(out, "abilities:    {}", list(&d.abilities));
        let https: Vec<&str> = d.https_only.iter().map(String::as_str).collect();
        let _ = writeln!(out, "https only:   {}", list(&https));
    }
    let _ = writeln!(
        out,
        "config schema:\n{}",
        serde_json::to_string_pretty(&d.config_schema).unwrap_or_default()
    );
    let Some(config) = config else {
        return (out, true);
    };
    let budget_ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
    let passed = match d.kind {
        "monitor" => check_monitor(&host, &d.name, config, budget_ms, &mut out).await,
        "pipeline" => decide_test(&host, &d.name, config, &mut out).await,
        _ => deliver_test(&host, &d.name, config, budget_ms, &mut out).await,
    };
    (out, passed)
}

/// What `validate-config` answered: the normalised configuration, or the report of why not.
fn validated(
    answer: Result<Result<String, Vec<FieldError>>, CallError>,
    out: &mut String,
) -> Option<String> {
    match answer {
        Ok(Ok(normalized)) => {
            let _ = writeln!(out, "config:       {normalized}");
            Some(normalized)
        }
        Ok(Err(problems)) => {
            for p in problems {
                let _ = writeln!(out, "config refused: {} {}", p.field, p.message);
            }
            None
        }
        Err(e) => {
            let _ = writeln!(out, "validate-config failed: {e}");
            None
        }
    }
}

/// Validate `config` with a monitor plugin and run one check with it.
async fn check_monitor(
    host: &PluginHost,
    name: &str,
    config: &str,
    budget_ms: u32,
    out: &mut String,
) -> bool {
    let Some(plugin) = host.monitor(name) else {
        return false;
    };
    let answer = host
        .validate_monitor_config(&plugin, config.to_string())
        .await;
    let Some(normalized) = validated(answer, out) else {
        return false;
    };
    let started = Instant::now();
    let outcome = host
        .check(
            &plugin,
            CheckRequest {
                config: normalized,
                timeout_ms: budget_ms,
                monitor_id: "mon_check".into(),
                region: "local".into(),
                settings: "{}".into(),
                attempt: 1,
            },
        )
        .await;
    let took = started.elapsed().as_millis();
    match outcome {
        Ok(o) => {
            let _ = writeln!(
                out,
                "check:        {} in {took} ms{}",
                if o.ok { "passed" } else { "failed" },
                o.reason.map(|r| format!(": {r}")).unwrap_or_default()
            );
            if let Some(code) = o.status_code {
                let _ = writeln!(out, "status code:  {code}");
            }
            let _ = writeln!(
                out,
                "response:     {}",
                o.response_time_ms
                    .map_or("none".to_string(), |ms| format!("{ms} ms"))
            );
            let _ = writeln!(out, "details:      {}", o.details);
            o.ok
        }
        Err(e) => {
            let _ = writeln!(out, "check:        the plugin failed in {took} ms: {e}");
            false
        }
    }
}

/// Ask a pipeline step about a sample DOWN alert to an inline webhook, now, and print
/// its decision.
async fn decide_test(host: &PluginHost, name: &str, config: &str, out: &mut String) -> bool {
    let Some(plugin) = host.pipeline(name) else {
        let _ = writeln!(out, "no pipeline step `{name}` is loaded");
        return false;
    };
    let answer = host
        .validate_pipeline_config(&plugin, config.to_string())
        .await;
    let Some(normalized) = validated(answer, out) else {
        return false;
    };
    let now_ms = chrono::Utc::now().timestamp_millis();
    let (_, payload, _) = crate::cli::webhook_tools::test_delivery("whsec_plugin_check", now_ms);
    let started = Instant::now();
    let result = host
        .decide(
            &plugin,
            crate::plugins::Alert {
                event: "incident.created".into(),
                payload,
                config: normalized,
                channel_id: None,
                channel_type: "webhook".into(),
                tags: Vec::new(),
                now: now_ms,
                delayed: 0,
                settings: "{}".into(),
            },
        )
        .await;
    let took = started.elapsed().as_millis();
    match result {
        Ok(decision) => {
            let _ = writeln!(
                out,
                "decided in {took} ms on a sample DOWN alert now: {}",
                crate::outbox::pipeline::describe_decision(&decision)
            );
            true
        }
        Err(e) => {
            let _ = writeln!(out, "decide failed after {took} ms: {e}");
            false
        }
    }
}

/// Validate `config` with a channel plugin and deliver one signed test event with it.
async fn deliver_test(
    host: &PluginHost,
    name: &str,
    config: &str,
    budget_ms: u32,
    out: &mut String,
) -> bool {
    let Some(plugin) = host.channel(name) else {
        return false;
    };
    let answer = host
        .validate_channel_config(&plugin, config.to_string())
        .await;
    let Some(normalized) = validated(answer, out) else {
        return false;
    };
    let now_ms = chrono::Utc::now().timestamp_millis();
    let (_, payload, headers) =
        crate::cli::webhook_tools::test_delivery("whsec_plugin_check", now_ms);
    let started = Instant::now();
    let result = host
        .deliver(
            &plugin,
            Notification {
                event: "incident.created".into(),
                config: normalized,
                payload,
                headers: headers
                    .into_iter()
                    .map(|(name, value)| crate::plugins::Header { name, value })
                    .collect(),
                timeout_ms: budget_ms,
                settings: "{}".into(),
            },
        )
        .await;
    let took = started.elapsed().as_millis();
    match result {
        Ok(Ok(r)) => {
            let _ = writeln!(
                out,
                "deliver:      delivered a test incident.created in {took} ms{}{}",
                r.status_code
                    .map(|c| format!(" (status {c})"))
                    .unwrap_or_default(),
                r.detail.map(|d| format!(": {d}")).unwrap_or_default()
            );
            true
        }
        Ok(Err(f)) => {
            let _ = writeln!(
                out,
                "deliver:      failed in {took} ms ({}): {}",
                if f.retryable {
                    "would be retried"
                } else {
                    "permanent"
                },
                f.reason
            );
            false
        }
        Err(e) => {
            let _ = writeln!(out, "deliver:      the plugin failed in {took} ms: {e}");
            false
        }
    }
}

fn list(items: &[&str]) -> String {
    if items.is_empty() {
        "none".into()
    } else {
        items.join(", ")
    }
}

/// Languages `tocsin plugin new` scaffolds.
pub const LANGUAGES: [&str; 3] = ["rust", "python", "js"];

/// Write a new monitor plugin project for `lang` named `name` into `dir`. Returns the files.
pub fn scaffold(lang: &str, name: &str, dir: &Path) -> Result<Vec<PathBuf>, String> {
    if !crate::plugins::valid_plugin_name(name) {
        return Err(format!(
            "`{name}` is not a plugin name: 1 to 32 lowercase letters, digits or `-`"
        ));
    }
    if dir.exists() && dir.read_dir().map_or(true, |mut d| d.next().is_some()) {
        return Err(format!("{} exists and is not empty", dir.display()));
    }
    let snake = name.replace('-', "_");
    let mut files: Vec<(PathBuf, String)> = vec![(dir.join("wit/plugin.wit"), WIT.to_string())];
    match lang {
        "rust" => {
            files.push((
                dir.join("Cargo.toml"),
                format!(
                    "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
                     [lib]\ncrate-type = [\"cdylib\"]\n\n[dependencies]\n\
                     wit-bindgen = {{ version = \"0.63\", default-features = false, features = [\"macros\", \"realloc\"] }}\n\
                     serde_json = \"1\"\n\n[profile.release]\nopt-level = \"s\"\nlto = true\nstrip = true\npanic = \"abort\"\n\n\
                     # Build: cargo build --release --target wasm32-wasip2\n\
                     # Output: target/wasm32-wasip2/release/{snake}.wasm\n"
                ),
            ));
            files.push((
                dir.join("src/lib.rs"),
                RUST_TEMPLATE.replace("{name}", name),
            ));
        }
        "python" => {
            files.push((dir.join("app.py"), PYTHON_TEMPLATE.replace("{name}", name)));
            files.push((
                dir.join("build.sh"),
                format!(
                    "#!/usr/bin/env sh\n# Needs componentize-py: python3 -m pip install componentize-py==0.25.1\n\
                     set -eu\ncd \"$(dirname \"$0\")\"\ncomponentize-py -d wit -w monitor componentize app -o {name}.wasm\n"
                ),
            ));
        }
        "js" => {
            files.push((dir.join("plugin.js"), JS_TEMPLATE.replace("{name}", name)));
            files.push((
                dir.join("package.json"),
                format!(
                    "{{\n  \"name\": \"{name}\",\n  \"private\": true,\n  \"type\": \"module\",\n  \
                     \"scripts\": {{\n    \"build\": \"componentize-js plugin.js --wit wit --world-name monitor --disable stdio random clocks http fetch-event --out {name}.wasm\"\n  }},\n  \
                     \"devDependencies\": {{\n    \"@bytecodealliance/componentize-js\": \"0.23.0\",\n    \"@bytecodealliance/preview2-shim\": \"0.25.0\"\n  }}\n}}\n"
                ),
            ));
        }
        other => {
            return Err(format!(
                "unknown language `{other}`: use {}",
                LANGUAGES.join(", ")
            ));
        }
    }
    let mut written = Vec::new();
    for (path, text) in files {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

const RUST_TEMPLATE: &str = r##"//! The `{name}` monitor plugin for Tocsin.
#![allow(unsafe_code)]

wit_bindgen::generate!({ path: "wit", world: "monitor" });

use exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest, Guest};
use tocsin::plugin::http;
use tocsin::plugin::types::{Capability, FieldError, PluginInfo, PluginKind};

struct Plugin;

impl Guest for Plugin {
    fn describe() -> PluginInfo {
        PluginInfo {
            name: "{name}".into(),
            kind: PluginKind::Monitor,
            version: "0.1.0".into(),
            description: "Describe what {name} checks in one sentence.".into(),
            config_schema: r#"{"type":"object","required":["url"],"properties":{"url":{"type":"string"}}}"#.into(),
            capabilities: vec![Capability::Http],
            // What a channel asks of the server; a monitor asks nothing.
            abilities: vec![],
            https_only: vec![],
        }
    }

    fn validate_config(config: String) -> Result<String, Vec<FieldError>> {
        let v: serde_json::Value = serde_json::from_str(&config).map_err(|_| {
            vec![FieldError { field: "config".into(), message: "must be a JSON object".into() }]
        })?;
        match v.get("url").and_then(|u| u.as_str()) {
            Some(u) if u.starts_with("http://") || u.starts_with("https://") => Ok(v.to_string()),
            _ => Err(vec![FieldError { field: "url".into(), message: "must be an http(s) URL".into() }]),
        }
    }

    fn check(req: CheckRequest) -> CheckOutcome {
        let v: serde_json::Value = serde_json::from_str(&req.config).unwrap_or_default();
        let url = v["url"].as_str().unwrap_or_default().to_string();
        let request = http::Request {
            method: "GET".into(), url, headers: vec![], body: None, timeout_ms: req.timeout_ms,
            follow_redirects: true, max_redirects: 5, max_body_bytes: 65536,
            version: http::HttpVersion::Any,
        };
        match http::send(&request) {
            Ok(r) if (200..300).contains(&r.status) => CheckOutcome {
                ok: true, reason: None, status_code: Some(r.status),
                response_time_ms: Some(r.elapsed_ms), details: "{}".into(),
            },
            Ok(r) => CheckOutcome {
                ok: false, reason: Some(format!("Got status {}", r.status)), status_code: Some(r.status),
                response_time_ms: Some(r.elapsed_ms), details: "{}".into(),
            },
            Err(e) => CheckOutcome {
                ok: false, reason: Some(format!("Request failed: {e:?}")), status_code: None,
                response_time_ms: None, details: "{}".into(),
            },
        }
    }
}

export!(Plugin);
"##;

const PYTHON_TEMPLATE: &str = r#""""The `{name}` monitor plugin for Tocsin. Build with ./build.sh."""

import json

import wit_world
from wit_world.imports import http
from wit_world.imports.types import Capability, FieldError, PluginInfo, PluginKind
from wit_world.exports.monitor_plugin import CheckOutcome, CheckRequest
from componentize_py_types import Err


class MonitorPlugin(wit_world.exports.MonitorPlugin):
    def describe(self) -> PluginInfo:
        schema = {"type": "object", "required": ["url"], "properties": {"url": {"type": "string"}}}
        return PluginInfo("{name}", PluginKind.MONITOR, "0.1.0",
                          "Describe what {name} checks in one sentence.",
                          json.dumps(schema), [Capability.HTTP], [], [])

    def validate_config(self, config: str) -> str:
        value = json.loads(config)
        url = value.get("url") if isinstance(value, dict) else None
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise Err([FieldError("url", "must be an http(s) URL")])
        return json.dumps(value)

    def check(self, req: CheckRequest) -> CheckOutcome:
        url = json.loads(req.config)["url"]
        try:
            r = http.send(http.Request("GET", url, [], None, req.timeout_ms, True, 5, 65536,
                                       http.HttpVersion.ANY))
        except Err as e:
            return CheckOutcome(False, f"Request failed: {e.value}", None, None, "{}")
        ok = 200 <= r.status < 300
        return CheckOutcome(ok, None if ok else f"Got status {r.status}", r.status, r.elapsed_ms, "{}")
"#;

const JS_TEMPLATE: &str = r#"// The `{name}` monitor plugin for Tocsin. Build with `npm install && npm run build`.
import { send } from "tocsin:plugin/http@0.3.0";

export const monitorPlugin = {
  describe() {
    return {
      name: "{name}",
      kind: "monitor",
      version: "0.1.0",
      description: "Describe what {name} checks in one sentence.",
      configSchema: JSON.stringify({ type: "object", required: ["url"], properties: { url: { type: "string" } } }),
      capabilities: ["http"],
      abilities: [],
      httpsOnly: [],
    };
  },
  validateConfig(config) {
    const value = JSON.parse(config);
    if (typeof value.url !== "string" || !/^https?:\/\//.test(value.url)) {
      throw [{ field: "url", message: "must be an http(s) URL" }];
    }
    return JSON.stringify(value);
  },
  check(req) {
    const { url } = JSON.parse(req.config);
    try {
      const r = send({ method: "GET", url, headers: [], body: undefined, timeoutMs: req.timeoutMs,
                       followRedirects: true, maxRedirects: 5, maxBodyBytes: 65536,
                       version: "any" });
      const ok = r.status >= 200 && r.status < 300;
      return { ok, reason: ok ? undefined : `Got status ${r.status}`, statusCode: r.status,
               responseTimeMs: r.elapsedMs, details: "{}" };
    } catch (e) {
      return { ok: false, reason: `Request failed: ${JSON.stringify(e.payload ?? e)}`,
               statusCode: undefined, responseTimeMs: undefined, details: "{}" };
    }
  },
};
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaffolds_each_language_with_the_contract() {
        for lang in LANGUAGES {
            let dir = tempfile::tempdir().expect("dir");
            let target = dir.path().join("probe");
            let files = scaffold(lang, "my-probe", &target).expect("scaffold");
            assert!(
                files.iter().any(|f| f.ends_with("wit/plugin.wit")),
                "{lang}"
            );
            let all: String = files
                .iter()
                .map(|f| std::fs::read_to_string(f).expect("read"))
                .collect();
            assert!(all.contains("package tocsin:plugin@0.3.0;"), "{lang}");
            assert!(all.contains("my-probe"), "{lang}");
            // An existing, non-empty folder is left alone.
            assert!(scaffold(lang, "my-probe", &target).is_err());
        }
        let dir = tempfile::tempdir().expect("dir");
        assert!(scaffold("cobol", "x", &dir.path().join("a")).is_err());
        assert!(scaffold("rust", "Bad Name", &dir.path().join("b")).is_err());
    }
}
