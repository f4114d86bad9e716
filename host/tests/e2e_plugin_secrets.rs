//! Secrets as every loaded plugin's schema marks them (`writeOnly`, `x-tocsin-secret`),
//! enumerated from `GET /v1/plugins`, not from a list kept here: a read key never sees
//! them (one object, the list, a policy's inline channel), the audit log never keeps them;
//! a stored password never follows a change of target (`x-tocsin-target`), checked against
//! a real loopback listener; and `tocsin export` writes secrets as `${VARIABLE}`s that
//! `tocsin apply` reads back from the environment.

use crate::support;

use serde_json::{Map, Value, json};
use std::io::Read;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{ADMIN_KEY, Api, Server, wait_for};

fn key(api: &Api, role: &str) -> Api {
    let r = api.post(
        "/v1/api-keys",
        &json!({"name": format!("{role} key"), "role": role}),
    );
    assert_eq!(r.status, 201, "{}", r.body);
    api.with_key(r.body["data"]["secret"].as_str().expect("secret"))
}

/// A place in a configuration a schema marks: its top-level field, and whether the secret
/// is the field's value itself or each value of the map it holds.
#[derive(Debug, Clone)]
struct Marked {
    field: String,
    map_values: bool,
    write_only: bool,
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|p| root.pointer(p))
    {
        Some(target) => target,
        None => schema,
    }
}

/// The fields a configuration schema marks secret or write-only (top-level fields and the
/// values of top-level maps: where the built-ins put them).
fn marked(schema: &Value) -> Vec<Marked> {
    let mut out = Vec::new();
    for (field, sub) in schema["properties"].as_object().into_iter().flatten() {
        let sub = resolve(sub, schema);
        let write_only = sub["writeOnly"] == true;
        if write_only || sub["x-tocsin-secret"] == true {
            out.push(Marked {
                field: field.clone(),
                map_values: false,
                write_only,
            });
        } else if resolve(&sub["additionalProperties"], schema)["x-tocsin-secret"] == true {
            out.push(Marked {
                field: field.clone(),
                map_values: true,
                write_only: false,
            });
        }
    }
    out
}

fn first_type(schema: &Value) -> &str {
    match &schema["type"] {
        Value::String(t) => t,
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("string"),
        _ => "string",
    }
}

/// A string of the schema's length bounds that contains `token`.
fn sized(schema: &Value, text: String) -> String {
    let min = schema["minLength"].as_u64().unwrap_or(0) as usize;
    let max = schema["maxLength"].as_u64().unwrap_or(4096) as usize;
    let mut s = text;
    while s.len() < min {
        s.push('k');
    }
    s.truncate(max);
    s
}

/// Values to try for a field, in order (the plugin says which one it refuses, and the
/// next is tried): what the schema offers first, then shapes common credentials have.
fn candidates(name: &str, schema: &Value, token: &str) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for key in ["enum", "examples"] {
        out.extend(schema[key].as_array().into_iter().flatten().cloned());
    }
    match first_type(schema) {
        "integer" | "number" => {
            for k in ["default", "minimum"] {
                if let Some(n) = schema[k].as_i64() {
                    out.push(Value::from(n.max(1)));
                }
            }
            out.push(Value::from(1));
        }
        "boolean" => out.push(Value::Bool(false)),
        "array" => out.push(json!([])),
        "object" => out.push(json!({})),
        _ => {
            let lower = name.to_ascii_lowercase();
            if schema["format"] == "email" {
                out.push(Value::from(format!("{token}@example.test")));
            }
            if schema["format"] == "uri" || lower.ends_with("url") {
                out.push(Value::from(format!("https://127.0.0.1:9/hook/{token}")));
            }
            if schema["format"] == "hostname"
                || ["host", "hostname", "domain", "resolver"].contains(&lower.as_str())
            {
                out.push(Value::from("example.test"));
                out.push(Value::from("127.0.0.1"));
            }
            out.push(Value::from(sized(schema, token.to_string())));
            out.push(Value::from(sized(schema, format!("123456:{token}"))));
            out.push(Value::from(sized(schema, format!("!{token}:example.test"))));
            out.push(Value::from(sized(schema, format!("@{token}"))));
        }
    }
    out
}

/// One type's settings, made from its schema: its required fields and every marked one,
/// each secret holding a token of its own. Returns the settings and the tokens.
struct Made {
    settings: Map<String, Value>,
    tokens: Vec<String>,
    tries: std::collections::BTreeMap<String, usize>,
    choices: std::collections::BTreeMap<String, Vec<Value>>,
}

