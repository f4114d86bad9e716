//! `tocsin apply` and `tocsin export`: a workspace's monitors, alert policies, stored
//! channels, status pages and maintenance windows kept in a file, applied to a running
//! server over its API.
//!
//! Apply reads the file, lists what the server has, and matches each declared object to a
//! stored one by key (or, for a stored object without a key, by name; a status page by its
//! slug). It asks the server, with `dryRun=true`, what each create or replacement would
//! give, and compares that with what is stored: the plan. Then, unless it is a dry run,
//! it creates and replaces (`PUT`) in dependency order and, with `--prune`, deletes what
//! the file no longer declares, only objects it created itself unless told otherwise.

pub mod document;
mod placeholders;
pub mod remote;

use anyhow::bail;
use document::{Document, Kind, identity, references, to_file};
use remote::{Remote, RemoteError};
use reqwest::Method;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

pub use document::{Format, format_of, load, render, schema};

/// What `tocsin apply` was asked to do.
pub struct ApplyOptions {
    pub dry_run: bool,
    /// Delete objects `tocsin apply` created that the file no longer declares.
    pub prune: bool,
    /// With `prune`: delete every undeclared object, not only those apply created.
    pub prune_unmanaged: bool,
    /// A keyed object of the file may adopt a stored unkeyed one of its name (a file
    /// someone writes); an import's objects match by key only, never taking over an
    /// object made by hand.
    pub adopt_by_name: bool,
}

/// An object on the server.
#[derive(Debug, Clone)]
struct Stored {
    id: String,
    view: Map<String, Value>,
}

impl Stored {
    fn key(&self) -> Option<&str> {
        self.view.get("key").and_then(Value::as_str)
    }
    fn name(&self, kind: Kind) -> Option<&str> {
        self.view.get(kind.name_field()).and_then(Value::as_str)
    }
    fn managed_by(&self) -> Option<&str> {
        self.view.get("managedBy").and_then(Value::as_str)
    }
    /// How a file refers to it.
    fn reference(&self, kind: Kind) -> String {
        self.key()
            .or_else(|| self.name(kind))
            .unwrap_or(&self.id)
            .to_string()
    }
}

/// Everything of the workspace's the server holds, by kind.
struct Inventory(BTreeMap<Kind, Vec<Stored>>);

impl Inventory {
    async fn read(remote: &Remote) -> Result<Inventory, RemoteError> {
        let mut all = BTreeMap::new();
        for kind in Kind::ALL {
            let items = remote.list(kind.path()).await?;
            let stored = items
                .into_iter()
                .filter_map(|view| {
                    let id = view.get("id")?.as_str()?.to_string();
                    Some(Stored { id, view })
                })
                .collect();
            all.insert(kind, stored);
        }
        Ok(Inventory(all))
    }

    fn of(&self, kind: Kind) -> &[Stored] {
        self.0.get(&kind).map(Vec::as_slice).unwrap_or_default()
    }

    /// The reference to the object with this id (its id when it is not known).
    fn reference(&self, kind: Kind, id: &str) -> String {
        self.of(kind)
            .iter()
            .find(|s| s.id == id)
            .map_or_else(|| id.to_string(), |s| s.reference(kind))
    }
}

/// One line of the plan.
#[derive(Debug)]
enum Action {
    Create,
    /// Changed fields: (field, stored value, declared value).
    Change(Vec<(String, Value, Value)>),
    Unchanged,
    Delete,
}

#[derive(Debug)]
struct Step {
    kind: Kind,
    /// How the file (or, for a deletion, the server) calls it.
    label: String,
    action: Action,
    /// The stored object, for changes and deletions.
    stored: Option<Stored>,
    /// The declared object in file form, for creations and changes.
    declared: Map<String, Value>,
    /// Its fields that hold a secret from the environment (the plan hides their values).
    secret_fields: BTreeSet<String>,
}

/// An object of the file the server refuses, with the server's reason.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub kind: Kind,
    /// How the file calls it (its key, or its name).
    pub reference: String,
    pub message: String,
}

/// Why one object has no step.
enum Problem {
    /// The server refuses it for what it is.
    Refused(String),
    /// The server could not say.
    Fatal(String),
}

