//! What `tocsin export` writes instead of a secret: every value a read key would see
//! redacted (what the plugin's schema marks `x-tocsin-secret`: a request header's value, a
//! chat webhook URL) becomes a `${VARIABLE}` with a generated name, which `tocsin apply`
//! reads from the environment. The file can then go into Git; the values stay in the CI's
//! secret store. Which values are secret is read from the schemas `GET /v1/plugins` gives,
//! never from a list of types here.

use super::document::Kind;
use crate::plugins::MONITOR_FIELDS;
use crate::plugins::secrets::SchemaSecrets;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The loaded types' schemas, as the server describes them.
#[derive(Default)]
pub struct Catalogue {
    /// (kind, type) → (secrets, whether a monitor type's fields sit at the top level).
    types: BTreeMap<(String, String), (SchemaSecrets, bool)>,
}

impl Catalogue {
    /// From the items of `GET /v1/plugins`.
    pub fn of(plugins: &[Map<String, Value>]) -> Catalogue {
        let mut types = BTreeMap::new();
        for p in plugins {
            let (Some(kind), Some(name)) = (
                p.get("kind").and_then(Value::as_str),
                p.get("name").and_then(Value::as_str),
            ) else {
                continue;
            };
            let schema = p.get("configSchema").cloned().unwrap_or(Value::Null);
            let top = p
                .get("topLevelFields")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            types.insert(
                (kind.to_string(), name.to_string()),
                (SchemaSecrets::of(&schema), top),
            );
        }
        Catalogue { types }
    }

    fn get(&self, kind: &str, name: &str) -> Option<&(SchemaSecrets, bool)> {
        self.types.get(&(kind.to_string(), name.to_string()))
    }
}

/// Mark in `doc` what the plugins' schemas say is secret, so a printed plan never shows
/// it: every such value, in the file and in what the server holds now (`stored`, each
/// kind's objects as the API shows them), is masked, and a channel's (or a top-level
/// monitor's) field that holds one is named as holding a secret. A third-party channel's
/// token is masked as a built-in's is; the host keeps no list of secret field names.
/// Inline channels of a policy have their values masked too.
pub fn mark<'a>(
    doc: &mut super::document::Document,
    stored: impl Iterator<Item = (Kind, &'a Map<String, Value>)>,
    catalogue: &Catalogue,
) {
    let mut values = Vec::new();
    for (kind, object, fields) in &mut doc.objects {
        fields.extend(secrets_of_object(*kind, object, catalogue, &mut values));
    }
    for (kind, object) in stored {
        secrets_of_object(kind, object, catalogue, &mut values);
    }
    for v in values {
        if !doc.secrets.contains(&v) {
            doc.secrets.push(v);
        }
    }
}

/// The secret values of one object of `kind`, added to `values`; returns its top-level
/// fields that hold one (none for a monitor whose settings sit in `config`, or a policy).
fn secrets_of_object(
    kind: Kind,
    object: &Map<String, Value>,
    catalogue: &Catalogue,
    values: &mut Vec<String>,
) -> Vec<String> {
    match kind {
        Kind::Channel => secrets_of(catalogue, "channel", object, values),
        Kind::Monitor => {
            let type_name = object.get("type").and_then(Value::as_str).unwrap_or("");
            if catalogue.get("monitor", type_name).is_some_and(|(_, t)| *t) {
                return secrets_of(catalogue, "monitor", object, values);
            }
            if let Some(Value::Object(config)) = object.get("config") {
                let mut config = config.clone();
                config.insert("type".into(), Value::String(type_name.to_string()));
                secrets_of(catalogue, "monitor", &config, values);
            }
            Vec::new()
        }
        Kind::Policy => {
            let mut policy = object.clone();
            for list in super::document::policy_channel_lists(&mut policy) {
                for entry in list.iter().filter_map(Value::as_object) {
                    secrets_of(catalogue, "channel", entry, values);
                }
            }
            Vec::new()
        }
        _ => Vec::new(),
    }
}

