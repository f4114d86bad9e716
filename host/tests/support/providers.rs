//! Faithful fakes of the chat and paging providers' documented HTTP APIs, on loopback, for
//! the channel plugins' end-to-end tests. Each checks a request the way the provider does
//! (method, path, authentication, the JSON fields it requires) and answers the way the
//! provider does, its error format included. Accepted messages are recorded; a provider can
//! be told to fail its next requests with its own rate-limit or server-error answer.
//!
//! Paths: `/slack/services/...`, `/discord/api/webhooks/{id}/{token}`, `/teams/workflows/...`,
//! `/mattermost/hooks/{key}`, `/rocketchat/hooks/{id}/{token}`,
//! `/googlechat/v1/spaces/{space}/messages?key=..&token=..`,
//! `/matrix/_matrix/client/v3/rooms/{room}/send/m.room.message/{txn}`, `/ntfy` (JSON
//! publishing), `/gotify/message`, `/pushover/1/messages.json`, `/pagerduty/v2/enqueue`,
//! `/opsgenie/v2/alerts[/{alias}/{action}]`.

#![allow(dead_code)]

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Credentials the fakes accept.
pub const MATRIX_TOKEN: &str = "syt_good_token";
pub const GOTIFY_TOKEN: &str = "AgoodGotifyApp";
pub const PUSHOVER_TOKEN: &str = "azGDORePK8gMaC0QOYAMyEEuzJnyUi";
pub const PUSHOVER_USER: &str = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG";
pub const PAGERDUTY_KEY: &str = "R0ut1ngKeyR0ut1ngKeyR0ut1ngKey32";
pub const OPSGENIE_KEY: &str = "eb243592-faa2-4ba2-a551q-1afdf565c889";

/// One accepted message.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// Which provider (`slack`, `pagerduty`, ...).
    pub provider: String,
    pub method: String,
    pub path: String,
    pub headers: HashMap<String, String>,
    pub json: Value,
}

#[derive(Default)]
struct State {
    accepted: Mutex<Vec<Accepted>>,
    /// Every request, accepted or not: (provider, status answered).
    answers: Mutex<Vec<(String, u16)>>,
    /// Per provider: how many more requests to fail, and with which status.
    fail_next: Mutex<HashMap<String, (u32, u16)>>,
    /// Matrix transaction ids already seen, with their event ids (idempotence).
    matrix_txns: Mutex<HashMap<String, String>>,
    /// PagerDuty and Opsgenie alert states by dedup key or alias.
    alerts: Mutex<HashMap<String, String>>,
}

pub struct Providers {
    pub base: String,
    state: Arc<State>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Providers {
    pub fn start() -> Providers {
        let state = Arc::new(State::default());
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind providers");
        listener.set_nonblocking(true).expect("nonblocking");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let shared = state.clone();
        let app = Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = shared.clone();
                async move { handle(&state, method, uri, headers, body) }
            },
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
            runtime.shutdown_background();
        });
        Providers {
            base,
            state,
            _stop: stop,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Fail the provider's next `n` requests with `status` (its own 429 or 5xx answer).
    pub fn fail_next(&self, provider: &str, n: u32, status: u16) {
        self.state
            .fail_next
            .lock()
            .expect("lock")
            .insert(provider.to_string(), (n, status));
    }

    pub fn accepted(&self, provider: &str) -> Vec<Accepted> {
        self.state
            .accepted
            .lock()
            .expect("lock")
            .iter()
            .filter(|a| a.provider == provider)
            .cloned()
            .collect()
    }

    /// Statuses answered to the provider, in order.
    pub fn answers(&self, provider: &str) -> Vec<u16> {
        self.state
            .answers
            .lock()
            .expect("lock")
            .iter()
            .filter(|(p, _)| p == provider)
            .map(|(_, s)| *s)
            .collect()
    }

    /// A PagerDuty (`triggered`, `acknowledged`, `resolved`) or Opsgenie (`open`,
    /// `acknowledged`, `closed`) alert's state, by dedup key or alias.
    pub fn alert_state(&self, provider: &str, key: &str) -> Option<String> {
        self.state
            .alerts
            .lock()
            .expect("lock")
            .get(&format!("{provider}:{key}"))
            .cloned()
    }
}

