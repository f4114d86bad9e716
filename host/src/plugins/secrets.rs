//! What a plugin's configuration schema says about secrets, read once from the schema so
//! that no module names a plugin or a field: which values are write-only (`writeOnly`:
//! stored and handed to the plugin, never shown), which are secrets a `read` principal,
//! the audit log and `tocsin export` never see (`x-tocsin-secret`: a webhook URL whose path
//! is the credential, a request header's value), and which fields say where the
//! configuration sends them (`x-tocsin-target`: a host, a port, a server URL), so that a
//! stored secret is never carried to a new target.
//!
//! The walk follows `properties`, `additionalProperties` and `patternProperties` (a map's
//! values), `items` and `prefixItems`, `allOf`/`anyOf`/`oneOf`, and local `$ref`s, so a
//! secret may sit at any depth. A `x-tocsin-secret` on the schema's root makes every value
//! a secret; a configuration whose schema is unknown (its plugin is no longer loaded) is
//! treated the same way.

use serde_json::{Map, Value};

/// The keyword marking a value as a secret shown only to writers.
pub const SECRET_KEYWORD: &str = "x-tocsin-secret";
/// The keyword marking a top-level field as (part of) where the configuration sends its
/// secrets.
pub const TARGET_KEYWORD: &str = "x-tocsin-target";
/// JSON Schema's own keyword for a value never returned.
pub const WRITE_ONLY_KEYWORD: &str = "writeOnly";

/// What stands in for a hidden value.
pub const REDACTED: &str = "[redacted]";

/// Nested schemas followed at most this deep (a `$ref` cycle ends here).
const MAX_DEPTH: usize = 24;

/// One step from a value to one inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// An object's field of this name.
    Field(String),
    /// Every value of a map.
    AnyValue,
    /// Every item of a list.
    AnyItem,
}

/// The secret-bearing places of one configuration schema.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SchemaSecrets {
    write_only: Vec<Vec<Step>>,
    secret: Vec<Vec<Step>>,
    targets: Vec<String>,
    /// The schema's `default` of target fields that have one: a field left out is its
    /// default, so `{"tls": false}` is no change from a configuration without `tls`.
    target_defaults: Vec<(String, Value)>,
    /// Every value is a secret (the root says so, or the schema is unknown).
    all_secret: bool,
}

impl SchemaSecrets {
    /// Read a configuration schema.
    pub fn of(schema: &Value) -> SchemaSecrets {
        let mut out = SchemaSecrets {
            all_secret: schema[SECRET_KEYWORD] == Value::Bool(true),
            ..SchemaSecrets::default()
        };
        walk(
            schema,
            schema,
            &mut Vec::new(),
            &mut Vec::new(),
            &mut out,
            0,
        );
        dedup(&mut out.write_only);
        out.secret.retain(|p| !out.write_only.contains(p));
        dedup(&mut out.secret);
        out.targets.sort();
        out.targets.dedup();
        out
    }

    /// A configuration nobody describes (its plugin is gone): every value a secret.
    pub fn unknown() -> SchemaSecrets {
        SchemaSecrets {
            all_secret: true,
            ..SchemaSecrets::default()
        }
    }

    /// The top-level fields marked write-only (those a request may leave out to keep).
    pub fn write_only_fields(&self) -> Vec<String> {
        self.write_only
            .iter()
            .filter_map(|p| match p.as_slice() {
                [Step::Field(name)] => Some(name.clone()),
                _ => None,
            })
            .collect()
    }

    /// The top-level fields marked as the configuration's target.
    pub fn targets(&self) -> &[String] {
        &self.targets
    }

    /// Whether the schema marks anything at all (a read view differs from a writer's).
    pub fn has_secrets(&self) -> bool {
        self.all_secret || !self.secret.is_empty() || !self.write_only.is_empty()
    }

    /// Remove the write-only values: what anyone is shown.
    pub fn hide_write_only(&self, config: &mut Map<String, Value>) {
        for path in &self.write_only {
            remove_at(config, path);
        }
    }

    /// Write-only values removed and secrets replaced by [`REDACTED`] (a URL keeps its
    /// origin): what a `read` principal and the audit log are shown.
    pub fn redact(&self, config: &mut Map<String, Value>) {
        self.hide_write_only(config);
        self.each_secret(config, &mut |_, v| *v = redacted(v));
    }

