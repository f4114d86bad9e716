//! JSON assertions for http and keyword checks: `{"path": "$.status", "op": "eq", "value":
//! "ok"}`. Paths are the common JSONPath subset: `$`, `.name`, `['any name']`, `[index]`
//! (negative from the end). Every failing assertion is named in the reason, with what the
//! body held, so a person sees which field failed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tocsin_plugin_sdk::config::FieldError;
use tocsin_plugin_sdk::typed::field_error;

/// Most assertions one monitor may have.
pub const MAX_ASSERTIONS: usize = 20;
/// The operators.
pub const OPS: [&str; 7] = ["eq", "ne", "lt", "gt", "contains", "exists", "matches"];

/// One assertion on the response body, read as JSON.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JsonAssertion {
    /// JSONPath of the value, e.g. $.status, $.checks[0].state or $['db-primary'].ok.
    #[schemars(length(min = 1, max = 512))]
    #[schemars(title = "Path")]
    pub path: String,
    /// eq, ne, lt, gt, contains (text or list), exists, matches (a regular expression).
    #[schemars(extend("enum" = ["eq", "ne", "lt", "gt", "contains", "exists", "matches"]))]
    #[schemars(title = "Operator")]
    pub op: String,
    /// What to compare with (not for exists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(title = "Value")]
    pub value: Option<Value>,
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Key(String),
    Index(i64),
}

/// Parse `$.a.b[0]['c d']`.
pub fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let rest = path
        .trim()
        .strip_prefix('$')
        .ok_or("must start with $, e.g. $.status")?;
    let chars: Vec<char> = rest.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '.' => {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && chars[end] != '.' && chars[end] != '[' {
                    end += 1;
                }
                if end == start {
                    return Err(format!("has an empty name at position {}", i + 2));
                }
                steps.push(Step::Key(chars[start..end].iter().collect()));
                i = end;
            }
            '[' => {
                let close = chars[i..]
                    .iter()
                    .position(|c| *c == ']')
                    .map(|p| p + i)
                    .ok_or("has a [ without its ]")?;
                let inside: String = chars[i + 1..close].iter().collect();
                let inside = inside.trim();
                let quoted = inside
                    .strip_prefix('\'')
                    .and_then(|s| s.strip_suffix('\''))
                    .or_else(|| inside.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
                match quoted {
                    Some(key) => steps.push(Step::Key(key.to_string())),
                    None => steps.push(Step::Index(inside.parse().map_err(|_| {
                        format!("has [{inside}], which is neither an index nor a quoted name")
                    })?)),
                }
                i = close + 1;
            }
            other => return Err(format!("has an unexpected '{other}' at position {}", i + 2)),
        }
    }
    Ok(steps)
}

/// The value at `steps`, if there is one.
pub fn find<'a>(root: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    let mut at = root;
    for step in steps {
        at = match (step, at) {
            (Step::Key(k), Value::Object(o)) => o.get(k)?,
            (Step::Index(n), Value::Array(a)) => {
                let i = if *n < 0 { a.len() as i64 + n } else { *n };
                a.get(usize::try_from(i).ok()?)?
            }
            _ => return None,
        };
    }
    Some(at)
}

/// Check one assertion's shape; problems are named `<prefix>.path` and so on.
pub fn validate(a: &JsonAssertion, prefix: &str) -> Vec<FieldError> {
    let mut problems = Vec::new();
    if let Err(m) = parse_path(&a.path) {
        problems.push(field_error(&format!("{prefix}.path"), m));
    }
    if !OPS.contains(&a.op.as_str()) {
        problems.push(field_error(
            &format!("{prefix}.op"),
            "must be eq, ne, lt, gt, contains, exists or matches",
        ));
        return problems;
    }
    let value_field = format!("{prefix}.value");
    match (a.op.as_str(), &a.value) {
        ("exists", Some(_)) => problems.push(field_error(&value_field, "is not used with exists")),
        ("exists", None) => {}
        (_, None) => problems.push(field_error(&value_field, "is required")),
        ("lt" | "gt", Some(v)) if !v.is_number() => {
            problems.push(field_error(&value_field, "must be a number"))
        }
        ("matches", Some(Value::String(p))) => {
            if let Err(e) = regex_lite::RegexBuilder::new(p).size_limit(1 << 16).build() {
                problems.push(field_error(
                    &value_field,
                    format!("is not a valid regular expression: {e}"),
                ));
            }
        }
        ("matches", Some(_)) => problems.push(field_error(
            &value_field,
            "must be a regular expression (text)",
        )),
        ("contains", Some(v)) if v.is_object() || v.is_array() => problems.push(field_error(
            &value_field,
            "must be text, a number or true/false",
        )),
        _ => {}
    }
    problems
}

/// Text for values in reasons: strings quoted, the rest as JSON, cut at 80 characters.
fn shown(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 80 {
        format!("{}...", text.chars().take(80).collect::<String>())
    } else {
        text
    }
}

/// A value as text for comparisons with text: strings as they are, others as JSON.
fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn as_number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Equal as JSON, or as text when one side is text ("200" equals 200).
fn equal(a: &Value, b: &Value) -> bool {
    a == b
        || ((a.is_string() || b.is_string())
            && !a.is_object()
            && !b.is_object()
            && as_text(a) == as_text(b))
}

