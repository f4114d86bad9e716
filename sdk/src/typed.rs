//! A plugin's configuration as one typed struct. Derive `Deserialize`, `Serialize` and
//! `JsonSchema` on it, implement [`TypedConfig`] (usually empty), and the SDK gives the
//! three things a plugin needs: the JSON Schema `describe()` returns, parsing that reports
//! every problem by field (checked against that same schema, so the two cannot drift),
//! and the canonical form the server stores.
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use tocsin_plugin_sdk::typed::{PluginConfig, TypedConfig};
//!
//! #[derive(Deserialize, Serialize, JsonSchema)]
//! #[serde(rename_all = "camelCase", deny_unknown_fields)]
//! #[schemars(title = "tcp monitor")]
//! struct TcpConfig {
//!     /// Host name or IP address.
//!     #[schemars(length(min = 1, max = 253), extend("format" = "hostname"))]
//!     host: String,
//!     /// TCP port.
//!     #[schemars(range(min = 1, max = 65535))]
//!     port: u16,
//! }
//! impl TypedConfig for TcpConfig {}
//!
//! let problems = TcpConfig::parse(r#"{"host":"a b","port":0,"colour":1}"#).err().unwrap();
//! let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
//! assert_eq!(fields, ["colour", "host", "port"]);
//! assert_eq!(problems[2].message, "must be an integer from 1 to 65535");
//! ```
//!
//! The schema's `title` names the plugin in messages ("is not a field of the tcp monitor").
//! Rules that span fields, and normalisation such as trimming, go in
//! [`TypedConfig::refine`]; the [`Reader`](crate::config::Reader) stays for plugins that
//! read their configuration by hand.

use crate::config::valid_hostname;
use crate::types::FieldError;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// What the SDK needs of a plugin's configuration type.
pub trait PluginConfig: Sized {
    /// JSON Schema (draft 2020-12) of the configuration object.
    fn schema() -> Value;
    /// Parse and validate configuration text, reporting every problem by field.
    fn parse(text: &str) -> Result<Self, Vec<FieldError>>;
    /// The configuration as the server stores it (defaults filled in, values normalised).
    fn canonical(&self) -> Value;
    /// Read a configuration this plugin already accepted (what the server stores is the
    /// output of [`canonical`](PluginConfig::canonical)); called on every check, so a
    /// typed configuration skips the schema walk here.
    fn from_canonical(text: &str) -> Result<Self, Vec<FieldError>> {
        Self::parse(text)
    }
}

/// A rule of one field the schema cannot say (a URL's scheme, a header's syntax): given the
/// field's name and its value, the problems (named by field, so a rule about an object can
/// name its entries, `headers.X-Token`).
pub type FieldRule = fn(&str, &Value) -> Vec<FieldError>;

/// A configuration derived from one struct; see the [module](self) documentation.
pub trait TypedConfig: DeserializeOwned + Serialize + JsonSchema {
    /// Rules of single top-level fields, run in the same pass as the schema on every field
    /// present whose shape is right, so their problems come with all the others.
    fn field_rules() -> Vec<(&'static str, FieldRule)> {
        Vec::new()
    }

    /// Rules across fields and normalisation (trimming, for example), once every field has
    /// the shape the schema asks for.
    fn refine(self) -> Result<Self, Vec<FieldError>> {
        Ok(self)
    }
}

impl<T: TypedConfig> PluginConfig for T {
    fn schema() -> Value {
        schema_of::<T>()
    }

    fn parse(text: &str) -> Result<Self, Vec<FieldError>> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| vec![field_error("config", format!("is not valid JSON: {e}"))])?;
        if !value.is_object() {
            return Err(vec![field_error("config", "must be a JSON object")]);
        }
        let schema = Self::schema();
        let kind = schema["title"]
            .as_str()
            .unwrap_or("configuration")
            .to_string();
        let rules = T::field_rules();
        let mut found = Vec::new();
        check(&schema, &value, "", &kind, &rules, &mut found);
        if !found.is_empty() {
            return Err(found);
        }
        // The schema and the type come from the same struct, so this only fails on a
        // rule the schema cannot say (a value out of a type's range, say).
        let typed: T = serde_json::from_value(value)
            .map_err(|e| vec![field_error("config", format!("is invalid: {e}"))])?;
        typed.refine()
    }

    fn canonical(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    fn from_canonical(text: &str) -> Result<Self, Vec<FieldError>> {
        match serde_json::from_str::<T>(text) {
            Ok(typed) => typed.refine(),
            Err(_) => Self::parse(text),
        }
    }
}

