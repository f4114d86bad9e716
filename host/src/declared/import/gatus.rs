//! Gatus's `config.yaml`: endpoints with their conditions, external endpoints (pushed
//! results, which become heartbeat monitors), alerting providers (channels, with each
//! endpoint's alerts as an alert policy) and maintenance windows.

use super::{ImportOptions, Ping, Translation, go_duration};
use crate::declared::apply::document::Kind;
use anyhow::{Context, bail};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// Gatus's defaults for an alert.
const FAILURE_THRESHOLD: u64 = 3;
const SUCCESS_THRESHOLD: u64 = 2;

/// Translate a Gatus configuration. `env` gives environment variables, which Gatus
/// substitutes into its file (`$NAME`, `${NAME}`; `$$` is a `$`).
pub fn translate(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    options: &ImportOptions,
) -> anyhow::Result<Translation> {
    let mut t = Translation::new();
    let (expanded, substituted) = expand(text, env)?;
    t.doc.secrets.extend(substituted);
    let config = bounded_yaml(&expanded).context("the file is not Gatus's YAML")?;
    let Some(config) = config.as_object() else {
        bail!("the file is not Gatus's configuration (its top level is not a mapping)");
    };
    if config.get("endpoints").is_none() && config.get("external-endpoints").is_none() {
        bail!(
            "the file has neither `endpoints` nor `external-endpoints`: is it Gatus's config.yaml?"
        );
    }
    let providers = channels(&mut t, config.get("alerting"));
    let mut policies = Policies::default();
    let mut monitor_keys = Vec::new();
    for ep in list(config, "endpoints") {
        monitor_keys.extend(endpoint(&mut t, ep, &providers, &mut policies, options));
    }
    for ep in list(config, "external-endpoints") {
        monitor_keys.extend(external(&mut t, ep, &providers, &mut policies, options));
    }
    if let Some(m) = config.get("maintenance") {
        if monitor_keys.is_empty() {
            t.skip(
                "`maintenance`",
                "no endpoint was imported (a window without monitors covers every monitor)",
            );
        } else {
            let key = t.key(Kind::Window, "gatus", "maintenance");
            maintenance(&mut t, &key, "Gatus maintenance", m, &monitor_keys);
        }
    }
    for (section, _) in config {
        if !["endpoints", "external-endpoints", "alerting", "maintenance"]
            .contains(&section.as_str())
        {
            t.skip(
                format!("`{section}`"),
                "server-wide Gatus settings (web, ui, storage, security, metrics, ...) are Tocsin's own configuration",
            );
        }
    }
    Ok(t)
}

/// The most values a configuration may hold once YAML's aliases are expanded: far above
/// any real one, far below what a file of nested aliases (a "billion laughs") expands to.
const MAX_YAML_VALUES: usize = 2_000_000;

/// The most bytes of text a configuration may hold once YAML's aliases are expanded (an
/// alias copies its text each time it is named).
const MAX_YAML_BYTES: usize = 64 * 1024 * 1024;

/// YAML as JSON values, refused once it holds more than [`MAX_YAML_VALUES`] values or
/// [`MAX_YAML_BYTES`] of text (counted as the parser produces them, so an alias bomb
/// stops early).
fn bounded_yaml(text: &str) -> anyhow::Result<Value> {
    use serde::de::DeserializeSeed;
    let budget = Budget {
        values: std::cell::Cell::new(MAX_YAML_VALUES),
        bytes: std::cell::Cell::new(MAX_YAML_BYTES),
    };
    let de = serde_yaml_ng::Deserializer::from_str(text);
    Ok(Bounded(&budget).deserialize(de)?)
}

/// What is left to spend.
struct Budget {
    values: std::cell::Cell<usize>,
    bytes: std::cell::Cell<usize>,
}

/// A JSON value built under a budget.
struct Bounded<'a>(&'a Budget);