/// The secret values of `config` (a plugin configuration naming its `type`), added to
/// `values`; returns the top-level fields that hold one. A type the server does not
/// know marks nothing (the server refuses the object anyway).
fn secrets_of(
    catalogue: &Catalogue,
    plugin_kind: &str,
    config: &Map<String, Value>,
    values: &mut Vec<String>,
) -> Vec<String> {
    let type_name = config.get("type").and_then(Value::as_str).unwrap_or("");
    let Some((secrets, _)) = catalogue.get(plugin_kind, type_name) else {
        return Vec::new();
    };
    let mut named = Vec::new();
    let mut keep = |place: &[String], v: &Value| {
        if let Some(s) = v.as_str().filter(|s| !s.is_empty()) {
            values.push(s.to_string());
            if let Some(first) = place.first() {
                named.push(first.clone());
            }
        }
    };
    let mut copy = config.clone();
    secrets.each_secret(&mut copy, &mut |place, v| keep(place, v));
    for field in secrets.write_only_fields() {
        if let Some(v) = config.get(&field) {
            keep(std::slice::from_ref(&field), v);
        }
    }
    named
}

/// The variables handed out so far, each name once.
#[derive(Default)]
pub struct Placeholders {
    names: Vec<String>,
}

impl Placeholders {
    /// The variables, in the order they appear in the file.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// A new variable named from its parts: `TOCSIN_MONITOR_API_HEADERS_AUTHORIZATION`.
    fn new_name(&mut self, parts: &[&str]) -> String {
        let mut base = String::from("TOCSIN_");
        for part in parts {
            for c in part.chars() {
                let c = if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                };
                if !(c == '_' && base.ends_with('_')) {
                    base.push(c);
                }
            }
            if !base.ends_with('_') {
                base.push('_');
            }
        }
        let base = base.trim_end_matches('_').to_string();
        let mut name = base.clone();
        let mut n = 2;
        while self.names.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.names.push(name.clone());
        name
    }

    /// Replace each secret of one object's settings (`fields`) by a placeholder named
    /// after `prefix` and the value's place.
    fn replace(
        &mut self,
        secrets: &SchemaSecrets,
        prefix: &[&str],
        fields: &mut Map<String, Value>,
    ) {
        secrets.each_secret(fields, &mut |place, value| {
            let mut parts: Vec<&str> = prefix.to_vec();
            parts.extend(place.iter().map(String::as_str));
            *value = Value::from(format!("${{{}}}", self.new_name(&parts)));
        });
    }
}

/// `${` in a value read from the server is written `$${`, so apply takes it literally.
pub fn escape_dollars(value: &mut Value) {
    match value {
        Value::String(s) if s.contains("${") => *s = s.replace("${", "$${"),
        Value::Array(items) => items.iter_mut().for_each(escape_dollars),
        Value::Object(map) => map.values_mut().for_each(escape_dollars),
        _ => {}
    }
}