/// The JSON Schema of a type, with every subschema inline (no `$ref`).
pub fn schema_of<T: JsonSchema>() -> Value {
    schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value()
}

/// A problem with one field.
pub fn field_error(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// Every problem of `value` against `schema`: the keywords the derive produces (`type`,
/// `properties`, `required`, `additionalProperties`, `minimum`/`exclusiveMinimum`/`maximum`,
/// `minLength`/
/// `maxLength`, `enum`/`const`, `anyOf`/`oneOf`, `items`, `minItems`/`maxItems`, and the
/// `hostname` format). `kind` names the plugin in "is not a field of the ..." messages.
pub fn problems(schema: &Value, value: &Value, kind: &str) -> Vec<FieldError> {
    let mut out = Vec::new();
    check(schema, value, "", kind, &[], &mut out);
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn types(schema: &Value) -> Vec<&str> {
    match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn fits_type(t: &str, value: &Value) -> bool {
    match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => true,
    }
}

/// "from 1 to 10", "of at least 1", ... for a numeric schema.
fn bounds(schema: &Value) -> String {
    let show = |v: &Value| v.to_string();
    if let Some(lo) = schema.get("exclusiveMinimum") {
        return match schema.get("maximum") {
            Some(hi) => format!(" greater than {} and at most {}", show(lo), show(hi)),
            None => format!(" greater than {}", show(lo)),
        };
    }
    match (schema.get("minimum"), schema.get("maximum")) {
        (Some(lo), Some(hi)) => format!(" from {} to {}", show(lo), show(hi)),
        (Some(lo), None) => format!(" of at least {}", show(lo)),
        (None, Some(hi)) => format!(" of at most {}", show(hi)),
        (None, None) => String::new(),
    }
}

/// What a value of this schema must be, in words.
fn expected(schema: &Value) -> String {
    let primary = types(schema)
        .into_iter()
        .find(|t| *t != "null")
        .unwrap_or("");
    match primary {
        "integer" => format!("must be an integer{}", bounds(schema)),
        "number" => format!("must be a number{}", bounds(schema)),
        "string" => "must be a string".into(),
        "boolean" => "must be true or false".into(),
        "array" if types(&schema["items"]).contains(&"string") => {
            "must be a list of strings".into()
        }
        "array" => "must be a list".into(),
        "object" => "must be an object".into(),
        _ => "has the wrong type".into(),
    }
}

fn choices(values: &[Value]) -> String {
    let shown: Vec<String> = values
        .iter()
        .filter(|v| !v.is_null())
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        .collect();
    match shown.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.clone(),
        None => String::new(),
    }
}

fn check(
    schema: &Value,
    value: &Value,
    path: &str,
    kind: &str,
    rules: &[(&str, FieldRule)],
    out: &mut Vec<FieldError>,
) {
    let here = if path.is_empty() { "config" } else { path };
    for key in ["anyOf", "oneOf"] {
        if let Some(alternatives) = schema[key].as_array() {
            let fits = alternatives.iter().any(|alt| {
                let mut scratch = Vec::new();
                check(alt, value, path, kind, &[], &mut scratch);
                scratch.is_empty()
            });
            if fits {
                return;
            }
            let consts: Vec<Value> = alternatives
                .iter()
                .filter_map(|a| a.get("const").cloned())
                .collect();
            if !consts.is_empty() && consts.len() == alternatives.len() {
                out.push(field_error(here, format!("must be {}", choices(&consts))));
            } else if let Some(first) = alternatives
                .iter()
                .find(|a| !types(a).iter().all(|t| *t == "null"))
            {
                check(first, value, path, kind, &[], out);
            }
            return;
        }
    }
    if let Some(allowed) = schema["enum"].as_array() {
        // `x-tocsin-ignore-case`: a string may differ from its choice in ASCII case (HTTP
        // methods); the type's `refine` writes it as listed.
        let ignoring_case = schema["x-tocsin-ignore-case"] == true
            && value.as_str().is_some_and(|v| {
                allowed
                    .iter()
                    .filter_map(Value::as_str)
                    .any(|a| a.eq_ignore_ascii_case(v))
            });
        if !allowed.contains(value) && !ignoring_case {
            out.push(field_error(here, format!("must be {}", choices(allowed))));
        }
        return;
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            out.push(field_error(
                here,
                format!("must be {}", choices(std::slice::from_ref(c))),
            ));
        }
        return;
    }
    let ts = types(schema);
    if !ts.is_empty() && !ts.iter().any(|t| fits_type(t, value)) {
        out.push(field_error(here, expected(schema)));
        return;
    }
    match value {
        Value::Number(n) => {
            let v = n.as_f64().unwrap_or(f64::NAN);
            let below = schema["minimum"].as_f64().is_some_and(|lo| v < lo)
                || schema["exclusiveMinimum"]
                    .as_f64()
                    .is_some_and(|lo| v <= lo);
            let above = schema["maximum"].as_f64().is_some_and(|hi| v > hi);
            if below || above {
                out.push(field_error(here, expected(schema)));
            }
        }
        Value::String(s) => {
            let chars = s.chars().count() as u64;
            let min = schema["minLength"].as_u64();
            if min.is_some_and(|m| m >= 1) && s.trim().is_empty() {
                out.push(field_error(here, "must not be blank"));
            } else if let Some(max) = schema["maxLength"].as_u64().filter(|m| chars > *m) {
                out.push(field_error(
                    here,
                    format!("must be at most {max} characters"),
                ));
            } else if let Some(min) = min.filter(|m| chars < *m) {
                out.push(field_error(
                    here,
                    format!("must be at least {min} characters"),
                ));
            } else if schema["format"] == "hostname" && !valid_hostname(s.trim()) {
                out.push(field_error(
                    here,
                    "must be a host name (letters, digits, `-`, `.`) or an IP address, without scheme, port or path",
                ));
            }
        }
        Value::Array(items) => {
            let n = items.len() as u64;
            if let Some(max) = schema["maxItems"].as_u64().filter(|m| n > *m) {
                out.push(field_error(
                    here,
                    format!("must have at most {max} entries"),
                ));
            } else if let Some(min) = schema["minItems"].as_u64().filter(|m| n < *m) {
                out.push(field_error(
                    here,
                    format!("must have at least {min} entries"),
                ));
            } else if let Some(item) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    check(item, v, &join(path, &i.to_string()), kind, &[], out);
                }
            }
        }
        Value::Object(object) => check_object(schema, object, path, kind, rules, out),
        Value::Null | Value::Bool(_) => {}
    }
}

