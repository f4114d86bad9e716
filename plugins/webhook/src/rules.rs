//! The webhook channel's pure rules: configuration and what counts as delivered.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tocsin_plugin_sdk::FieldError;
use tocsin_plugin_sdk::typed::{PluginConfig, TypedConfig, field_error};

/// Something that can say what went wrong in a sentence.
pub trait Describe {
    fn describe(&self) -> String;
}

/// A sentence for a transport failure.
pub fn transport_reason(e: &impl Describe) -> String {
    e.describe()
}

/// A webhook channel's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "webhook channel")]
pub struct WebhookConfig {
    /// HTTPS endpoint that receives signed events.
    #[schemars(extend("format" = "uri"))]
    pub url: String,
}

impl TypedConfig for WebhookConfig {
    fn refine(self) -> Result<Self, Vec<FieldError>> {
        let url = &self.url;
        if !(url.starts_with("https://") || url.starts_with("http://"))
            || url.len() < 10
            || url.chars().any(char::is_whitespace)
        {
            return Err(vec![field_error("url", "must be an absolute https:// URL")]);
        }
        Ok(self)
    }
}

/// Validate `{"url": "https://..."}` and return it normalised, or `(field, message)` pairs.
pub fn validate(text: &str) -> Result<String, Vec<(String, String)>> {
    WebhookConfig::parse(text)
        .map(|c| c.canonical().to_string())
        .map_err(|problems| problems.into_iter().map(|p| (p.field, p.message)).collect())
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
    WebhookConfig::schema()
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
    }
}
