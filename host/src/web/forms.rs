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
    /// `records`, `list` or `json`.
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
    /// A list of small objects (JSON assertions), one row of cells each, the last row
    /// blank for a new one.
    pub rows: Vec<Vec<Cell>>,
    /// Suggestions (the schema's `examples`), offered in a datalist.
    pub examples: Vec<String>,
    /// The value to show (from the monitor being edited, else the schema's default).
    pub value: String,
    pub checked: bool,
}

/// One cell of a row of records: an input, or a select of the schema's choices.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub key: String,
    pub label: String,
    /// A select's choices (empty: a text input).
    pub choices: Vec<String>,
    /// Whether what is typed is read as JSON when it is JSON (numbers, any value).
    pub json: bool,
    pub value: String,
}

/// Items of a list shown as rows have at most this many properties.
const MAX_COLUMNS: usize = 6;

/// `schema`, or what its `$ref` points to within `root`.
fn resolved<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
        .unwrap_or(schema)
}

/// The columns of a list of small flat objects (each property a choice, a string, a
/// number, a flag or any value), or None when its items are anything else.
fn columns(root: &Value, prop: &Value) -> Option<Vec<(Cell, Option<Value>, String)>> {
    let items = resolved(root, prop.get("items")?);
    if schema_type(items).as_deref() != Some("object") {
        return None;
    }
    let properties = items.get("properties")?.as_object()?;
    if properties.is_empty() || properties.len() > MAX_COLUMNS {
        return None;
    }
    properties
        .iter()
        .map(|(key, p)| {
            let p = resolved(root, p);
            let choices: Vec<String> = p
                .get("enum")
                .and_then(Value::as_array)
                .map(|e| e.iter().map(text_of).collect())
                .unwrap_or_default();
            let json = match schema_type(p).as_deref() {
                _ if !choices.is_empty() => false,
                Some("string") => false,
                Some("integer" | "number" | "boolean") | None => true,
                Some(_) => return None,
            };
            let label = p
                .get("title")
                .and_then(Value::as_str)
                .map_or_else(|| label(key), str::to_string);
            let help = p
                .get("description")
                .and_then(Value::as_str)
                .map(|d| format!("{label}: {d}"))
                .unwrap_or_default();
            Some((
                Cell {
                    key: key.clone(),
                    label,
                    choices,
                    json,
                    value: String::new(),
                },
                p.get("default").cloned(),
                help,
            ))
        })
        .collect()
}

/// A cell's text for a stored value: a string as typed, unless it would read back as
/// other JSON ("200" is shown as "\"200\"", so it stays a string).
fn cell_text(v: &Value, json: bool) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) if !json || serde_json::from_str::<Value>(s).is_err() => s.clone(),
        other => other.to_string(),
    }
}

/// Rows of cells for `value` (a list of objects), and a blank row at the end.
fn rows(columns: &[(Cell, Option<Value>, String)], value: &Value) -> Vec<Vec<Cell>> {
    let row = |item: Option<&Map<String, Value>>| {
        columns
            .iter()
            .map(|(c, default, _)| {
                let mut cell = c.clone();
                let v = item.and_then(|i| i.get(&c.key));
                cell.value = match v {
                    Some(v) => cell_text(v, c.json),
                    None if !c.choices.is_empty() => default
                        .as_ref()
                        .map(text_of)
                        .or_else(|| c.choices.first().cloned())
                        .unwrap_or_default(),
                    None => String::new(),
                };
                cell
            })
            .collect::<Vec<Cell>>()
    };
    let mut out: Vec<Vec<Cell>> = value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_object)
                .map(|o| row(Some(o)))
                .collect()
        })
        .unwrap_or_default();
    out.push(row(None));
    out
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

