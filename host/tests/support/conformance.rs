//! The conformance kit: the same checks for any monitor, channel or pipeline plugin. A
//! plugin passes when its description is usable (a JSON Schema object of type `object`, a
//! valid name, capabilities it can be granted), `validate-config` answers results (never
//! traps) for a sample, for `{}` and for junk, its normalised sample validates to itself,
//! and a call with the sample finishes within its budget as a result, not a trap, also when
//! the budget is tiny (a pipeline step: a decision the server can act on, within its
//! fixed budget).

#![allow(dead_code)]

use std::time::{Duration, Instant};
use tocsin::plugins::limits::{DEADLINE_MARGIN, PIPELINE_CALL_BUDGET};
use tocsin::plugins::{Alert, CheckRequest, Notification, PluginHost};

/// Run the kit on the plugin `name` of `kind` (`monitor`, `channel` or `pipeline`) with a sample
/// configuration that should be valid. Returns the problems found (empty: conforms).
pub async fn check_plugin(host: &PluginHost, kind: &str, name: &str, sample: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(d) = host
        .descriptions()
        .into_iter()
        .find(|d| d.name == name && d.kind == kind)
    else {
        return vec![format!("{kind} plugin `{name}` is not loaded")];
    };
    // The description.
    if d.config_schema.get("type").and_then(|t| t.as_str()) != Some("object") {
        problems.push("config schema must have \"type\": \"object\"".into());
    }
    if let Some(p) = d.config_schema.get("properties")
        && !p.is_object()
    {
        problems.push("config schema `properties` must be an object".into());
    }
    if d.version.split('.').count() != 3 || d.version.split('.').any(|p| p.parse::<u64>().is_err())
    {
        problems.push(format!("version `{}` is not MAJOR.MINOR.PATCH", d.version));
    }
    if d.description.trim().is_empty() {
        problems.push("description is empty".into());
    }

    // validate-config answers results for anything.
    let validate = |config: String| async {
        match kind {
            "monitor" => {
                let p = host.monitor(name).expect("loaded");
                host.validate_monitor_config(&p, config).await
            }
            "pipeline" => {
                let p = host.pipeline(name).expect("loaded");
                host.validate_pipeline_config(&p, config).await
            }
            _ => {
                let p = host.channel(name).expect("loaded");
                host.validate_channel_config(&p, config).await
            }
        }
    };
    for junk in ["{}", "not json", "[]", r#"{"unknown-field-xyz": true}"#] {
        match validate(junk.to_string()).await {
            Ok(Ok(_)) | Ok(Err(_)) => {}
            Err(e) => problems.push(format!("validate-config({junk}) trapped: {e}")),
        }
    }
    let normalized = match validate(sample.to_string()).await {
        Ok(Ok(n)) => n,
        Ok(Err(errs)) => {
            problems.push(format!(
                "the sample was refused: {:?}",
                errs.iter()
                    .map(|e| format!("{} {}", e.field, e.message))
                    .collect::<Vec<_>>()
            ));
            return problems;
        }
        Err(e) => {
            problems.push(format!("validate-config(sample) trapped: {e}"));
            return problems;
        }
    };
    if !serde_json::from_str::<serde_json::Value>(&normalized).is_ok_and(|v| v.is_object()) {
        problems.push(format!(
            "normalised config is not a JSON object: {normalized}"
        ));
    }
    match validate(normalized.clone()).await {
        Ok(Ok(again)) => {
            let a: serde_json::Value = serde_json::from_str(&again).unwrap_or_default();
            let b: serde_json::Value = serde_json::from_str(&normalized).unwrap_or_default();
            if a != b {
                problems.push(format!(
                    "validate-config is not idempotent: {normalized} -> {again}"
                ));
            }
        }
        other => problems.push(format!("its own normalised config was refused: {other:?}")),
    }

    if kind == "pipeline" {
        let p = host.pipeline(name).expect("loaded");
        let now = 1_796_000_000_000;
        let started = Instant::now();
        for event in ["incident.created", "incident.resolved"] {
            let answer = host
                .decide(
                    &p,
                    Alert {
                        event: event.into(),
                        payload: format!(r#"{{"event":"{event}","monitor":{{"id":"mon_1","name":"Conformance"}}}}"#),
                        config: normalized.clone(),
                        channel_id: Some("ch_01JD6Z3Y5N8Q2W7R4T6V9X0B1C".into()),
                        channel_type: "webhook".into(),
                        tags: vec!["critical".into()],
                        now,
                        delayed: 0,
                        settings: "{}".into(),
                    },
                )
                .await;
            match answer {
                Ok(decision) => {
                    if let Err(e) = tocsin::outbox::pipeline::check_decision(decision, now) {
                        problems.push(format!(
                            "decide({event}) answered what the server cannot use: {e}"
                        ));
                    }
                }
                Err(e) => problems.push(format!("decide({event}) failed: {e}")),
            }
        }
        let took = started.elapsed();
        if took > 2 * (PIPELINE_CALL_BUDGET + DEADLINE_MARGIN) {
            problems.push(format!("two decisions took {took:?}"));
        }
        return problems;
    }

    // A call finishes within budget + margin, as a result, for a normal and a tiny budget.
    for budget_ms in [3_000u32, 1] {
        let started = Instant::now();
        let outcome: Result<(), String> = match kind {
            "monitor" => {
                let p = host.monitor(name).expect("loaded");
                host.check(
                    &p,
                    CheckRequest {
                        config: normalized.clone(),
                        timeout_ms: budget_ms,
                        monitor_id: "mon_conformance".into(),
                        region: "local".into(),
                        settings: "{}".into(),
                        attempt: 1,
                    },
                )
                .await
                .map(|o| {
                    if !o.ok && o.reason.as_deref().is_none_or(str::is_empty) {
                        Err("a failed check must say why".to_string())
                    } else if !serde_json::from_str::<serde_json::Value>(&o.details)
                        .is_ok_and(|v| v.is_object())
                    {
                        Err(format!("details must be a JSON object: {}", o.details))
                    } else {
                        Ok(())
                    }
                })
                .map_err(|e| e.to_string())
                .and_then(|r| r)
            }
            _ => {
                let p = host.channel(name).expect("loaded");
                let payload = r#"{"event":"incident.created","timestamp":"2026-11-21T09:30:00.000Z","webhookId":"whd_conformance","test":true,"incident":{"id":"inc_1","url":"http://127.0.0.1/incidents/inc_1","status":"open","createdAt":"2026-11-21T09:30:00.000Z"},"monitor":{"id":"mon_1","name":"Conformance","type":"http","url":"http://127.0.0.1:9/"},"failure":{"reason":"test","responseTime":null,"region":"local"},"workspace":{"id":"ws_1","name":"Test"}}"#;
                host.deliver(
                    &p,
                    Notification {
                        event: "incident.created".into(),
                        config: normalized.clone(),
                        payload: payload.into(),
                        headers: vec![],
                        timeout_ms: budget_ms,
                        // Providers' API addresses on a closed loopback port: the kit never
                        // reaches (or looks up) a real service.
                        settings: r#"{"apiBase":"http://127.0.0.1:9","eventsUrl":"http://127.0.0.1:9/v2/enqueue"}"#.into(),
                    },
                )
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| match r {
                    Ok(_) => Ok(()),
                    Err(f) if f.reason.trim().is_empty() => {
                        Err("a failed delivery must say why".to_string())
                    }
                    Err(_) => Ok(()),
                })
            }
        };
        let took = started.elapsed();
        if let Err(e) = outcome {
            problems.push(format!("call with a {budget_ms} ms budget: {e}"));
        }
        let limit = Duration::from_millis(u64::from(budget_ms))
            + DEADLINE_MARGIN
            + Duration::from_millis(500);
        if took > limit {
            problems.push(format!("call with a {budget_ms} ms budget took {took:?}"));
        }
    }
    problems
}
