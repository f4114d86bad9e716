//! The http monitor's configuration: one typed struct gives its schema, its parsing with
//! every problem reported by field, its defaults and its stored form.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use tocsin_plugin_sdk::typed::{FieldRule, PluginConfig, TypedConfig, field_error};

pub use tocsin_plugin_sdk::config::FieldError;

/// Upper bound of `maxRedirects`.
pub const MAX_REDIRECTS_LIMIT: u64 = 20;
/// Longest URL, in characters.
pub const MAX_URL_CHARS: u32 = 2048;
/// Most request headers, and the longest name and value.
pub const MAX_HEADERS: usize = 50;
pub const MAX_HEADER_NAME_CHARS: usize = 256;
pub const MAX_HEADER_VALUE_CHARS: usize = 8192;
/// Longest request body, in characters.
pub const MAX_BODY_CHARS: u32 = 65_536;
/// Longest `bodyContains` / `bodyNotContains` text, in characters.
pub const MAX_MATCH_CHARS: u32 = 1024;

/// One HTTP request per check, judged by its status, body and response time.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
// Built-in: its fields sit at the top level of a monitor object.
#[schemars(title = "http monitor", extend("x-tocsin-top-level" = true))]
pub struct HttpConfig {
    /// Full http:// or https:// URL to request.
    #[schemars(extend("format" = "uri", "x-tocsin-target" = true), length(max = MAX_URL_CHARS))]
    #[schemars(title = "URL")]
    pub url: String,
    /// HTTP method: GET (when not given), POST, PUT or HEAD.
    #[serde(default = "get")]
    #[schemars(
        title = "Method",
        extend("enum" = ["GET", "POST", "PUT", "HEAD"], "x-tocsin-ignore-case" = true)
    )]
    pub method: String,
    /// Headers sent with each check. Their values are secrets (`Authorization`, API keys):
    /// read keys and exports do not see them.
    #[serde(default)]
    #[schemars(extend("additionalProperties" = {"type": "string", "x-tocsin-secret": true}))]
    #[schemars(title = "Headers")]
    pub headers: BTreeMap<String, String>,
    /// Request body, POST and PUT only.
    #[serde(default)]
    #[schemars(length(max = MAX_BODY_CHARS))]
    #[schemars(title = "Request body")]
    pub body: Option<String>,
    /// Whether 3xx answers are followed.
    #[serde(default = "yes")]
    #[schemars(title = "Follow redirects")]
    pub follow_redirects: bool,
    /// Longest redirect chain that passes.
    #[serde(default = "ten")]
    #[schemars(range(min = 0, max = 20))]
    #[schemars(title = "Most redirects")]
    pub max_redirects: u32,
    /// Status code required to pass.
    #[serde(default = "ok")]
    #[schemars(range(min = 100, max = 599))]
    #[schemars(title = "Expected status code")]
    pub expected_status_code: u16,
    /// When true, any 2xx status passes.
    #[serde(default)]
    #[schemars(title = "Any 2xx status passes")]
    pub expected_status_range: bool,
    /// Text that must appear in the body.
    #[serde(default)]
    #[schemars(length(max = MAX_MATCH_CHARS))]
    #[schemars(title = "Body contains")]
    pub body_contains: Option<String>,
    /// Text that must not appear in the body.
    #[serde(default)]
    #[schemars(length(max = MAX_MATCH_CHARS))]
    #[schemars(title = "Body does not contain")]
    pub body_not_contains: Option<String>,
    /// The check fails when the response takes longer.
    #[serde(default)]
    #[schemars(range(min = 1, max = 600_000))]
    #[schemars(title = "Slowest response (ms)")]
    pub max_response_time_ms: Option<u32>,
    /// Assertions on the response body read as JSON, e.g.
    /// [{"path": "$.status", "op": "eq", "value": "ok"}]; every failing one is named.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20))]
    #[schemars(title = "JSON assertions")]
    pub json_assertions: Vec<crate::json::JsonAssertion>,
}

fn get() -> String {
    "GET".to_string()
}

fn yes() -> bool {
    true
}

fn ten() -> u32 {
    10
}

fn ok() -> u16 {
    200
}

impl TypedConfig for HttpConfig {
    fn field_rules() -> Vec<(&'static str, FieldRule)> {
        vec![
            ("url", url_rule),
            ("headers", headers_rule),
            ("bodyContains", not_empty_rule),
            ("bodyNotContains", not_empty_rule),
        ]
    }

    fn refine(mut self) -> Result<Self, Vec<FieldError>> {
        self.method = self.method.to_ascii_uppercase();
        let problems: Vec<FieldError> = self
            .json_assertions
            .iter()
            .enumerate()
            .flat_map(|(i, a)| crate::json::validate(a, &format!("jsonAssertions[{i}]")))
            .collect();
        if !problems.is_empty() {
            return Err(problems);
        }
        if self.body.is_some() && self.method != "POST" && self.method != "PUT" {
            return Err(vec![field_error(
                "body",
                "is only allowed with POST and PUT",
            )]);
        }
        Ok(self)
    }
}

