//! The webhook channel's pure rules: configuration and what counts as delivered.

use serde_json::{Map, Value, json};

/// Something that can say what went wrong in a sentence.
pub trait Describe {
    fn describe(&self) -> String;
}

/// A sentence for a transport failure.
pub fn transport_reason(e: &impl Describe) -> String {
    e.describe()
}

/// Validate `{"url": "https://..."}` and return it normalised.
pub fn validate(text: &str) -> Result<String, Vec<(String, String)>> {
    let object: Map<String, Value> = serde_json::from_str(text)
        .map_err(|_| vec![("config".to_string(), "must be a JSON object".to_string())])?;
    let mut problems = Vec::new();
    for key in object.keys() {
        if key != "url" {
            problems.push((
                key.clone(),
                "is not a field of a webhook channel".to_string(),
            ));
        }
    }
    match object.get("url") {
        Some(Value::String(url)) => {
            if !(url.starts_with("https://") || url.starts_with("http://"))
                || url.len() < 10
                || url.chars().any(char::is_whitespace)
            {
                problems.push(("url".into(), "must be an absolute https:// URL".into()));
            }
        }
        Some(_) => problems.push(("url".into(), "must be a string".into())),
        None => problems.push(("url".into(), "is required".into())),
    }
    if problems.is_empty() {
        Ok(json!({"url": object["url"]}).to_string())
    } else {
        Err(problems)
    }
}

/// The URL of a validated configuration.
pub fn url_of(config: &str) -> Result<String, String> {
    let v: Value = serde_json::from_str(config)
        .map_err(|_| "The channel configuration is not JSON".to_string())?;
    v["url"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| "The channel has no url".to_string())
}

/// 2xx is delivered; everything else (3xx included: redirects are not followed) failed.
pub fn judge(status: u16) -> Result<String, String> {
    match status {
        200..=299 => Ok(format!("Receiver answered {status}")),
        300..=399 => Err(format!(
            "Receiver answered {status}; redirects are not followed, so this counts as a failure"
        )),
        _ => Err(format!("Receiver answered {status}")),
    }
}

/// JSON Schema of the configuration.
pub fn schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "webhook channel",
        "type": "object",
        "additionalProperties": false,
        "required": ["url"],
        "properties": {"url": {"type": "string", "format": "uri", "description": "HTTPS endpoint that receives signed events."}}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_2xx_counts() {
        assert!(judge(200).is_ok());
        assert!(judge(204).is_ok());
        assert_eq!(
            judge(301),
            Err(
                "Receiver answered 301; redirects are not followed, so this counts as a failure"
                    .into()
            )
        );
        assert_eq!(judge(500), Err("Receiver answered 500".into()));
    }

    #[test]
    fn validates_urls_and_unknown_fields() {
        assert_eq!(
            validate(r#"{"url":"https://hooks.example.com/x"}"#),
            Ok(r#"{"url":"https://hooks.example.com/x"}"#.into())
        );
        assert!(validate(r#"{"url":"ftp://x"}"#).is_err());
        assert!(validate(r#"{}"#).is_err());
        let e = validate(r#"{"url":"https://hooks.example.com/x","secret":"y"}"#)
            .expect_err("unknown field");
        assert_eq!(e[0].0, "secret");
        assert_eq!(
            url_of(r#"{"url":"https://a.example/"}"#),
            Ok("https://a.example/".into())
        );
    }
}