fn json_response(status: u16, body: Value) -> Response {
    (
        StatusCode::from_u16(status).expect("status"),
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn text_response(status: u16, body: &str) -> Response {
    (
        StatusCode::from_u16(status).expect("status"),
        [("content-type", "text/plain")],
        body.to_string(),
    )
        .into_response()
}

fn provider_of(path: &str) -> &str {
    path.trim_start_matches('/').split('/').next().unwrap_or("")
}

fn handle(state: &State, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let path = uri.path().to_string();
    let query = uri.query().unwrap_or("").to_string();
    let provider = provider_of(&path).to_string();
    let headers: HashMap<String, String> = headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                v.to_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let response = answer(state, &provider, &method, &path, &query, &headers, &body);
    let status = response.status().as_u16();
    state
        .answers
        .lock()
        .expect("lock")
        .push((provider.clone(), status));
    response
}

/// A scripted failure, in the provider's own words.
fn scripted(provider: &str, status: u16) -> Response {
    match (provider, status) {
        ("slack", 429) => text_response(429, "rate_limited"),
        ("discord", 429) => json_response(
            429,
            json!({"message": "You are being rate limited.", "retry_after": 0.2, "global": false}),
        ),
        ("pagerduty", 429) => json_response(
            429,
            json!({"status": "throttle event", "message": "Requests for this service are arriving too quickly.  Please retry later."}),
        ),
        ("opsgenie", 429) => json_response(
            429,
            json!({"message": "You are making too many requests! To avoid errors, we recommend you limit requests.", "took": 0.0, "requestId": "r-1"}),
        ),
        ("teams", 400) => json_response(
            400,
            json!({"error": {"code": "TriggerInputSchemaMismatch", "message": "The input body for trigger 'manual' of type 'Request' did not match its schema definition."}}),
        ),
        ("mattermost", 400) => json_response(
            400,
            json!({"id": "web.incoming_webhook.invalid.app_error", "message": "Invalid webhook.", "status_code": 400}),
        ),
        ("rocketchat", 400) => json_response(
            400,
            json!({"success": false, "error": "Invalid integration id or token provided."}),
        ),
        ("googlechat", 400) => json_response(
            400,
            json!({"error": {"code": 400, "message": "Invalid JSON payload received.", "status": "INVALID_ARGUMENT"}}),
        ),
        (_, s) => json_response(s, json!({"message": "Internal Server Error"})),
    }
}

fn answer(
    state: &State,
    provider: &str,
    method: &Method,
    path: &str,
    query: &str,
    headers: &HashMap<String, String>,
    body: &[u8],
) -> Response {
    {
        let mut fail = state.fail_next.lock().expect("lock");
        if let Some((n, status)) = fail.get_mut(provider)
            && *n > 0
        {
            *n -= 1;
            return scripted(provider, *status);
        }
    }
    let json_type = headers
        .get("content-type")
        .is_some_and(|c| c.starts_with("application/json"));
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let accept = |json: Value| {
        state.accepted.lock().expect("lock").push(Accepted {
            provider: provider.to_string(),
            method: method.to_string(),
            path: path.to_string(),
            headers: headers.clone(),
            json,
        });
    };
    let bad_method = *method != Method::POST && provider != "matrix";
    if bad_method {
        return text_response(405, "Method Not Allowed");
    }
    match provider {
        // Slack incoming webhooks: https://api.slack.com/messaging/webhooks
        "slack" => {
            if path.ends_with("/gone") {
                return text_response(404, "no_service");
            }
            let Some(v) = parsed.filter(|_| json_type) else {
                return text_response(400, "invalid_payload");
            };
            let blocks_ok = v["blocks"]
                .as_array()
                .is_some_and(|b| b.len() <= 50 && b.iter().all(|b| b["type"].is_string()));
            if !v["text"].is_string() && !blocks_ok {
                return text_response(400, "no_text");
            }
            if !v["blocks"].is_null() && !blocks_ok {
                return text_response(400, "invalid_blocks");
            }
            accept(v);
            text_response(200, "ok")
        }
        // Discord webhooks: https://discord.com/developers/docs/resources/webhook#execute-webhook
        "discord" => {
            let parts: Vec<&str> = path.split('/').collect();
            // ["", "discord", "api", "webhooks", id, token]
            if parts.len() != 6 || parts[4] == "0" {
                return json_response(404, json!({"message": "Unknown Webhook", "code": 10015}));
            }
            let Some(v) = parsed.filter(|_| json_type) else {
                return json_response(
                    400,
                    json!({"message": "Cannot send an empty message", "code": 50006}),
                );
            };
            let embeds = v["embeds"].as_array().cloned().unwrap_or_default();
            let content_ok = v["content"]
                .as_str()
                .is_none_or(|c| c.chars().count() <= 2000);
            let embeds_ok = embeds.len() <= 10
                && embeds.iter().all(|e| {
                    e["title"].as_str().is_none_or(|t| t.chars().count() <= 256)
                        && e["fields"].as_array().is_none_or(|f| {
                            f.len() <= 25
                                && f.iter()
                                    .all(|f| f["name"].is_string() && f["value"].is_string())
                        })
                });
            if (v["content"].is_null() && embeds.is_empty()) || !content_ok || !embeds_ok {
                return json_response(
                    400,
                    json!({"message": "Invalid Form Body", "code": 50035, "errors": {}}),
                );
            }
            accept(v.clone());
            if query.contains("wait=true") {
                json_response(
                    200,
                    json!({"id": "1100000000000000000", "type": 0, "content": v["content"], "embeds": v["embeds"]}),
                )
            } else {
                StatusCode::NO_CONTENT.into_response()
            }
        }
        // Teams workflows ("When a Teams webhook request is received"): an Adaptive Card
        // in a message's attachments; answers 202.
        "teams" => {
            let Some(v) = parsed.filter(|_| json_type) else {
                return json_response(
                    400,
                    json!({"error": {"code": "InvalidRequestContent", "message": "The input body for trigger 'manual' of type 'Request' must be of type JSON"}}),
                );
            };
            let card = &v["attachments"][0];
            let ok = v["type"] == "message"
                && card["contentType"] == "application/vnd.microsoft.card.adaptive"
                && card["content"]["type"] == "AdaptiveCard"
                && card["content"]["body"].is_array();
            if !ok {
                return json_response(
                    400,
                    json!({"error": {"code": "TriggerInputSchemaMismatch", "message": "The input body for trigger 'manual' of type 'Request' did not match its schema definition."}}),
                );
            }
            accept(v);
            StatusCode::ACCEPTED.into_response()
        }
        // Mattermost incoming webhooks: text or attachments required; answers "ok".
        "mattermost" => {
            let Some(v) = parsed.filter(|_| json_type) else {
                return json_response(
                    400,
                    json!({"id": "web.incoming_webhook.parse.app_error", "message": "Unable to parse incoming data", "status_code": 400}),
                );
            };
            if v["text"].as_str().is_none_or(str::is_empty) && !v["attachments"].is_array() {
                return json_response(
                    400,
                    json!({"id": "web.incoming_webhook.text.app_error", "message": "No text specified", "status_code": 400}),
                );
            }
            accept(v);
            text_response(200, "ok")
        }
        // Rocket.Chat incoming integrations: answers {"success": true}.
        "rocketchat" => {
            let parts: Vec<&str> = path.split('/').collect();
            if parts.len() != 5 {
                return json_response(
                    404,
                    json!({"success": false, "error": "Invalid integration id or token provided."}),
                );
            }
            let Some(v) = parsed.filter(|_| json_type) else {
                return json_response(400, json!({"success": false, "error": "Invalid JSON"}));
            };
            if !v["text"].is_string() && !v["attachments"].is_array() {
                return json_response(
                    400,
                    json!({"success": false, "error": "text or attachments required"}),
                );
            }
            accept(v);
            json_response(200, json!({"success": true}))
        }
        // Google Chat space webhooks: key and token in the query; answers the message.
        "googlechat" => {
            if !query.contains("key=") || !query.contains("token=") {
                return json_response(
                    401,
                    json!({"error": {"code": 401, "message": "Request is missing required authentication credential.", "status": "UNAUTHENTICATED"}}),
                );
            }
            let Some(v) = parsed.filter(|_| json_type) else {
                return json_response(
                    400,
                    json!({"error": {"code": 400, "message": "Invalid JSON payload received.", "status": "INVALID_ARGUMENT"}}),
                );
            };
            if v["text"].as_str().is_none_or(str::is_empty) && !v["cardsV2"].is_array() {
                return json_response(
                    400,
                    json!({"error": {"code": 400, "message": "Message cannot be empty.", "status": "INVALID_ARGUMENT"}}),
                );
            }
            accept(v.clone());
            json_response(
                200,
                json!({"name": "spaces/AAAA/messages/BBBB", "text": v["text"]}),
            )
        }
        // Matrix client-server API: PUT .../send/m.room.message/{txnId}, bearer token.
        "matrix" => {
            if *method != Method::PUT {
                return json_response(
                    405,
                    json!({"errcode": "M_UNRECOGNIZED", "error": "Unrecognized request"}),
                );
            }
            if headers.get("authorization").map(String::as_str)
                != Some(&format!("Bearer {MATRIX_TOKEN}"))
            {
                return json_response(
                    401,
                    json!({"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token passed.", "soft_logout": false}),
                );
            }
            let parts: Vec<&str> = path.split('/').collect();
            // ["", "matrix", "_matrix", "client", "v3", "rooms", room, "send", "m.room.message", txn]
            if parts.len() != 10 || parts[5] != "rooms" || parts[7] != "send" {
                return json_response(
                    404,
                    json!({"errcode": "M_UNRECOGNIZED", "error": "Unrecognized request"}),
                );
            }
            if !parts[6].starts_with("%21") {
                return json_response(
                    400,
                    json!({"errcode": "M_INVALID_PARAM", "error": "Invalid room id"}),
                );
            }
            let Some(v) = parsed.filter(|_| json_type) else {
                return json_response(
                    400,
                    json!({"errcode": "M_NOT_JSON", "error": "Content not JSON."}),
                );
            };
            if v["msgtype"] != "m.text" || !v["body"].is_string() {
                return json_response(
                    400,
                    json!({"errcode": "M_BAD_JSON", "error": "msgtype and body are required"}),
                );
            }
            let txn = format!("{}/{}", parts[6], parts[9]);
            let mut txns = state.matrix_txns.lock().expect("lock");
            if let Some(event) = txns.get(&txn) {
                return json_response(200, json!({"event_id": event}));
            }
            let event = format!("$event{}", txns.len() + 1);
            txns.insert(txn, event.clone());
            accept(v);
            json_response(200, json!({"event_id": event}))
        }
        // ntfy JSON publishing: POST to the root URL with topic and message.
        "ntfy" => {
            let Some(v) = parsed else {
                return json_response(
                    400,
                    json!({"code": 40024, "http": 400, "error": "invalid request: request body must be message JSON"}),
                );
            };
            let topic_ok = v["topic"]
                .as_str()
                .is_some_and(|t| !t.is_empty() && t.len() <= 64);
            let priority_ok = v["priority"].as_u64().is_none_or(|p| (1..=5).contains(&p));
            if !topic_ok || !priority_ok {
                return json_response(
                    400,
                    json!({"code": 40007, "http": 400, "error": "invalid request: topic invalid or priority out of range"}),
                );
            }
            if v["topic"] == "protected"
                && headers.get("authorization").map(String::as_str) != Some("Bearer tk_good")
            {
                return json_response(
                    403,
                    json!({"code": 40301, "http": 403, "error": "forbidden", "link": "https://ntfy.sh/docs/publish/#authentication"}),
                );
            }
            accept(v.clone());
            json_response(
                200,
                json!({"id": "hwQ2YpKdmg", "time": 1_795_253_400, "event": "message", "topic": v["topic"], "message": v["message"]}),
            )
        }
        // Gotify: POST /message with the application token.
        "gotify" => {
            if headers.get("x-gotify-key").map(String::as_str) != Some(GOTIFY_TOKEN) {
                return json_response(
                    401,
                    json!({"error": "Unauthorized", "errorCode": 401, "errorDescription": "you need to provide a valid access token or user credentials to access this api"}),
                );
            }
            let Some(v) = parsed.filter(|_| json_type) else {
                return json_response(
                    400,
                    json!({"error": "Bad Request", "errorCode": 400, "errorDescription": "invalid JSON"}),
                );
            };
            if v["message"].as_str().is_none_or(str::is_empty) {
                return json_response(
                    400,
                    json!({"error": "Bad Request", "errorCode": 400, "errorDescription": "Field 'message' is required"}),
                );
            }
            accept(v.clone());
            json_response(
                200,
                json!({"id": 25, "appid": 5, "message": v["message"], "title": v["title"], "priority": v["priority"]}),
            )
        }
        // Pushover: token, user and message required.
        "pushover" => {
            let Some(v) = parsed else {
                return json_response(
                    400,
                    json!({"errors": ["message cannot be blank"], "status": 0, "request": "r-1"}),
                );
            };
            if v["token"] != PUSHOVER_TOKEN {
                return json_response(
                    400,
                    json!({"token": "invalid", "errors": ["application token is invalid"], "status": 0, "request": "r-2"}),
                );
            }
            if v["user"] != PUSHOVER_USER {
                return json_response(
                    400,
                    json!({"user": "invalid", "errors": ["user identifier is not a valid user, group, or subscribed user key"], "status": 0, "request": "r-3"}),
                );
            }
            if v["message"].as_str().is_none_or(str::is_empty) {
                return json_response(
                    400,
                    json!({"message": "cannot be blank", "errors": ["message cannot be blank"], "status": 0, "request": "r-4"}),
                );
            }
            accept(v);
            json_response(
                200,
                json!({"status": 1, "request": "647d2300-702c-4b38-8b2f-d56326ae460b"}),
            )
        }
        // PagerDuty Events API v2.
        "pagerduty" => {
            let Some(v) = parsed.filter(|_| json_type) else {
                return json_response(
                    400,
                    json!({"status": "invalid event", "message": "Event object is invalid", "errors": ["Invalid JSON"]}),
                );
            };
            let mut errors = Vec::new();
            if v["routing_key"].as_str().is_none_or(|k| k.len() != 32) {
                errors.push("Length of 'routing_key' is incorrect (should be 32 characters)");
            }
            let action = v["event_action"].as_str().unwrap_or("");
            if !["trigger", "acknowledge", "resolve"].contains(&action) {
                errors.push("'event_action' is invalid (must be one of the following: 'trigger', 'acknowledge' or 'resolve')");
            }
            if action != "trigger" && v["dedup_key"].as_str().is_none_or(str::is_empty) {
                errors.push("'dedup_key' is missing or blank");
            }
            if action == "trigger" {
                let p = &v["payload"];
                if p["summary"].as_str().is_none_or(str::is_empty) {
                    errors.push("'payload.summary' is missing or blank");
                }
                if p["source"].as_str().is_none_or(str::is_empty) {
                    errors.push("'payload.source' is missing or blank");
                }
                if !["critical", "error", "warning", "info"]
                    .contains(&p["severity"].as_str().unwrap_or(""))
                {
                    errors.push("'payload.severity' is invalid (must be one of the following: 'critical', 'warning', 'error' or 'info')");
                }
            }
            if !errors.is_empty() {
                return json_response(
                    400,
                    json!({"status": "invalid event", "message": "Event object is invalid", "errors": errors}),
                );
            }
            if v["routing_key"] != PAGERDUTY_KEY {
                return json_response(
                    400,
                    json!({"status": "invalid event", "message": "Event object is invalid", "errors": ["Invalid routing key"]}),
                );
            }
            let key = v["dedup_key"].as_str().unwrap_or("generated").to_string();
            let next = match action {
                "trigger" => "triggered",
                "acknowledge" => "acknowledged",
                _ => "resolved",
            };
            state
                .alerts
                .lock()
                .expect("lock")
                .insert(format!("pagerduty:{key}"), next.into());
            accept(v);
            json_response(
                202,
                json!({"status": "success", "message": "Event processed", "dedup_key": key}),
            )
        }
        // Opsgenie Alert API: create, and acknowledge or close by alias.
        "opsgenie" => {
            if headers.get("authorization").map(String::as_str)
                != Some(&format!("GenieKey {OPSGENIE_KEY}"))
            {
                return json_response(
                    401,
                    json!({"message": "Could not authenticate", "took": 0.0, "requestId": "r-1"}),
                );
            }
            let Some(v) = parsed.filter(|_| json_type) else {
                return json_response(
                    400,
                    json!({"message": "Request body is not processable. Please check the errors.", "errors": {}, "took": 0.0, "requestId": "r-2"}),
                );
            };
            let parts: Vec<&str> = path.split('/').collect();
            // ["", "opsgenie", "v2", "alerts"] or [..., alias, action]
            let mut alerts = state.alerts.lock().expect("lock");
            match parts.as_slice() {
                ["", "opsgenie", "v2", "alerts"] => {
                    let message_ok = v["message"]
                        .as_str()
                        .is_some_and(|m| !m.is_empty() && m.chars().count() <= 130);
                    let alias_ok = v["alias"].as_str().is_none_or(|a| a.len() <= 512);
                    let priority_ok = v["priority"]
                        .as_str()
                        .is_none_or(|p| ["P1", "P2", "P3", "P4", "P5"].contains(&p));
                    if !message_ok || !alias_ok || !priority_ok {
                        return json_response(
                            422,
                            json!({"message": "Request body is not processable. Please check the errors.", "errors": {"message": "Message can not be empty or longer than 130 characters."}, "took": 0.001, "requestId": "r-3"}),
                        );
                    }
                    if let Some(alias) = v["alias"].as_str() {
                        alerts.insert(format!("opsgenie:{alias}"), "open".into());
                    }
                }
                [
                    "",
                    "opsgenie",
                    "v2",
                    "alerts",
                    alias,
                    action @ ("acknowledge" | "close"),
                ] => {
                    if !query.contains("identifierType=alias") {
                        return json_response(
                            404,
                            json!({"message": "Alert does not exist", "took": 0.0, "requestId": "r-4"}),
                        );
                    }
                    let alias = format!("opsgenie:{alias}");
                    if !alerts.contains_key(&alias) {
                        return json_response(
                            404,
                            json!({"message": "Alert with alias not found", "took": 0.0, "requestId": "r-5"}),
                        );
                    }
                    alerts.insert(
                        alias,
                        if *action == "close" {
                            "closed"
                        } else {
                            "acknowledged"
                        }
                        .into(),
                    );
                }
                _ => {
                    return json_response(
                        404,
                        json!({"message": "Not found", "took": 0.0, "requestId": "r-6"}),
                    );
                }
            }
            drop(alerts);
            accept(v);
            json_response(
                202,
                json!({"result": "Request will be processed", "took": 0.107, "requestId": "43a29c5c-3dbf-4fa4-9c26-f4f71023e120"}),
            )
        }
        _ => text_response(404, "no such provider"),
    }
}
