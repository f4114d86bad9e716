//! The http monitor's configuration: parsing, validation and defaults.

use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Methods an http monitor may use.
pub const METHODS: [&str; 4] = ["GET", "POST", "PUT", "HEAD"];
/// Upper bound of `maxRedirects`.
pub const MAX_REDIRECTS_LIMIT: u64 = 20;

/// A validated http monitor configuration, with every default filled in.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpConfig {
    pub url: String,
    pub method: String,
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    pub follow_redirects: bool,
    pub max_redirects: u32,
    pub expected_status_code: u16,
    pub expected_status_range: bool,
    pub body_contains: Option<String>,
    pub body_not_contains: Option<String>,
    pub max_response_time_ms: Option<u32>,
}

pub use tocsin_plugin_sdk::config::FieldError;
use tocsin_plugin_sdk::typed::PluginConfig;

fn problem(field: &str, message: impl Into<String>) -> FieldError {
    FieldError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// Collects problems while reading fields, so one answer lists all of them.
struct Reader<'a> {
    object: &'a Map<String, Value>,
    problems: Vec<FieldError>,
}

impl<'a> Reader<'a> {
    fn string(&mut self, field: &str, required: bool) -> Option<String> {
        match self.object.get(field) {
            None | Some(Value::Null) if required => {
                self.problems.push(problem(field, "is required"));
                None
            }
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                self.problems.push(problem(field, "must be a string"));
                None
            }
        }
    }

    fn boolean(&mut self, field: &str, default: bool) -> bool {
        match self.object.get(field) {
            None => default,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                self.problems.push(problem(field, "must be true or false"));
                default
            }
        }
    }

    fn integer(&mut self, field: &str, min: u64, max: u64) -> Option<u64> {
        match self.object.get(field) {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_u64() {
                Some(v) if (min..=max).contains(&v) => Some(v),
                _ => {
                    self.problems.push(problem(
                        field,
                        format!("must be an integer from {min} to {max}"),
                    ));
                    None
                }
            },
            Some(_) => {
                self.problems.push(problem(
                    field,
                    format!("must be an integer from {min} to {max}"),
                ));
                None
            }
        }
    }
}

const KNOWN_FIELDS: [&str; 11] = [
    "url",
    "method",
    "headers",
    "body",
    "followRedirects",
    "maxRedirects",
    "expectedStatusCode",
    "expectedStatusRange",
    "bodyContains",
    "bodyNotContains",
    "maxResponseTimeMs",
];

/// Parse and validate a configuration given as JSON text.
pub fn parse(text: &str) -> Result<HttpConfig, Vec<FieldError>> {
    let value: Value = serde_json::from_str(text)
        .map_err(|e| vec![problem("config", format!("is not valid JSON: {e}"))])?;
    let Value::Object(object) = value else {
        return Err(vec![problem("config", "must be a JSON object")]);
    };
    from_object(&object)
}

/// Validate a configuration object.
pub fn from_object(object: &Map<String, Value>) -> Result<HttpConfig, Vec<FieldError>> {
    let mut r = Reader {
        object,
        problems: Vec::new(),
    };
    for key in object.keys() {
        if !KNOWN_FIELDS.contains(&key.as_str()) {
            r.problems
                .push(problem(key, "is not a field of an http monitor"));
        }
    }

    let url = r.string("url", true);
    if let Some(url) = &url
        && let Err(message) = check_url(url)
    {
        r.problems.push(problem("url", message));
    }
    let method = r.string("method", true).map(|m| m.to_ascii_uppercase());
    if let Some(m) = &method
        && !METHODS.contains(&m.as_str())
    {
        r.problems
            .push(problem("method", "must be one of GET, POST, PUT, HEAD"));
    }
    let headers = match object.get("headers") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(Value::Object(map)) => {
            let mut headers = BTreeMap::new();
            for (name, value) in map {
                match value {
                    Value::String(v) if valid_header_name(name) && valid_header_value(v) => {
                        headers.insert(name.clone(), v.clone());
                    }
                    Value::String(_) => r.problems.push(problem(
                        &format!("headers.{name}"),
                        "is not a valid HTTP header name and value",
                    )),
                    _ => r
                        .problems
                        .push(problem(&format!("headers.{name}"), "must be a string")),
                }
            }
            headers
        }
        Some(_) => {
            r.problems.push(problem(
                "headers",
                "must be an object of header names to strings",
            ));
            BTreeMap::new()
        }
    };
    let body = r.string("body", false);
    if body.is_some()
        && let Some(m) = &method
        && m != "POST"
        && m != "PUT"
    {
        r.problems
            .push(problem("body", "is only allowed with POST and PUT"));
    }
    let follow_redirects = r.boolean("followRedirects", true);
    let max_redirects = r
        .integer("maxRedirects", 0, MAX_REDIRECTS_LIMIT)
        .unwrap_or(10) as u32;
    let expected_status_code = r.integer("expectedStatusCode", 100, 599).unwrap_or(200) as u16;
    let expected_status_range = r.boolean("expectedStatusRange", false);
    let body_contains = r.string("bodyContains", false);
    let body_not_contains = r.string("bodyNotContains", false);
    for (field, value) in [
        ("bodyContains", &body_contains),
        ("bodyNotContains", &body_not_contains),
    ] {
        if value.as_deref() == Some("") {
            r.problems.push(problem(
                field,
                "must not be empty (use null to turn it off)",
            ));
        }
    }
    let max_response_time_ms = r.integer("maxResponseTimeMs", 1, 600_000).map(|v| v as u32);

    if !r.problems.is_empty() {
        return Err(r.problems);
    }
    match (url, method) {
        (Some(url), Some(method)) => Ok(HttpConfig {
            url,
            method,
            headers,
            body,
            follow_redirects,
            max_redirects,
            expected_status_code,
            expected_status_range,
            body_contains,
            body_not_contains,
            max_response_time_ms,
        }),
        // Both are required and reported above when missing.
        _ => Err(vec![problem("url", "is required")]),
    }
}