/// Why no plan could be made.
#[derive(Debug)]
enum PlanError {
    /// The file itself is wrong (an object twice, an ambiguous name).
    File(anyhow::Error),
    /// The server refuses these objects.
    Refused(Vec<Refusal>),
}

impl From<PlanError> for anyhow::Error {
    fn from(e: PlanError) -> anyhow::Error {
        match e {
            PlanError::File(e) => e,
            PlanError::Refused(problems) => anyhow::anyhow!(
                "the server refuses the file:\n  {}",
                problems
                    .iter()
                    .map(|p| p.message.as_str())
                    .collect::<Vec<_>>()
                    .join("\n  ")
            ),
        }
    }
}

/// Where a reference points.
#[derive(Debug, Clone)]
enum Target {
    /// A stored object.
    Id(String),
    /// An object this plan creates (its id is known once it is), as declared.
    Planned(Map<String, Value>),
}

/// What declared objects are called, and what stored objects they match.
struct Resolver<'a> {
    inventory: &'a Inventory,
    /// Per kind: declared identities, with their matched stored object's id, if any, and
    /// the reference written for them.
    declared: BTreeMap<Kind, Vec<Declared>>,
    /// Ids of objects created during this run, by (kind, identity).
    created: BTreeMap<(Kind, String), String>,
}

#[derive(Debug, Clone)]
struct Declared {
    key: Option<String>,
    name: Option<String>,
    matched: Option<String>,
    reference: String,
    /// The object as the file declares it.
    definition: Map<String, Value>,
}

impl Resolver<'_> {
    /// The target of `reference` to a `kind`, and how a file writes it canonically.
    fn resolve(&self, kind: Kind, reference: &str) -> anyhow::Result<(Target, String)> {
        let declared = self.declared.get(&kind).map(Vec::as_slice).unwrap_or(&[]);
        let found = declared
            .iter()
            .find(|d| d.key.as_deref() == Some(reference))
            .or_else(|| {
                declared
                    .iter()
                    .find(|d| d.name.as_deref() == Some(reference))
            });
        if let Some(d) = found {
            let target = match (&d.matched, self.created.get(&(kind, d.reference.clone()))) {
                (Some(id), _) | (None, Some(id)) => Target::Id(id.clone()),
                (None, None) => Target::Planned(d.definition.clone()),
            };
            return Ok((target, d.reference.clone()));
        }
        let stored = self.inventory.of(kind);
        if let Some(s) = stored.iter().find(|s| s.key() == Some(reference)) {
            return Ok((Target::Id(s.id.clone()), s.reference(kind)));
        }
        let named: Vec<&Stored> = stored
            .iter()
            .filter(|s| s.name(kind) == Some(reference))
            .collect();
        match named.as_slice() {
            [one] => Ok((Target::Id(one.id.clone()), one.reference(kind))),
            [] => bail!(
                "no {} `{reference}` in the file or on the server",
                kind.noun()
            ),
            _ => bail!(
                "{} {}s are named `{reference}`; give the one meant a key and refer to that",
                named.len(),
                kind.noun()
            ),
        }
    }
}

/// A declared object as sent to the API.
struct ApiForm {
    api: Map<String, Value>,
    /// The file form with references written canonically.
    canonical: Map<String, Value>,
    /// False when a reference to an object not created yet was left out (only in a plan's
    /// dry run, which cannot know its id).
    complete: bool,
}

