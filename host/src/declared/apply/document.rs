//! The configuration file: its sections, how it is read (YAML, TOML or JSON, one file or a
//! folder of them, `${VAR}` taken from the environment), how an object in it differs from
//! the API's form (references by key or name instead of ids), and its JSON Schema.

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The owner `tocsin apply` writes into `managedBy` of what it creates.
pub const DEFAULT_MANAGER: &str = "tocsin-apply";

/// A kind of object a file declares, in the order they are created (what refers to
/// something comes after it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Channel,
    Policy,
    Monitor,
    Page,
    Window,
}

impl Kind {
    pub const ALL: [Kind; 5] = [
        Kind::Channel,
        Kind::Policy,
        Kind::Monitor,
        Kind::Page,
        Kind::Window,
    ];

    /// The file's section.
    pub fn section(self) -> &'static str {
        match self {
            Kind::Channel => "channels",
            Kind::Policy => "alertPolicies",
            Kind::Monitor => "monitors",
            Kind::Page => "statusPages",
            Kind::Window => "maintenanceWindows",
        }
    }

    pub fn path(self) -> &'static str {
        match self {
            Kind::Channel => "/v1/channels",
            Kind::Policy => "/v1/alert-policies",
            Kind::Monitor => "/v1/monitors",
            Kind::Page => "/v1/status-pages",
            Kind::Window => "/v1/maintenance-windows",
        }
    }

    pub fn noun(self) -> &'static str {
        match self {
            Kind::Channel => "channel",
            Kind::Policy => "alert policy",
            Kind::Monitor => "monitor",
            Kind::Page => "status page",
            Kind::Window => "maintenance window",
        }
    }

    /// The field that names an object when it has no key: a status page's slug (its
    /// address, which subscribers and links depend on), everything else's name.
    pub fn name_field(self) -> &'static str {
        match self {
            Kind::Page => "slug",
            _ => "name",
        }
    }

    /// The API's component schema of the object.
    fn schema_name(self) -> &'static str {
        match self {
            Kind::Channel => "ChannelBody",
            Kind::Policy => "PolicyBody",
            Kind::Monitor => "MonitorCreate",
            Kind::Page => "StatusPageBody",
            Kind::Window => "MaintenanceWindowBody",
        }
    }

    /// Fields the server sets, which a file leaves out.
    fn read_only(self) -> &'static [&'static str] {
        match self {
            Kind::Monitor => &[
                "id",
                "status",
                "pingUrl",
                "snoozedUntil",
                "createdAt",
                "updatedAt",
                "lastCheckedAt",
                "lastResponseTimeMs",
                "consecutiveFailures",
                "consecutiveSuccesses",
                "stale",
                "managedBy",
            ],
            Kind::Page => &["id", "url", "createdAt", "updatedAt", "managedBy"],
            Kind::Window => &[
                "id",
                "active",
                "current",
                "upcoming",
                "createdAt",
                "updatedAt",
                "managedBy",
            ],
            Kind::Channel | Kind::Policy => &["id", "createdAt", "updatedAt", "managedBy"],
        }
    }
}

/// A file's (or folder's) declarations.
#[derive(Debug, Default, Clone)]
pub struct Document {
    /// Written into `managedBy` of created objects; prune deletes only objects carrying it.
    pub manager: String,
    /// Each kind's objects, in file order, with the fields that hold a `${VAR}`.
    pub objects: Vec<(Kind, Map<String, Value>, BTreeSet<String>)>,
    /// The values `${VAR}`s were replaced with: never printed in a plan.
    pub secrets: Vec<String>,
}

impl Document {
    pub fn of(&self, kind: Kind) -> impl Iterator<Item = &Map<String, Value>> {
        self.objects
            .iter()
            .filter(move |(k, _, _)| *k == kind)
            .map(|(_, o, _)| o)
    }