fn url_rule(field: &str, value: &Value) -> Vec<FieldError> {
    match value.as_str().map(check_url) {
        Some(Err(message)) => vec![field_error(field, message)],
        _ => Vec::new(),
    }
}

fn headers_rule(field: &str, value: &Value) -> Vec<FieldError> {
    let Some(headers) = value.as_object() else {
        return Vec::new();
    };
    if headers.len() > MAX_HEADERS {
        return vec![field_error(
            field,
            format!("may hold at most {MAX_HEADERS} headers"),
        )];
    }
    headers
        .iter()
        .filter(|(name, v)| {
            !(valid_header_name(name)
                && name.chars().count() <= MAX_HEADER_NAME_CHARS
                && v.as_str().is_some_and(|v| {
                    valid_header_value(v) && v.chars().count() <= MAX_HEADER_VALUE_CHARS
                }))
        })
        .map(|(name, _)| {
            field_error(
                &format!("{field}.{name}"),
                format!(
                    "is not a valid HTTP header name (at most {MAX_HEADER_NAME_CHARS} characters) \
                     and value (at most {MAX_HEADER_VALUE_CHARS})"
                ),
            )
        })
        .collect()
}

fn not_empty_rule(field: &str, value: &Value) -> Vec<FieldError> {
    if value.as_str() == Some("") {
        vec![field_error(
            field,
            "must not be empty (use null to turn it off)",
        )]
    } else {
        Vec::new()
    }
}

/// Parse and validate a configuration given as JSON text.
pub fn parse(text: &str) -> Result<HttpConfig, Vec<FieldError>> {
    HttpConfig::parse(text)
}

/// Validate a configuration object.
pub fn from_object(object: &serde_json::Map<String, Value>) -> Result<HttpConfig, Vec<FieldError>> {
    HttpConfig::parse(&Value::Object(object.clone()).to_string())
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
    HttpConfig::schema()
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
        let fields: Vec<_> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["url"]);
        assert!(errors.iter().all(|e| e.message == "is required"));
    }

    #[test]
    fn the_method_is_get_unless_given() {
        let c = parse(r#"{"url":"http://a.test/"}"#).expect("valid");
        assert_eq!(c.method, "GET");
        let schema = schema();
        assert_eq!(schema["properties"]["method"]["default"], "GET");
        assert_eq!(
            schema["properties"]["method"]["enum"],
            serde_json::json!(["GET", "POST", "PUT", "HEAD"])
        );
        let required = schema["required"].as_array().expect("required");
        assert!(!required.iter().any(|r| r == "method"), "{schema}");
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
    fn sizes_are_bounded() {
        let field_of = |json: String| -> Vec<String> {
            parse(&json)
                .expect_err("too big")
                .into_iter()
                .map(|e| e.field)
                .collect()
        };
        let long = |n: usize| "x".repeat(n);
        let url = format!("http://127.0.0.1/{}", long(2100));
        assert_eq!(
            field_of(format!(r#"{{"url":"{url}","method":"GET"}}"#)),
            ["url"]
        );
        assert_eq!(
            field_of(format!(
                r#"{{"url":"http://a.test/","method":"POST","body":"{}"}}"#,
                long(65_537)
            )),
            ["body"]
        );
        assert_eq!(
            field_of(format!(
                r#"{{"url":"http://a.test/","method":"GET","bodyContains":"{}"}}"#,
                long(1025)
            )),
            ["bodyContains"]
        );
        assert_eq!(
            field_of(format!(
                r#"{{"url":"http://a.test/","method":"GET","headers":{{"X-Big":"{}"}}}}"#,
                long(8193)
            )),
            ["headers.X-Big"]
        );
        let many: Vec<String> = (0..51).map(|i| format!(r#""X-{i}":"v""#)).collect();
        assert_eq!(
            field_of(format!(
                r#"{{"url":"http://a.test/","method":"GET","headers":{{{}}}}}"#,
                many.join(",")
            )),
            ["headers"]
        );
        // At the limits, all is well.
        assert!(
            parse(&format!(
                r#"{{"url":"http://a.test/","method":"GET","bodyContains":"{}"}}"#,
                long(1024)
            ))
            .is_ok()
        );
    }

    #[test]
    fn round_trips_through_json() {
        let c = parse(r#"{"url":"http://127.0.0.1:1/x","method":"PUT","body":"b","headers":{"A":"1"},"maxResponseTimeMs":250}"#)
            .expect("valid");
        let again = parse(&serde_json::to_string(&c).expect("serialise")).expect("valid");
        assert_eq!(c, again);
    }
}