/// A declared object in API form.
fn to_api(
    kind: Kind,
    object: &Map<String, Value>,
    resolver: &Resolver<'_>,
) -> anyhow::Result<ApiForm> {
    let mut api = object.clone();
    // The file form with references written canonically.
    let mut canonical = object.clone();
    let mut complete = true;
    for (file_field, api_field, target_kind, list) in references(kind) {
        let Some(value) = api.remove(*file_field) else {
            continue;
        };
        if *list {
            let Value::Array(items) = value else {
                bail!("`{file_field}` must be a list of keys or names");
            };
            let mut ids = Vec::new();
            let mut refs = Vec::new();
            for item in items {
                let Some(r) = item.as_str() else {
                    bail!("`{file_field}` must be a list of keys or names");
                };
                let (target, written) = resolver
                    .resolve(*target_kind, r)
                    .map_err(|e| anyhow::anyhow!("{file_field}: {e}"))?;
                if !refs.contains(&Value::from(written.clone())) {
                    refs.push(Value::from(written));
                    match target {
                        Target::Id(id) => ids.push(Value::from(id)),
                        Target::Planned(_) => complete = false,
                    }
                }
            }
            api.insert(api_field.to_string(), Value::Array(ids));
            canonical.insert(file_field.to_string(), Value::Array(refs));
        } else if value.is_null() {
            api.insert(api_field.to_string(), Value::Null);
            canonical.remove(*file_field);
        } else {
            let Some(r) = value.as_str() else {
                bail!("`{file_field}` must be a key or a name");
            };
            let (target, written) = resolver
                .resolve(*target_kind, r)
                .map_err(|e| anyhow::anyhow!("{file_field}: {e}"))?;
            canonical.insert(file_field.to_string(), Value::from(written));
            match target {
                Target::Id(id) => {
                    api.insert(api_field.to_string(), Value::from(id));
                }
                Target::Planned(_) => complete = false,
            }
        }
    }
    if kind == Kind::Policy {
        for (api_list, file_list) in document::policy_channel_lists(&mut api)
            .into_iter()
            .zip(document::policy_channel_lists(&mut canonical))
        {
            let mut kept = Vec::new();
            for (entry, written) in api_list.drain(..).zip(file_list.iter_mut()) {
                let Value::Object(mut entry) = entry else {
                    kept.push(entry);
                    continue;
                };
                let Some(r) = entry.remove("channel") else {
                    kept.push(Value::Object(entry));
                    continue;
                };
                let Some(r) = r.as_str() else {
                    bail!("a policy channel's `channel` must be a key or a name");
                };
                let (target, canonical_ref) = resolver
                    .resolve(Kind::Channel, r)
                    .map_err(|e| anyhow::anyhow!("channels: {e}"))?;
                if let Some(w) = written.as_object_mut() {
                    w.insert("channel".into(), Value::from(canonical_ref));
                }
                match target {
                    Target::Id(id) => {
                        entry.insert("channelId".into(), Value::from(id));
                        kept.push(Value::Object(entry));
                    }
                    // Not created yet: the server checks its settings as an inline
                    // channel's, which are the same.
                    Target::Planned(definition) => {
                        complete = false;
                        let mut inline = definition;
                        for field in ["name", "key", "managedBy"] {
                            inline.remove(field);
                        }
                        inline.extend(entry);
                        kept.push(Value::Object(inline));
                    }
                }
            }
            *api_list = kept;
        }
    }
    Ok(ApiForm {
        api,
        canonical,
        complete,
    })
}

/// The fields that differ between a stored object and a declared one (both in file form).
fn differences(
    stored: &Map<String, Value>,
    declared: &Map<String, Value>,
) -> Vec<(String, Value, Value)> {
    let fields: BTreeSet<&String> = stored.keys().chain(declared.keys()).collect();
    fields
        .into_iter()
        .filter_map(|f| {
            let before = stored.get(f).cloned().unwrap_or(Value::Null);
            let after = declared.get(f).cloned().unwrap_or(Value::Null);
            (before != after).then(|| (f.clone(), before, after))
        })
        .collect()
}