/// Whether the schema allows `null` (an optional field: `["string", "null"]`).
fn takes_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => schema
            .get("anyOf")
            .or_else(|| schema.get("oneOf"))
            .and_then(Value::as_array)
            .is_some_and(|alts| {
                alts.iter()
                    .any(|a| a.get("type").and_then(Value::as_str) == Some("null"))
            }),
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
                rows: Vec::new(),
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
            let records = columns(schema, prop);
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
                        // Text of several lines (a message template) gets a box of its own.
                        _ if prop.get("x-tocsin-multiline") == Some(&Value::Bool(true)) => {
                            "textarea"
                        }
                        _ => "text",
                    };
                    // An optional field emptied is sent as null, so an edit clears it; a
                    // secret left empty is kept instead (see `mark_kept`).
                    let secret = prop.get("writeOnly") == Some(&Value::Bool(true))
                        || prop.get("x-tocsin-secret") == Some(&Value::Bool(true));
                    if takes_null(prop) && !secret {
                        f.kind = "nullable";
                    }
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
                Some("array") if records.is_some() => {
                    let cols = records.unwrap_or_default();
                    f.kind = "records";
                    let helps: Vec<&str> = cols
                        .iter()
                        .map(|(_, _, h)| h.as_str())
                        .filter(|h| !h.is_empty())
                        .collect();
                    if !helps.is_empty() {
                        f.help = format!("{} {}", f.help, helps.join(" ")).trim().to_string();
                    }
                    f.rows = rows(&cols, &value);
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
    fn lists_of_small_objects_become_rows_of_cells() {
        let schema = json!({
            "type": "object",
            "properties": {
                "jsonAssertions": {"type": "array", "description": "Checks of the body.",
                    "items": {"$ref": "#/$defs/JsonAssertion"}},
                "nested": {"type": "array", "items": {"type": "object",
                    "properties": {"inner": {"type": "object"}}}}
            },
            "$defs": {"JsonAssertion": {"type": "object", "properties": {
                "path": {"type": "string", "description": "JSONPath."},
                "op": {"type": "string", "enum": ["eq", "ne", "exists"]},
                "value": {"description": "What to compare with."}
            }}}
        });
        let current: Map<String, Value> = serde_json::from_value(json!({"jsonAssertions": [
            {"path": "$.status", "op": "ne", "value": "down"},
            {"path": "$.count", "op": "eq", "value": 3},
            {"path": "$.code", "op": "eq", "value": "200"},
            {"path": "$.ok", "op": "exists"}
        ]}))
        .expect("an object");
        let fields = fields(&schema, Some(&current), &[]);
        let f = fields
            .iter()
            .find(|f| f.name == "jsonAssertions")
            .expect("the field");
        assert_eq!(f.kind, "records");
        assert_eq!(
            f.help,
            "Checks of the body. Path: JSONPath. Value: What to compare with."
        );
        let texts: Vec<Vec<&str>> = f
            .rows
            .iter()
            .map(|r| r.iter().map(|c| c.value.as_str()).collect())
            .collect();
        assert_eq!(
            texts,
            [
                vec!["$.status", "ne", "down"],
                vec!["$.count", "eq", "3"],
                // A string that reads as a number is shown quoted, so it stays a string.
                vec!["$.code", "eq", "\"200\""],
                vec!["$.ok", "exists", ""],
                // The blank row for a new one: the first choice.
                vec!["", "eq", ""],
            ]
        );
        let op = &f.rows[0][1];
        assert_eq!(
            (op.key.as_str(), op.choices.len(), op.json),
            ("op", 3, false)
        );
        assert!(f.rows[0][2].json && !f.rows[0][0].json);
        // Items that hold objects stay a JSON text area.
        assert_eq!(
            fields.iter().find(|f| f.name == "nested").map(|f| f.kind),
            Some("json")
        );
    }

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
                "codes": {"type": "array", "items": {"type": "string"}},
                "messageTemplate": {"type": ["string", "null"], "maxLength": 2000, "x-tocsin-multiline": true},
                "titleTemplate": {"type": ["string", "null"], "maxLength": 200},
                "webhookUrl": {"type": "string", "maxLength": 2048},
                "token": {"type": ["string", "null"], "writeOnly": true}
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
        assert_eq!(
            (by("messageTemplate").input, by("webhookUrl").input),
            ("textarea", "text"),
            "text marked multi-line gets a box of several lines, long text alone does not"
        );
        assert_eq!(
            (
                by("titleTemplate").kind,
                by("webhookUrl").kind,
                by("token").kind
            ),
            ("nullable", "text", "text"),
            "an optional field emptied clears it; a secret emptied is kept"
        );
        assert!(
            fields(&schema, None, &["host"])
                .iter()
                .all(|x| x.name != "host")
        );
    }
}