    /// Take out the `kind` object called `reference` (its key, or its name) and every
    /// reference to it from the others. Returns the objects that lost one.
    pub fn remove(&mut self, kind: Kind, reference: &str) -> Vec<String> {
        self.objects
            .retain(|(k, o, _)| !(*k == kind && identity(kind, o).as_deref() == Some(reference)));
        let mut touched = Vec::new();
        let mut thinned = Vec::new();
        for (k, o, _) in &mut self.objects {
            let mut lost = false;
            for (field, _, target, list) in references(*k) {
                if *target != kind {
                    continue;
                }
                if *list {
                    if let Some(Value::Array(items)) = o.get_mut(*field) {
                        let before = items.len();
                        items.retain(|v| v.as_str() != Some(reference));
                        lost |= items.len() != before;
                    }
                } else if o.get(*field).and_then(Value::as_str) == Some(reference) {
                    o.remove(*field);
                    lost = true;
                }
            }
            if kind == Kind::Channel && *k == Kind::Policy {
                for list in policy_channel_lists(o) {
                    let before = list.len();
                    list.retain(|e| e.get("channel").and_then(Value::as_str) != Some(reference));
                    lost |= list.len() != before;
                }
            }
            if lost {
                let who = identity(*k, o).unwrap_or_default();
                touched.push(format!("{} `{who}`", k.noun()));
                if *k == Kind::Window {
                    thinned.push(who);
                }
            }
        }
        // A window whose monitors were all taken out would cover every monitor (an empty
        // list means all): it goes too.
        let emptied: Vec<String> = self
            .objects
            .iter()
            .filter(|(k, o, _)| {
                *k == Kind::Window
                    && identity(*k, o).is_some_and(|w| thinned.contains(&w))
                    && o.get("monitors")
                        .and_then(Value::as_array)
                        .is_some_and(Vec::is_empty)
                    && o.get("tags")
                        .and_then(Value::as_array)
                        .is_none_or(Vec::is_empty)
            })
            .filter_map(|(k, o, _)| identity(*k, o))
            .collect();
        for window in emptied {
            self.objects.retain(|(k, o, _)| {
                !(*k == Kind::Window && identity(*k, o).as_deref() == Some(window.as_str()))
            });
            let label = format!("{} `{window}`", Kind::Window.noun());
            touched.retain(|t| *t != label);
            touched.push(format!(
                "{label}, left out as well: without its monitors it would cover every monitor"
            ));
        }
        touched
    }

    /// The fields of each of `kind`'s objects that hold a secret from the environment.
    pub fn secret_fields(&self, kind: Kind) -> impl Iterator<Item = &BTreeSet<String>> {
        self.objects
            .iter()
            .filter(move |(k, _, _)| *k == kind)
            .map(|(_, _, f)| f)
    }
}

/// Read a file, or every `.yaml`, `.yml`, `.toml` and `.json` file of a folder (in name
/// order), into one document.
pub fn load(paths: &[PathBuf]) -> anyhow::Result<Document> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("cannot read {}", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| format_of(p).is_some())
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    if files.is_empty() {
        bail!("no .yaml, .yml, .toml or .json file to apply");
    }
    let mut doc = Document::default();
    let mut manager: Option<(String, PathBuf)> = None;
    for file in files {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let value = parse(&text, format_of(&file).unwrap_or(Format::Yaml))
            .with_context(|| format!("{} is not a valid file", file.display()))?;
        let Value::Object(top) = value else {
            bail!("{}: the top level must be a mapping", file.display());
        };
        for (section, content) in top {
            if section == "managedBy" {
                let Some(m) = content.as_str().filter(|m| !m.trim().is_empty()) else {
                    bail!("{}: managedBy must be a non-empty string", file.display());
                };
                if let Some((other, at)) = &manager
                    && other != m
                {
                    bail!(
                        "{}: managedBy `{m}` differs from `{other}` in {}",
                        file.display(),
                        at.display()
                    );
                }
                manager = Some((m.to_string(), file.clone()));
                continue;
            }
            let Some(kind) = Kind::ALL.into_iter().find(|k| k.section() == section) else {
                bail!(
                    "{}: unknown section `{section}` (expected managedBy, channels, alertPolicies, monitors, statusPages or maintenanceWindows)",
                    file.display()
                );
            };
            let Value::Array(items) = content else {
                bail!("{}: `{section}` must be a list", file.display());
            };
            for (i, item) in items.into_iter().enumerate() {
                let Value::Object(object) = item else {
                    bail!("{}: {section}[{i}] must be a mapping", file.display());
                };
                let secret = object
                    .iter()
                    .filter(|(_, v)| v.to_string().contains("${"))
                    .map(|(k, _)| k.clone())
                    .collect();
                let mut object = Value::Object(object);
                let secrets = &mut doc.secrets;
                substitute_env(&mut object, &mut |name| {
                    let v = std::env::var(name).ok()?;
                    if !v.is_empty() && !secrets.contains(&v) {
                        secrets.push(v.clone());
                    }
                    Some(v)
                })
                .with_context(|| format!("{}: {section}[{i}]", file.display()))?;
                let Value::Object(object) = object else {
                    continue;
                };
                doc.objects.push((kind, object, secret));
            }
        }
    }
    doc.manager = manager.map_or_else(|| DEFAULT_MANAGER.to_string(), |(m, _)| m);
    Ok(doc)
}

/// The file formats read and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Yaml,
    Toml,
    Json,
}

pub fn format_of(path: &Path) -> Option<Format> {
    match path.extension()?.to_str()? {
        "yaml" | "yml" => Some(Format::Yaml),
        "toml" => Some(Format::Toml),
        "json" => Some(Format::Json),
        _ => None,
    }
}