/// Build the plan: what to create, change and delete.
async fn plan(
    remote: &Remote,
    doc: &Document,
    inventory: &Inventory,
    options: &ApplyOptions,
) -> Result<Vec<Step>, PlanError> {
    // Match declared objects to stored ones first, so references can find either.
    let resolver =
        match_declared(doc, inventory, options.adopt_by_name).map_err(PlanError::File)?;
    let mut problems = Vec::new();
    let mut steps = Vec::new();
    let mut kept_ids: BTreeSet<String> = BTreeSet::new();
    for kind in Kind::ALL {
        let declared = resolver.declared[&kind].clone();
        let secret_fields = doc.secret_fields(kind);
        for ((object, d), secret) in doc.of(kind).zip(declared).zip(secret_fields) {
            let context = (remote, doc, &resolver);
            let reference = d.reference.clone();
            let planned = plan_one(context, kind, object, d, secret, &mut kept_ids);
            match planned.await {
                Ok(step) => steps.push(step),
                Err(Problem::Refused(message)) => problems.push(Refusal {
                    kind,
                    reference,
                    message,
                }),
                // The server could not answer (rate limit past its retries, its own
                // trouble, the key refused): nothing is left out for it, the run stops.
                Err(Problem::Fatal(message)) => {
                    return Err(PlanError::File(anyhow::anyhow!(message)));
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(PlanError::Refused(problems));
    }
    // What the file no longer declares, newest kinds first (what refers before what is
    // referred to).
    for kind in Kind::ALL.into_iter().rev() {
        for s in inventory.of(kind) {
            if kept_ids.contains(&s.id) {
                continue;
            }
            let ours = s.managed_by() == Some(doc.manager.as_str());
            if options.prune && (ours || options.prune_unmanaged) {
                steps.push(Step {
                    kind,
                    label: format!("{} `{}`", kind.noun(), s.reference(kind)),
                    action: Action::Delete,
                    stored: Some(s.clone()),
                    declared: Map::new(),
                    secret_fields: BTreeSet::new(),
                });
            }
        }
    }
    Ok(steps)
}

/// Match each declared object to the stored one it describes (by key, else by a name no
/// other unkeyed object has).
fn match_declared<'a>(
    doc: &Document,
    inventory: &'a Inventory,
    adopt_by_name: bool,
) -> anyhow::Result<Resolver<'a>> {
    let mut problems = Vec::new();
    let mut resolver = Resolver {
        inventory,
        declared: BTreeMap::new(),
        created: BTreeMap::new(),
    };
    for kind in Kind::ALL {
        let mut seen = BTreeSet::new();
        let mut list = Vec::new();
        for object in doc.of(kind) {
            let Some(ident) = identity(kind, object) else {
                problems.push(format!(
                    "a {} without `key` or `{}`",
                    kind.noun(),
                    kind.name_field()
                ));
                continue;
            };
            if !seen.insert(ident.clone()) {
                problems.push(format!(
                    "{} `{ident}` is declared twice; give them different keys",
                    kind.noun()
                ));
                continue;
            }
            let key = object.get("key").and_then(Value::as_str);
            let name = object.get(kind.name_field()).and_then(Value::as_str);
            let stored = inventory.of(kind);
            let matched = match key {
                Some(k) => stored.iter().find(|s| s.key() == Some(k)).or_else(|| {
                    // A key added in the file adopts the unkeyed object of that name.
                    adopt_by_name
                        .then(|| unique_unkeyed(stored, kind, name))
                        .flatten()
                }),
                None => unique_unkeyed(stored, kind, name),
            };
            let namesakes = stored
                .iter()
                .filter(|s| s.key().is_none() && s.name(kind) == name)
                .count();
            if key.is_none() && namesakes > 1 {
                problems.push(format!(
                    "{namesakes} {}s on the server are named `{ident}`; give the declared one a key",
                    kind.noun()
                ));
            }
            list.push(Declared {
                key: key.map(str::to_string),
                name: name.map(str::to_string),
                matched: matched.map(|s| s.id.clone()),
                reference: ident,
                definition: object.clone(),
            });
        }
        resolver.declared.insert(kind, list);
    }
    if !problems.is_empty() {
        bail!("the file cannot be applied:\n  {}", problems.join("\n  "));
    }
    Ok(resolver)
}

/// The step for one declared object, checked by the server with a dry run; the ids it
/// refers to or replaces are added to `kept_ids`.
async fn plan_one(
    (remote, doc, resolver): (&Remote, &Document, &Resolver<'_>),
    kind: Kind,
    object: &Map<String, Value>,
    d: Declared,
    secret: &BTreeSet<String>,
    kept_ids: &mut BTreeSet<String>,
) -> Result<Step, Problem> {
    let inventory = resolver.inventory;
    let label = format!("{} `{}`", kind.noun(), d.reference);
    let ApiForm {
        mut api,
        canonical,
        complete,
    } = match to_api(kind, object, resolver) {
        Ok(x) => x,
        Err(e) => return Err(Problem::Refused(format!("{label}: {e}"))),
    };
    let stored = d
        .matched
        .as_ref()
        .and_then(|id| inventory.of(kind).iter().find(|s| &s.id == id).cloned());
    if let Some(s) = &stored
        && let (Some(was), Some(now)) = (
            s.view.get("type").and_then(Value::as_str),
            object.get("type").and_then(Value::as_str),
        )
        && was != now
    {
        return Err(Problem::Refused(format!(
            "{label} is of type {was} on the server and {now} in the file; a type \
             cannot change: give the new one another name or key (--prune then \
             deletes the old one, with its history)"
        )));
    }
    // What the file refers to stays, declared or not.
    kept_ids.extend(referenced_ids(&api));
    // A replacement keeps the stored owner; a creation is owned by this file.
    api.insert(
        "managedBy".into(),
        match &stored {
            Some(s) => s.view.get("managedBy").cloned().unwrap_or(Value::Null),
            None => Value::from(doc.manager.clone()),
        },
    );
    let answer = match &stored {
        Some(s) => {
            kept_ids.insert(s.id.clone());
            let path = format!("{}/{}?dryRun=true", kind.path(), s.id);
            remote.call(Method::PUT, &path, Some(&api)).await
        }
        None => {
            let path = format!("{}?dryRun=true", kind.path());
            remote.call(Method::POST, &path, Some(&api)).await
        }
    };
    let view = match answer {
        Ok(Value::Object(v)) => v,
        Ok(_) => {
            return Err(Problem::Fatal(format!(
                "{label}: the server's answer has no object"
            )));
        }
        Err(e) if e.is_refusal() => return Err(Problem::Refused(format!("{label}: {e}"))),
        Err(e) => return Err(Problem::Fatal(format!("{label}: {e}"))),
    };
    let name_of = |k: Kind, id: &str| resolver_reference(resolver, k, id);
    let mut desired = to_file(kind, &view, &name_of);
    // References come from the file: the server could not see planned objects.
    for (file_field, _, _, _) in references(kind) {
        match canonical.get(*file_field) {
            Some(v) if !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()) => {
                desired.insert(file_field.to_string(), v.clone());
            }
            _ => {
                desired.remove(*file_field);
            }
        }
    }
    if kind == Kind::Policy && !complete {
        for field in ["channels", "escalation"] {
            match canonical.get(field) {
                Some(v) => desired.insert(field.to_string(), v.clone()),
                None => desired.remove(field),
            };
        }
    }
    let action = match &stored {
        None => Action::Create,
        Some(s) => {
            let current = to_file(kind, &s.view, &|k, id| inventory.reference(k, id));
            let diff = differences(&current, &desired);
            if diff.is_empty() {
                Action::Unchanged
            } else {
                Action::Change(diff)
            }
        }
    };
    Ok(Step {
        kind,
        label,
        action,
        stored,
        declared: object.clone(),
        secret_fields: secret.clone(),
    })
}

/// The ids an object in API form refers to.
fn referenced_ids(api: &Map<String, Value>) -> Vec<String> {
    let mut ids = Vec::new();
    let mut push = |v: Option<&Value>| {
        if let Some(id) = v.and_then(Value::as_str) {
            ids.push(id.to_string());
        }
    };
    push(api.get("alertPolicyId"));
    for field in ["dependsOn", "monitorIds"] {
        for v in api
            .get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            push(Some(v));
        }
    }
    let mut escalation = api.get("escalation").cloned().unwrap_or(Value::Null);
    let steps = crate::api::alert_policies::escalation_lists(&mut escalation);
    for list in api
        .get("channels")
        .into_iter()
        .chain(steps.into_iter().map(|l| &*l))
    {
        for entry in list.as_array().into_iter().flatten() {
            push(entry.get("channelId"));
        }
    }
    ids
}

