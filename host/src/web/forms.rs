//! Monitor forms generated from each plugin's JSON Schema (what `describe` returns), so
//! a plugin dropped into the plugins directory gets a working form with its own fields,
//! defaults, limits and help text. The form posts JSON to the API; the API's field errors
//! are shown next to their fields.

use serde_json::{Map, Value};

/// One input of a generated form.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property name (the API's field name).
    pub name: String,
    pub label: String,
    pub help: String,
    pub required: bool,
    /// How the script reads it back: `text`, `number`, `boolean`, `select`, `map`,
    /// `list` or `json`.
    pub kind: &'static str,
    /// The `<input type>` for `text` and `number` kinds.
    pub input: &'static str,
    pub min: Option<String>,
    pub max: Option<String>,
    pub choices: Vec<String>,
    /// Whether a select offers "(none)": an optional choice without a default.
    pub blank: bool,
    /// Shown in an empty input: "set, unchanged" for a stored secret the page leaves out.
    pub placeholder: String,
    /// A map's entries (headers), one row each.
    pub pairs: Vec<(String, String)>,
    /// Suggestions (the schema's `examples`), offered in a datalist.
    pub examples: Vec<String>,
    /// The value to show (from the monitor being edited, else the schema's default).
    pub value: String,
    pub checked: bool,
}

/// Mark the fields whose stored value the page leaves out (write-only secrets): empty,
/// they say the value is set and is kept unless something is typed.
pub fn mark_kept(fields: &mut [Field], kept: &[String]) {
    for f in fields.iter_mut().filter(|f| kept.contains(&f.name)) {
        f.placeholder = "set, unchanged: type to replace".to_string();
        f.required = false;
    }
}

/// Top-level keys of `stored` (JSON object text) that `shown` leaves out.
pub fn left_out(stored: &str, shown: &Map<String, Value>) -> Vec<String> {
    serde_json::from_str::<Map<String, Value>>(stored)
        .map(|m| {
            m.into_iter()
                .filter(|(k, v)| !v.is_null() && !shown.contains_key(k))
                .map(|(k, _)| k)
                .collect()
        })
        .unwrap_or_default()
}

/// `maxConnectMs` → "Max connect ms".
fn label(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push(' ');
            out.extend(c.to_lowercase());
        } else if i == 0 {
            out.extend(c.to_uppercase());
        } else if c == '_' || c == '-' {
            out.push(' ');
        } else {
            out.push(c);
        }
    }
    out
}

/// The schema's type, ignoring `null` (optional fields are `["integer", "null"]`).
fn schema_type(schema: &Value) -> Option<String> {
    match schema.get("type") {
        Some(Value::String(t)) => Some(t.clone()),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .map(str::to_string),
        _ => {
            // `anyOf: [{...}, {"type": "null"}]`, as some generators write options.
            schema
                .get("anyOf")
                .or_else(|| schema.get("oneOf"))
                .and_then(Value::as_array)
                .and_then(|alts| {
                    alts.iter()
                        .filter(|a| a.get("type").and_then(Value::as_str) != Some("null"))
                        .find_map(schema_type)
                })
        }
    }
}

