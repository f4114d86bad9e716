//! `tocsin import`: monitors, channels, alert policies, maintenance windows and status
//! pages from another monitoring tool (Uptime Kuma, Gatus, Healthchecks), brought to a
//! running server over its API.
//!
//! Each source is translated into the file `tocsin apply` takes (a [`Document`]) and
//! applied as `tocsin apply` applies one, so `--dry-run` shows the same plan and running
//! the import again changes nothing: every imported object carries a key made from its
//! identity in the source (`gatus:core_api`, `kuma:12`, `healthchecks:<uuid>`). What has
//! no equivalent is listed with the reason, never dropped silently, and so is what the
//! server refuses; the rest is imported.

pub mod gatus;
pub mod healthchecks;
pub mod kuma;

use crate::declared::apply::document::{Document, Kind};
use crate::declared::apply::remote::Remote;
use crate::declared::apply::{self, ApplyOptions};
use anyhow::Context;
use reqwest::Method;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// Who owns what an import creates (`managedBy`).
pub const MANAGER: &str = "tocsin-import";

/// The tools Tocsin imports from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Kuma,
    Gatus,
    Healthchecks,
}

impl Source {
    pub fn title(self) -> &'static str {
        match self {
            Source::Kuma => "Uptime Kuma",
            Source::Gatus => "Gatus",
            Source::Healthchecks => "Healthchecks",
        }
    }
}

/// What the caller asked for.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub dry_run: bool,
    /// The server's shortest interval (`min_interval`): shorter ones are raised to it.
    pub min_interval: u32,
    /// Whether a Gatus file's `$VARIABLES` are read from this process's environment
    /// (the command line's). The server's own environment is never read for a file
    /// uploaded to it: such a file is refused, naming the variable.
    pub environment: bool,
    /// Uptime Kuma's kuma.db: also each created monitor's check history.
    pub with_history: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            dry_run: false,
            min_interval: 30,
            environment: false,
            with_history: false,
        }
    }
}

/// Something of the source that was not imported, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub what: String,
    pub reason: String,
}

/// A heartbeat monitor whose jobs must be given its new address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ping {
    /// The monitor's key.
    pub key: String,
    pub name: String,
    /// Where the jobs ping today.
    pub old: String,
}

/// A source's content as Tocsin objects.
#[derive(Debug, Default)]
pub struct Translation {
    pub doc: Document,
    pub skipped: Vec<Skipped>,
    /// Where the import had to approximate (a value raised to a limit, two thresholds
    /// made one).
    pub notes: Vec<String>,
    pub pings: Vec<Ping>,
    /// Keys of monitors that were paused or disabled in the source: paused after import.
    pub paused: Vec<String>,
    keys: BTreeMap<Kind, BTreeSet<String>>,
}

impl Translation {
    pub fn new() -> Translation {
        Translation {
            doc: Document {
                manager: MANAGER.to_string(),
                ..Document::default()
            },
            ..Translation::default()
        }
    }

    /// Add an object; `secret` names its fields that must never be printed.
    pub fn add(&mut self, kind: Kind, object: Map<String, Value>, secret: &[&str]) {
        let secret: BTreeSet<String> = secret.iter().map(|s| s.to_string()).collect();
        for field in &secret {
            if let Some(Value::String(s)) = object.get(field)
                && !s.is_empty()
            {
                self.doc.secrets.push(s.clone());
            }
        }
        self.doc.objects.push((kind, object, secret));
    }

    /// Add a channel. Its credentials are kept out of printed plans by what its plugin's
    /// schema marks secret, read from the server when the plan is made.
    pub fn add_channel(&mut self, channel: Map<String, Value>) {
        self.add(Kind::Channel, channel, &[]);
    }

    pub fn skip(&mut self, what: impl Into<String>, reason: impl Into<String>) {
        self.skipped.push(Skipped {
            what: what.into(),
            reason: reason.into(),
        });
    }

    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    /// A key for a `kind` object from `raw` (its identity in the source), made of the
    /// characters keys allow and unique in this translation.
    pub fn key(&mut self, kind: Kind, prefix: &str, raw: &str) -> String {
        let mut base = format!("{prefix}:{}", key_text(raw));
        base.truncate(90);
        let used = self.keys.entry(kind).or_default();
        let mut key = base.clone();
        let mut n = 2;
        while !used.insert(key.clone()) {
            key = format!("{base}-{n}");
            n += 1;
        }
        key
    }