    /// Call `f` with each secret value present (not null) and its place: the field names,
    /// map keys and list positions that lead to it.
    pub fn each_secret(
        &self,
        config: &mut Map<String, Value>,
        f: &mut dyn FnMut(&[String], &mut Value),
    ) {
        if self.all_secret {
            for (name, v) in config.iter_mut() {
                if !v.is_null() {
                    f(std::slice::from_ref(name), v);
                }
            }
            return;
        }
        for path in &self.secret {
            let mut place = Vec::new();
            visit_map(config, path, &mut place, f);
        }
    }

    /// The first target field whose value differs between two configurations (a URL
    /// compared by its origin: scheme, host and port), if any.
    pub fn changed_target(
        &self,
        before: &Map<String, Value>,
        after: &Map<String, Value>,
    ) -> Option<&str> {
        let value = |config: &Map<String, Value>, t: &str| {
            let given = config.get(t).filter(|v| !v.is_null());
            target_of(given.or_else(|| {
                self.target_defaults
                    .iter()
                    .find(|(name, _)| name == t)
                    .map(|(_, d)| d)
            }))
        };
        self.targets
            .iter()
            .find(|t| value(before, t) != value(after, t))
            .map(String::as_str)
    }
}

fn dedup(paths: &mut Vec<Vec<Step>>) {
    let mut seen: Vec<Vec<Step>> = Vec::new();
    paths.retain(|p| {
        let new = !seen.contains(p);
        if new {
            seen.push(p.clone());
        }
        new
    });
}

/// `refs`: the `$ref`s being followed (one met again is a cycle, not followed).
fn walk<'a>(
    schema: &'a Value,
    root: &'a Value,
    path: &mut Vec<Step>,
    refs: &mut Vec<&'a str>,
    out: &mut SchemaSecrets,
    depth: usize,
) {
    if depth > MAX_DEPTH || !schema.is_object() {
        return;
    }
    if let Some(r) = schema["$ref"].as_str()
        && !refs.contains(&r)
        && let Some(target) = r.strip_prefix('#').and_then(|p| root.pointer(p))
    {
        refs.push(r);
        walk(target, root, path, refs, out, depth + 1);
        refs.pop();
    }
    if !path.is_empty() {
        if schema[WRITE_ONLY_KEYWORD] == Value::Bool(true) {
            out.write_only.push(path.clone());
        }
        if schema[SECRET_KEYWORD] == Value::Bool(true) {
            out.secret.push(path.clone());
        }
    }
    if let [Step::Field(name)] = path.as_slice()
        && schema[TARGET_KEYWORD] == Value::Bool(true)
    {
        out.targets.push(name.clone());
        if let Some(default) = schema.get("default").filter(|d| !d.is_null()) {
            out.target_defaults.push((name.clone(), default.clone()));
        }
    }
    for combinator in ["allOf", "anyOf", "oneOf"] {
        for sub in schema[combinator].as_array().into_iter().flatten() {
            walk(sub, root, path, refs, out, depth + 1);
        }
    }
    if let Some(props) = schema["properties"].as_object() {
        for (name, sub) in props {
            path.push(Step::Field(name.clone()));
            walk(sub, root, path, refs, out, depth + 1);
            path.pop();
        }
    }
    let values = std::iter::once(&schema["additionalProperties"]).chain(
        schema["patternProperties"]
            .as_object()
            .into_iter()
            .flat_map(|p| p.values()),
    );
    for sub in values {
        path.push(Step::AnyValue);
        walk(sub, root, path, refs, out, depth + 1);
        path.pop();
    }
    let items = std::iter::once(&schema["items"])
        .chain(schema["prefixItems"].as_array().into_iter().flatten());
    for sub in items {
        path.push(Step::AnyItem);
        walk(sub, root, path, refs, out, depth + 1);
        path.pop();
    }
}