fn parse(text: &str, format: Format) -> anyhow::Result<Value> {
    Ok(match format {
        Format::Yaml => serde_yaml_ng::from_str(text)?,
        Format::Toml => serde_json::to_value(toml::from_str::<toml::Table>(text)?)?,
        Format::Json => serde_json::from_str(text)?,
    })
}

/// A document as text in `format`.
pub fn render(value: &Value, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Yaml => serde_yaml_ng::to_string(value)?,
        Format::Toml => toml::to_string_pretty(value)?,
        Format::Json => serde_json::to_string_pretty(value)? + "\n",
    })
}

/// Replace `${NAME}` in every string with the variable's value; `$${` stands for a literal
/// `${`. A variable that is not set is an error naming it (a secret must not silently
/// become empty).
pub fn substitute_env(
    value: &mut Value,
    lookup: &mut dyn FnMut(&str) -> Option<String>,
) -> anyhow::Result<()> {
    match value {
        Value::String(s) if s.contains("${") => *s = expand(s, lookup)?,
        Value::Array(items) => {
            for item in items {
                substitute_env(item, lookup)?;
            }
        }
        Value::Object(map) => {
            for item in map.values_mut() {
                substitute_env(item, lookup)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn expand(s: &str, lookup: &mut dyn FnMut(&str) -> Option<String>) -> anyhow::Result<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        if let Some(after) = tail.strip_prefix("$${") {
            out.push_str("${");
            rest = after;
        } else if let Some(after) = tail.strip_prefix("${") {
            let Some(end) = after.find('}') else {
                bail!("`${{` without a closing `}}` in \"{s}\"");
            };
            let name = &after[..end];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                bail!("`${{{name}}}` is not a variable name (letters, digits and `_`)");
            }
            let Some(v) = lookup(name) else {
                bail!("the environment variable {name} is not set");
            };
            out.push_str(&v);
            rest = &after[end + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// What the file says instead of an id: an object's key, or its name (a page's slug).
pub fn identity(kind: Kind, object: &Map<String, Value>) -> Option<String> {
    object
        .get("key")
        .and_then(Value::as_str)
        .or_else(|| object.get(kind.name_field()).and_then(Value::as_str))
        .map(str::to_string)
}

/// Fields that name other objects: (file field, API field, kind referred to, a list?).
pub fn references(kind: Kind) -> &'static [(&'static str, &'static str, Kind, bool)] {
    match kind {
        Kind::Monitor => &[
            ("alertPolicy", "alertPolicyId", Kind::Policy, false),
            ("dependsOn", "dependsOn", Kind::Monitor, true),
        ],
        Kind::Page | Kind::Window => &[("monitors", "monitorIds", Kind::Monitor, true)],
        Kind::Channel | Kind::Policy => &[],
    }
}

/// An object as the API shows it, in file form: without the fields the server sets,
/// nulls and empty lists left out, ids turned into references by `name_of`.
pub fn to_file(
    kind: Kind,
    view: &Map<String, Value>,
    name_of: &dyn Fn(Kind, &str) -> String,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (field, value) in view {
        if kind.read_only().contains(&field.as_str()) || value.is_null() {
            continue;
        }
        out.insert(field.clone(), value.clone());
    }
    for (file_field, api_field, target, list) in references(kind) {
        let Some(v) = out.remove(*api_field) else {
            continue;
        };
        let converted = if *list {
            Value::Array(
                v.as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|id| Value::from(name_of(*target, id)))
                    .collect(),
            )
        } else {
            v.as_str()
                .map_or(Value::Null, |id| Value::from(name_of(*target, id)))
        };
        out.insert(file_field.to_string(), converted);
    }
    if kind == Kind::Policy {
        for list in policy_channel_lists(&mut out) {
            for entry in list.iter_mut().filter_map(Value::as_object_mut) {
                if let Some(id) = entry.remove("channelId") {
                    let id = id.as_str().unwrap_or_default();
                    entry.insert("channel".into(), Value::from(name_of(Kind::Channel, id)));
                }
            }
        }
    }
    out.retain(|_, v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()));
    // What tells objects apart first, for people reading the file.
    let mut ordered = Map::new();
    for first in ["key", kind.name_field(), "name", "type"] {
        if let Some(v) = out.remove(first) {
            ordered.insert(first.to_string(), v);
        }
    }
    ordered.extend(out);
    ordered
}

/// A policy's channel lists: `channels` and the escalation's (`escalation.channels`, or
/// each of `escalation.steps`).
pub fn policy_channel_lists(policy: &mut Map<String, Value>) -> Vec<&mut Vec<Value>> {
    let mut lists = Vec::new();
    let (channels, escalation) = {
        let mut channels = None;
        let mut escalation = None;
        for (k, v) in policy.iter_mut() {
            match k.as_str() {
                "channels" => channels = Some(v),
                "escalation" => escalation = Some(v),
                _ => {}
            }
        }
        (channels, escalation)
    };
    if let Some(Value::Array(list)) = channels {
        lists.push(list);
    }
    if let Some(e) = escalation {
        for list in crate::api::alert_policies::escalation_lists(e) {
            if let Value::Array(list) = list {
                lists.push(list);
            }
        }
    }
    lists
}

/// The JSON Schema of a file, built from the API's own schemas (so it follows them).
pub fn schema() -> Value {
    let doc = crate::api::openapi_document();
    let mut defs = serde_json::to_value(doc.components.map(|c| c.schemas).unwrap_or_default())
        .unwrap_or_else(|_| json!({}));
    rewrite_refs(&mut defs);
    let mut sections = Map::new();
    for kind in Kind::ALL {
        let mut item = defs[kind.schema_name()].clone();
        if let Some(props) = item.get_mut("properties").and_then(Value::as_object_mut) {
            props.retain(|k, v| !kind.read_only().contains(&k.as_str()) && v["readOnly"] != true);
            for (file_field, api_field, target, list) in references(kind) {
                props.remove(*api_field);
                let reference = json!({
                    "type": "string",
                    "description": format!("The key (or else the {}) of a {} in this file or on the server", target.name_field(), target.noun()),
                });
                props.insert(
                    file_field.to_string(),
                    if *list {
                        json!({"type": "array", "items": reference})
                    } else {
                        reference
                    },
                );
            }
        }
        if let Some(required) = item.get_mut("required").and_then(Value::as_array_mut) {
            for (file_field, api_field, _, _) in references(kind) {
                for r in required.iter_mut() {
                    if r == api_field {
                        *r = Value::from(*file_field);
                    }
                }
            }
        }
        sections.insert(
            kind.section().to_string(),
            json!({"type": "array", "items": item}),
        );
    }
    // A policy's channel entry names a stored channel with `channel` instead of its id.
    if let Some(props) = defs["PolicyChannel"]["properties"].as_object_mut() {
        props.remove("channelId");
        props.insert(
            "channel".into(),
            json!({"type": "string", "description": "The key (or else the name) of a stored channel in this file or on the server"}),
        );
    }
    sections.insert(
        "managedBy".into(),
        json!({"type": "string", "default": DEFAULT_MANAGER,
            "description": "Written into managedBy of the objects apply creates; --prune deletes only objects carrying it"}),
    );
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Tocsin configuration (tocsin apply)",
        "type": "object",
        "additionalProperties": false,
        "properties": sections,
        "$defs": defs,
    })
}