    /// Seconds between checks: `seconds` rounded and raised into the server's range.
    pub fn interval(&mut self, what: &str, seconds: f64, options: &ImportOptions) -> u32 {
        let wanted = seconds.round().max(1.0) as u64;
        let got = wanted.clamp(u64::from(options.min_interval.max(1)), 86_400) as u32;
        if u64::from(got) != wanted {
            self.note(format!(
                "{what}: interval {wanted} s is outside {} to 86400 s; imported as {got} s",
                options.min_interval
            ));
        }
        got
    }

    /// A check's timeout: 1 to 60 s and at most the interval.
    pub fn timeout(&mut self, what: &str, seconds: f64, interval: u32) -> u32 {
        let wanted = seconds.round().max(1.0) as u64;
        let got = wanted.clamp(1, u64::from(interval.min(60))) as u32;
        if u64::from(got) != wanted {
            self.note(format!(
                "{what}: timeout {wanted} s is more than {} s allows; imported as {got} s",
                interval.min(60)
            ));
        }
        got
    }

    /// A tag the API accepts (1 to 50 letters, digits, `-_.:/`), noting a changed one.
    pub fn tag(&mut self, what: &str, raw: &str) -> Option<String> {
        let mut tag = key_text(raw.trim());
        tag.truncate(50);
        if tag.trim_matches('-').is_empty() {
            self.skip(format!("{what}: tag `{raw}`"), "it has no letter or digit");
            return None;
        }
        if tag != raw {
            self.note(format!("{what}: tag `{raw}` imported as `{tag}`"));
        }
        Some(tag)
    }
}

/// The characters a key and a tag allow (letters, digits, `-_.:/`); any other becomes `-`.
fn key_text(raw: &str) -> String {
    raw.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.:/".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// A Go duration (`90s`, `5m`, `1h30m`, `1.5h`, `500ms`) in seconds.
pub fn go_duration(text: &str) -> Option<f64> {
    let text = text.trim();
    if text == "0" {
        return Some(0.0);
    }
    let mut rest = text;
    let mut total = 0.0;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if number_len == 0 {
            return None;
        }
        let number: f64 = rest[..number_len].parse().ok()?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * factor;
        rest = &rest[unit_len..];
    }
    Some(total)
}

