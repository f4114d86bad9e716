//! A Tocsin webhook receiver: verifies `X-Service-Signature` over the raw body, refuses
//! timestamps more than 300 s away, answers at once, and ignores a `webhookId` it has
//! already handled (retries keep theirs).

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::post;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

/// How far a delivery's timestamp may be from our clock.
pub const TOLERANCE_SECONDS: i64 = 300;
/// How many webhook ids are remembered. A real service keeps them in its database.
const REMEMBERED_IDS: usize = 10_000;

/// Why a delivery was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    MalformedTimestamp,
    StaleTimestamp,
    BadSignature,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::MalformedTimestamp => "missing or malformed X-Service-Timestamp",
            Refusal::StaleTimestamp => "stale timestamp",
            Refusal::BadSignature => "signature does not match",
        }
    }
}

/// Check one delivery against any of `secrets` (several during a rotation).
pub fn verify(
    secrets: &[String],
    timestamp: &str,
    body: &[u8],
    signature: &str,
    now: i64,
) -> Result<(), Refusal> {
    let sent: i64 = timestamp.parse().map_err(|_| Refusal::MalformedTimestamp)?;
    if (now - sent).abs() > TOLERANCE_SECONDS {
        return Err(Refusal::StaleTimestamp);
    }
    let given = signature
        .strip_prefix("sha256=")
        .and_then(|h| hex::decode(h).ok())
        .ok_or(Refusal::BadSignature)?;
    for secret in secrets {
        let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.as_bytes()) else {
            continue;
        };
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(body);
        // verify_slice compares in constant time.
        if mac.verify_slice(&given).is_ok() {
            return Ok(());
        }
    }
    Err(Refusal::BadSignature)
}

#[derive(Default)]
struct Seen {
    ids: HashSet<String>,
    order: VecDeque<String>,
}

/// The receiver's state: its secrets and the ids it has handled.
pub struct Receiver {
    secrets: Vec<String>,
    seen: Mutex<Seen>,
    /// Called with each new event, after the answer is on its way.
    on_event: Box<dyn Fn(&Value) + Send + Sync>,
    /// Where refusals and duplicates are reported (standard output unless changed).
    log: Box<dyn Fn(String) + Send + Sync>,
}

impl Receiver {
    pub fn new(secrets: Vec<String>, on_event: impl Fn(&Value) + Send + Sync + 'static) -> Self {
        Receiver {
            secrets,
            seen: Mutex::new(Seen::default()),
            on_event: Box::new(on_event),
            log: Box::new(|line| println!("{line}")),
        }
    }

    /// Report refusals and duplicates somewhere else than standard output.
    pub fn with_log(mut self, log: impl Fn(String) + Send + Sync + 'static) -> Self {
        self.log = Box::new(log);
        self
    }

    fn first_time(&self, id: &str) -> bool {
        let Ok(mut seen) = self.seen.lock() else {
            return true;
        };
        if !seen.ids.insert(id.to_string()) {
            return false;
        }
        seen.order.push_back(id.to_string());
        if seen.order.len() > REMEMBERED_IDS
            && let Some(old) = seen.order.pop_front()
        {
            seen.ids.remove(&old);
        }
        true
    }
}

/// The receiver as an axum router: POST to any path.
pub fn app(receiver: Arc<Receiver>) -> Router {
    Router::new()
        .route("/", post(receive))
        .route("/{*path}", post(receive))
        .with_state(receiver)
}

async fn receive(State(r): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    if let Err(refusal) = verify(
        &r.secrets,
        header("x-service-timestamp"),
        &body,
        header("x-service-signature"),
        now,
    ) {
        (r.log)(format!("rejected {}", refusal.as_str()));
        let status = match refusal {
            Refusal::StaleTimestamp => StatusCode::BAD_REQUEST,
            _ => StatusCode::UNAUTHORIZED,
        };
        return (status, Json(json!({"error": refusal.as_str()}))).into_response();
    }
    let Ok(event) = serde_json::from_slice::<Value>(&body) else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({"error": "body is not JSON"})),
        )
            .into_response();
    };
    let id = event["webhookId"].as_str().unwrap_or_default().to_string();
    if !r.first_time(&id) {
        (r.log)(format!("duplicate {id}"));
        return Json(json!({"status": "duplicate"})).into_response();
    }
    // Answer first; do the work on another task so the sender is not kept waiting.
    let worker = r.clone();
    tokio::spawn(async move { (worker.on_event)(&event) });
    Json(json!({"status": "accepted"})).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &str, ts: &str, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
        mac.update(ts.as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn verifies_like_the_spec_says() {
        let secrets = vec!["whsec_new".to_string(), "whsec_old".to_string()];
        let body = br#"{"event":"incident.created"}"#;
        let now = 1_795_253_400;
        let ts = now.to_string();
        assert_eq!(
            verify(&secrets, &ts, body, &sign("whsec_old", &ts, body), now),
            Ok(())
        );
        assert_eq!(
            verify(&secrets, &ts, b"{}", &sign("whsec_new", &ts, body), now),
            Err(Refusal::BadSignature)
        );
        let old = (now - 301).to_string();
        assert_eq!(
            verify(&secrets, &old, body, &sign("whsec_new", &old, body), now),
            Err(Refusal::StaleTimestamp)
        );
        assert_eq!(
            verify(&secrets, "soon", body, "sha256=00", now),
            Err(Refusal::MalformedTimestamp)
        );
    }
}
