//! The built-in catalogue of docs/plugins.md and the list of built-ins in README.md are
//! what the plugins say about themselves: the committed parts between the catalogue
//! markers equal what `tocsin plugin catalogue` generates from the built-ins' schemas, and
//! every example of the plugin guide is accepted by a real server. The statuses the guide
//! gives for a configuration a plugin rejects are the ones the API answers.

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use support::Server;
use tocsin::cli::catalogue;

fn repo_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(repo_file(name)).expect("read the document")
}

/// What `tocsin plugin catalogue` prints, as (name, body) blocks.
fn generated() -> Vec<(String, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_tocsin"))
        .args(["plugin", "catalogue", "--cache-dir"])
        .arg(Path::new(env!("CARGO_TARGET_TMPDIR")).join("plugin-cache"))
        .env("TOCSIN_LOG", "warn")
        .output()
        .expect("run tocsin plugin catalogue");
    assert!(
        out.status.success(),
        "tocsin plugin catalogue failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    catalogue::blocks_in(&String::from_utf8_lossy(&out.stdout)).expect("generated blocks")
}

#[test]
fn the_documented_catalogue_is_the_one_the_plugins_describe() {
    let generated = generated();
    let names: Vec<&str> = generated.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["monitors", "channels", "pipelines", "builtins"]);
    for (file, wanted) in [
        (
            "docs/plugins.md",
            &["monitors", "channels", "pipelines"][..],
        ),
        ("README.md", &["builtins"][..]),
    ] {
        let committed = catalogue::blocks_in(&read(file))
            .unwrap_or_else(|e| panic!("{file}: {e}; regenerate with `{}`", catalogue::REGENERATE));
        for name in wanted {
            let body = committed
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, b)| b.as_str())
                .unwrap_or_else(|| {
                    panic!(
                        "{file} has no `{}` block; add the markers and run `{}`",
                        catalogue::begin_marker(name),
                        catalogue::REGENERATE
                    )
                });
            let fresh = &generated.iter().find(|(n, _)| n == name).expect("block").1;
            assert_eq!(
                body,
                fresh,
                "the `{name}` catalogue of {file} differs from the plugins' schemas; run `{}`",
                catalogue::REGENERATE
            );
        }
    }
}

/// `value` with every channel id (`ch_...`) replaced by `id`.
fn with_channel(value: &Value, id: &Value) -> Value {
    match value {
        Value::String(s) if s.starts_with("ch_") => id.clone(),
        Value::Array(items) => Value::Array(items.iter().map(|v| with_channel(v, id)).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| (k.clone(), with_channel(v, id)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The examples of docs/plugins.md: blocks fenced as ```json monitor TYPE,
/// ```json channel TYPE or ```json pipeline STEP, as (kind, type, body).
fn examples(text: &str) -> Vec<(String, String, Value)> {
    let mut found = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```json ") else {
            continue;
        };
        let mut words = info.split_whitespace();
        let (Some(kind), Some(kind_type), None) = (words.next(), words.next(), words.next()) else {
            panic!("an example fence should be ```json monitor|channel|pipeline TYPE: {line}");
        };
        let body: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        let value: Value = serde_json::from_str(&body.join("\n"))
            .unwrap_or_else(|e| panic!("the `{kind_type}` example is not JSON: {e}"));
        found.push((kind.to_string(), kind_type.to_string(), value));
    }
    found
}

#[test]
fn every_example_of_the_plugin_guide_is_accepted_and_errors_answer_as_it_says() {
    let server = Server::start(&[]);
    let api = server.client();
    let plugins = api.get("/v1/plugins?limit=100");
    assert_eq!(plugins.status, 200, "{}", plugins.body);
    let examples = examples(&read("docs/plugins.md"));

    // One example per type, of the right kind, and no example of a type nobody provides.
    let mut types: Vec<(String, String)> = plugins.body["data"]
        .as_array()
        .expect("plugins")
        .iter()
        .map(|p| {
            (
                p["kind"].as_str().unwrap_or_default().to_string(),
                p["name"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    types.sort();
    let mut documented: Vec<(String, String)> = examples
        .iter()
        .map(|(k, t, _)| (k.clone(), t.clone()))
        .collect();
    documented.sort();
    assert_eq!(
        documented, types,
        "docs/plugins.md should have one example per monitor and channel type and pipeline step"
    );

    // A pipeline example's channel ids are the reader's own: here, one webhook's.
    let channel = api.post(
        "/v1/channels",
        &json!({"name": "on duty", "type": "webhook", "url": "https://hooks.example.com/duty"}),
    );
    assert_eq!(channel.status, 201, "{}", channel.body);
    let own = channel.body["data"]["id"].clone();
    for (kind, kind_type, body) in &examples {
        if kind == "pipeline" {
            assert_eq!(body["plugin"], kind_type.as_str(), "{body}");
            let step = with_channel(body, &own);
            let r = api.post(
                "/v1/alert-policies?dryRun=true",
                &json!({"name": "example", "channels": [{"channelId": own}], "pipeline": [step]}),
            );
            assert_eq!(r.status, 200, "pipeline example `{kind_type}`: {}", r.body);
            continue;
        }
        assert_eq!(body["type"], kind_type.as_str(), "{body}");
        if kind == "monitor" {
            // A dry run: the whole validation, plugin included, and no check is ever run.
            let r = api.post("/v1/monitors?dryRun=true", body);
            assert_eq!(r.status, 200, "monitor example `{kind_type}`: {}", r.body);
        } else {
            let r = api.post("/v1/channels", body);
            assert_eq!(r.status, 201, "channel example `{kind_type}`: {}", r.body);
        }
    }

    // What the guide says a rejected configuration answers.
    let under_config = api.post(
        "/v1/monitors",
        &json!({"name": "db", "type": "redis", "interval": 60, "config": {"host": "cache", "port": 0}}),
    );
    under_config.assert_error(422, "UNPROCESSABLE_ENTITY");
    assert_eq!(
        under_config.body["error"]["details"][0]["field"], "config.port",
        "{}",
        under_config.body
    );
    let top_level = api.post(
        "/v1/monitors",
        &json!({"name": "web", "type": "http", "interval": 60, "method": "GET"}),
    );
    top_level.assert_error(400, "VALIDATION_ERROR");
    assert!(
        top_level.body["error"]["details"]
            .as_array()
            .is_some_and(|d| d.iter().any(|e| e["field"] == "url")),
        "{}",
        top_level.body
    );
    let channel = api.post(
        "/v1/channels",
        &json!({"name": "chat", "type": "slack", "webhookUrl": 7}),
    );
    channel.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(api.get("/v1/monitors").body["pagination"]["total"], 0);
}