fn check_url(url: &str) -> Result<(), &'static str> {
    let rest = if let Some(rest) = url.strip_prefix("http://") {
        rest
    } else if let Some(rest) = url.strip_prefix("https://") {
        rest
    } else {
        return Err("must be an absolute http:// or https:// URL");
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    if host.is_empty() || host.starts_with(':') {
        return Err("must name a host");
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters");
    }
    if url.len() > 2048 {
        return Err("must be at most 2048 characters long");
    }
    Ok(())
}

fn valid_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn valid_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// The JSON Schema of the configuration, as `describe` reports it.
pub fn schema() -> Value {
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "http monitor",
        "x-tocsin-top-level": true,
        "type": "object",
        "additionalProperties": false,
        "required": ["url", "method"],
        "properties": {
            "url": {"type": "string", "format": "uri", "description": "Full http:// or https:// URL to request."},
            "method": {"type": "string", "enum": METHODS, "description": "HTTP method."},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}, "description": "Headers sent with each check."},
            "body": {"type": ["string", "null"], "description": "Request body, POST and PUT only."},
            "followRedirects": {"type": "boolean", "default": true, "description": "Whether 3xx answers are followed."},
            "maxRedirects": {"type": "integer", "minimum": 0, "maximum": MAX_REDIRECTS_LIMIT, "default": 10, "description": "Longest redirect chain that passes."},
            "expectedStatusCode": {"type": "integer", "minimum": 100, "maximum": 599, "default": 200, "description": "Status code required to pass."},
            "expectedStatusRange": {"type": "boolean", "default": false, "description": "When true, any 2xx status passes."},
            "bodyContains": {"type": ["string", "null"], "minLength": 1, "description": "Text that must appear in the body."},
            "bodyNotContains": {"type": ["string", "null"], "minLength": 1, "description": "Text that must not appear in the body."},
            "maxResponseTimeMs": {"type": ["integer", "null"], "minimum": 1, "maximum": 600000, "description": "The check fails when the response takes longer."}
        }
    })
}

/// The http monitor reads its configuration by hand: headers are a map with its own rules,
/// and the status expectation has two forms.
impl PluginConfig for HttpConfig {
    fn schema() -> Value {
        schema()
    }

    fn parse(text: &str) -> Result<Self, Vec<FieldError>> {
        parse(text)
    }

    fn canonical(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_defaults() {
        let c = parse(r#"{"url":"https://example.com/health","method":"get"}"#).expect("valid");
        assert_eq!(c.method, "GET");
        assert!(c.follow_redirects);
        assert_eq!(c.max_redirects, 10);
        assert_eq!(c.expected_status_code, 200);
        assert!(!c.expected_status_range);
        assert_eq!(c.body, None);
    }

    #[test]
    fn reports_every_problem_at_once() {
        let errors = parse(
            r#"{"url":"ftp://x","method":"DELETE","maxRedirects":21,"expectedStatusCode":"200","extra":1}"#,
        )
        .expect_err("invalid");
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "extra",
                "url",
                "method",
                "maxRedirects",
                "expectedStatusCode"
            ]
        );
    }

    #[test]
    fn missing_required_fields() {
        let errors = parse("{}").expect_err("invalid");
        assert_eq!(errors.len(), 2);
        assert!(errors.iter().all(|e| e.message == "is required"));
    }

    #[test]
    fn body_only_with_post_and_put() {
        assert!(parse(r#"{"url":"http://a","method":"POST","body":"{}"}"#).is_ok());
        let errors =
            parse(r#"{"url":"http://a","method":"GET","body":"{}"}"#).expect_err("invalid");
        assert_eq!(errors[0].field, "body");
    }

    #[test]
    fn rejects_bad_headers_and_urls() {
        let errors =
            parse(r#"{"url":"http:///x","method":"GET","headers":{"bad name":"v","X-Ok":"a\nb"}}"#)
                .expect_err("invalid");
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["url", "headers.bad name", "headers.X-Ok"]);
        assert!(parse("[1]").is_err());
        assert!(parse("not json").is_err());
    }

    #[test]
    fn round_trips_through_json() {
        let c = parse(r#"{"url":"http://127.0.0.1:1/x","method":"PUT","body":"b","headers":{"A":"1"},"maxResponseTimeMs":250}"#)
            .expect("valid");
        let again = parse(&serde_json::to_string(&c).expect("serialise")).expect("valid");
        assert_eq!(c, again);
    }
}