fn make(plugin: &str, schema: &Value, marks: &[Marked], serial: &mut u32) -> Made {
    let required: Vec<String> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let mut made = Made {
        settings: Map::new(),
        tokens: Vec::new(),
        tries: Default::default(),
        choices: Default::default(),
    };
    for (field, sub) in schema["properties"].as_object().into_iter().flatten() {
        let sub = resolve(sub, schema);
        let mark = marks.iter().find(|m| &m.field == field);
        *serial += 1;
        let token = format!("Zq{serial}S3cret{}", plugin.replace('-', ""));
        let list = match mark {
            Some(m) if m.map_values => {
                made.tokens.push(token.clone());
                vec![json!({"Authorization": format!("Bearer {token}")})]
            }
            Some(_) => {
                made.tokens.push(token.clone());
                // A secret's own value must carry the token: what the schema offers does not.
                candidates(field, sub, &token)
                    .into_iter()
                    .filter(|v| v.as_str().is_some_and(|s| s.contains(&token)))
                    .collect()
            }
            None => candidates(field, sub, &token),
        };
        // Other fields wait until the plugin asks for them ("required with a password").
        if required.contains(field) || mark.is_some() {
            made.settings
                .insert(field.clone(), list.first().cloned().unwrap_or(Value::Null));
            made.tries.insert(field.clone(), 0);
        }
        made.choices.insert(field.clone(), list);
    }
    made
}

/// POST `body_of(settings)` to `path`, trying the next candidate of each field the server
/// names until it is accepted.
fn create_with(
    api: &Api,
    path: &str,
    made: &mut Made,
    body_of: &dyn Fn(&Map<String, Value>) -> Value,
) -> Value {
    for _ in 0..40 {
        let r = api.post(path, &body_of(&made.settings));
        if r.status == 201 {
            return r.body["data"].clone();
        }
        let mut advanced = false;
        for d in r.body["error"]["details"].as_array().into_iter().flatten() {
            let field = d["field"].as_str().unwrap_or_default();
            let field = field.strip_prefix("config.").unwrap_or(field);
            let field = field.split('.').next().unwrap_or(field).to_string();
            let Some(list) = made.choices.get(&field) else {
                continue;
            };
            match made.tries.get_mut(&field) {
                Some(n) if *n + 1 < list.len() => {
                    *n += 1;
                    made.settings.insert(field, list[*n].clone());
                    advanced = true;
                }
                None if !list.is_empty() => {
                    made.tries.insert(field.clone(), 0);
                    made.settings.insert(field, list[0].clone());
                    advanced = true;
                }
                _ => {}
            }
        }
        assert!(advanced, "{path} {}: {}", body_of(&made.settings), r.body);
    }
    panic!("{path}: no accepted settings");
}

fn assert_hidden(what: &str, text: &str, tokens: &[String]) {
    for t in tokens {
        assert!(!text.contains(t.as_str()), "{what} shows {t}: {text}");
    }
}

fn audit_entries(admin: &Api, resource: &str, actions: &[&str]) -> String {
    wait_for("the audit entries", Duration::from_secs(10), || {
        let log = admin.get(&format!("/v1/audit-log?resourceId={resource}&limit=100"));
        assert_eq!(log.status, 200, "{}", log.body);
        let items = log.body["data"].as_array().cloned().unwrap_or_default();
        let found: Vec<&str> = items.iter().filter_map(|e| e["action"].as_str()).collect();
        actions
            .iter()
            .all(|a| found.contains(a))
            .then(|| log.body.to_string())
    })
}