/// Replace the secrets of one object in file form (`kind`) by placeholders.
pub fn hide(
    kind: Kind,
    object: &mut Map<String, Value>,
    catalogue: &Catalogue,
    names: &mut Placeholders,
) {
    let label = super::document::identity(kind, object).unwrap_or_default();
    let type_name = object
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    match kind {
        Kind::Monitor => {
            let (secrets, top) = catalogue
                .get("monitor", &type_name)
                .cloned()
                .unwrap_or_else(|| (SchemaSecrets::unknown(), false));
            let prefix = ["monitor", label.as_str()];
            match object.get_mut("config") {
                Some(Value::Object(config)) if !top => names.replace(&secrets, &prefix, config),
                _ if top => {
                    // The type's own fields beside the common ones (and the file's
                    // `alertPolicy` reference).
                    let mut fields: Map<String, Value> = std::mem::take(object);
                    let common: Map<String, Value> = fields
                        .iter()
                        .filter(|(k, _)| {
                            let k = k.as_str();
                            MONITOR_FIELDS.contains(&k)
                                || matches!(k, "key" | "managedBy" | "alertPolicy")
                        })
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    fields.retain(|k, _| !common.contains_key(k));
                    names.replace(&secrets, &prefix, &mut fields);
                    // The file's order: common fields first, as written.
                    let mut ordered = common;
                    ordered.extend(fields);
                    *object = ordered;
                }
                _ => {}
            }
        }
        Kind::Channel => {
            let secrets = catalogue
                .get("channel", &type_name)
                .map_or_else(SchemaSecrets::unknown, |(s, _)| s.clone());
            settings_only(object, &["name", "type", "key", "managedBy"], |settings| {
                names.replace(&secrets, &["channel", label.as_str()], settings);
            });
        }
        Kind::Policy => {
            if let Some(Value::Array(list)) = object.get_mut("channels") {
                inline_channels(list, &["policy", &label, "channels"], catalogue, names);
            }
            if let Some(e) = object.get_mut("escalation") {
                // Steps name their variables by step: `..._ESCALATION_STEPS_0_CHANNELS_1_...`.
                let stepped = e.get("steps").is_some();
                let lists = crate::api::alert_policies::escalation_lists(e);
                for (i, list) in lists.into_iter().enumerate() {
                    let Value::Array(list) = list else { continue };
                    let step = i.to_string();
                    let prefix: Vec<&str> = if stepped {
                        vec!["policy", &label, "escalation", "steps", &step, "channels"]
                    } else {
                        vec!["policy", &label, "escalation", "channels"]
                    };
                    inline_channels(list, &prefix, catalogue, names);
                }
            }
        }
        Kind::Page | Kind::Window => {}
    }
}

/// A policy's inline channels (references stay as they are).
fn inline_channels(
    list: &mut [Value],
    prefix: &[&str],
    catalogue: &Catalogue,
    names: &mut Placeholders,
) {
    for (i, item) in list.iter_mut().enumerate() {
        let Value::Object(item) = item else { continue };
        let Some(t) = item.get("type").and_then(Value::as_str).map(str::to_string) else {
            continue;
        };
        let secrets = catalogue
            .get("channel", &t)
            .map_or_else(SchemaSecrets::unknown, |(s, _)| s.clone());
        let index = i.to_string();
        let mut parts = prefix.to_vec();
        parts.push(&index);
        settings_only(item, &["type"], |settings| {
            names.replace(&secrets, &parts, settings);
        });
    }
}