fn unique_unkeyed<'a>(stored: &'a [Stored], kind: Kind, name: Option<&str>) -> Option<&'a Stored> {
    let mut found = stored
        .iter()
        .filter(|s| s.key().is_none() && name.is_some() && s.name(kind) == name);
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// How a file refers to the object with this id: a declared object by its identity, a
/// stored one by its key or name.
fn resolver_reference(resolver: &Resolver<'_>, kind: Kind, id: &str) -> String {
    if let Some(d) = resolver
        .declared
        .get(&kind)
        .and_then(|list| list.iter().find(|d| d.matched.as_deref() == Some(id)))
    {
        return d.reference.clone();
    }
    if let Some(((_, reference), _)) = resolver
        .created
        .iter()
        .find(|((k, _), created)| *k == kind && created.as_str() == id)
    {
        return reference.clone();
    }
    resolver.inventory.reference(kind, id)
}

/// The plan as text, and whether it changes anything.
fn describe(
    steps: &[Step],
    not_pruned: usize,
    options: &ApplyOptions,
    secrets: &[String],
) -> (String, bool) {
    let mut out = String::new();
    let (mut create, mut change, mut delete, mut same) = (0, 0, 0, 0);
    for step in steps {
        match &step.action {
            Action::Create => {
                create += 1;
                let _ = writeln!(out, "+ create {}", step.label);
            }
            Action::Change(diff) => {
                change += 1;
                let _ = writeln!(out, "~ change {}", step.label);
                for (field, before, after) in diff {
                    if step.secret_fields.contains(field) {
                        let _ = writeln!(out, "    {field}: (changed; it holds a secret)");
                        continue;
                    }
                    let _ = writeln!(
                        out,
                        "    {field}: {} → {}",
                        masked(before, secrets),
                        masked(after, secrets)
                    );
                }
            }
            Action::Delete => {
                delete += 1;
                let _ = writeln!(out, "- delete {}", step.label);
            }
            Action::Unchanged => same += 1,
        }
    }
    let _ = write!(
        out,
        "Plan: {create} to create, {change} to change, {delete} to delete, {same} unchanged."
    );
    if not_pruned > 0 {
        let hint = if options.prune {
            "apply did not create them, or the file refers to them; --prune-unmanaged deletes the former"
        } else {
            "--prune deletes the ones apply created"
        };
        let _ = write!(
            out,
            " {not_pruned} object(s) on the server are not in the file and stay ({hint})."
        );
    }
    out.push('\n');
    (out, create + change + delete > 0)
}