/// Import `file` from `source` into the workspace `remote` acts in.
/// Returns the text to print: the plan, what was not imported and why, what was
/// approximated, and the new ping addresses.
pub async fn import(
    source: Source,
    file: &Path,
    remote: &Remote,
    options: &ImportOptions,
) -> anyhow::Result<String> {
    if options.with_history && source != Source::Kuma {
        anyhow::bail!("--with-history reads the check history of Uptime Kuma's kuma.db");
    }
    // Before anything is created: a file without history, or a key that may not write
    // it, stops here.
    let history = if options.with_history {
        let history = kuma::History::open(file).await?;
        if !options.dry_run {
            remote
                .call(Method::GET, "/v1/audit-log?limit=1", None)
                .await
                .map_err(|e| {
                    anyhow::anyhow!(
                        "--with-history writes past checks, which only admins may do: {e}"
                    )
                })?;
        }
        Some(history)
    } else {
        None
    };
    let mut t = translate(source, file, options).await?;
    let apply_options = ApplyOptions {
        dry_run: options.dry_run,
        prune: false,
        prune_unmanaged: false,
        adopt_by_name: false,
    };
    // Monitors already on the server keep the state they have now: only those this run
    // creates are paused as they were in the source.
    let existing: BTreeSet<String> = if t.paused.is_empty() && history.is_none() {
        BTreeSet::new()
    } else {
        remote
            .list(Kind::Monitor.path())
            .await
            .context("listing the workspace's monitors")?
            .iter()
            .filter_map(|m| m.get("key").and_then(Value::as_str).map(str::to_string))
            .collect()
    };
    let (plan, refused) = match apply::apply_leaving_out(remote, &mut t.doc, &apply_options).await {
        Ok(done) => done,
        Err(e) => {
            // Stopped part way: what it created that should be paused still is.
            if !options.dry_run {
                let wanted: Vec<&String> =
                    t.paused.iter().filter(|k| !existing.contains(*k)).collect();
                let _ = pause(remote, &wanted).await;
            }
            return Err(e);
        }
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Importing from {} ({}).",
        source.title(),
        file.display()
    );
    out.push_str(&plan);
    let left_out: Vec<Skipped> = refused
        .into_iter()
        .map(|r| {
            let what = format!("{} `{}`", r.kind.noun(), r.reference);
            let message = r
                .message
                .strip_prefix(&format!("{what}: "))
                .unwrap_or(&r.message);
            Skipped {
                reason: format!("the server refuses it: {message}"),
                what,
            }
        })
        .collect();
    let kept_keys: BTreeSet<String> = t
        .doc
        .objects
        .iter()
        .filter_map(|(_, o, _)| o.get("key").and_then(Value::as_str).map(str::to_string))
        .collect();
    if !t.skipped.is_empty() || !left_out.is_empty() {
        let _ = writeln!(
            out,
            "\nNot imported ({}):",
            t.skipped.len() + left_out.len()
        );
        for s in t.skipped.iter().chain(&left_out) {
            let _ = writeln!(out, "  - {}: {}", s.what, s.reason);
        }
    }
    if !t.notes.is_empty() {
        let _ = writeln!(out, "\nImported with changes ({}):", t.notes.len());
        for n in &t.notes {
            let _ = writeln!(out, "  - {n}");
        }
    }
    let pings: Vec<&Ping> = t
        .pings
        .iter()
        .filter(|p| kept_keys.contains(&p.key))
        .collect();
    let paused: Vec<&String> = t
        .paused
        .iter()
        .filter(|k| kept_keys.contains(*k) && !existing.contains(*k))
        .collect();
    if options.dry_run {
        if !paused.is_empty() {
            let _ = writeln!(
                out,
                "\n{} monitor(s) paused in {} would be paused after import.",
                paused.len(),
                source.title()
            );
        }
        if !pings.is_empty() {
            let _ = writeln!(
                out,
                "\n{} heartbeat monitor(s) get new ping addresses when imported.",
                pings.len()
            );
        }
        return Ok(out);
    }
    // Pausing and the ping addresses first: the history, last, cannot keep them from
    // happening.
    if !paused.is_empty() || !pings.is_empty() {
        after_plan(remote, source, &paused, &pings, &mut out).await?;
    }
    if let Some(history) = &history {
        // Every imported monitor, made now or by an earlier run: each past check is
        // keyed, so one sent before is not written again.
        let imported: Vec<(i64, &String)> = kept_keys
            .iter()
            .filter_map(|k| Some((k.strip_prefix("kuma:")?.parse().ok()?, k)))
            .collect();
        import_history(remote, history, &imported, &mut out).await?;
    }
    Ok(out)
}

/// Pause what was paused in the source, and print the new ping addresses.
async fn after_plan(
    remote: &Remote,
    source: Source,
    paused: &[&String],
    pings: &[&Ping],
    out: &mut String,
) -> anyhow::Result<()> {
    let (newly_paused, monitors) = pause(remote, paused).await?;
    let by_key = |key: &str| {
        monitors
            .iter()
            .find(|m| m.get("key").and_then(Value::as_str) == Some(key))
    };
    if newly_paused > 0 {
        let _ = writeln!(
            out,
            "\nPaused {newly_paused} monitor(s), as they were in {}.",
            source.title()
        );
    }
    if !pings.is_empty() {
        let _ = writeln!(out, "\nPing addresses (point each job at its new one):");
        for p in pings {
            let new = by_key(&p.key)
                .and_then(|m| m.get("pingUrl"))
                .and_then(Value::as_str)
                .unwrap_or("(not found)");
            let _ = writeln!(out, "  {}\n    {}\n  → {new}", p.name, p.old);
        }
    }
    Ok(())
}

/// Heartbeats read and sent per request.
const HISTORY_BATCH: u32 = 2_000;