#[test]
fn no_secret_of_any_plugin_reaches_a_read_key_or_the_audit_log() {
    let server = Server::start(&[]);
    let admin = server.client();
    let reader = key(&admin, "read");
    let plugins = admin.get("/v1/plugins?limit=100");
    assert_eq!(plugins.status, 200, "{}", plugins.body);
    let plugins = plugins.body["data"].as_array().cloned().expect("plugins");
    let mut serial = 0;
    let mut covered = Vec::new();
    for p in &plugins {
        let name = p["name"].as_str().expect("name");
        let kind = p["kind"].as_str().expect("kind");
        let schema = &p["configSchema"];
        let marks = marked(schema);
        if marks.is_empty() {
            continue;
        }
        covered.push(format!(
            "{name}: {}",
            marks
                .iter()
                .map(|m| m.field.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let mut made = make(name, schema, &marks, &mut serial);
        let tokens = made.tokens.clone();
        let shown_to_writers: Vec<String> = marks
            .iter()
            .filter(|m| !m.write_only)
            .filter_map(|m| made.settings.get(&m.field).map(Value::to_string))
            .collect();
        if kind == "monitor" {
            let top = p["topLevelFields"] == true;
            let body_of = |s: &Map<String, Value>| {
                let mut body =
                    json!({"name": format!("{name} monitor"), "type": name, "interval": 3600});
                if top {
                    body.as_object_mut().expect("object").extend(s.clone());
                } else {
                    body["config"] = Value::Object(s.clone());
                }
                body
            };
            let created = create_with(&admin, "/v1/monitors", &mut made, &body_of);
            let id = created["id"].as_str().expect("id").to_string();
            let r = admin.patch(
                &format!("/v1/monitors/{id}"),
                &json!({"name": format!("{name} renamed")}),
            );
            assert_eq!(r.status, 200, "{}", r.body);
            let one = reader.get(&format!("/v1/monitors/{id}"));
            assert_eq!(one.status, 200, "{}", one.body);
            assert_hidden(&format!("{name}: GET one"), &one.body.to_string(), &tokens);
            let list = reader.get("/v1/monitors?limit=100").body.to_string();
            assert_hidden(&format!("{name}: GET list"), &list, &tokens);
            let log = audit_entries(&admin, &id, &["monitor.create", "monitor.update"]);
            assert_hidden(&format!("{name}: audit log"), &log, &tokens);
            // Writers see the secrets they edit (not the write-only ones).
            let whole = admin.get(&format!("/v1/monitors/{id}")).body.to_string();
            for v in &shown_to_writers {
                let inner = v.trim_matches('"');
                assert!(
                    whole.contains(inner) || whole.contains(&v.to_string()),
                    "{name}: an admin sees {v}: {whole}"
                );
            }
            for m in marks.iter().filter(|m| m.write_only) {
                let data = &admin.get(&format!("/v1/monitors/{id}")).body["data"];
                assert!(
                    data.get(&m.field).is_none() && data["config"].get(&m.field).is_none(),
                    "{name}: {} shown",
                    m.field
                );
            }
        } else {
            let body_of = |s: &Map<String, Value>| {
                let mut body = json!({"name": format!("{name} channel"), "type": name});
                body.as_object_mut().expect("object").extend(s.clone());
                body
            };
            let created = create_with(&admin, "/v1/channels", &mut made, &body_of);
            let id = created["id"].as_str().expect("id").to_string();
            let r = admin.patch(
                &format!("/v1/channels/{id}"),
                &json!({"name": format!("{name} renamed")}),
            );
            assert_eq!(r.status, 200, "{}", r.body);
            let one = reader.get(&format!("/v1/channels/{id}"));
            assert_eq!(one.status, 200, "{}", one.body);
            assert_hidden(&format!("{name}: GET one"), &one.body.to_string(), &tokens);
            let list = reader.get("/v1/channels?limit=100").body.to_string();
            assert_hidden(&format!("{name}: GET list"), &list, &tokens);
            let log = audit_entries(&admin, &id, &["channel.create", "channel.update"]);
            assert_hidden(&format!("{name}: audit log"), &log, &tokens);
            let whole = admin.get(&format!("/v1/channels/{id}")).body.to_string();
            for v in &shown_to_writers {
                assert!(
                    whole.contains(v.trim_matches('"')),
                    "{name}: an admin sees {v}: {whole}"
                );
            }

            // The same settings inline in a policy, in `channels` and the escalation.
            let mut inline = made.settings.clone();
            inline.insert("type".into(), Value::from(name));
            let policy = admin.post(
                "/v1/alert-policies",
                &json!({"name": format!("{name} policy"), "channels": [inline.clone()],
                        "escalation": {"delayMinutes": 5, "channels": [inline]}}),
            );
            assert_eq!(policy.status, 201, "{}", policy.body);
            let pid = policy.body["data"]["id"].as_str().expect("id").to_string();
            let one = reader.get(&format!("/v1/alert-policies/{pid}"));
            assert_eq!(one.status, 200, "{}", one.body);
            assert_hidden(&format!("{name}: a policy"), &one.body.to_string(), &tokens);
            assert_eq!(one.body["data"]["channels"][0]["type"], name);
            let list = reader.get("/v1/alert-policies?limit=100").body.to_string();
            assert_hidden(&format!("{name}: the policy list"), &list, &tokens);
            let log = audit_entries(&admin, &pid, &["alert_policy.create"]);
            assert_hidden(&format!("{name}: the policy's audit log"), &log, &tokens);
        }
    }
    // The schemas do mark the chat webhooks and the http headers (a sanity check of the
    // enumeration, not the list it runs on).
    let all = covered.join("; ");
    eprintln!("checked: {all}");
    for expected in [
        "slack: webhookUrl",
        "discord: webhookUrl",
        "teams: webhookUrl",
        "mattermost: webhookUrl",
        "rocketchat: webhookUrl",
        "googlechat: webhookUrl",
        "webhook: url",
        "http: headers",
        "keyword: headers",
        "redis: password",
        "telegram: botToken",
    ] {
        assert!(all.contains(expected), "{expected} not marked: {all}");
    }
}

/// What a listener holds: the bytes it received, and how many connections.
type Shared<T> = Arc<Mutex<T>>;

/// Every byte a loopback listener receives, from every connection.
fn listener() -> (u16, Shared<Vec<u8>>, Shared<u32>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(Mutex::new(0));
    let (g, c) = (got.clone(), connections.clone());
    std::thread::spawn(move || {
        for stream in l.incoming() {
            let Ok(mut s) = stream else { continue };
            *c.lock().expect("lock") += 1;
            let g = g.clone();
            std::thread::spawn(move || {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    g.lock().expect("lock").extend_from_slice(&buf[..n]);
                }
            });
        }
    });
    (port, got, connections)
}

#[test]
fn a_stored_password_never_follows_a_changed_target() {
    let server = Server::start(&[]);
    let admin = server.client();
    let writer = key(&admin, "write");
    let (port, got, connections) = listener();
    let password = "Zq-redis-S3cret-password";
    let created = admin.post(
        "/v1/monitors",
        &json!({"name": "cache", "type": "redis", "interval": 1,
                "config": {"host": "127.0.0.1", "port": 9, "password": password}}),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.body["data"]["id"].as_str().expect("id").to_string();

    // The write key points the monitor at its own listener, leaving the password stored.
    for change in [
        json!({"port": port}),
        json!({"host": "localhost", "port": port}),
    ] {
        let r = writer.patch(&format!("/v1/monitors/{id}"), &json!({"config": change}));
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(
            r.body["error"]["details"][0]["field"], "config.password",
            "{}",
            r.body
        );
    }
    // PUT the same: the body leaves the password out.
    let r = writer.request(
        "PUT",
        &format!("/v1/monitors/{id}"),
        Some(&json!({"name": "cache", "type": "redis", "interval": 1,
                     "config": {"host": "127.0.0.1", "port": port}})),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    let stored = admin.get(&format!("/v1/monitors/{id}")).body;
    assert_eq!(stored["data"]["config"]["port"], 9, "{stored}");

    // Given again as null (no password), the change goes through, and the listener is
    // checked without the old password.
    let r = writer.patch(
        &format!("/v1/monitors/{id}"),
        &json!({"config": {"port": port, "password": null}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    wait_for("a check at the listener", Duration::from_secs(20), || {
        (*connections.lock().expect("lock") > 0 && !got.lock().expect("lock").is_empty())
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(500));
    let bytes = String::from_utf8_lossy(&got.lock().expect("lock")).to_string();
    assert!(!bytes.contains(password), "the password was sent: {bytes}");

    // A changed target with the password given again is fine; an unchanged target keeps it.
    let r = writer.patch(
        &format!("/v1/monitors/{id}"),
        &json!({"config": {"port": 9, "password": "new-password"}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = writer.patch(
        &format!("/v1/monitors/{id}"),
        &json!({"config": {"database": 2}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);

    // A channel's token does not follow a new server either (stored and inline).
    let ch = admin.post(
        "/v1/channels",
        &json!({"name": "push", "type": "gotify", "serverUrl": "https://gotify.example.test",
                "appToken": "Zq-gotify-token"}),
    );
    assert_eq!(ch.status, 201, "{}", ch.body);
    let ch_id = ch.body["data"]["id"].as_str().expect("id");
    let r = writer.patch(
        &format!("/v1/channels/{ch_id}"),
        &json!({"serverUrl": format!("https://127.0.0.1:{port}")}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        r.body["error"]["details"][0]["field"], "appToken",
        "{}",
        r.body
    );
    let r = writer.patch(
        &format!("/v1/channels/{ch_id}"),
        &json!({"serverUrl": "https://gotify.example.test/other/path"}),
    );
    assert_eq!(r.status, 200, "same origin: {}", r.body);
    let policy = admin.post(
        "/v1/alert-policies",
        &json!({"name": "p", "channels": [{"type": "ntfy", "topic": "ops", "accessToken": "tk_Zq"}]}),
    );
    assert_eq!(policy.status, 201, "{}", policy.body);
    let pid = policy.body["data"]["id"].as_str().expect("id");
    // Left to its default, the server is the same: the token stays.
    let r = writer.patch(
        &format!("/v1/alert-policies/{pid}"),
        &json!({"channels": [{"type": "ntfy", "topic": "ops"}]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let r = writer.patch(
        &format!("/v1/alert-policies/{pid}"),
        &json!({"channels": [{"type": "ntfy", "topic": "ops", "serverUrl": format!("https://127.0.0.1:{port}")}]}),
    );
    r.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        r.body["error"]["details"][0]["field"], "channels[0].accessToken",
        "{}",
        r.body
    );
}

#[test]
fn export_writes_secrets_as_variables_that_apply_reads_back() {
    let server = Server::start(&[]);
    let admin = server.client();
    let created = admin.post(
        "/v1/monitors",
        &json!({"name": "Public API", "key": "api", "type": "http", "method": "GET",
                "url": "http://127.0.0.1:9/health", "interval": 3600,
                "headers": {"Authorization": "Bearer Zq-export-S3cret"}}),
    );
    assert_eq!(created.status, 201, "{}", created.body);
    let chat = admin.post(
        "/v1/channels",
        &json!({"name": "ops chat", "type": "slack",
                "webhookUrl": "https://hooks.slack.test/services/T/B/ZqSlackS3cret"}),
    );
    assert_eq!(chat.status, 201, "{}", chat.body);

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tocsin.yaml");
    let f = file.to_str().expect("path");
    let env = [
        ("TOCSIN_URL", server.base.as_str()),
        ("TOCSIN_API_KEY", ADMIN_KEY),
    ];
    let (ok, out) = support::run_tocsin(dir.path(), &["export", "-o", f], &env);
    assert!(ok, "{out}");
    let text = std::fs::read_to_string(&file).expect("export");
    assert!(
        !text.contains("Zq-export-S3cret") && !text.contains("ZqSlackS3cret"),
        "{text}"
    );
    let header_var = "TOCSIN_MONITOR_API_HEADERS_AUTHORIZATION";
    let chat_var = "TOCSIN_CHANNEL_OPS_CHAT_WEBHOOKURL";
    assert!(text.contains(&format!("${{{header_var}}}")), "{text}");
    assert!(
        text.contains(&format!("#   {header_var}\n")),
        "listed at the top: {text}"
    );
    assert!(text.contains(&format!("${{{chat_var}}}")), "{text}");

    // Without the variables apply stops, naming one.
    let (ok, out) = support::run_tocsin(dir.path(), &["apply", "-f", f, "--dry-run"], &env);
    assert!(!ok, "{out}");
    assert!(out.contains("TOCSIN_"), "{out}");
    assert!(out.contains("is not set"), "{out}");

    // With them, the file applies back unchanged.
    let mut with = env.to_vec();
    with.push((header_var, "Bearer Zq-export-S3cret"));
    with.push((
        chat_var,
        "https://hooks.slack.test/services/T/B/ZqSlackS3cret",
    ));
    let (ok, out) = support::run_tocsin(dir.path(), &["apply", "-f", f, "--dry-run"], &with);
    assert!(ok, "{out}");
    assert!(
        out.contains("0 to create, 0 to change, 0 to delete"),
        "{out}"
    );
    let (ok, out) = support::run_tocsin(dir.path(), &["apply", "-f", f], &with);
    assert!(ok, "{out}");
    let m = admin.get(&format!(
        "/v1/monitors/{}",
        created.body["data"]["id"].as_str().expect("id")
    ));
    assert_eq!(
        m.body["data"]["headers"]["Authorization"],
        "Bearer Zq-export-S3cret"
    );

    // JSON has no comments: the names go to standard error.
    let json_file = dir.path().join("tocsin.json");
    let (ok, out) = support::run_tocsin(
        dir.path(),
        &["export", "-o", json_file.to_str().expect("path")],
        &env,
    );
    assert!(ok, "{out}");
    assert!(out.contains(header_var), "{out}");
    let json_text = std::fs::read_to_string(&json_file).expect("export");
    assert!(!json_text.contains("Zq-export-S3cret"), "{json_text}");
}