fn rewrite_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "$ref"
                    && let Value::String(s) = v
                {
                    *s = s.replace("#/components/schemas/", "#/$defs/");
                } else {
                    rewrite_refs(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl FnMut(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn variables_are_substituted_in_strings_only() {
        let mut v = json!({"a": "Bearer ${TOKEN}", "b": ["$${literal}", "x${A}y${A}"], "n": 5});
        substitute_env(&mut v, &mut env(&[("TOKEN", "s3cr\"t"), ("A", "-")])).expect("substituted");
        assert_eq!(
            v,
            json!({"a": "Bearer s3cr\"t", "b": ["${literal}", "x-y-"], "n": 5})
        );
    }

    #[test]
    fn a_missing_variable_is_an_error() {
        let mut v = json!({"a": "${NOPE}"});
        let e = substitute_env(&mut v, &mut env(&[])).expect_err("NOPE is not set");
        assert!(e.to_string().contains("NOPE"), "{e}");
        let mut v = json!({"a": "${unclosed"});
        assert!(substitute_env(&mut v, &mut env(&[])).is_err());
    }

    #[test]
    fn ids_become_references() {
        let view = json!({
            "id": "mon_1", "name": "api", "type": "http", "status": "up",
            "alertPolicyId": "pol_1", "dependsOn": ["mon_2"], "tags": [], "key": null,
            "url": "http://127.0.0.1/", "createdAt": "x"
        });
        let file = to_file(
            Kind::Monitor,
            view.as_object().expect("object"),
            &|k, id| format!("{}:{id}", k.section()),
        );
        assert_eq!(
            Value::Object(file),
            json!({"name": "api", "type": "http", "alertPolicy": "alertPolicies:pol_1",
                "dependsOn": ["monitors:mon_2"], "url": "http://127.0.0.1/"})
        );
    }

    #[test]
    fn the_schema_names_every_section() {
        let s = schema();
        for kind in Kind::ALL {
            assert!(s["properties"][kind.section()]["items"].is_object());
        }
        let monitor = &s["properties"]["monitors"]["items"]["properties"];
        assert!(monitor["alertPolicy"].is_object());
        assert!(monitor["alertPolicyId"].is_null());
        assert!(monitor["status"].is_null());
        let text = s.to_string();
        assert!(!text.contains("#/components/"));
    }
}