/// Send the check history of the imported monitors (Kuma id, key), oldest first, up to
/// each one's creation here, and say what was written.
async fn import_history(
    remote: &Remote,
    history: &kuma::History,
    created: &[(i64, &String)],
    out: &mut String,
) -> anyhow::Result<()> {
    let monitors = remote
        .list(Kind::Monitor.path())
        .await
        .context("listing the imported monitors")?;
    let mut sent = Sent::default();
    let mut with = 0;
    let mut failed: Vec<String> = Vec::new();
    for (kuma_id, key) in created {
        let Some(m) = monitors
            .iter()
            .find(|m| m.get("key").and_then(Value::as_str) == Some(key.as_str()))
        else {
            continue;
        };
        // One monitor's history failing is reported; the others still come.
        match monitor_history(remote, history, *kuma_id, m, &mut sent).await {
            Ok(any) => with += usize::from(any),
            Err(e) => failed.push(format!("monitor `{key}`: {e:#}")),
        }
    }
    let Sent {
        written,
        already,
        too_old,
        unreadable,
    } = sent;
    let _ = writeln!(
        out,
        "\nCheck history: {written} check(s) of {with} monitor(s) written, oldest first."
    );
    if already > 0 {
        let _ = writeln!(
            out,
            "  {already} were there already (an earlier import): unchanged."
        );
    }
    if too_old > 0 {
        let _ = writeln!(
            out,
            "  {too_old} are older than the server keeps checks (retention.checks_days): left out."
        );
    }
    if unreadable > 0 {
        let _ = writeln!(out, "  {unreadable} had no readable time: left out.");
    }
    if !failed.is_empty() {
        let _ = writeln!(
            out,
            "  Not imported, for {} monitor(s) (run the import again to finish; nothing is written twice):",
            failed.len()
        );
        for f in &failed {
            let _ = writeln!(out, "    - {f}");
        }
    }
    Ok(())
}

/// What the history requests wrote.
#[derive(Default)]
struct Sent {
    written: u64,
    already: u64,
    too_old: u64,
    unreadable: usize,
}

/// The largest history request: under the server's 1 MiB body limit with room to spare.
const HISTORY_BODY_BYTES: usize = 900 * 1024;

/// Send the past checks of one monitor (`m` as the API lists it), oldest first, up to its
/// creation here; whether it had any.
async fn monitor_history(
    remote: &Remote,
    history: &kuma::History,
    kuma_id: i64,
    m: &Map<String, Value>,
    sent: &mut Sent,
) -> anyhow::Result<bool> {
    let id = m.get("id").and_then(Value::as_str).unwrap_or_default();
    // What this server measured itself is not history.
    let created = m
        .get("createdAt")
        .and_then(Value::as_str)
        .and_then(crate::time::parse_ms)
        .unwrap_or(i64::MAX);
    let mut after: Option<(String, i64)> = None;
    let mut any = false;
    loop {
        let page = history.page(kuma_id, after.as_ref(), HISTORY_BATCH).await?;
        let Some(last) = page.last() else { break };
        let next = (last.time.clone(), last.id);
        if after.as_ref().is_some_and(|a| next <= *a) {
            anyhow::bail!(
                "the heartbeat table's order does not advance at heartbeat {}",
                last.id
            );
        }
        after = Some(next);
        let readable: Vec<Map<String, Value>> = page
            .iter()
            .filter_map(kuma::Heartbeat::past_check)
            .collect();
        sent.unreadable += page.len() - readable.len();
        let mut past_creation = false;
        let mut batch: Vec<Value> = Vec::new();
        let mut size = 0;
        for c in readable {
            let at = c
                .get("checkedAt")
                .and_then(Value::as_str)
                .and_then(crate::time::parse_ms);
            if at.is_none_or(|at| at >= created) {
                past_creation = true;
                continue;
            }
            let len = Value::Object(c.clone()).to_string().len() + 1;
            if !batch.is_empty() && size + len > HISTORY_BODY_BYTES {
                send_history(remote, id, std::mem::take(&mut batch), sent).await?;
                size = 0;
            }
            size += len;
            batch.push(Value::Object(c));
            any = true;
        }
        if !batch.is_empty() {
            send_history(remote, id, batch, sent).await?;
        }
        // The rest is later still: nothing more to send.
        if past_creation || page.len() < HISTORY_BATCH as usize {
            break;
        }
    }
    Ok(any)
}

/// One history request.
async fn send_history(
    remote: &Remote,
    id: &str,
    checks: Vec<Value>,
    sent: &mut Sent,
) -> anyhow::Result<()> {
    let mut body = Map::new();
    body.insert("checks".into(), Value::Array(checks));
    let answer = remote
        .call(
            Method::POST,
            &format!("/v1/monitors/{id}/history"),
            Some(&body),
        )
        .await?;
    let count = |f: &str| answer[f].as_u64().unwrap_or(0);
    sent.written += count("written");
    sent.already += count("alreadyThere");
    sent.too_old += count("tooOld");
    Ok(())
}