/// Whether the assertion holds; `Err` with what was found when it does not.
pub fn holds(a: &JsonAssertion, root: &Value) -> Result<(), String> {
    let steps = parse_path(&a.path).map_err(|e| format!("the path {e}"))?;
    let found = find(root, &steps);
    let expected = a.value.clone().unwrap_or(Value::Null);
    let Some(actual) = found else {
        return if a.op == "ne" {
            Ok(())
        } else {
            Err("not found".into())
        };
    };
    let ok = match a.op.as_str() {
        "exists" => true,
        "eq" => equal(actual, &expected),
        "ne" => !equal(actual, &expected),
        "lt" | "gt" => match (as_number(actual), as_number(&expected)) {
            (Some(x), Some(y)) => {
                if a.op == "lt" {
                    x < y
                } else {
                    x > y
                }
            }
            _ => return Err(format!("got {}, not a number", shown(actual))),
        },
        "contains" => match actual {
            Value::Array(items) => items.iter().any(|i| equal(i, &expected)),
            Value::String(s) => s.contains(&as_text(&expected)),
            _ => return Err(format!("got {}, neither text nor a list", shown(actual))),
        },
        "matches" => {
            let pattern = as_text(&expected);
            match regex_lite::RegexBuilder::new(&pattern)
                .size_limit(1 << 16)
                .build()
            {
                Ok(re) => {
                    !actual.is_object() && !actual.is_array() && re.is_match(&as_text(actual))
                }
                Err(e) => return Err(format!("the pattern is invalid: {e}")),
            }
        }
        _ => return Err("unknown operator".into()),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("got {}", shown(actual)))
    }
}

/// Judge a body against every assertion: `None` when all hold, else the reason naming each
/// one that failed.
pub fn judge(assertions: &[JsonAssertion], body: &[u8], truncated: bool) -> Option<String> {
    if assertions.is_empty() {
        return None;
    }
    let root: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) if truncated => {
            return Some("JSON assertions could not run: the body is longer than 1 MiB".into());
        }
        Err(e) => {
            return Some(format!(
                "JSON assertions could not run: the body is not JSON ({e})"
            ));
        }
    };
    let failed: Vec<String> = assertions
        .iter()
        .filter_map(|a| {
            holds(a, &root).err().map(|why| match &a.value {
                Some(v) => format!("{} {} {} ({why})", a.path, a.op, shown(v)),
                None => format!("{} {} ({why})", a.path, a.op),
            })
        })
        .collect();
    match failed.len() {
        0 => None,
        1 => Some(format!("JSON assertion failed: {}", failed[0])),
        n => Some(format!("{n} JSON assertions failed: {}", failed.join("; "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn a(path: &str, op: &str, value: Option<Value>) -> JsonAssertion {
        JsonAssertion {
            path: path.into(),
            op: op.into(),
            value,
        }
    }

    #[test]
    fn paths_are_parsed_and_followed() {
        let body =
            json!({"status": "ok", "checks": [{"name": "db", "ms": 12}], "a b": {"c": true}});
        let at = |p: &str| find(&body, &parse_path(p).expect("path")).cloned();
        assert_eq!(at("$.status"), Some(json!("ok")));
        assert_eq!(at("$.checks[0].ms"), Some(json!(12)));
        assert_eq!(at("$.checks[-1].name"), Some(json!("db")));
        assert_eq!(at("$['a b'].c"), Some(json!(true)));
        assert_eq!(at("$.missing"), None);
        assert!(parse_path("status").is_err());
        assert!(parse_path("$.a[x]").is_err());
        assert!(parse_path("$..a").is_err());
    }

    #[test]
    fn every_failing_assertion_is_named() {
        let body = br#"{"status":"degraded","db":{"latencyMs":250,"replicas":["a","b"]},"version":"2.4.1"}"#;
        let assertions = [
            a("$.status", "eq", Some(json!("ok"))),
            a("$.db.latencyMs", "lt", Some(json!(100))),
            a("$.db.replicas", "contains", Some(json!("a"))),
            a("$.version", "matches", Some(json!("^2\\."))),
            a("$.region", "exists", None),
        ];
        let reason = judge(&assertions, body, false).expect("fails");
        assert_eq!(
            reason,
            "3 JSON assertions failed: $.status eq \"ok\" (got \"degraded\"); $.db.latencyMs lt 100 (got 250); $.region exists (not found)"
        );
        assert_eq!(judge(&assertions[2..4], body, false), None);
        assert!(
            judge(&assertions, b"<html>", false)
                .expect("not json")
                .contains("not JSON")
        );
        assert_eq!(
            judge(
                &[a("$.code", "eq", Some(json!(200)))],
                br#"{"code":"200"}"#,
                false
            ),
            None
        );
        assert_eq!(
            judge(&[a("$.gone", "ne", Some(json!(1)))], b"{}", false),
            None
        );
    }

    #[test]
    fn assertions_are_validated() {
        assert!(validate(&a("$.x", "eq", Some(json!(1))), "jsonAssertions[0]").is_empty());
        let p = validate(&a("x", "lt", Some(json!("ten"))), "jsonAssertions[1]");
        let fields: Vec<&str> = p.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            ["jsonAssertions[1].path", "jsonAssertions[1].value"]
        );
        assert_eq!(
            validate(&a("$.x", "matches", Some(json!("("))), "j")[0].field,
            "j.value"
        );
        assert_eq!(validate(&a("$.x", "is", None), "j")[0].field, "j.op");
        assert_eq!(
            validate(&a("$.x", "eq", None), "j")[0].message,
            "is required"
        );
    }
}
