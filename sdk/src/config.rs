//! Reading a configuration object field by field by hand, collecting every problem so one
//! answer lists all of them (the server shows them per field in its 422 answer). Most
//! plugins derive their configuration instead ([`crate::typed`]); this stays for plugins
//! with unusual shapes and for rules across fields.

use serde_json::{Map, Value};

pub use crate::types::FieldError;

/// Field errors from `(field, message)` pairs.
pub fn problems(pairs: Vec<(String, String)>) -> Vec<FieldError> {
    pairs
        .into_iter()
        .map(|(field, message)| FieldError { field, message })
        .collect()
}

/// Reads fields of one object and remembers what was wrong with them.
pub struct Reader<'a> {
    object: Map<String, Value>,
    kind: &'a str,
    pub problems: Vec<FieldError>,
}

impl<'a> Reader<'a> {
    /// Parse JSON text that must be an object, refusing fields not in `known`. `kind` names
    /// the plugin in messages: `"ping monitor"` gives "is not a field of the ping monitor".
    pub fn new(text: &str, kind: &'a str, known: &[&str]) -> Result<Reader<'a>, Vec<FieldError>> {
        let object: Map<String, Value> = match serde_json::from_str(text) {
            Ok(Value::Object(o)) => o,
            Ok(_) => return Err(vec![problem("config", "must be a JSON object")]),
            Err(e) => return Err(vec![problem("config", &format!("is not valid JSON: {e}"))]),
        };
        let mut r = Reader {
            object,
            kind,
            problems: Vec::new(),
        };
        let unknown: Vec<String> = r
            .object
            .keys()
            .filter(|k| !known.contains(&k.as_str()))
            .cloned()
            .collect();
        for key in unknown {
            let message = format!("is not a field of the {}", r.kind);
            r.push(&key, &message);
        }
        Ok(r)
    }

    /// Record a problem.
    pub fn push(&mut self, field: &str, message: &str) {
        self.problems.push(problem(field, message));
    }

    /// Whether the field is present and not null.
    pub fn has(&self, field: &str) -> bool {
        !matches!(self.object.get(field), None | Some(Value::Null))
    }

    /// A required host name or IP address.
    pub fn hostname(&mut self, field: &str) -> Option<String> {
        match self.object.get(field) {
            None | Some(Value::Null) => {
                self.push(field, "is required");
                None
            }
            Some(Value::String(s)) if valid_hostname(s.trim()) => Some(s.trim().to_string()),
            Some(Value::String(_)) => {
                self.push(
                    field,
                    "must be a host name (letters, digits, `-`, `.`) or an IP address, without scheme, port or path",
                );
                None
            }
            Some(_) => {
                self.push(field, "must be a string");
                None
            }
        }
    }

    /// An integer in `min..=max`, or None when absent.
    pub fn integer(&mut self, field: &str, min: i64, max: i64) -> Option<i64> {
        let value = self.object.get(field)?;
        match value.as_i64() {
            Some(v) if (min..=max).contains(&v) => Some(v),
            _ if value.is_null() => None,
            _ => {
                self.push(field, &format!("must be an integer from {min} to {max}"));
                None
            }
        }
    }

    /// A number in the half-open range `(min, max]`, or None when absent.
    pub fn number_above(&mut self, field: &str, min: f64, max: f64) -> Option<f64> {
        let value = self.object.get(field)?;
        match value.as_f64() {
            Some(v) if v > min && v <= max => Some(v),
            _ if value.is_null() => None,
            _ => {
                self.push(
                    field,
                    &format!("must be a number greater than {min} and at most {max}"),
                );
                None
            }
        }
    }

    /// A required string that is not blank after trimming, at most `max_len` characters.
    pub fn required_string(&mut self, field: &str, max_len: usize) -> Option<String> {
        match self.object.get(field) {
            None | Some(Value::Null) => {
                self.push(field, "is required");
                None
            }
            Some(Value::String(s)) if s.trim().is_empty() => {
                self.push(field, "must not be blank");
                None
            }
            Some(Value::String(s)) if s.chars().count() > max_len => {
                self.push(field, &format!("must be at most {max_len} characters"));
                None
            }
            Some(Value::String(s)) => Some(s.trim().to_string()),
            Some(_) => {
                self.push(field, "must be a string");
                None
            }
        }
    }

    /// An optional string of at most `max_len` characters; None when absent.
    pub fn string(&mut self, field: &str, max_len: usize) -> Option<String> {
        match self.object.get(field)? {
            Value::Null => None,
            Value::String(s) if s.chars().count() > max_len => {
                self.push(field, &format!("must be at most {max_len} characters"));
                None
            }
            Value::String(s) => Some(s.clone()),
            _ => {
                self.push(field, "must be a string");
                None
            }
        }
    }

    /// An optional boolean; None when absent.
    pub fn boolean(&mut self, field: &str) -> Option<bool> {
        match self.object.get(field)? {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            _ => {
                self.push(field, "must be true or false");
                None
            }
        }
    }

    /// An optional list of strings with at most `max_items` entries; None when absent.
    pub fn strings(&mut self, field: &str, max_items: usize) -> Option<Vec<String>> {
        match self.object.get(field)? {
            Value::Null => None,
            Value::Array(items) if items.len() > max_items => {
                self.push(field, &format!("must have at most {max_items} entries"));
                None
            }
            Value::Array(items) => {
                let strings: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect();
                if strings.is_none() {
                    self.push(field, "must be a list of strings");
                }
                strings
            }
            _ => {
                self.push(field, "must be a list of strings");
                None
            }
        }
    }

    /// The problems, or the value when there were none.
    pub fn finish<T>(self, value: Option<T>) -> Result<T, Vec<FieldError>> {
        match value {
            Some(v) if self.problems.is_empty() => Ok(v),
            _ => Err(self.problems),
        }
    }
}

fn problem(field: &str, message: &str) -> FieldError {
    FieldError {
        field: field.to_string(),
        message: message.to_string(),
    }
}

/// A host name (letters, digits, `-`, `_`, `.`; labels of 1 to 63 characters) or an IP
/// address (IPv6 with or without brackets).
pub fn valid_hostname(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if bare.parse::<std::net::IpAddr>().is_ok() {
        return true;
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_and_addresses() {
        for ok in [
            "localhost",
            "db-1.internal",
            "example.com.",
            "127.0.0.1",
            "::1",
            "[::1]",
            "_svc.x",
        ] {
            assert!(valid_hostname(ok), "{ok}");
        }
        for bad in [
            "",
            "https://example.com",
            "example.com:443",
            "a b",
            "-x.com",
            "x..com",
            "example.com/path",
            &"a".repeat(64),
        ] {
            assert!(!valid_hostname(bad), "{bad}");
        }
    }

    #[test]
    fn unknown_fields_and_non_objects_are_refused() {
        let r = Reader::new(
            r#"{"hostname":"a","colour":1}"#,
            "ping monitor",
            &["hostname"],
        )
        .expect("object");
        assert_eq!(r.problems.len(), 1);
        assert_eq!(r.problems[0].field, "colour");
        assert_eq!(r.problems[0].message, "is not a field of the ping monitor");
        assert!(Reader::new("[1]", "ping", &[]).is_err());
        assert!(Reader::new("{", "ping", &[]).is_err());
    }

    #[test]
    fn typed_fields_collect_every_problem() {
        let text = r#"{"name":"  ","tags":["a",1],"on":"yes","note":"abcdef","count":99}"#;
        let mut r =
            Reader::new(text, "x", &["name", "tags", "on", "note", "count"]).expect("object");
        assert_eq!(r.required_string("name", 10), None);
        assert_eq!(r.strings("tags", 5), None);
        assert_eq!(r.boolean("on"), None);
        assert_eq!(r.string("note", 3), None);
        assert_eq!(r.integer("count", 1, 10), None);
        assert_eq!(r.string("missing", 3), None);
        let fields: Vec<&str> = r.problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["name", "tags", "on", "note", "count"]);
        let mut ok = Reader::new(
            r#"{"name":" a ","tags":["x"],"on":true}"#,
            "x",
            &["name", "tags", "on"],
        )
        .expect("object");
        assert_eq!(ok.required_string("name", 10).as_deref(), Some("a"));
        assert_eq!(ok.strings("tags", 5), Some(vec!["x".to_string()]));
        assert_eq!(ok.boolean("on"), Some(true));
        assert_eq!(ok.finish(Some(1)), Ok(1));
    }
}