fn visit_map(
    map: &mut Map<String, Value>,
    path: &[Step],
    place: &mut Vec<String>,
    f: &mut dyn FnMut(&[String], &mut Value),
) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match first {
        Step::Field(name) => {
            if let Some(v) = map.get_mut(name) {
                place.push(name.clone());
                visit(v, rest, place, f);
                place.pop();
            }
        }
        Step::AnyValue => {
            for (name, v) in map.iter_mut() {
                place.push(name.clone());
                visit(v, rest, place, f);
                place.pop();
            }
        }
        Step::AnyItem => {}
    }
}

fn visit(
    value: &mut Value,
    path: &[Step],
    place: &mut Vec<String>,
    f: &mut dyn FnMut(&[String], &mut Value),
) {
    if path.is_empty() {
        if !value.is_null() {
            f(place, value);
        }
        return;
    }
    match value {
        Value::Object(map) => visit_map(map, path, place, f),
        Value::Array(items) if path[0] == Step::AnyItem => {
            for (i, item) in items.iter_mut().enumerate() {
                place.push(i.to_string());
                visit(item, &path[1..], place, f);
                place.pop();
            }
        }
        _ => {}
    }
}

fn remove_at(map: &mut Map<String, Value>, path: &[Step]) {
    match path {
        [] => {}
        [Step::Field(name)] => {
            map.remove(name);
        }
        [Step::AnyValue] => map.clear(),
        [Step::Field(name), rest @ ..] => {
            if let Some(v) = map.get_mut(name) {
                remove_in(v, rest);
            }
        }
        [Step::AnyValue, rest @ ..] => {
            for v in map.values_mut() {
                remove_in(v, rest);
            }
        }
        [Step::AnyItem, ..] => {}
    }
}

fn remove_in(value: &mut Value, path: &[Step]) {
    match value {
        Value::Object(map) => remove_at(map, path),
        Value::Array(items) => match path {
            [Step::AnyItem] => items.clear(),
            [Step::AnyItem, rest @ ..] => {
                for item in items {
                    remove_in(item, rest);
                }
            }
            _ => {}
        },
        _ => {}
    }
}

/// A secret as a `read` principal sees it: an http(s) URL keeps its origin
/// (`https://hooks.example.com/[redacted]`), anything else is [`REDACTED`].
pub fn redacted(value: &Value) -> Value {
    if let Value::String(s) = value
        && let Some(origin) = origin_of(s)
    {
        return Value::from(format!("{origin}/{REDACTED}"));
    }
    Value::from(REDACTED)
}

/// `https://hooks.example.com:8443` of an absolute http(s) URL.
fn origin_of(s: &str) -> Option<String> {
    let url = reqwest::Url::parse(s.trim()).ok()?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return None;
    }
    Some(url.origin().ascii_serialization())
}