impl Bounded<'_> {
    /// Spend one value holding `bytes` of text.
    fn spend<E: serde::de::Error>(&self, bytes: usize) -> Result<(), E> {
        let values = self.0.values.get().checked_sub(1);
        let left = self.0.bytes.get().checked_sub(bytes);
        match (values, left) {
            (Some(values), Some(left)) => {
                self.0.values.set(values);
                self.0.bytes.set(left);
                Ok(())
            }
            _ => Err(E::custom(format!(
                "the file expands to more than {MAX_YAML_VALUES} values or {} MiB of text (aliases?)",
                MAX_YAML_BYTES >> 20
            ))),
        }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Bounded<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::from(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::from(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        self.spend(0)?;
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.spend(v.len())?;
        Ok(Value::from(v))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        self.spend(0)?;
        Ok(Value::Null)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.spend(0)?;
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(Bounded(self.0))? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.spend(0)?;
        let mut out = Map::new();
        while let Some(k) = map.next_key_seed(Bounded(self.0))? {
            let key = match k {
                Value::String(s) => s,
                other => other.to_string(),
            };
            let v = map.next_value_seed(Bounded(self.0))?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Gatus's substitution of environment variables into the file's text; returns the text
/// and the values substituted (kept out of printed plans).
fn expand(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<(String, Vec<String>)> {
    let mut out = String::with_capacity(text.len());
    let mut values = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '$' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        if chars.get(i + 1) == Some(&'$') {
            out.push('$');
            i += 2;
            continue;
        }
        let (name, next) = if chars.get(i + 1) == Some(&'{') {
            match chars[i + 2..].iter().position(|c| *c == '}') {
                Some(end) => (
                    chars[i + 2..i + 2 + end].iter().collect::<String>(),
                    i + 3 + end,
                ),
                None => (String::new(), i + 1),
            }
        } else {
            let len = chars[i + 1..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
                .count();
            (chars[i + 1..i + 1 + len].iter().collect(), i + 1 + len)
        };
        if name.is_empty() {
            out.push('$');
            i += 1;
            continue;
        }
        let Some(value) = env(&name) else {
            bail!(
                "the file uses ${name}, which is not set in the environment (Gatus would read it from there too; a file uploaded to the dashboard is read without one: import it with `tocsin import gatus`)"
            );
        };
        out.push_str(&value);
        if !value.is_empty() {
            values.push(value);
        }
        i = next;
    }
    Ok((out, values))
}

fn list<'a>(config: &'a Map<String, Value>, field: &str) -> impl Iterator<Item = &'a Value> {
    config
        .get(field)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn text<'a>(o: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    o.get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// A provider imported as channels: their keys, and its `default-alert`.
struct Provider {
    channels: Vec<String>,
    default_alert: Map<String, Value>,
}

/// The alerting providers Tocsin has a channel for, as channels.
fn channels(t: &mut Translation, alerting: Option<&Value>) -> BTreeMap<String, Provider> {
    let mut providers = BTreeMap::new();
    let Some(alerting) = alerting.and_then(Value::as_object) else {
        return providers;
    };
    for (name, settings) in alerting {
        let what = format!("alerting provider `{name}`");
        let Some(s) = settings.as_object() else {
            t.skip(what, "its settings are not a mapping");
            continue;
        };
        let Some(made) = provider_channels(name, s) else {
            t.skip(what, "Tocsin has no channel of this kind");
            continue;
        };
        let mut keys = Vec::new();
        for (provider, mut o) in made {
            let suffix = o.get("target").and_then(Value::as_str).unwrap_or_default();
            let raw = if suffix.is_empty() {
                format!("alerting.{provider}")
            } else {
                format!("alerting.{provider}.{suffix}")
            };
            let key = t.key(Kind::Channel, "gatus", &raw);
            let label = if suffix.is_empty() {
                format!("Gatus {provider}")
            } else {
                format!("Gatus {provider} {suffix}")
            };
            o.insert("key".into(), Value::from(key.clone()));
            o.insert("name".into(), Value::from(label));
            t.add_channel(o);
            keys.push(key);
        }
        let noted = |field: &str| s.get(field).is_some_and(|v| !v.is_null());
        let mut left = Vec::new();
        for (field, why) in [
            ("overrides", "per-group overrides"),
            ("client", "its HTTP client settings"),
            ("title", "its message title (Tocsin writes its own)"),
            (
                "body",
                "its request body (Tocsin sends its own signed JSON event)",
            ),
            ("method", "its request method (Tocsin POSTs)"),
            ("headers", "its request headers"),
            (
                "host",
                "its SMTP relay (Tocsin sends e-mail through the server's smtp_* settings)",
            ),
            ("api-url", "its Bot API address"),
        ] {
            if noted(field) {
                left.push(why);
            }
        }
        if !left.is_empty() {
            t.skip(
                format!("{what}: {}", left.join(", ")),
                "no per-channel equivalent",
            );
        }
        providers.insert(
            name.clone(),
            Provider {
                channels: keys,
                default_alert: s
                    .get("default-alert")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            },
        );
    }
    providers
}

/// The channels of alerting provider `name` with settings `s` (e-mail: one per
/// recipient), each as (provider, object); None when Tocsin has no such channel.
fn provider_channels(
    name: &str,
    s: &Map<String, Value>,
) -> Option<Vec<(String, Map<String, Value>)>> {
    let url = |field: &str| text(s, field).map(str::to_string);
    let mut made: Vec<(String, Map<String, Value>)> = Vec::new();
    let mut one = |kind: &str, fields: Vec<(&str, Option<String>)>| {
        let mut o = Map::new();
        o.insert("type".into(), Value::from(kind));
        for (field, value) in fields {
            if let Some(v) = value {
                o.insert(field.into(), Value::from(v));
            }
        }
        made.push((name.to_string(), o));
    };
    match name {
        "slack" | "discord" | "mattermost" | "googlechat" | "rocketchat" => {
            one(name, vec![("webhookUrl", url("webhook-url"))])
        }
        "teams" | "teams-workflows" => one("teams", vec![("webhookUrl", url("webhook-url"))]),
        "telegram" => one(
            "telegram",
            vec![("chatId", url("id")), ("botToken", url("token"))],
        ),
        "pagerduty" => one("pagerduty", vec![("routingKey", url("integration-key"))]),
        "opsgenie" => one(
            "opsgenie",
            vec![("apiKey", url("api-key")), ("priority", url("priority"))],
        ),
        "ntfy" => one(
            "ntfy",
            vec![
                ("serverUrl", url("url")),
                ("topic", url("topic")),
                ("accessToken", url("token")),
            ],
        ),
        "gotify" => one(
            "gotify",
            vec![("serverUrl", url("server-url")), ("appToken", url("token"))],
        ),
        "pushover" => one(
            "pushover",
            vec![
                ("appToken", url("application-token")),
                ("userKey", url("user-key")),
                ("device", url("device")),
            ],
        ),
        "matrix" => one(
            "matrix",
            vec![
                (
                    "homeserverUrl",
                    url("server-url").or(Some("https://matrix-client.matrix.org".into())),
                ),
                ("accessToken", url("access-token")),
                ("roomId", url("internal-room-id")),
            ],
        ),
        "custom" => one("webhook", vec![("url", url("url"))]),
        "email" => {
            for to in text(s, "to").unwrap_or_default().split(',') {
                let to = to.trim();
                if !to.is_empty() {
                    one("email", vec![("target", Some(to.to_string()))]);
                }
            }
        }
        _ => return None,
    }
    Some(made)
}

/// Alert policies made so far, by what they do.
#[derive(Default)]
struct Policies(BTreeMap<String, String>);

/// The alert policy for an endpoint's `alerts`, made when first needed.
fn policy(
    t: &mut Translation,
    what: &str,
    alerts: Option<&Value>,
    providers: &BTreeMap<String, Provider>,
    policies: &mut Policies,
) -> Option<String> {
    let mut channels: Vec<String> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let (mut failures, mut successes, mut resolved) = (Vec::new(), Vec::new(), Vec::new());
    for alert in alerts.and_then(Value::as_array).into_iter().flatten() {
        let Some(a) = alert.as_object() else { continue };
        let kind = text(a, "type").unwrap_or_default();
        let Some(provider) = providers.get(kind) else {
            t.skip(
                format!("{what}: alert of type `{kind}`"),
                "its provider is not configured under `alerting`, or Tocsin has no such channel",
            );
            continue;
        };
        let get = |field: &str| a.get(field).or_else(|| provider.default_alert.get(field));
        if get("enabled").and_then(Value::as_bool) == Some(false) {
            t.skip(format!("{what}: alert of type `{kind}`"), "it is disabled");
            continue;
        }
        failures.push(
            get("failure-threshold")
                .and_then(Value::as_u64)
                .unwrap_or(FAILURE_THRESHOLD),
        );
        successes.push(
            get("success-threshold")
                .and_then(Value::as_u64)
                .unwrap_or(SUCCESS_THRESHOLD),
        );
        resolved.push(
            get("send-on-resolved")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        );
        if get("minimum-reminder-interval").is_some() {
            t.skip(
                format!("{what}: alert `{kind}` minimum-reminder-interval"),
                "reminders are an alert policy's repeatEvery in Tocsin; set it on the policy",
            );
        }
        if !names.iter().any(|n| n == kind) {
            names.push(kind.to_string());
            channels.extend(provider.channels.iter().cloned());
        }
    }
    if channels.is_empty() {
        return None;
    }
    let failure = *failures.iter().min().unwrap_or(&FAILURE_THRESHOLD);
    let success = *successes.iter().min().unwrap_or(&SUCCESS_THRESHOLD);
    let notify = resolved.iter().any(|r| *r);
    if failures.iter().any(|f| *f != failure) || successes.iter().any(|s| *s != success) {
        t.note(format!(
            "{what}: its alerts have different thresholds; one policy holds them with the lowest ({failure} failures, {success} successes)"
        ));
    }
    if notify && resolved.iter().any(|r| !*r) {
        t.note(format!(
            "{what}: some of its alerts send on resolved and some do not; all of its channels are told of recoveries"
        ));
    }
    names.sort();
    let identity = format!("{}:{failure}:{success}:{notify}", names.join("+"));
    if let Some(key) = policies.0.get(&identity) {
        return Some(key.clone());
    }
    let key = t.key(Kind::Policy, "gatus", &format!("policy:{identity}"));
    let name = format!(
        "Gatus: {} after {failure} failure{}",
        names.join(", "),
        if failure == 1 { "" } else { "s" }
    );
    t.add(
        Kind::Policy,
        json!({
            "key": key,
            "name": name,
            "failureThreshold": failure,
            "recoveryThreshold": success,
            "notifyOnRecovery": notify,
            "channels": channels.iter().map(|c| json!({"channel": c})).collect::<Vec<_>>(),
        })
        .as_object()
        .cloned()
        .unwrap_or_default(),
        &[],
    );
    policies.0.insert(identity, key.clone());
    Some(key)
}

/// Fields of an endpoint this translation reads.
const ENDPOINT_FIELDS: &[&str] = &[
    "name",
    "group",
    "url",
    "method",
    "conditions",
    "interval",
    "body",
    "headers",
    "dns",
    "alerts",
    "maintenance-windows",
    "client",
    "enabled",
];

/// One endpoint as monitors (a second, `ssl`, when a condition is on the certificate).
fn endpoint(
    t: &mut Translation,
    ep: &Value,
    providers: &BTreeMap<String, Provider>,
    policies: &mut Policies,
    options: &ImportOptions,
) -> Vec<String> {
    let Some(ep) = ep.as_object() else {
        t.skip("an endpoint", "it is not a mapping");
        return Vec::new();
    };
    let name = text(ep, "name").unwrap_or("(unnamed)").to_string();
    let group = text(ep, "group").unwrap_or_default().to_string();
    let what = format!("endpoint `{name}`");
    let url = text(ep, "url").unwrap_or_default().to_string();
    let interval_text = text(ep, "interval").unwrap_or("60s");
    let Some(seconds) = go_duration(interval_text) else {
        t.skip(
            what,
            format!("its interval `{interval_text}` is not a duration"),
        );
        return Vec::new();
    };
    let mut m = Map::new();
    let scheme = url.split("://").next().unwrap_or_default().to_lowercase();
    let kind = if ep.get("dns").is_some() {
        "dns"
    } else {
        match scheme.as_str() {
            "http" | "https" => "http",
            "tcp" => "tcp",
            "icmp" => "ping",
            "tls" => "ssl",
            "starttls" => "smtp",
            _ if !url.contains("://") => {
                t.skip(what, format!("its url `{url}` has no scheme"));
                return Vec::new();
            }
            other => {
                t.skip(
                    what,
                    format!("Tocsin has no monitor for `{other}://` endpoints"),
                );
                return Vec::new();
            }
        }
    };
    let (host, port) = host_port(&url);
    target(t, &what, kind, &url, ep, &mut m);
    let key = t.key(Kind::Monitor, "gatus", &format!("{group}_{name}"));
    m.insert("key".into(), Value::from(key.clone()));
    m.insert("name".into(), Value::from(name.clone()));
    m.insert("type".into(), Value::from(kind));
    let interval = t.interval(&what, seconds, options);
    m.insert("interval".into(), Value::from(interval));
    if let Some(client) = ep.get("client").and_then(Value::as_object) {
        for (field, value) in client {
            if field == "timeout"
                && let Some(s) = value.as_str().and_then(go_duration)
            {
                let timeout = t.timeout(&what, s, interval);
                m.insert("timeout".into(), Value::from(timeout));
                continue;
            }
            t.skip(
                format!("{what}: client.{field}"),
                "Tocsin's checks have no such per-monitor setting",
            );
        }
    }
    if !group.is_empty()
        && let Some(tag) = t.tag(&what, &group)
    {
        m.insert("tags".into(), json!([tag]));
    }
    let mut certificate_hours = None;
    for c in ep
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let c = c.as_str().unwrap_or_default();
        match condition(kind, c, &mut m) {
            Ok(Some(hours)) => certificate_hours = Some(hours),
            Ok(None) => {}
            Err(reason) => t.skip(format!("{what}: condition `{c}`"), reason),
        }
    }
    let policy = policy(t, &what, ep.get("alerts"), providers, policies);
    if let Some(p) = &policy {
        m.insert("alertPolicy".into(), Value::from(p.clone()));
    }
    for (field, _) in ep {
        if !ENDPOINT_FIELDS.contains(&field.as_str()) && field != "graphql" {
            t.skip(format!("{what}: `{field}`"), "no equivalent in Tocsin");
        }
    }
    let tags = m.get("tags").cloned();
    let secret: Vec<&str> = if m.contains_key("headers") {
        vec!["headers"]
    } else {
        vec![]
    };
    t.add(Kind::Monitor, m, &secret);
    let mut keys = vec![key.clone()];
    if ep.get("enabled").and_then(Value::as_bool) == Some(false) {
        t.paused.push(key.clone());
    }
    if let Some(hours) = certificate_hours {
        let names = (group.as_str(), name.as_str(), what.as_str());
        let target = (kind, scheme.as_str(), host.as_str(), port);
        let paused = ep.get("enabled").and_then(Value::as_bool) == Some(false);
        if let Some(k) = certificate_monitor(
            t,
            names,
            target,
            hours,
            (interval, tags, policy.as_deref()),
            paused,
        ) {
            keys.push(k);
        }
    }
    for (i, w) in ep
        .get("maintenance-windows")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let window_key = t.key(
            Kind::Window,
            "gatus",
            &format!("maintenance:{group}_{name}:{i}"),
        );
        maintenance(
            t,
            &window_key,
            &format!("{name}: maintenance {}", i + 1),
            w,
            std::slice::from_ref(&key),
        );
    }
    keys
}

/// What a monitor of `kind` checks, from the endpoint's url and settings, into `m`.
fn target(
    t: &mut Translation,
    what: &str,
    kind: &str,
    url: &str,
    ep: &Map<String, Value>,
    m: &mut Map<String, Value>,
) {
    let (host, port) = host_port(url);
    match kind {
        "http" => {
            m.insert("url".into(), Value::from(url));
            if let Some(method) = text(ep, "method") {
                m.insert("method".into(), Value::from(method.to_uppercase()));
            }
            if let Some(body) = text(ep, "body") {
                m.insert("body".into(), Value::from(body));
            }
            if let Some(h) = ep.get("headers").and_then(Value::as_object) {
                let headers: Map<String, Value> = h
                    .iter()
                    .map(|(k, v)| {
                        let v = v.as_str().map(str::to_string).unwrap_or(v.to_string());
                        (k.clone(), Value::from(v))
                    })
                    .collect();
                m.insert("headers".into(), Value::Object(headers));
            }
            if ep.get("graphql").and_then(Value::as_bool) == Some(true) {
                t.skip(
                    format!("{what}: graphql"),
                    "the body is sent as written, not wrapped in {\"query\": ...}",
                );
            }
        }
        "tcp" => {
            m.insert(
                "config".into(),
                json!({"host": host, "port": port.unwrap_or(0)}),
            );
        }
        "ping" => {
            m.insert("hostname".into(), Value::from(host.clone()));
        }
        "ssl" => {
            m.insert("hostname".into(), Value::from(host.clone()));
            m.insert("port".into(), Value::from(port.unwrap_or(443)));
        }
        "smtp" => {
            m.insert(
                "config".into(),
                json!({"host": host, "port": port.unwrap_or(25), "tls": "starttls", "requireStarttls": true}),
            );
        }
        _ => {
            let dns = ep
                .get("dns")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let mut config = Map::new();
            config.insert(
                "hostname".into(),
                Value::from(text(&dns, "query-name").unwrap_or_default()),
            );
            if let Some(q) = text(&dns, "query-type") {
                config.insert("recordType".into(), Value::from(q.to_uppercase()));
            }
            let (resolver, resolver_port) = host_port(url);
            config.insert("resolver".into(), Value::from(resolver));
            if let Some(p) = resolver_port {
                config.insert("port".into(), Value::from(p));
            }
            m.insert("config".into(), Value::Object(config));
        }
    }
}

/// The ssl monitor beside an https endpoint with a condition on its certificate; its key.
fn certificate_monitor(
    t: &mut Translation,
    (group, name, what): (&str, &str, &str),
    (kind, scheme, host, port): (&str, &str, &str, Option<u16>),
    hours: f64,
    (interval, tags, policy): (u32, Option<Value>, Option<&str>),
    paused: bool,
) -> Option<String> {
    if kind == "ssl" {
        // The ssl monitor itself takes the threshold (set by `condition`).
    } else if scheme == "https" {
        let critical = (hours / 24.0).ceil().max(0.0) as u64;
        let cert_key = t.key(
            Kind::Monitor,
            "gatus",
            &format!("{group}_{name}:certificate"),
        );
        let mut c = json!({
            "key": cert_key,
            "name": format!("{name} (certificate)"),
            "type": "ssl",
            "hostname": host,
            "port": port.unwrap_or(443),
            "interval": interval,
            "criticalDays": critical,
            "warningDays": (critical + 1).max(30),
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        if let Some(tags) = tags {
            c.insert("tags".into(), tags);
        }
        if let Some(p) = &policy {
            c.insert("alertPolicy".into(), Value::from(*p));
        }
        t.note(format!(
            "{what}: its [CERTIFICATE_EXPIRATION] condition became the ssl monitor `{name} (certificate)`, critical at {critical} days"
        ));
        t.add(Kind::Monitor, c, &[]);
        if paused {
            t.paused.push(cert_key.clone());
        }
        return Some(cert_key);
    } else {
        t.skip(
            format!("{what}: [CERTIFICATE_EXPIRATION]"),
            "the endpoint does not use TLS",
        );
    }
    None
}

/// An external endpoint (results pushed to Gatus) as a heartbeat monitor.
fn external(
    t: &mut Translation,
    ep: &Value,
    providers: &BTreeMap<String, Provider>,
    policies: &mut Policies,
    options: &ImportOptions,
) -> Vec<String> {
    let Some(ep) = ep.as_object() else {
        t.skip("an external endpoint", "it is not a mapping");
        return Vec::new();
    };
    let name = text(ep, "name").unwrap_or("(unnamed)").to_string();
    let group = text(ep, "group").unwrap_or_default().to_string();
    let what = format!("external endpoint `{name}`");
    let period = ep
        .get("heartbeat")
        .and_then(|h| h.get("interval"))
        .and_then(Value::as_str)
        .and_then(go_duration)
        .filter(|s| *s > 0.0);
    let Some(period) = period else {
        t.skip(
            what,
            "it has no heartbeat.interval: a heartbeat monitor needs the time within which the next result is due",
        );
        return Vec::new();
    };
    let gatus_key = format!("{}_{}", gatus_key_part(&group), gatus_key_part(&name));
    let key = t.key(Kind::Monitor, "gatus", &format!("{group}_{name}"));
    let period = t.interval(&what, period, options);
    let mut m = json!({"key": key, "name": name, "type": "heartbeat", "period": period})
        .as_object()
        .cloned()
        .unwrap_or_default();
    if !group.is_empty()
        && let Some(tag) = t.tag(&what, &group)
    {
        m.insert("tags".into(), json!([tag]));
    }
    if let Some(p) = policy(t, &what, ep.get("alerts"), providers, policies) {
        m.insert("alertPolicy".into(), Value::from(p));
    }
    for (field, _) in ep {
        if !["name", "group", "token", "heartbeat", "alerts", "enabled"].contains(&field.as_str()) {
            t.skip(format!("{what}: `{field}`"), "no equivalent in Tocsin");
        }
    }
    t.add(Kind::Monitor, m, &[]);
    if ep.get("enabled").and_then(Value::as_bool) == Some(false) {
        t.paused.push(key.clone());
    }
    t.pings.push(Ping {
        key: key.clone(),
        name,
        old: format!("POST /api/v1/endpoints/{gatus_key}/external?success=true"),
    });
    vec![key]
}

/// Gatus's key part: ` `, `/`, `_`, `,`, `.`, `#`, `+` and `&` become `-`.
fn gatus_key_part(s: &str) -> String {
    s.chars()
        .map(|c| if " /_,.#+&".contains(c) { '-' } else { c })
        .collect::<String>()
        .to_lowercase()
}

/// A maintenance window (`start` "hh:mm", `duration`, `timezone`, `every` [days]).
fn maintenance(t: &mut Translation, key: &str, name: &str, m: &Value, monitors: &[String]) {
    let what = format!("maintenance `{name}`");
    let Some(m) = m.as_object() else {
        t.skip(what, "it is not a mapping");
        return;
    };
    if m.get("enabled").and_then(Value::as_bool) == Some(false) {
        t.skip(what, "it is disabled");
        return;
    }
    let start = text(m, "start").unwrap_or_default();
    let Some((hour, minute)) = start
        .split_once(':')
        .and_then(|(h, mi)| Some((h.parse::<u32>().ok()?, mi.parse::<u32>().ok()?)))
        .filter(|(h, mi)| *h < 24 && *mi < 60)
    else {
        t.skip(what, format!("its start `{start}` is not hh:mm"));
        return;
    };
    let Some(minutes) = text(m, "duration")
        .and_then(go_duration)
        .map(|s| (s / 60.0).round() as i64)
        .filter(|m| (1..=10_080).contains(m))
    else {
        t.skip(
            what,
            "its duration is missing or not between 1 minute and a week",
        );
        return;
    };
    let zone = text(m, "timezone").unwrap_or("UTC").to_string();
    let Ok(tz) = zone.parse::<chrono_tz::Tz>() else {
        t.skip(what, format!("its timezone `{zone}` is unknown"));
        return;
    };
    let mut days = Vec::new();
    for d in m
        .get("every")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let d = d.as_str().unwrap_or_default().to_lowercase();
        let code = match d.get(..3).unwrap_or_default() {
            "mon" => "MO",
            "tue" => "TU",
            "wed" => "WE",
            "thu" => "TH",
            "fri" => "FR",
            "sat" => "SA",
            "sun" => "SU",
            _ => {
                t.skip(what, format!("`{d}` is not a day of the week"));
                return;
            }
        };
        days.push(code);
    }
    let rrule = if days.is_empty() {
        "FREQ=DAILY".to_string()
    } else {
        format!("FREQ=WEEKLY;BYDAY={}", days.join(","))
    };
    // The first occurrence: a fixed day in the past (so importing again finds nothing
    // changed) on one of the window's weekdays, at its time of day in its zone.
    use chrono::{Datelike, Offset, TimeZone};
    let monday = chrono::NaiveDate::from_ymd_opt(2026, 1, 5).unwrap_or_default();
    let first = (0..7)
        .map(|d| monday + chrono::Duration::days(d))
        .find(|d| {
            let code = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]
                [d.weekday().num_days_from_monday() as usize];
            days.is_empty() || days.contains(&code)
        })
        .unwrap_or(monday);
    let Some(local) = first.and_hms_opt(hour, minute, 0) else {
        return;
    };
    let start = match tz.from_local_datetime(&local).earliest() {
        Some(s) => s.with_timezone(&chrono::Utc),
        None => {
            let offset = tz.offset_from_utc_datetime(&local).fix();
            chrono::Utc.from_utc_datetime(&(local - offset))
        }
    };
    t.add(
        Kind::Window,
        json!({
            "key": key,
            "name": name,
            "start": start.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            "rrule": rrule,
            "durationMinutes": minutes,
            "timezone": zone,
            "monitors": monitors,
        })
        .as_object()
        .cloned()
        .unwrap_or_default(),
        &[],
    );
}

/// The host and port of `scheme://host:port/...` (or of a bare `host:port`).
fn host_port(url: &str) -> (String, Option<u16>) {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
    if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').unwrap_or((v6, ""));
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return (host.to_string(), port);
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty() => {
            (h.to_string(), p.parse().ok())
        }
        _ => (authority.to_string(), None),
    }
}

/// A condition's parts: left side, operator, right side.
fn split_condition(c: &str) -> Option<(&str, &str, &str)> {
    for op in ["==", "!=", "<=", ">=", "<", ">"] {
        if let Some((l, r)) = c.split_once(&format!(" {op} ")) {
            return Some((l.trim(), op, r.trim()));
        }
    }
    None
}

/// A value as JSON: a number, true or false, or text.
fn typed(v: &str) -> Value {
    if let Ok(i) = v.parse::<i64>() {
        return Value::from(i);
    }
    if let Ok(f) = v.parse::<f64>()
        && f.is_finite()
    {
        return Value::from(f);
    }
    match v {
        "true" => Value::from(true),
        "false" => Value::from(false),
        _ => Value::from(v.trim_matches('"')),
    }
}

/// `[BODY].a.b[0]` as the JSONPath `$.a.b[0]`.
fn body_path(left: &str) -> Option<String> {
    let rest = left.strip_prefix("[BODY]")?;
    if rest.is_empty() {
        return Some("$".into());
    }
    (rest.starts_with('.') || rest.starts_with('[')).then(|| format!("${rest}"))
}

/// A glob (`*` any text) as an anchored regular expression.
fn glob_regex(glob: &str) -> String {
    let parts: Vec<String> = glob.split('*').map(regex_escape).collect();
    format!("^{}$", parts.join(".*"))
}

fn regex_escape(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Add one condition to monitor `m` of type `kind`. `Ok(Some(hours))` for a condition on
/// the certificate (the caller makes an ssl monitor of it); `Err` says why it has no
/// equivalent.
fn condition(kind: &str, c: &str, m: &mut Map<String, Value>) -> Result<Option<f64>, String> {
    let Some((left, op, right)) = split_condition(c) else {
        return Err("it is not `<placeholder> <operator> <value>`".into());
    };
    let unsupported = || Err("Tocsin's checks have no equivalent of this condition".to_string());
    match left {
        "[CONNECTED]" if op == "==" && right == "true" => Ok(None),
        "[STATUS]" if kind == "http" => {
            let n: Option<u16> = right.parse().ok();
            match (op, n) {
                ("==", Some(n)) => {
                    if m.contains_key("expectedStatusCode") || m.contains_key("expectedStatusRange")
                    {
                        return Err("a monitor checks one status".into());
                    }
                    m.insert("expectedStatusCode".into(), Value::from(n));
                    Ok(None)
                }
                ("<", Some(300)) | ("<=", Some(299)) => {
                    if m.contains_key("expectedStatusCode") {
                        return Err("a monitor checks one status".into());
                    }
                    m.insert("expectedStatusRange".into(), Value::from(true));
                    Ok(None)
                }
                _ => Err("Tocsin checks one status code, or any 2xx".into()),
            }
        }
        "[RESPONSE_TIME]" if kind == "http" => {
            let n: u32 = right
                .parse()
                .map_err(|_| "the response time is not a whole number of milliseconds")?;
            let max = match op {
                "<" => n.saturating_sub(1),
                "<=" => n,
                _ => return unsupported(),
            };
            m.insert("maxResponseTimeMs".into(), Value::from(max));
            Ok(None)
        }
        "[CERTIFICATE_EXPIRATION]" if (op == ">" || op == ">=") => {
            let hours = go_duration(right)
                .filter(|s| s.is_finite() && *s <= 3650.0 * 86_400.0)
                .ok_or("its duration is not one Gatus writes, or is over ten years")?
                / 3600.0;
            if kind == "ssl" {
                let critical = (hours / 24.0).ceil() as u64;
                m.insert("criticalDays".into(), Value::from(critical));
                m.insert("warningDays".into(), Value::from((critical + 1).max(30)));
            }
            Ok(Some(hours))
        }
        "[DNS_RCODE]" if kind == "dns" && op == "==" && right == "NOERROR" => Ok(None),
        "[BODY]" if kind == "dns" && op == "==" => {
            if let Some(config) = m.get_mut("config").and_then(Value::as_object_mut) {
                config.insert("expected".into(), json!([right]));
            }
            Ok(None)
        }
        "[BODY]" if kind == "http" => {
            let inner = right
                .strip_prefix("pat(")
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|p| p.strip_prefix('*'))
                .and_then(|p| p.strip_suffix('*'))
                .filter(|p| !p.is_empty() && !p.contains('*'));
            let field = match op {
                "==" => "bodyContains",
                "!=" => "bodyNotContains",
                _ => return unsupported(),
            };
            match inner {
                Some(text) if !m.contains_key(field) => {
                    m.insert(field.into(), Value::from(text));
                    Ok(None)
                }
                Some(_) => Err(format!("a monitor has one {field}")),
                None => {
                    Err("only `pat(*text*)` (the body contains a text) has an equivalent".into())
                }
            }
        }
        _ if kind == "http" && (left.starts_with("[BODY]") || left.starts_with("has([BODY]")) => {
            let assertion = if let Some(inner) =
                left.strip_prefix("has(").and_then(|l| l.strip_suffix(')'))
            {
                if op != "==" || right != "true" {
                    return Err("only has(...) == true has an equivalent (exists)".into());
                }
                json!({"path": body_path(inner).ok_or("not a JSON path")?, "op": "exists"})
            } else {
                let path = body_path(left).ok_or("not a JSON path")?;
                if right.starts_with("[BODY]") {
                    return Err("comparing two values of the body has no equivalent".into());
                }
                if right.starts_with("any(") || right.starts_with("len(") {
                    return unsupported();
                }
                let pattern = right.strip_prefix("pat(").and_then(|r| r.strip_suffix(')'));
                match (op, pattern) {
                    ("==", Some(p)) => {
                        json!({"path": path, "op": "matches", "value": glob_regex(p)})
                    }
                    ("==", None) => json!({"path": path, "op": "eq", "value": typed(right)}),
                    ("!=", None) => json!({"path": path, "op": "ne", "value": typed(right)}),
                    ("<", None) | (">", None) => {
                        let v = typed(right);
                        if !v.is_number() {
                            return Err("a comparison needs a number".into());
                        }
                        json!({"path": path, "op": if op == "<" {"lt"} else {"gt"}, "value": v})
                    }
                    ("<=", None) | (">=", None) => {
                        let n: i64 = right
                            .parse()
                            .map_err(|_| "<= and >= have an equivalent for whole numbers only")?;
                        if op == "<=" {
                            json!({"path": path, "op": "lt", "value": n.checked_add(1).ok_or("the number is out of range")?})
                        } else {
                            json!({"path": path, "op": "gt", "value": n.checked_sub(1).ok_or("the number is out of range")?})
                        }
                    }
                    _ => return unsupported(),
                }
            };
            let list = m
                .entry("jsonAssertions")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(items) = list {
                items.push(assertion);
            }
            Ok(None)
        }
        _ => unsupported(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "SLACK").then(|| "https://hooks.example/s".to_string())
    }

    #[test]
    fn environment_variables_are_substituted_as_gatus_does() {
        let (text, secrets) =
            expand("a: ${SLACK}\nb: $SLACK/x\nc: $$HOME\nd: $ 1", &env).expect("expands");
        assert_eq!(
            text,
            "a: https://hooks.example/s\nb: https://hooks.example/s/x\nc: $HOME\nd: $ 1"
        );
        assert_eq!(secrets.len(), 2);
        let e = expand("a: ${MISSING}", &env).expect_err("unset");
        assert!(e.to_string().contains("MISSING"), "{e}");
    }

    #[test]
    fn conditions_become_checks() {
        let mut m = Map::new();
        for c in [
            "[STATUS] == 200",
            "[RESPONSE_TIME] < 300",
            "[BODY].status == UP",
            "[BODY].data[0].count >= 2",
            "has([BODY].errors) == true",
            "[BODY].name == pat(john*)",
            "[BODY] == pat(*<h1>Hi</h1>*)",
        ] {
            assert_eq!(condition("http", c, &mut m), Ok(None), "{c}");
        }
        assert_eq!(
            Value::Object(m),
            json!({
                "expectedStatusCode": 200,
                "maxResponseTimeMs": 299,
                "bodyContains": "<h1>Hi</h1>",
                "jsonAssertions": [
                    {"path": "$.status", "op": "eq", "value": "UP"},
                    {"path": "$.data[0].count", "op": "gt", "value": 1},
                    {"path": "$.errors", "op": "exists"},
                    {"path": "$.name", "op": "matches", "value": "^john.*$"},
                ],
            })
        );
        let mut m = Map::new();
        for c in [
            "[STATUS] == any(200, 429)",
            "len([BODY].data) < 5",
            "[IP] == 127.0.0.1",
            "[BODY] == 1",
            "has([BODY].errors) == false",
        ] {
            assert!(condition("http", c, &mut m).is_err(), "{c}");
        }
        assert!(m.is_empty());
        assert_eq!(
            condition("http", "[CERTIFICATE_EXPIRATION] > 48h", &mut m),
            Ok(Some(48.0))
        );
    }

    #[test]
    fn nested_aliases_stop_before_they_fill_memory() {
        // Nested: the parser's own limit stops it.
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        text.push_str("endpoints: [*a11]\n");
        let e = translate(&text, &|_| None, &ImportOptions::default()).expect_err("a bomb");
        assert!(format!("{e:#}").contains("repetition limit"), "{e:#}");
        // Flat, under the parser's limit (a big list named many times): the budget does.
        let big = vec!["x"; 3000].join(", ");
        let refs = vec!["*big"; 700].join(", ");
        let text = format!("big: &big [{big}]\nendpoints: [{refs}]\n");
        let e = translate(&text, &|_| None, &ImportOptions::default()).expect_err("a bomb");
        assert!(format!("{e:#}").contains("expands to more than"), "{e:#}");
        // Aliases in a real file are fine.
        let ok = "x: &alert {type: slack}\nendpoints:\n  - {name: a, url: 'http://h/', alerts: [*alert]}\n";
        assert!(translate(ok, &|_| None, &ImportOptions::default()).is_ok());
    }

    #[test]
    fn numbers_at_the_edge_are_refused_not_wrapped() {
        let mut m = Map::new();
        assert!(condition("http", "[BODY].x <= 9223372036854775807", &mut m).is_err());
        assert!(condition("http", "[BODY].x >= -9223372036854775808", &mut m).is_err());
        assert!(
            condition(
                "http",
                "[CERTIFICATE_EXPIRATION] > 500000000000000000000h",
                &mut m
            )
            .is_err()
        );
        assert!(m.is_empty());
    }

    #[test]
    fn addresses_split_into_host_and_port() {
        assert_eq!(
            host_port("tcp://db.local:5432"),
            ("db.local".into(), Some(5432))
        );
        assert_eq!(
            host_port("icmp://example.org"),
            ("example.org".into(), None)
        );
        assert_eq!(
            host_port("https://[::1]:8443/x"),
            ("::1".into(), Some(8443))
        );
        assert_eq!(host_port("8.8.8.8"), ("8.8.8.8".into(), None));
    }
}
