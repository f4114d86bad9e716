//! The API as `tocsin apply` and `tocsin export` use it: a bearer key, the success and
//! error envelopes, and every page of a list.

use reqwest::Method;
use serde_json::{Map, Value};
use std::time::Duration;

/// A running server's API.
pub struct Remote {
    base: String,
    credentials: Credentials,
    http: reqwest::Client,
}

/// Whom the calls act as.
#[derive(Clone)]
pub enum Credentials {
    /// An API key, sent as `Authorization: Bearer`.
    Key(String),
    /// A signed-in person: the session's cookie header, the CSRF token its writes need,
    /// and the workspace it acts in.
    Session {
        cookie: String,
        csrf: String,
        workspace: String,
    },
}

/// A refusal (the error envelope's code and message, and the status) or a transport
/// failure (no status).
#[derive(Debug)]
pub struct RemoteError(pub String, pub Option<u16>);

impl RemoteError {
    /// The server refused the request for what it holds (400, 404, 409, 422, or a limit of
    /// the workspace's plan), rather than for who sent it, how often, or its own trouble.
    pub fn is_refusal(&self) -> bool {
        matches!(self.1, Some(400 | 404 | 409 | 422))
            || (self.1 == Some(403) && self.0.contains("PLAN_UPGRADE_REQUIRED"))
    }
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How often a request refused for the rate limit (429) is sent again, each time after
/// the wait the server asks for (`Retry-After`, at most a minute).
const RATE_LIMIT_TRIES: u32 = 10;

/// Send `request` (rebuilt by `build` for each try), again after a 429.
async fn send(
    build: impl Fn() -> reqwest::RequestBuilder,
    what: &str,
) -> Result<reqwest::Response, RemoteError> {
    let mut attempt = 0;
    loop {
        let answer = build()
            .send()
            .await
            .map_err(|e| RemoteError(format!("{what}: {e}"), None))?;
        attempt += 1;
        if answer.status() != reqwest::StatusCode::TOO_MANY_REQUESTS || attempt >= RATE_LIMIT_TRIES
        {
            return Ok(answer);
        }
        let wait = answer
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(1)
            .clamp(1, 60);
        tokio::time::sleep(Duration::from_secs(wait)).await;
    }
}

impl std::error::Error for RemoteError {}

impl Remote {
    pub fn new(base: &str, key: &str) -> anyhow::Result<Remote> {
        Remote::acting_as(base, Credentials::Key(key.to_string()))
    }

    pub fn acting_as(base: &str, credentials: Credentials) -> anyhow::Result<Remote> {
        crate::crypto::install_provider();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .user_agent(concat!("tocsin-apply/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Remote {
            base: base.trim_end_matches('/').to_string(),
            credentials,
            http,
        })
    }

    fn authorize(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.credentials {
            Credentials::Key(key) => request.bearer_auth(key),
            Credentials::Session {
                cookie,
                csrf,
                workspace,
            } => request
                .header(reqwest::header::COOKIE, cookie)
                .header("x-csrf-token", csrf)
                .header("x-workspace", workspace),
        }
    }

    /// One request; the envelope's `data` on success.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Map<String, Value>>,
    ) -> Result<Value, RemoteError> {
        let url = format!("{}{path}", self.base);
        let build = || {
            let request = self.authorize(self.http.request(method.clone(), &url));
            match body {
                Some(body) => request
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(serde_json::to_vec(body).unwrap_or_default()),
                None => request,
            }
        };
        let answer = send(build, &format!("{method} {url}")).await?;
        let status = answer.status();
        if status == reqwest::StatusCode::NO_CONTENT {
            return Ok(Value::Null);
        }
        let text = answer
            .text()
            .await
            .map_err(|e| RemoteError(format!("{method} {url}: {e}"), None))?;
        let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status.is_success() {
            return Ok(parsed.get("data").cloned().unwrap_or(Value::Null));
        }
        let error = &parsed["error"];
        let mut message = format!(
            "{} {}: {}",
            status.as_u16(),
            error["code"].as_str().unwrap_or("ERROR"),
            error["message"]
                .as_str()
                .unwrap_or_else(|| text.trim().get(..200).unwrap_or(text.trim()))
        );
        if let Some(details) = error["details"].as_array() {
            for d in details {
                if let (Some(f), Some(m)) = (d["field"].as_str(), d["message"].as_str()) {
                    message.push_str(&format!("\n      {f}: {m}"));
                }
            }
        }
        Err(RemoteError(message, Some(status.as_u16())))
    }

    /// Every item of a list route, page by page.
    pub async fn list(&self, path: &str) -> Result<Vec<Map<String, Value>>, RemoteError> {
        let mut items = Vec::new();
        for page in 1.. {
            let url = format!("{}{path}?limit=100&page={page}", self.base);
            let answer = send(
                || self.authorize(self.http.get(&url)),
                &format!("GET {url}"),
            )
            .await?;
            let status = answer.status();
            let text = answer
                .text()
                .await
                .map_err(|e| RemoteError(format!("GET {url}: {e}"), None))?;
            let body: Value = serde_json::from_str(&text).map_err(|e| {
                RemoteError(format!("GET {url}: not JSON ({e})"), Some(status.as_u16()))
            })?;
            if !status.is_success() {
                return Err(RemoteError(
                    format!(
                        "GET {url}: {} {}",
                        status.as_u16(),
                        body["error"]["message"].as_str().unwrap_or("")
                    ),
                    Some(status.as_u16()),
                ));
            }
            if let Some(list) = body["data"].as_array() {
                items.extend(list.iter().filter_map(|v| v.as_object().cloned()));
            }
            let pages = body["pagination"]["pages"].as_u64().unwrap_or(1);
            if page >= pages {
                break;
            }
        }
        Ok(items)
    }
}
