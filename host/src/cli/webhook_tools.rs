//! Helpers for people who write webhook receivers: explain why a signature does or does
//! not verify, send a signed test event, and print an example of every event kind (the
//! examples in docs/webhooks.md come from here).

use crate::outbox::events::{self, EventBody, kind};
use crate::outbox::signing;
use serde_json::{Value, json};

/// The spec's tolerance between a delivery's timestamp and the receiver's clock.
pub const TOLERANCE_SECS: i64 = 300;

/// What `tocsin webhook verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    pub valid: bool,
    /// Sentences, most important first.
    pub findings: Vec<String>,
}

/// Check a delivery as a receiver should, and when it fails, say the likely reason.
pub fn diagnose(
    secrets: &[String],
    timestamp: &str,
    signature: &str,
    body: &[u8],
    now: i64,
) -> Diagnosis {
    let mut findings = Vec::new();
    let bad = |findings: Vec<String>| Diagnosis {
        valid: false,
        findings,
    };
    let ts_text = timestamp.trim();
    let Ok(ts) = ts_text.parse::<i64>() else {
        return bad(vec![format!(
            "X-Service-Timestamp `{ts_text}` is not a Unix time in seconds"
        )]);
    };
    if ts > 100_000_000_000 {
        findings.push(
            "X-Service-Timestamp looks like milliseconds; it is Unix seconds, and the signed \
             string uses the header's text exactly"
                .to_string(),
        );
    }
    let sig = signature.trim();
    let well_formed = sig.strip_prefix("sha256=").is_some_and(|h| {
        h.len() == 64
            && h.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if !well_formed {
        findings.push(
            "X-Service-Signature must be `sha256=` followed by 64 lowercase hexadecimal digits"
                .to_string(),
        );
        return bad(findings);
    }
    let Ok(text) = std::str::from_utf8(body) else {
        findings.push("the body is not UTF-8 text; Tocsin sends UTF-8 JSON".to_string());
        return bad(findings);
    };
    let matches = |candidate: &str| {
        secrets
            .iter()
            .position(|s| signing::verify(s, ts, candidate, sig, ts, 0).is_ok())
    };
    match matches(text) {
        Some(i) => {
            let age = now - ts;
            if age.abs() > TOLERANCE_SECS {
                findings.push(format!(
                    "the signature is genuine, but the timestamp is {} s {} (the tolerance is \
                     {TOLERANCE_SECS} s): a replayed delivery, or a clock out of sync",
                    age.abs(),
                    if age > 0 { "old" } else { "in the future" }
                ));
                return bad(findings);
            }
            let which = if secrets.len() > 1 {
                format!(" (with secret {} of {})", i + 1, secrets.len())
            } else {
                String::new()
            };
            Diagnosis {
                valid: true,
                findings: vec![format!(
                    "valid{which}: the signature matches and the timestamp is {} s from now",
                    age.abs()
                )],
            }
        }
        None => {
            let trimmed = text.trim_end_matches(['\n', '\r']);
            let compact = serde_json::from_str::<Value>(text)
                .ok()
                .map(|v| v.to_string());
            if trimmed != text && matches(trimmed).is_some() {
                findings.push(
                    "the body was altered: it matches once the trailing newline is removed; \
                     verify the raw bytes exactly as received"
                        .to_string(),
                );
            } else if let Some(c) = compact.filter(|c| c != text && matches(c).is_some()) {
                let _ = c;
                findings.push(
                    "the body was altered: it matches Tocsin's compact JSON but not these bytes; \
                     verify the raw body before parsing or re-serialising it"
                        .to_string(),
                );
            } else {
                findings.push(
                    "the signature does not match: either the secret is wrong (use this \
                     workspace's current whsec_ secret; during a rotation try the previous one \
                     too) or the body is not the exact bytes that were sent"
                        .to_string(),
                );
            }
            bad(findings)
        }
    }
}

/// A payload of every event kind with fixed, realistic values.
pub fn example_payloads() -> Vec<(&'static str, String)> {
    let monitor = json!({"id": "mon_01JD6Z3Y5N8Q2W7R4T6V9X0B1C", "name": "Public API", "type": "http", "url": "https://api.example.com/health"});
    let ssl_monitor = json!({"id": "mon_01JD6Z4K2M7P9R3T5V8X0Z2B4D", "name": "Shop certificate", "type": "ssl", "hostname": "shop.example.com"});
    let created_at = "2026-11-21T09:30:00.000Z";
    let incident = |status: &str, extra: Value| {
        let mut o = json!({"id": "inc_01JD6Z5A8C2E4G6J8L0N2Q4S6U", "url": "https://status.example.com/incidents/inc_01JD6Z5A8C2E4G6J8L0N2Q4S6U", "status": status, "createdAt": created_at});
        if let (Some(o), Value::Object(e)) = (o.as_object_mut(), extra) {
            o.extend(e);
        }
        o
    };
    let body = |event: &'static str,
                monitor: &Value,
                incident: Option<Value>,
                failure: Option<Value>,
                ssl: Option<Value>| EventBody {
        event,
        at_ms: 1_795_253_400_000,
        monitor: monitor.clone(),
        workspace_id: "ws_01JD6Z2B4D6F8H0K2M4P6R8T0V".into(),
        workspace_name: "Acme".into(),
        incident,
        failure,
        ssl,
        test: false,
    };
    let failure = json!({"reason": "Expected status 200, got 503", "statusCode": 503, "responseTime": 182, "region": "eu-west"});
    let ssl = json!({"expiresAt": "2026-11-26T12:00:00.000Z", "daysRemaining": 5, "issuer": "CN=R11, O=Let's Encrypt, C=US"});
    let id = "whd_01JD6Z6Q1S3U5W7Y9A1C3E5G7J";
    // The one-click links an alert about an open incident carries (one set per delivery).
    let actions = json!({
        "acknowledge": "https://status.example.com/act/3kTq8WmZr2VbN6yXc4Hs9LpD1fGj7Ae5",
        "snooze1h": "https://status.example.com/act/Q8vN2mXc6Rt4Lp9Hs1Kd7Fj3Wb5Gy0Ze",
        "snoozeUntilMorning": "https://status.example.com/act/Zr5Tm1Wq8Xv3Nc7Kp2Hd6Ls9Bf4Gj0Ya",
        "resolve": "https://status.example.com/act/Bx4Nq9Wm2Rc7Tv1Lk6Hp3Zs8Df5Gj0Ye",
    });
    vec![
        (
            kind::INCIDENT_CREATED,
            events::payload_with(
                &body(
                    kind::INCIDENT_CREATED,
                    &monitor,
                    Some(incident("open", json!({}))),
                    Some(failure),
                    None,
                ),
                id,
                Some(("actions", actions.clone())),
            ),
        ),
        (
            kind::INCIDENT_REMINDER,
            events::with_object(&events::payload_with(
                &body(
                    kind::INCIDENT_REMINDER,
                    &monitor,
                    Some(incident("open", json!({}))),
                    Some(
                        json!({"reason": "Expected status 200, got 503", "statusCode": 503, "responseTime": 182, "region": "eu-west"}),
                    ),
                    None,
                ),
                id,
                Some((
                    "reminder",
                    json!({"number": 2, "limit": 10, "downForSeconds": 3600, "text": "still down for 1 h"}),
                )),
            ), "actions", actions.clone()),
        ),
        (
            kind::INCIDENT_ACKNOWLEDGED,
            events::payload(
                &body(
                    kind::INCIDENT_ACKNOWLEDGED,
                    &monitor,
                    Some(incident(
                        "acknowledged",
                        json!({"acknowledgedAt": "2026-11-21T09:34:10.000Z"}),
                    )),
                    None,
                    None,
                ),
                id,
            ),
        ),
        (
            kind::INCIDENT_RESOLVED,
            events::payload(
                &body(
                    kind::INCIDENT_RESOLVED,
                    &monitor,
                    Some(incident(
                        "resolved",
                        json!({"acknowledgedAt": "2026-11-21T09:34:10.000Z", "resolvedAt": "2026-11-21T09:41:30.000Z", "durationSeconds": 690}),
                    )),
                    None,
                    None,
                ),
                id,
            ),
        ),
        (
            kind::MONITOR_PAUSED,
            events::payload(&body(kind::MONITOR_PAUSED, &monitor, None, None, None), id),
        ),
        (
            kind::MONITOR_RESUMED,
            events::payload(&body(kind::MONITOR_RESUMED, &monitor, None, None, None), id),
        ),
        (
            kind::SSL_EXPIRY_WARNING,
            events::payload(
                &body(
                    kind::SSL_EXPIRY_WARNING,
                    &ssl_monitor,
                    None,
                    None,
                    Some(
                        json!({"expiresAt": "2026-12-15T12:00:00.000Z", "daysRemaining": 24, "issuer": "CN=R11, O=Let's Encrypt, C=US"}),
                    ),
                ),
                id,
            ),
        ),
        (
            kind::SSL_EXPIRY_CRITICAL,
            events::payload(
                &body(
                    kind::SSL_EXPIRY_CRITICAL,
                    &ssl_monitor,
                    None,
                    None,
                    Some(ssl),
                ),
                id,
            ),
        ),
    ]
    .into_iter()
    .chain(flapping_examples(&body(kind::MONITOR_FLAPPING_STARTED, &monitor, None, None, None), &body(kind::MONITOR_FLAPPING, &monitor, None, None, None), id))
    .chain(degraded_examples(
        &body(kind::MONITOR_DEGRADED, &monitor, None, None, None),
        &body(kind::MONITOR_DEGRADED_ENDED, &monitor, None, None, None),
        id,
    ))
    .collect()
}

/// The two degraded events' examples, from their bodies.
fn degraded_examples(
    started: &EventBody,
    ended: &EventBody,
    id: &str,
) -> [(&'static str, String); 2] {
    [
        (
            kind::MONITOR_DEGRADED,
            events::payload_with(
                started,
                id,
                Some((
                    "degraded",
                    json!({"state": "degraded", "responseTime": 2412, "thresholdMs": 1000, "slowChecks": 3}),
                )),
            ),
        ),
        (
            kind::MONITOR_DEGRADED_ENDED,
            events::payload_with(
                ended,
                id,
                Some((
                    "degraded",
                    json!({"state": "up", "responseTime": 182, "thresholdMs": 1000, "slowChecks": 0}),
                )),
            ),
        ),
    ]
}

/// The two flapping events' examples, from their bodies.
fn flapping_examples(
    started: &EventBody,
    settled: &EventBody,
    id: &str,
) -> [(&'static str, String); 2] {
    [
        (
            kind::MONITOR_FLAPPING_STARTED,
            events::payload_with(
                started,
                id,
                Some((
                    "flapping",
                    json!({"since": "2026-11-21T09:02:00.000Z", "changes": 4,
                           "windowMinutes": 10, "state": "up"}),
                )),
            ),
        ),
        (
            kind::MONITOR_FLAPPING,
            events::payload_with(
                settled,
                id,
                Some((
                    "flapping",
                    json!({"since": "2026-11-21T09:02:00.000Z", "until": "2026-11-21T09:30:00.000Z",
                           "changes": 9, "state": "up"}),
                )),
            ),
        ),
    ]
}

/// The examples as the Markdown section of docs/webhooks.md.
pub fn examples_markdown() -> String {
    let secret = "whsec_ExampleSecretExampleSecretExam";
    let ts = 1_795_253_400;
    let mut out = String::new();
    for (event, payload) in example_payloads() {
        let pretty = serde_json::from_str::<Value>(&payload)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| payload.clone());
        out.push_str(&format!(
            "### `{event}`\n\n```http\nPOST /your/endpoint HTTP/1.1\nContent-Type: application/json\n\
             X-Service-Event: {event}\nX-Service-Webhook-ID: whd_01JD6Z6Q1S3U5W7Y9A1C3E5G7J\n\
             X-Service-Timestamp: {ts}\nX-Service-Signature: {}\n```\n\n```json\n{pretty}\n```\n\n",
            signing::sign(secret, ts, &payload)
        ));
    }
    out.push_str(&format!(
        "The signatures above are made with the secret `{secret}` over the compact body \
         (one line, as sent), not the indented one shown.\n"
    ));
    out
}

/// A signed test event for `tocsin webhook send-test`: (webhook id, body, headers).
pub fn test_delivery(secret: &str, now_ms: i64) -> (String, String, Vec<(String, String)>) {
    let id = crate::ids::new_id(crate::ids::prefix::DELIVERY);
    let body = events::test_event(now_ms, "https://example.com", "ws_test", "Test", "test");
    let payload = events::payload(&body, &id);
    let headers = crate::outbox::worker::webhook_headers(
        secret,
        kind::INCIDENT_CREATED,
        &id,
        &payload,
        now_ms / 1000,
    );
    (id, payload, headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_795_253_400;

    fn signed(body: &str) -> String {
        signing::sign("whsec_right", NOW, body)
    }

    #[test]
    fn explains_each_way_a_signature_fails() {
        let secrets = vec!["whsec_right".to_string()];
        let body = r#"{"event":"incident.created","webhookId":"whd_1"}"#;
        let ts = NOW.to_string();
        let ok = diagnose(&secrets, &ts, &signed(body), body.as_bytes(), NOW + 3);
        assert!(ok.valid, "{ok:?}");

        let stale = diagnose(&secrets, &ts, &signed(body), body.as_bytes(), NOW + 400);
        assert!(
            !stale.valid && stale.findings[0].contains("400 s old"),
            "{stale:?}"
        );

        let newline = format!("{body}\n");
        let d = diagnose(&secrets, &ts, &signed(body), newline.as_bytes(), NOW);
        assert!(d.findings[0].contains("trailing newline"), "{d:?}");

        let pretty = "{\n  \"event\": \"incident.created\",\n  \"webhookId\": \"whd_1\"\n}";
        let d = diagnose(&secrets, &ts, &signed(body), pretty.as_bytes(), NOW);
        assert!(d.findings[0].contains("compact JSON"), "{d:?}");

        let wrong = vec!["whsec_wrong".to_string()];
        let d = diagnose(&wrong, &ts, &signed(body), body.as_bytes(), NOW);
        assert!(d.findings[0].contains("secret is wrong"), "{d:?}");

        // During a rotation, either secret verifies.
        let both = vec!["whsec_new".to_string(), "whsec_right".to_string()];
        let d = diagnose(&both, &ts, &signed(body), body.as_bytes(), NOW);
        assert!(d.valid && d.findings[0].contains("secret 2 of 2"), "{d:?}");

        let d = diagnose(
            &secrets,
            "1795253400000",
            &signed(body),
            body.as_bytes(),
            NOW,
        );
        assert!(!d.valid && d.findings[0].contains("milliseconds"), "{d:?}");
        let d = diagnose(&secrets, &ts, "sha256=ABC", body.as_bytes(), NOW);
        assert!(d.findings[0].contains("64 lowercase"), "{d:?}");
    }

    #[test]
    fn examples_cover_every_event_with_the_right_objects() {
        let examples = example_payloads();
        let kinds: Vec<&str> = examples.iter().map(|(k, _)| *k).collect();
        assert_eq!(kinds, kind::ALL);
        for (k, p) in &examples {
            let v: Value = serde_json::from_str(p).expect("json");
            assert_eq!(v["event"], *k);
            assert_eq!(
                v.get("incident").is_some(),
                k.starts_with("incident."),
                "{k}"
            );
            assert_eq!(
                v.get("failure").is_some(),
                *k == kind::INCIDENT_CREATED || *k == kind::INCIDENT_REMINDER,
                "{k}"
            );
            assert_eq!(v.get("ssl").is_some(), k.starts_with("ssl."), "{k}");
        }
    }

    #[test]
    fn docs_show_the_generated_examples() {
        let doc = include_str!("../../../docs/webhooks.md");
        let start = "<!-- examples:start -->\n";
        let end = "<!-- examples:end -->";
        let from = doc
            .find(start)
            .map(|i| i + start.len())
            .expect("start marker");
        let to = doc.find(end).expect("end marker");
        assert_eq!(
            &doc[from..to],
            examples_markdown(),
            "docs/webhooks.md is out of date: run `tocsin webhook examples` and paste its output between the markers"
        );
    }
}