fn check_object(
    schema: &Value,
    object: &Map<String, Value>,
    path: &str,
    kind: &str,
    rules: &[(&str, FieldRule)],
    out: &mut Vec<FieldError>,
) {
    let empty = Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (key, v) in object {
        if properties.contains_key(key) {
            continue;
        }
        match &schema["additionalProperties"] {
            Value::Bool(false) => out.push(field_error(
                &join(path, key),
                format!("is not a field of the {kind}"),
            )),
            extra @ Value::Object(_) => check(extra, v, &join(path, key), kind, &[], out),
            _ => {}
        }
    }
    for (key, sub) in properties {
        let field = join(path, key);
        match object.get(key) {
            None | Some(Value::Null)
                if required.contains(&key.as_str()) && !types(sub).contains(&"null") =>
            {
                out.push(field_error(&field, "is required"));
            }
            None => {}
            Some(v) => {
                let before = out.len();
                check(sub, v, &field, kind, &[], out);
                if out.len() == before && !v.is_null() {
                    for (_, rule) in rules.iter().filter(|(name, _)| *name == key.as_str()) {
                        out.extend(rule(&field, v));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Fast,
        Thorough,
    }

    /// A sample with one field of each kind.
    #[derive(Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    #[schemars(title = "sample monitor")]
    struct Sample {
        #[schemars(length(min = 1, max = 20), extend("format" = "hostname"))]
        host: String,
        #[schemars(range(min = 1, max = 10))]
        #[serde(default = "three")]
        count: u8,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(range(min = 0.5, max = 2.0))]
        ratio: Option<f64>,
        #[serde(default)]
        mode: Option<Mode>,
        #[serde(default)]
        #[schemars(length(max = 2))]
        tags: Vec<String>,
    }

    fn three() -> u8 {
        3
    }

    impl TypedConfig for Sample {
        fn refine(mut self) -> Result<Self, Vec<FieldError>> {
            self.host = self.host.trim().to_string();
            if self.mode == Some(Mode::Thorough) && self.count < 5 {
                return Err(vec![field_error(
                    "count",
                    "must be at least 5 when mode is thorough",
                )]);
            }
            Ok(self)
        }
    }

    fn fields(problems: &[FieldError]) -> Vec<(&str, &str)> {
        problems
            .iter()
            .map(|p| (p.field.as_str(), p.message.as_str()))
            .collect()
    }

    #[test]
    fn the_schema_comes_from_the_struct() {
        let s = Sample::schema();
        assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert_eq!(s["title"], "sample monitor");
        assert_eq!(s["required"], serde_json::json!(["host"]));
        assert_eq!(s["properties"]["count"]["default"], 3);
        assert_eq!(s["properties"]["count"]["maximum"], 10);
        assert_eq!(s["additionalProperties"], false);
        assert!(s.to_string().find("$ref").is_none(), "{s}");
    }

    #[test]
    fn every_problem_is_reported_by_field() {
        let p = Sample::parse(
            r#"{"colour":1,"host":"a b","count":11,"ratio":3,"mode":"slow","tags":["a","b","c"]}"#,
        )
        .expect_err("invalid");
        assert_eq!(
            fields(&p),
            [
                ("colour", "is not a field of the sample monitor"),
                (
                    "host",
                    "must be a host name (letters, digits, `-`, `.`) or an IP address, without scheme, port or path"
                ),
                ("count", "must be an integer from 1 to 10"),
                ("ratio", "must be a number from 0.5 to 2.0"),
                ("mode", "must be fast or thorough"),
                ("tags", "must have at most 2 entries"),
            ]
        );
        let p = Sample::parse(r#"{"host":"  ","count":"x","tags":[1]}"#).expect_err("invalid");
        assert_eq!(
            fields(&p),
            [
                ("host", "must not be blank"),
                ("count", "must be an integer from 1 to 10"),
                ("tags.0", "must be a string"),
            ]
        );
        assert_eq!(
            fields(&Sample::parse("{}").expect_err("missing")),
            [("host", "is required")]
        );
        assert_eq!(
            fields(&Sample::parse("[]").expect_err("not an object")),
            [("config", "must be a JSON object")]
        );
        assert_eq!(Sample::parse("{").expect_err("not JSON")[0].field, "config");
    }

    #[test]
    fn a_choice_may_ignore_case_when_the_schema_says_so() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "strict": {"type": "string", "enum": ["GET", "HEAD"]},
                "loose": {"type": "string", "enum": ["GET", "HEAD"], "x-tocsin-ignore-case": true},
            },
        });
        let mut out = Vec::new();
        let value = serde_json::json!({"strict": "GET", "loose": "head"});
        check(&schema, &value, "", "sample", &[], &mut out);
        assert!(out.is_empty(), "{out:?}");
        let value = serde_json::json!({"strict": "get", "loose": "PATCH"});
        check(&schema, &value, "", "sample", &[], &mut out);
        let fields: Vec<&str> = out.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["strict", "loose"]);
    }

    #[test]
    fn defaults_fill_in_and_refine_normalises_and_checks_across_fields() {
        let c = Sample::parse(r#"{"host":" db.internal ","mode":null}"#).expect("valid");
        assert_eq!(c.host, "db.internal");
        assert_eq!(
            c.canonical(),
            serde_json::json!({"host": "db.internal", "count": 3, "mode": null, "tags": []})
        );
        let p = Sample::parse(r#"{"host":"x","mode":"thorough"}"#).expect_err("rule");
        assert_eq!(
            fields(&p),
            [("count", "must be at least 5 when mode is thorough")]
        );
        let stored = c.canonical().to_string();
        assert_eq!(Sample::from_canonical(&stored).expect("stored"), c);
        // What no longer reads as the type gets the full list of problems.
        assert_eq!(
            fields(&Sample::from_canonical(r#"{"host":1}"#).expect_err("bad")),
            [("host", "must be a string")]
        );
    }
}
