//! Small builders for the JSON Schema (draft 2020-12) a plugin returns from `describe()`.
//! The server shows the schema in `GET /v1/plugins`, and the conformance kit checks that
//! the plugin accepts what it describes and refuses what it does not.
//!
//! ```
//! use tocsin_plugin_sdk::schema;
//! let s = schema::object(
//!     &[
//!         ("hostname", schema::string("Host name or IP address", 1, 253)),
//!         ("port", schema::integer("TCP port", 1, 65535, Some(443))),
//!     ],
//!     &["hostname"],
//! );
//! assert_eq!(s["properties"]["port"]["default"], 443);
//! assert_eq!(s["additionalProperties"], false);
//! ```

use serde_json::{Map, Value, json};

/// An object with the given properties, of which `required` must be present; no others.
pub fn object(properties: &[(&str, Value)], required: &[&str]) -> Value {
    let props: Map<String, Value> = properties
        .iter()
        .map(|(name, schema)| (name.to_string(), schema.clone()))
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
    })
}

/// A string of `min_len..=max_len` characters.
pub fn string(description: &str, min_len: u32, max_len: u32) -> Value {
    json!({"type": "string", "description": description, "minLength": min_len, "maxLength": max_len})
}

/// A string with a `format` (`uri`, `email`, `hostname`, ...).
pub fn formatted(description: &str, format: &str) -> Value {
    json!({"type": "string", "description": description, "format": format})
}

/// One of a fixed set of strings.
pub fn one_of(description: &str, values: &[&str], default: Option<&str>) -> Value {
    with_default(
        json!({"type": "string", "description": description, "enum": values}),
        default.map(Value::from),
    )
}

/// An integer in `min..=max`.
pub fn integer(description: &str, min: i64, max: i64, default: Option<i64>) -> Value {
    with_default(
        json!({"type": "integer", "description": description, "minimum": min, "maximum": max}),
        default.map(Value::from),
    )
}

/// A number in `min..=max`.
pub fn number(description: &str, min: f64, max: f64, default: Option<f64>) -> Value {
    with_default(
        json!({"type": "number", "description": description, "minimum": min, "maximum": max}),
        default.map(Value::from),
    )
}

/// true or false.
pub fn boolean(description: &str, default: Option<bool>) -> Value {
    with_default(
        json!({"type": "boolean", "description": description}),
        default.map(Value::from),
    )
}

/// A list of items, at most `max_items` long.
pub fn list(description: &str, items: Value, max_items: u32) -> Value {
    json!({"type": "array", "description": description, "items": items, "maxItems": max_items})
}

fn with_default(mut schema: Value, default: Option<Value>) -> Value {
    if let Some(d) = default {
        schema["default"] = d;
    }
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_produce_draft_2020_12_keywords() {
        let s = object(
            &[
                ("mode", one_of("How", &["a", "b"], Some("a"))),
                ("ratio", number("Share", 0.0, 1.0, None)),
                ("on", boolean("Switch", Some(true))),
                ("tags", list("Tags", string("Tag", 1, 20), 5)),
                ("url", formatted("Where", "uri")),
            ],
            &["url"],
        );
        assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
        assert_eq!(s["properties"]["mode"]["enum"], json!(["a", "b"]));
        assert_eq!(s["properties"]["mode"]["default"], "a");
        assert!(s["properties"]["ratio"].get("default").is_none());
        assert_eq!(s["properties"]["on"]["default"], true);
        assert_eq!(s["properties"]["tags"]["items"]["maxLength"], 20);
        assert_eq!(s["required"], json!(["url"]));
    }
}
