//! Healthchecks' checks, as its API lists them (`GET /api/v3/checks/`, the JSON a project's
//! API key reads): each becomes a heartbeat monitor with the same period (or cron
//! schedule and time zone) and grace time, its tags, paused if it was. Its jobs get new
//! ping addresses, printed beside the old ones.

use super::{ImportOptions, Ping, Translation};
use crate::declared::apply::document::Kind;
use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

pub fn translate(text: &str, options: &ImportOptions) -> anyhow::Result<Translation> {
    let mut t = Translation::new();
    let top: Value = serde_json::from_str(text).context("the file is not JSON")?;
    let Some(checks) = top.get("checks").and_then(Value::as_array) else {
        bail!(
            "the file has no `checks` list: save the answer of Healthchecks' GET /api/v3/checks/"
        );
    };
    for check in checks {
        let Some(c) = check.as_object() else {
            t.skip("a check", "it is not an object");
            continue;
        };
        one(&mut t, c, options);
    }
    Ok(t)
}

fn text<'a>(o: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    o.get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

fn one(t: &mut Translation, c: &Map<String, Value>, options: &ImportOptions) {
    let name = text(c, "name")
        .or_else(|| text(c, "slug"))
        .unwrap_or("(unnamed)")
        .to_string();
    let what = format!("check `{name}`");
    let identity = text(c, "uuid")
        .or_else(|| text(c, "unique_key"))
        .or_else(|| text(c, "slug"))
        .unwrap_or(&name)
        .to_string();
    let key = t.key(Kind::Monitor, "healthchecks", &identity);
    let mut m = json!({"key": key, "name": name, "type": "heartbeat"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    if let Some(timeout) = c.get("timeout").and_then(Value::as_f64) {
        let period = t.interval(&what, timeout, options);
        m.insert("period".into(), Value::from(period));
    } else if let Some(schedule) = text(c, "schedule") {
        if schedule.split_whitespace().count() != 5 {
            t.skip(
                what,
                format!("its schedule `{schedule}` is an OnCalendar expression; Tocsin's heartbeats take five-field cron"),
            );
            return;
        }
        m.insert("cron".into(), Value::from(schedule));
        m.insert(
            "timezone".into(),
            Value::from(text(c, "tz").unwrap_or("UTC")),
        );
    } else {
        t.skip(what, "it has neither a period (`timeout`) nor a `schedule`");
        return;
    }
    if let Some(grace) = c.get("grace").and_then(Value::as_u64) {
        m.insert("grace".into(), Value::from(grace));
    }
    let tags: Vec<String> = text(c, "tags")
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|tag| t.tag(&what, tag))
        .collect();
    if !tags.is_empty() {
        m.insert("tags".into(), json!(tags));
    }
    if let Some(desc) = text(c, "desc") {
        t.skip(
            format!("{what}: description `{desc}`"),
            "monitors have no description",
        );
    }
    if text(c, "methods") == Some("POST") {
        t.skip(
            format!("{what}: methods POST"),
            "a heartbeat's ping address takes GET, HEAD and POST alike",
        );
    }
    let filters = ["filter_subject", "filter_body", "filter_http_body"]
        .iter()
        .any(|f| c.get(*f).and_then(Value::as_bool) == Some(true));
    if filters {
        t.skip(
            format!("{what}: keyword filters"),
            "pings are not read for keywords (a job reports failure at .../fail or with its exit status)",
        );
    }
    if c.get("manual_resume").and_then(Value::as_bool) == Some(true) {
        t.skip(
            format!("{what}: manual_resume"),
            "a heartbeat monitor resumes with the next ping",
        );
    }
    if let Some(channels) = text(c, "channels") {
        let n = channels.split(',').filter(|s| !s.trim().is_empty()).count();
        t.skip(
            format!("{what}: {n} integration(s)"),
            "Healthchecks' API does not export integrations' settings: add channels and an alert policy, then attach it",
        );
    }
    t.add(Kind::Monitor, m, &[]);
    if text(c, "status") == Some("paused") {
        t.paused.push(key.clone());
    }
    t.pings.push(Ping {
        key,
        name,
        old: text(c, "ping_url")
            .map(str::to_string)
            .unwrap_or_else(|| "(a read-only export holds no ping address)".into()),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_becomes_a_heartbeat() {
        let t = translate(
            r#"{"checks": [
              {"name": "Backup", "tags": "prod db", "grace": 600, "timeout": 3600,
               "status": "paused", "uuid": "abc", "ping_url": "https://hc/ping/abc", "desc": ""},
              {"name": "Cal", "schedule": "Mon..Fri 08:00", "tz": "UTC", "grace": 60, "uuid": "def"}
            ]}"#,
            &ImportOptions::default(),
        )
        .expect("translates");
        let (_, m, _) = &t.doc.objects[0];
        assert_eq!(
            Value::Object(m.clone()),
            json!({"key": "healthchecks:abc", "name": "Backup", "type": "heartbeat",
                   "period": 3600, "grace": 600, "tags": ["prod", "db"]})
        );
        assert_eq!(t.paused, vec!["healthchecks:abc"]);
        assert_eq!(t.pings[0].old, "https://hc/ping/abc");
        assert_eq!(t.doc.objects.len(), 1);
        assert!(
            t.skipped[0].reason.contains("OnCalendar"),
            "{:?}",
            t.skipped
        );
    }
}