/// Pause the monitors with these keys that are not paused yet; how many it paused, and
/// the workspace's monitors as they were before.
async fn pause(
    remote: &Remote,
    keys: &[&String],
) -> anyhow::Result<(usize, Vec<Map<String, Value>>)> {
    let monitors = remote
        .list(Kind::Monitor.path())
        .await
        .context("listing the imported monitors")?;
    let mut paused = 0;
    for key in keys {
        let Some(m) = monitors
            .iter()
            .find(|m| m.get("key").and_then(Value::as_str) == Some(key.as_str()))
        else {
            continue;
        };
        if m.get("status").and_then(Value::as_str) == Some("paused") {
            continue;
        }
        let id = m.get("id").and_then(Value::as_str).unwrap_or_default();
        remote
            .call(Method::POST, &format!("/v1/monitors/{id}/pause"), None)
            .await
            .with_context(|| format!("pausing monitor `{key}`"))?;
        paused += 1;
    }
    Ok((paused, monitors))
}

/// The largest JSON or YAML file an import reads (a Kuma database may be larger).
pub const MAX_TEXT_BYTES: u64 = 16 * 1024 * 1024;

/// A JSON or YAML file's text, refused past [`MAX_TEXT_BYTES`].
pub fn read_text(file: &Path) -> anyhow::Result<String> {
    let size = std::fs::metadata(file)
        .with_context(|| format!("cannot read {}", file.display()))?
        .len();
    if size > MAX_TEXT_BYTES {
        anyhow::bail!(
            "{} is {} MiB; a JSON or YAML file to import may have at most {} MiB",
            file.display(),
            size >> 20,
            MAX_TEXT_BYTES >> 20
        );
    }
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8 text", file.display()))
}

/// Read `file` as `source` writes it.
pub async fn translate(
    source: Source,
    file: &Path,
    options: &ImportOptions,
) -> anyhow::Result<Translation> {
    let text = || read_text(file);
    match source {
        Source::Kuma => Ok(kuma::translate(&kuma::read(file).await?, options)),
        Source::Gatus => {
            let from_environment = |name: &str| std::env::var(name).ok();
            let nothing = |_: &str| None;
            let env: &dyn Fn(&str) -> Option<String> = if options.environment {
                &from_environment
            } else {
                &nothing
            };
            gatus::translate(&text()?, env, options)
        }
        Source::Healthchecks => healthchecks::translate(&text()?, options),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration("90s"), Some(90.0));
        assert_eq!(go_duration("5m"), Some(300.0));
        assert_eq!(go_duration("1h30m"), Some(5400.0));
        assert_eq!(go_duration("1.5h"), Some(5400.0));
        assert_eq!(go_duration("500ms"), Some(0.5));
        assert_eq!(go_duration("0"), Some(0.0));
        assert_eq!(go_duration("5"), None);
        assert_eq!(go_duration("m5"), None);
        assert_eq!(go_duration("5d"), None);
        assert_eq!(go_duration(""), None);
    }

    #[test]
    fn keys_are_unique_and_use_allowed_characters() {
        let mut t = Translation::new();
        assert_eq!(
            t.key(Kind::Monitor, "gatus", "core_my api"),
            "gatus:core_my-api"
        );
        assert_eq!(
            t.key(Kind::Monitor, "gatus", "core_my#api"),
            "gatus:core_my-api-2"
        );
        assert_eq!(
            t.key(Kind::Channel, "gatus", "core_my api"),
            "gatus:core_my-api"
        );
    }

    #[test]
    fn limits_are_applied_and_noted() {
        let mut t = Translation::new();
        let o = ImportOptions::default();
        assert_eq!(t.interval("m", 10.0, &o), 30);
        assert_eq!(t.interval("m", 120.0, &o), 120);
        assert_eq!(t.timeout("m", 48.0, 30), 30);
        assert_eq!(t.notes.len(), 2, "{:?}", t.notes);
        assert_eq!(t.tag("m", "prod db").as_deref(), Some("prod-db"));
        assert_eq!(t.tag("m", "!!").as_deref(), None);
    }
}
