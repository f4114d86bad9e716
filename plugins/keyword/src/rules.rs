//! The keyword monitor's rules: the http fields plus `keyword` and `keywordMode`.

use serde_json::{Map, Value};
use tocsin_http_checks::config::{self, FieldError, HttpConfig};
use tocsin_http_checks::verdict;
use tocsin_plugin_sdk::typed::PluginConfig;

/// Longest keyword accepted.
pub const MAX_KEYWORD_CHARS: usize = 1000;

/// Whether the keyword must appear or must not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Present,
    Absent,
}

/// A validated keyword monitor configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct KeywordConfig {
    pub http: HttpConfig,
    pub keyword: String,
    pub mode: Mode,
}

fn problem(field: &str, message: &str) -> FieldError {
    FieldError {
        field: field.into(),
        message: message.into(),
    }
}

/// Parse and validate a configuration given as JSON text.
pub fn parse(text: &str) -> Result<KeywordConfig, Vec<FieldError>> {
    let mut object: Map<String, Value> =
        serde_json::from_str(text).map_err(|_| vec![problem("config", "must be a JSON object")])?;
    let mut problems = Vec::new();
    let keyword = match object.remove("keyword") {
        Some(Value::String(k)) if !k.is_empty() && k.chars().count() <= MAX_KEYWORD_CHARS => {
            Some(k)
        }
        None | Some(Value::Null) => {
            problems.push(problem("keyword", "is required"));
            None
        }
        Some(_) => {
            problems.push(problem(
                "keyword",
                "must be a string of 1 to 1000 characters",
            ));
            None
        }
    };
    let mode = match object.remove("keywordMode") {
        None | Some(Value::Null) => Mode::Present,
        Some(Value::String(m)) if m == "present" => Mode::Present,
        Some(Value::String(m)) if m == "absent" => Mode::Absent,
        Some(_) => {
            problems.push(problem("keywordMode", "must be present or absent"));
            Mode::Present
        }
    };
    let http = match config::from_object(&object) {
        Ok(h) => Some(h),
        Err(more) => {
            problems.extend(more);
            None
        }
    };
    match (http, keyword) {
        (Some(http), Some(keyword)) if problems.is_empty() => Ok(KeywordConfig {
            http,
            keyword,
            mode,
        }),
        _ => Err(problems),
    }
}

/// The normalised configuration.
pub fn to_json(c: &KeywordConfig) -> Value {
    let mut object = match serde_json::to_value(&c.http) {
        Ok(Value::Object(o)) => o,
        _ => Map::new(),
    };
    object.insert("keyword".into(), Value::from(c.keyword.clone()));
    object.insert(
        "keywordMode".into(),
        Value::from(if c.mode == Mode::Present {
            "present"
        } else {
            "absent"
        }),
    );
    Value::Object(object)
}

/// Why the body fails the keyword rule, if it does.
pub fn judge(c: &KeywordConfig, body: &[u8]) -> Option<String> {
    let found = verdict::contains(body, c.keyword.as_bytes());
    match (c.mode, found) {
        (Mode::Present, false) => Some(format!(
            "Keyword \"{}\" not found in the response",
            verdict::quoted(&c.keyword)
        )),
        (Mode::Absent, true) => Some(format!(
            "Keyword \"{}\" found in the response",
            verdict::quoted(&c.keyword)
        )),
        _ => None,
    }
}

/// The JSON Schema: the http monitor's, plus the keyword fields.
pub fn schema() -> Value {
    let mut s = config::schema();
    s["title"] = Value::from("keyword monitor");
    s["description"] = Value::from(
        "An http check that also requires a keyword in (or absent from) the response body.",
    );
    s["required"] = serde_json::json!(["url", "keyword"]);
    s["properties"]["keyword"] = serde_json::json!({"type": "string", "title": "Keyword", "minLength": 1, "maxLength": MAX_KEYWORD_CHARS, "description": "Text to look for in the response body (case-sensitive, first 1 MiB)."});
    s["properties"]["keywordMode"] = serde_json::json!({"type": "string", "title": "The keyword must be", "enum": ["present", "absent"], "default": "present", "description": "present: fail when the keyword is missing; absent: fail when it is found."});
    s
}

/// The keyword monitor's configuration is the http monitor's typed one plus two fields of
/// its own, read by hand (serde cannot flatten a struct that refuses unknown fields), and
/// checked together so one answer lists every problem.
impl PluginConfig for KeywordConfig {
    fn schema() -> Value {
        schema()
    }

    fn parse(text: &str) -> Result<Self, Vec<FieldError>> {
        parse(text)
    }

    fn canonical(&self) -> Value {
        to_json(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_with_defaults_and_round_trips() {
        let c = parse(r#"{"url":"http://127.0.0.1/","method":"GET","keyword":"healthy"}"#)
            .expect("valid");
        assert_eq!((c.keyword.as_str(), c.mode), ("healthy", Mode::Present));
        assert_eq!(c.http.expected_status_code, 200);
        assert_eq!(parse(&to_json(&c).to_string()), Ok(c));
    }

    #[test]
    fn reports_keyword_and_http_problems_together() {
        let e =
            parse(r#"{"url":"nope","method":"GET","keywordMode":"maybe"}"#).expect_err("invalid");
        let fields: Vec<&str> = e.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["keyword", "keywordMode", "url"]);
        assert!(parse(r#"{"url":"http://a/","method":"GET","keyword":""}"#).is_err());
    }

    #[test]
    fn judges_present_and_absent() {
        let present = parse(r#"{"url":"http://a/","method":"GET","keyword":"ok"}"#).expect("valid");
        assert_eq!(judge(&present, b"all ok"), None);
        assert_eq!(
            judge(&present, b"all good").as_deref(),
            Some("Keyword \"ok\" not found in the response")
        );
        let absent =
            parse(r#"{"url":"http://a/","method":"GET","keyword":"error","keywordMode":"absent"}"#)
                .expect("valid");
        assert_eq!(judge(&absent, b"fine"), None);
        assert_eq!(
            judge(&absent, b"an error").as_deref(),
            Some("Keyword \"error\" found in the response")
        );
    }

    #[test]
    fn schema_adds_the_keyword_fields() {
        let s = schema();
        assert_eq!(s["required"], serde_json::json!(["url", "keyword"]));
        assert_eq!(s["properties"]["keywordMode"]["default"], "present");
    }
}