fn text_of(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The fields of `schema`'s properties, valued from `current` (an existing monitor's
/// fields) or the defaults. Fields the monitor itself owns (name, interval, ...) are
/// left to the fixed part of the form.
pub fn fields(schema: &Value, current: Option<&Map<String, Value>>, skip: &[&str]) -> Vec<Field> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    properties
        .iter()
        .filter(|(name, _)| !skip.contains(&name.as_str()))
        .map(|(name, prop)| {
            let value = current
                .and_then(|c| c.get(name))
                .or_else(|| prop.get("default"))
                .cloned()
                .unwrap_or(Value::Null);
            let mut f = Field {
                name: name.clone(),
                label: prop
                    .get("title")
                    .and_then(Value::as_str)
                    .map_or_else(|| label(name), str::to_string),
                help: prop
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                required: required.contains(&name.as_str()),
                kind: "json",
                input: "text",
                min: None,
                max: None,
                choices: Vec::new(),
                blank: false,
                placeholder: String::new(),
                pairs: Vec::new(),
                examples: prop
                    .get("examples")
                    .and_then(Value::as_array)
                    .map(|e| e.iter().map(text_of).collect())
                    .unwrap_or_default(),
                value: String::new(),
                checked: false,
            };
            let choices: Vec<String> = prop
                .get("enum")
                .and_then(Value::as_array)
                .map(|e| e.iter().map(text_of).collect())
                .unwrap_or_default();
            match schema_type(prop).as_deref() {
                _ if !choices.is_empty() => {
                    f.kind = "select";
                    f.choices = choices;
                    f.blank = !f.required && prop.get("default").is_none();
                    f.value = text_of(&value);
                }
                Some("string") => {
                    f.kind = "text";
                    f.input = match prop.get("format").and_then(Value::as_str) {
                        // A write-only value (a password, a token) is typed unseen.
                        _ if prop.get("writeOnly") == Some(&Value::Bool(true)) => "password",
                        Some("uri" | "url") => "url",
                        Some("email") => "email",
                        _ => "text",
                    };
                    f.value = text_of(&value);
                }
                Some(t @ ("integer" | "number")) => {
                    f.kind = "number";
                    f.input = "number";
                    f.min = prop.get("minimum").map(text_of);
                    f.max = prop.get("maximum").map(text_of);
                    if t == "number" {
                        f.kind = "decimal";
                    }
                    f.value = text_of(&value);
                }
                Some("boolean") => {
                    f.kind = "boolean";
                    f.checked = value.as_bool().unwrap_or(false);
                }
                Some("object")
                    if prop
                        .get("additionalProperties")
                        .and_then(schema_type)
                        .as_deref()
                        == Some("string") =>
                {
                    f.kind = "map";
                    f.pairs = value
                        .as_object()
                        .map(|m| m.iter().map(|(k, v)| (k.clone(), text_of(v))).collect())
                        .unwrap_or_default();
                }
                Some("array")
                    if prop.get("items").and_then(schema_type).as_deref() == Some("string") =>
                {
                    f.kind = "list";
                    f.value = value
                        .as_array()
                        .map(|a| a.iter().map(text_of).collect::<Vec<_>>().join("\n"))
                        .unwrap_or_default();
                }
                _ => {
                    f.value = if value.is_null() {
                        String::new()
                    } else {
                        serde_json::to_string_pretty(&value).unwrap_or_default()
                    };
                }
            }
            f
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_properties_become_fields() {
        let schema = json!({
            "type": "object",
            "required": ["host", "port"],
            "properties": {
                "host": {"type": "string", "description": "Host name or IP address.", "format": "hostname"},
                "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "maxConnectMs": {"type": ["integer", "null"], "minimum": 1},
                "method": {"type": "string", "enum": ["GET", "HEAD"], "default": "GET"},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "follow": {"type": "boolean", "default": true},
                "codes": {"type": "array", "items": {"type": "string"}}
            }
        });
        let current = json!({"host": "db.internal", "headers": {"X-A": "1"}});
        let f = fields(&schema, current.as_object(), &[]);
        let by = |n: &str| f.iter().find(|x| x.name == n).expect(n).clone();
        assert_eq!(by("host").kind, "text");
        assert_eq!(by("host").value, "db.internal");
        assert!(by("host").required);
        assert_eq!(by("port").kind, "number");
        assert_eq!(by("port").max.as_deref(), Some("65535"));
        assert_eq!(by("maxConnectMs").label, "Max connect ms");
        assert!(!by("maxConnectMs").required);
        assert_eq!(by("method").kind, "select");
        assert_eq!(by("method").value, "GET");
        assert_eq!(by("headers").kind, "map");
        assert_eq!(by("headers").pairs, [("X-A".to_string(), "1".to_string())]);
        assert!(by("follow").checked);
        assert_eq!(by("codes").kind, "list");
        assert!(
            fields(&schema, None, &["host"])
                .iter()
                .all(|x| x.name != "host")
        );
    }
}