/// A value as the plan shows it: compact JSON, with what came from the environment hidden
/// (plans end up in CI logs).
fn masked(v: &Value, secrets: &[String]) -> String {
    let mut text = match v {
        Value::Null => "(none)".into(),
        other => other.to_string(),
    };
    for secret in secrets {
        // As it appears inside JSON text.
        let encoded = Value::from(secret.as_str()).to_string();
        let inner = &encoded[1..encoded.len() - 1];
        text = text.replace(inner, "(secret)");
    }
    text
}

/// `tocsin apply`: print the plan and, unless it is a dry run, carry it out. Returns the
/// text to print.
pub async fn apply(
    url: &str,
    key: &str,
    doc: &Document,
    options: &ApplyOptions,
) -> anyhow::Result<String> {
    let remote = Remote::new(url, key)?;
    let inventory = Inventory::read(&remote).await?;
    let mut doc = doc.clone();
    mark_secrets(&remote, &mut doc, &inventory).await?;
    let steps = plan(&remote, &doc, &inventory, options).await?;
    carry_out(&remote, &doc, &inventory, &steps, options).await
}

/// Mark what the loaded plugins' schemas say is secret in `doc` and in what the server
/// holds, so no plan prints it.
async fn mark_secrets(
    remote: &Remote,
    doc: &mut Document,
    inventory: &Inventory,
) -> anyhow::Result<()> {
    let catalogue = placeholders::Catalogue::of(&remote.list("/v1/plugins").await?);
    let stored = Kind::ALL
        .into_iter()
        .flat_map(|kind| inventory.of(kind).iter().map(move |s| (kind, &s.view)));
    placeholders::mark(doc, stored, &catalogue);
    Ok(())
}

/// Like [`apply`], for a file a program made (`tocsin import`): an object the server
/// refuses is left out, with every reference to it, instead of stopping the run. Returns
/// the text to print and what was left out, each with the server's reason (and what lost
/// a reference to it).
pub async fn apply_leaving_out(
    remote: &Remote,
    doc: &mut Document,
    options: &ApplyOptions,
) -> anyhow::Result<(String, Vec<Refusal>)> {
    let inventory = Inventory::read(remote).await?;
    mark_secrets(remote, doc, &inventory).await?;
    let mut left_out = Vec::new();
    // Each round leaves out at least one object, so this ends.
    let steps = loop {
        match plan(remote, doc, &inventory, options).await {
            Ok(steps) => break steps,
            Err(PlanError::Refused(refused)) => {
                // An object may be refused for what it refers to (a policy for its
                // refused channel): leave out the first kind's refusals only, and ask
                // again about the rest without them.
                let first = refused.iter().map(|r| r.kind).min();
                for mut r in refused.into_iter().filter(|r| Some(r.kind) == first) {
                    let touched = doc.remove(r.kind, &r.reference);
                    if !touched.is_empty() {
                        r.message = format!(
                            "{} (imported without it: {})",
                            r.message,
                            touched.join(", ")
                        );
                    }
                    left_out.push(r);
                }
            }
            Err(e) => return Err(e.into()),
        }
    };
    let text = carry_out(remote, doc, &inventory, &steps, options).await?;
    Ok((text, left_out))
}

