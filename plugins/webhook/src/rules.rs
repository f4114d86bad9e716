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
    // Receivers often put a token in the path or query: the URL is a secret.
    #[schemars(extend("format" = "uri", "x-tocsin-secret" = true, "x-tocsin-target" = true))]
    #[schemars(title = "URL")]
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

/// Why a delivery to `url` may not go out under the server's `settings` (JSON text with
/// `allowInsecure`): a plain `http://` URL while the server does not allow insecure
/// webhooks. Missing or unreadable settings count as not allowed.
pub fn insecure_refusal(url: &str, settings: &str) -> Option<String> {
    let allowed = serde_json::from_str::<Value>(settings)
        .ok()
        .and_then(|s| s.get("allowInsecure").and_then(Value::as_bool))
        .unwrap_or(false);
    (!allowed && !url.starts_with("https://")).then(|| {
        "The server does not allow insecure webhooks (allow_insecure_webhooks is off): \
         this channel's http:// URL is not sent to; change it to https://"
            .to_string()
    })
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
    fn plain_http_goes_out_only_when_the_server_allows_it() {
        let allow = r#"{"allowInsecure":true}"#;
        let deny = r#"{"allowInsecure":false}"#;
        assert_eq!(insecure_refusal("http://10.0.0.1/hook", allow), None);
        assert!(
            insecure_refusal("http://10.0.0.1/hook", deny)
                .is_some_and(|r| r.contains("allow_insecure_webhooks is off"))
        );
        assert!(insecure_refusal("http://10.0.0.1/hook", "{}").is_some());
        assert_eq!(insecure_refusal("https://example.com/hook", deny), None);
    }

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