/// What a target field's value points at: a URL's origin, anything else as it is.
fn target_of(value: Option<&Value>) -> Option<Value> {
    match value {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Value::from(origin_of(s).unwrap_or_else(|| s.clone()))),
        Some(v) => Some(v.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn finds_write_only_secret_and_target_fields_at_any_depth() {
        let schema = json!({
            "type": "object",
            "properties": {
                "host": {"type": "string", "x-tocsin-target": true},
                "password": {"type": ["string", "null"], "writeOnly": true},
                "headers": {"type": "object",
                    "additionalProperties": {"type": "string", "x-tocsin-secret": true}},
                "hook": {"anyOf": [{"$ref": "#/$defs/Hook"}, {"type": "null"}]},
                "list": {"type": "array", "items": {"$ref": "#/$defs/Hook"}}
            },
            "$defs": {"Hook": {"type": "object", "properties": {
                "url": {"type": "string", "x-tocsin-secret": true},
                "name": {"type": "string"}
            }}}
        });
        let s = SchemaSecrets::of(&schema);
        assert_eq!(s.write_only_fields(), ["password"]);
        assert_eq!(s.targets(), ["host"]);
        assert!(s.has_secrets());

        let mut config = object(json!({
            "host": "db.internal",
            "password": "pw",
            "headers": {"Authorization": "Bearer t", "X-Tenant": "a"},
            "hook": {"url": "https://hooks.test:8443/services/T/B/secret?x=1", "name": "n"},
            "list": [{"url": "not a url", "name": "m"}, {"url": null}]
        }));
        let mut places = Vec::new();
        s.each_secret(&mut config.clone(), &mut |p, _| places.push(p.join(".")));
        places.sort();
        assert_eq!(
            places,
            [
                "headers.Authorization",
                "headers.X-Tenant",
                "hook.url",
                "list.0.url"
            ]
        );
        s.redact(&mut config);
        assert_eq!(
            Value::Object(config),
            json!({
                "host": "db.internal",
                "headers": {"Authorization": REDACTED, "X-Tenant": REDACTED},
                "hook": {"url": "https://hooks.test:8443/[redacted]", "name": "n"},
                "list": [{"url": REDACTED, "name": "m"}, {"url": null}]
            })
        );
    }

    #[test]
    fn a_schema_without_marks_hides_nothing_and_an_unknown_one_everything() {
        let plain = SchemaSecrets::of(&json!({"properties": {"target": {"type": "string"}}}));
        assert!(!plain.has_secrets());
        let mut c = object(json!({"target": "ops@example.test"}));
        plain.redact(&mut c);
        assert_eq!(c["target"], "ops@example.test");

        for s in [
            SchemaSecrets::unknown(),
            SchemaSecrets::of(&json!({"x-tocsin-secret": true, "properties": {}})),
        ] {
            let mut c = object(json!({"a": "x", "b": 3, "c": null}));
            s.redact(&mut c);
            assert_eq!(
                Value::Object(c),
                json!({"a": REDACTED, "b": REDACTED, "c": null})
            );
        }
    }

    #[test]
    fn a_ref_cycle_ends() {
        let schema = json!({"$ref": "#", "properties": {"next": {"$ref": "#"},
            "key": {"type": "string", "writeOnly": true}}});
        let s = SchemaSecrets::of(&schema);
        assert_eq!(s.write_only_fields(), ["key"]);
        let mut c = object(json!({"key": "k", "next": {"key": "k2", "next": {}}}));
        s.hide_write_only(&mut c);
        assert_eq!(Value::Object(c), json!({"next": {"next": {}}}));
    }

    #[test]
    fn a_target_changes_with_its_host_port_or_url_origin() {
        let s = SchemaSecrets::of(&json!({"properties": {
            "host": {"type": "string", "x-tocsin-target": true},
            "port": {"type": "integer", "x-tocsin-target": true},
            "serverUrl": {"type": "string", "x-tocsin-target": true},
            "topic": {"type": "string"}
        }}));
        let before = object(
            json!({"host": "a", "port": 6379, "serverUrl": "https://ntfy.sh/x", "topic": "t"}),
        );
        let same = object(
            json!({"host": "a", "port": 6379, "serverUrl": "https://NTFY.sh:443/y", "topic": "u"}),
        );
        assert_eq!(s.changed_target(&before, &same), None);
        let moved = object(json!({"host": "a", "port": 6380, "serverUrl": "https://ntfy.sh/x"}));
        assert_eq!(s.changed_target(&before, &moved), Some("port"));
        let moved = object(json!({"host": "b", "port": 6379, "serverUrl": "https://ntfy.sh/x"}));
        assert_eq!(s.changed_target(&before, &moved), Some("host"));
        let moved = object(json!({"host": "a", "port": 6379, "serverUrl": "http://ntfy.sh/x"}));
        assert_eq!(s.changed_target(&before, &moved), Some("serverUrl"));
    }

    #[test]
    fn turning_tls_off_or_its_checks_off_is_a_new_target_and_a_default_is_no_change() {
        let s = SchemaSecrets::of(&json!({"properties": {
            "host": {"type": "string", "x-tocsin-target": true},
            "tls": {"type": "boolean", "default": false, "x-tocsin-target": true},
            "ignoreTlsErrors": {"type": "boolean", "default": false, "x-tocsin-target": true}
        }}));
        let plain = object(json!({"host": "a"}));
        assert_eq!(
            s.changed_target(&plain, &object(json!({"host": "a", "tls": false}))),
            None,
            "a default given is no change"
        );
        let tls = object(json!({"host": "a", "tls": true}));
        assert_eq!(s.changed_target(&tls, &plain), Some("tls"));
        assert_eq!(
            s.changed_target(
                &tls,
                &object(json!({"host": "a", "tls": true, "ignoreTlsErrors": true}))
            ),
            Some("ignoreTlsErrors")
        );
    }
}