/// Print a plan and, unless it is a dry run, carry it out.
async fn carry_out(
    remote: &Remote,
    doc: &Document,
    inventory: &Inventory,
    steps: &[Step],
    options: &ApplyOptions,
) -> anyhow::Result<String> {
    let considered: usize = steps.iter().filter(|s| s.stored.is_some()).count();
    let stored_total: usize = Kind::ALL.iter().map(|k| inventory.of(*k).len()).sum();
    let not_pruned = stored_total.saturating_sub(considered);
    let (mut text, changes) = describe(steps, not_pruned, options, &doc.secrets);
    if options.dry_run {
        text.push_str("Dry run: nothing was changed.\n");
        return Ok(text);
    }
    if !changes {
        text.push_str("Nothing to do.\n");
        return Ok(text);
    }
    execute(remote, doc, inventory, steps)
        .await
        .map_err(|e| anyhow::anyhow!("{text}{e}"))?;
    text.push_str("Applied.\n");
    Ok(text)
}

/// Carry out a plan: creations and changes in dependency order, then deletions.
async fn execute(
    remote: &Remote,
    doc: &Document,
    inventory: &Inventory,
    steps: &[Step],
) -> anyhow::Result<()> {
    let mut resolver = Resolver {
        inventory,
        declared: BTreeMap::new(),
        created: BTreeMap::new(),
    };
    for kind in Kind::ALL {
        let list = steps
            .iter()
            .filter(|s| s.kind == kind && !matches!(s.action, Action::Delete))
            .map(|s| Declared {
                key: s
                    .declared
                    .get("key")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                name: s
                    .declared
                    .get(kind.name_field())
                    .and_then(Value::as_str)
                    .map(str::to_string),
                matched: s.stored.as_ref().map(|st| st.id.clone()),
                reference: identity(kind, &s.declared).unwrap_or_default(),
                definition: s.declared.clone(),
            })
            .collect();
        resolver.declared.insert(kind, list);
    }
    for kind in Kind::ALL {
        // Monitors that depend on monitors created in this run wait for them.
        let mut pending: Vec<&Step> = steps
            .iter()
            .filter(|s| s.kind == kind && matches!(s.action, Action::Create | Action::Change(_)))
            .collect();
        while !pending.is_empty() {
            let before = pending.len();
            let mut waiting = Vec::new();
            for step in pending {
                let ApiForm {
                    mut api, complete, ..
                } = to_api(kind, &step.declared, &resolver)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", step.label))?;
                if !complete {
                    waiting.push(step);
                    continue;
                }
                let answer = match &step.stored {
                    Some(s) => {
                        api.insert(
                            "managedBy".into(),
                            s.view.get("managedBy").cloned().unwrap_or(Value::Null),
                        );
                        let path = format!("{}/{}", kind.path(), s.id);
                        remote.call(Method::PUT, &path, Some(&api)).await
                    }
                    None => {
                        api.insert("managedBy".into(), Value::from(doc.manager.clone()));
                        remote.call(Method::POST, kind.path(), Some(&api)).await
                    }
                }
                .map_err(|e| anyhow::anyhow!("{}: {e}", step.label))?;
                if step.stored.is_none()
                    && let Some(id) = answer.get("id").and_then(Value::as_str)
                {
                    let ident = identity(kind, &step.declared).unwrap_or_default();
                    resolver.created.insert((kind, ident), id.to_string());
                }
            }
            if waiting.len() == before {
                bail!(
                    "{} refer to each other in a loop (dependsOn)",
                    waiting
                        .iter()
                        .map(|s| s.label.clone())
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
            pending = waiting;
        }
    }
    for step in steps.iter().filter(|s| matches!(s.action, Action::Delete)) {
        if let Some(s) = &step.stored {
            remote
                .call(
                    Method::DELETE,
                    &format!("{}/{}", step.kind.path(), s.id),
                    None,
                )
                .await
                .map_err(|e| anyhow::anyhow!("{}: {e}", step.label))?;
        }
    }
    Ok(())
}

/// `tocsin export`: the workspace as a file that `tocsin apply` takes back unchanged.
/// Every value a read key would see redacted (what the plugins' schemas mark secret: a
/// request header's value, a chat webhook URL) is written as a `${VARIABLE}`, named in
/// `variables`, for apply to read from the environment: the file can go into Git.
/// Write-only settings (passwords, tokens) are never shown by the API, so they are not in
/// it either; add them as `${VARIABLE}`s before applying the file to another server.
pub async fn export(url: &str, key: &str) -> anyhow::Result<Exported> {
    let remote = Remote::new(url, key)?;
    let inventory = Inventory::read(&remote).await?;
    let catalogue = placeholders::Catalogue::of(&remote.list("/v1/plugins").await?);
    let mut names = placeholders::Placeholders::default();
    let mut top = Map::new();
    for kind in Kind::ALL {
        let items: Vec<Value> = inventory
            .of(kind)
            .iter()
            .rev() // Lists are newest first; the file reads oldest first.
            .map(|s| {
                let mut file =
                    Value::Object(to_file(kind, &s.view, &|k, id| inventory.reference(k, id)));
                placeholders::escape_dollars(&mut file);
                if let Value::Object(o) = &mut file {
                    placeholders::hide(kind, o, &catalogue, &mut names);
                }
                file
            })
            .collect();
        if !items.is_empty() {
            top.insert(kind.section().to_string(), Value::Array(items));
        }
    }
    Ok(Exported {
        document: Value::Object(top),
        variables: names.names().to_vec(),
    })
}

/// What `tocsin export` wrote: the file's content, and the environment variables its
/// secrets became.
pub struct Exported {
    pub document: Value,
    pub variables: Vec<String>,
}

impl Exported {
    /// The file as text: YAML and TOML start with a comment naming the variables (JSON
    /// has no comments: the caller prints them apart).
    pub fn render(&self, format: Format) -> anyhow::Result<String> {
        let body = render(&self.document, format)?;
        Ok(match format {
            Format::Json => body,
            Format::Yaml | Format::Toml => placeholders::header(&self.variables) + &body,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_from_the_environment_are_masked() {
        let secrets = vec!["p\"w".to_string()];
        assert_eq!(
            masked(&json!({"Authorization": "Bearer p\"w"}), &secrets),
            r#"{"Authorization":"Bearer (secret)"}"#
        );
        assert_eq!(masked(&Value::Null, &secrets), "(none)");
    }

    #[test]
    fn a_window_left_without_its_monitors_is_left_out_too() {
        let mut doc = Document::default();
        for (kind, o) in [
            (
                Kind::Monitor,
                json!({"key": "m1", "name": "a", "type": "http"}),
            ),
            (
                Kind::Window,
                json!({"key": "w1", "name": "w", "monitors": ["m1"]}),
            ),
            (
                Kind::Window,
                json!({"key": "w2", "name": "v", "monitors": ["m1"], "tags": ["db"]}),
            ),
        ] {
            doc.objects.push((
                kind,
                o.as_object().cloned().expect("object"),
                BTreeSet::new(),
            ));
        }
        let touched = doc.remove(Kind::Monitor, "m1");
        let kinds: Vec<Kind> = doc.objects.iter().map(|(k, _, _)| *k).collect();
        assert_eq!(kinds, vec![Kind::Window], "{touched:?}");
        assert_eq!(doc.objects[0].1["key"], "w2");
        assert!(
            touched.iter().any(|t| t.contains("`w1`, left out as well")),
            "{touched:?}"
        );
    }

    #[test]
    fn differences_name_each_changed_field() {
        let stored = json!({"name": "a", "interval": 60, "tags": ["x"]});
        let declared = json!({"name": "a", "interval": 120});
        let diff = differences(
            stored.as_object().expect("object"),
            declared.as_object().expect("object"),
        );
        assert_eq!(
            diff,
            vec![
                ("interval".to_string(), json!(60), json!(120)),
                ("tags".to_string(), json!(["x"]), Value::Null),
            ]
        );
    }
}