/// Run `f` on an object's fields other than `common`, keeping the object's order.
fn settings_only(
    object: &mut Map<String, Value>,
    common: &[&str],
    f: impl FnOnce(&mut Map<String, Value>),
) {
    let mut settings: Map<String, Value> = object
        .iter()
        .filter(|(k, _)| !common.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    f(&mut settings);
    for (k, v) in settings {
        object.insert(k, v);
    }
}

/// The lines at the top of an exported YAML or TOML file that name its variables.
pub fn header(names: &[String]) -> String {
    let mut out = String::from(
        "# Secrets are not in this file. `tocsin apply` reads each ${VARIABLE} below from the\n\
         # environment (an unset one stops it before any change). Write-only values\n\
         # (passwords, tokens) are never shown by the API: add them as ${VARIABLE}s too.\n",
    );
    if names.is_empty() {
        return out;
    }
    out.push_str("# Variables:\n");
    for n in names {
        out.push_str(&format!("#   {n}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn catalogue() -> Catalogue {
        let plugins = json!([
            {"kind": "monitor", "name": "http", "topLevelFields": true, "configSchema": {"properties": {
                "url": {"type": "string"},
                "headers": {"type": "object", "additionalProperties": {"type": "string", "x-tocsin-secret": true}}}}},
            {"kind": "monitor", "name": "redis", "topLevelFields": false, "configSchema": {"properties": {
                "host": {"type": "string"}, "password": {"type": "string", "writeOnly": true}}}},
            {"kind": "channel", "name": "slack", "configSchema": {"properties": {
                "webhookUrl": {"type": "string", "x-tocsin-secret": true}}}}
        ]);
        let items: Vec<Map<String, Value>> = plugins
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|p| p.as_object().cloned())
            .collect();
        Catalogue::of(&items)
    }

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn secrets_become_named_placeholders_and_the_rest_stays() {
        let c = catalogue();
        let mut names = Placeholders::default();
        let mut m = object(
            json!({"name": "Public API", "type": "http", "url": "https://a.test",
            "headers": {"Authorization": "Bearer s3cret", "X-Tenant": "t"}}),
        );
        hide(Kind::Monitor, &mut m, &c, &mut names);
        assert_eq!(
            m["headers"]["Authorization"],
            "${TOCSIN_MONITOR_PUBLIC_API_HEADERS_AUTHORIZATION}"
        );
        assert_eq!(
            m["headers"]["X-Tenant"],
            "${TOCSIN_MONITOR_PUBLIC_API_HEADERS_X_TENANT}"
        );
        assert_eq!(m["url"], "https://a.test");
        assert_eq!(m["name"], "Public API");

        let mut ch = object(json!({"key": "ops", "name": "ops chat", "type": "slack",
            "webhookUrl": "https://hooks.slack.test/services/T/B/X"}));
        hide(Kind::Channel, &mut ch, &c, &mut names);
        assert_eq!(ch["webhookUrl"], "${TOCSIN_CHANNEL_OPS_WEBHOOKURL}");
        assert_eq!(ch["name"], "ops chat");

        let mut p = object(json!({"name": "p", "channels": [{"channel": "ops"},
            {"type": "slack", "webhookUrl": "https://hooks.slack.test/x"}],
            "escalation": {"delayMinutes": 5, "channels": [{"type": "slack", "webhookUrl": "https://hooks.slack.test/y"}]}}));
        hide(Kind::Policy, &mut p, &c, &mut names);
        assert_eq!(
            p["channels"][1]["webhookUrl"],
            "${TOCSIN_POLICY_P_CHANNELS_1_WEBHOOKURL}"
        );
        assert_eq!(p["channels"][1]["type"], "slack");
        assert_eq!(
            p["escalation"]["channels"][0]["webhookUrl"],
            "${TOCSIN_POLICY_P_ESCALATION_CHANNELS_0_WEBHOOKURL}"
        );

        // The same name twice gets a number.
        let mut again = object(
            json!({"name": "Public API", "type": "http", "url": "https://b.test",
            "headers": {"Authorization": "x"}}),
        );
        hide(Kind::Monitor, &mut again, &c, &mut names);
        assert_eq!(
            again["headers"]["Authorization"],
            "${TOCSIN_MONITOR_PUBLIC_API_HEADERS_AUTHORIZATION_2}"
        );
        assert_eq!(names.names().len(), 6);
        assert!(header(names.names()).contains("#   TOCSIN_CHANNEL_OPS_WEBHOOKURL\n"));
    }

    #[test]
    fn an_unknown_type_hides_every_setting_and_dollars_are_escaped() {
        let c = catalogue();
        let mut names = Placeholders::default();
        let mut ch = object(json!({"name": "x", "type": "gone", "token": "t", "n": null}));
        hide(Kind::Channel, &mut ch, &c, &mut names);
        assert_eq!(ch["token"], "${TOCSIN_CHANNEL_X_TOKEN}");
        assert_eq!(ch["name"], "x");
        assert_eq!(ch["type"], "gone");
        let mut v = json!({"body": "cost: ${5}", "n": 1});
        escape_dollars(&mut v);
        assert_eq!(v["body"], "cost: $${5}");
    }
}
