//! Uptime Kuma: a 1.x JSON backup (Settings → Backup → Export: its monitors and
//! notifications) or a 2.x `kuma.db` read directly (also its maintenance and status
//! pages). Both are brought to one shape, the backup's: a monitor is a JSON object whose
//! fields go by the backup's names or the database's columns, and [`field`] reads either.

use super::{ImportOptions, Ping, Translation};
use crate::declared::apply::document::Kind;
use anyhow::{Context, bail};
use base64::Engine as _;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What the import reads from Kuma, in the backup's shape.
#[derive(Debug, Default)]
pub struct Kuma {
    pub monitors: Vec<Map<String, Value>>,
    /// Each notification with its `config` parsed.
    pub notifications: Vec<Map<String, Value>>,
    /// Monitor id → notification ids.
    pub links: BTreeMap<i64, BTreeSet<i64>>,
    /// Monitor id → (tag name, value).
    pub tags: BTreeMap<i64, Vec<(String, String)>>,
    /// 2.x only.
    pub maintenance: Vec<Maintenance>,
    pub pages: Vec<Page>,
}

#[derive(Debug, Default)]
pub struct Maintenance {
    pub row: Map<String, Value>,
    pub monitors: Vec<i64>,
}

#[derive(Debug, Default)]
pub struct Page {
    pub row: Map<String, Value>,
    /// Group names, in order, each with its monitors in order.
    pub groups: Vec<(String, Vec<i64>)>,
}

/// A field by any of its names (the backup's camelCase, the database's snake_case).
fn field<'a>(o: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    names
        .iter()
        .find_map(|n| o.get(*n))
        .filter(|v| !v.is_null())
}

fn text<'a>(o: &'a Map<String, Value>, names: &[&str]) -> Option<&'a str> {
    field(o, names)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
}

fn number(o: &Map<String, Value>, names: &[&str]) -> Option<f64> {
    field(o, names).and_then(|v| {
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
    })
}

/// SQLite's 0/1 and the backup's true/false.
fn flag(o: &Map<String, Value>, names: &[&str]) -> bool {
    match field(o, names) {
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::String(s)) => s == "1" || s == "true",
        _ => false,
    }
}

/// Read a backup (JSON) or a database (SQLite), whichever `path` is.
pub async fn read(path: &Path) -> anyhow::Result<Kuma> {
    use std::io::Read;
    let mut header = [0u8; 16];
    let mut file =
        std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let n = file.read(&mut header).unwrap_or(0);
    if n == 16 && &header == b"SQLite format 3\0" {
        read_database(path).await
    } else {
        let text = super::read_text(path)?;
        read_backup(&text)
    }
}

/// A 1.x backup: `{version, notificationList, monitorList}`.
pub fn read_backup(text: &str) -> anyhow::Result<Kuma> {
    let top: Value = serde_json::from_str(text).context("the file is not JSON")?;
    let Some(monitors) = top.get("monitorList").and_then(Value::as_array) else {
        bail!("the file has no `monitorList`: is it an Uptime Kuma backup?");
    };
    let mut kuma = Kuma::default();
    for n in top
        .get("notificationList")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(mut n) = n.as_object().cloned() else {
            continue;
        };
        let config = match n.get("config") {
            Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
            Some(other) => other.clone(),
            None => Value::Null,
        };
        n.insert("config".into(), config);
        kuma.notifications.push(n);
    }
    for m in monitors {
        let Some(m) = m.as_object().cloned() else {
            continue;
        };
        let id = m.get("id").and_then(Value::as_i64).unwrap_or_default();
        if let Some(list) = m.get("notificationIDList").and_then(Value::as_object) {
            let ids = list
                .iter()
                .filter(|(_, on)| on.as_bool().unwrap_or(false))
                .filter_map(|(id, _)| id.parse().ok())
                .collect();
            kuma.links.insert(id, ids);
        }
        for t in m
            .get("tags")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
            let value = t.get("value").and_then(Value::as_str).unwrap_or_default();
            kuma.tags
                .entry(id)
                .or_default()
                .push((name.to_string(), value.to_string()));
        }
        kuma.monitors.push(m);
    }
    Ok(kuma)
}

/// The most rows read from one table of a Kuma database.
const MAX_ROWS: usize = 100_000;

/// Every row of `table` (one of Kuma's, named by this file, never by the database) as a
/// JSON object. No SQL is made from what the file holds: the columns are read by the
/// names the row carries, and a `table` that is not a plain table (a view, which could
/// compute anything) is refused.
async fn rows(
    db: &sea_orm::DatabaseConnection,
    table: &'static str,
    order: &'static str,
) -> anyhow::Result<Vec<Map<String, Value>>> {
    use sea_orm::{ConnectionTrait, Statement};
    let backend = db.get_database_backend();
    if !plain_table(db, table).await? {
        return Ok(Vec::new());
    }
    let sql = format!(
        "SELECT * FROM main.\"{table}\" ORDER BY {order} LIMIT {}",
        MAX_ROWS + 1
    );
    let mut out = Vec::new();
    for r in db
        .query_all_raw(Statement::from_string(backend, sql))
        .await?
    {
        let mut o = Map::new();
        for column in r.column_names() {
            let value = if let Ok(v) = r.try_get::<Option<i64>>("", &column) {
                v.map(Value::from)
            } else if let Ok(v) = r.try_get::<Option<f64>>("", &column) {
                v.and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
            } else if let Ok(v) = r.try_get::<Option<String>>("", &column) {
                v.map(Value::from)
            } else {
                None
            };
            o.insert(column, value.unwrap_or(Value::Null));
        }
        out.push(o);
        if out.len() > MAX_ROWS {
            bail!("`{table}` has more than {MAX_ROWS} rows: more than an import reads");
        }
    }
    Ok(out)
}

/// Whether `table` exists as a plain table (false: absent); a view, a virtual table or a
/// table with generated columns (each computes what a read returns) is refused.
async fn plain_table(
    db: &sea_orm::DatabaseConnection,
    table: &'static str,
) -> anyhow::Result<bool> {
    use sea_orm::{ConnectionTrait, Statement};
    let backend = db.get_database_backend();
    let found = db
        .query_one_raw(Statement::from_sql_and_values(
            backend,
            "SELECT type, coalesce(sql, '') AS sql FROM main.sqlite_schema \
             WHERE name = ? COLLATE NOCASE AND type IN ('table', 'view')",
            [table.into()],
        ))
        .await?;
    let Some(found) = found else {
        return Ok(false);
    };
    let kind: String = found.try_get("", "type")?;
    let sql: String = found.try_get("", "sql")?;
    let not_kuma =
        |what: &str| anyhow::anyhow!("`{table}` is {what}: this is not Uptime Kuma's kuma.db");
    if kind != "table" {
        return Err(not_kuma("a view, not a table"));
    }
    if sql
        .trim_start()
        .to_ascii_uppercase()
        .starts_with("CREATE VIRTUAL")
    {
        return Err(not_kuma("a virtual table"));
    }
    // A generated column computes its value on every read: anything at all.
    let generated = db
        .query_one_raw(Statement::from_sql_and_values(
            backend,
            "SELECT count(*) AS n FROM pragma_table_xinfo(?) WHERE hidden IN (2, 3)",
            [table.into()],
        ))
        .await?
        .and_then(|r| r.try_get::<i64>("", "n").ok())
        .unwrap_or(0);
    if generated > 0 {
        return Err(not_kuma("a table with generated columns"));
    }
    Ok(true)
}

fn id_of(o: &Map<String, Value>, f: &str) -> i64 {
    o.get(f).and_then(Value::as_i64).unwrap_or_default()
}

/// One of Kuma's heartbeats (a check), as `POST /v1/monitors/{id}/history` takes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Heartbeat {
    pub id: i64,
    /// Kuma's `time`: UTC, `2026-11-30 11:29:23.750`.
    pub time: String,
    /// 0 down, 1 up, 2 pending (failing, within retries), 3 maintenance.
    pub status: i64,
    pub msg: Option<String>,
    pub ping: Option<f64>,
}

impl Heartbeat {
    /// The check as the history endpoint takes it (`key` names it in the source).
    pub fn past_check(&self) -> Option<Map<String, Value>> {
        let time = self.time.trim().replace(' ', "T");
        let at =
            crate::time::parse_ms(&format!("{time}Z")).or_else(|| crate::time::parse_ms(&time))?;
        let maintenance = self.status == 3;
        let ok = self.status == 1 || maintenance;
        let mut c = Map::new();
        c.insert(
            "key".into(),
            Value::from(format!("kuma:heartbeat:{}", self.id)),
        );
        c.insert("checkedAt".into(), Value::from(crate::time::format_ms(at)));
        c.insert("ok".into(), Value::from(ok));
        c.insert("maintenance".into(), Value::from(maintenance));
        if let Some(ms) = self
            .ping
            .filter(|p| p.is_finite() && *p >= 0.0 && *p <= 3_600_000.0)
        {
            c.insert("responseTime".into(), Value::from(ms.round() as i64));
        }
        let msg = self.msg.as_deref().map(str::trim).unwrap_or_default();
        // `200 - OK`: an HTTP status, as Kuma writes it for its HTTP monitors.
        if let Some(code) = msg
            .split_once(" - ")
            .and_then(|(code, _)| code.parse::<i64>().ok())
            .filter(|code| (100..=599).contains(code))
        {
            c.insert("statusCode".into(), Value::from(code));
        }
        if !ok && !msg.is_empty() {
            let msg: String = msg.replace('\0', "").chars().take(1_000).collect();
            c.insert("reason".into(), Value::from(msg));
        }
        Some(c)
    }
}

/// A 2.x `kuma.db`'s check history, read a page at a time in time order.
pub struct History {
    db: sea_orm::DatabaseConnection,
}

impl History {
    /// Open `path`; a 1.x JSON backup holds no history and is refused.
    pub async fn open(path: &Path) -> anyhow::Result<History> {
        use std::io::Read;
        let mut header = [0u8; 16];
        let mut file =
            std::fs::File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
        if file.read(&mut header).unwrap_or(0) != 16 || &header != b"SQLite format 3\0" {
            bail!(
                "{} is a backup without check history (Uptime Kuma's backups hold none): import its kuma.db for --with-history",
                path.display()
            );
        }
        let db = open(path).await?;
        if !plain_table(&db, "heartbeat").await? {
            bail!(
                "{} has no `heartbeat` table: is it Uptime Kuma's kuma.db?",
                path.display()
            );
        }
        Ok(History { db })
    }

    /// Up to `limit` heartbeats of monitor `monitor` after `after` (time, id), oldest first.
    /// Rows whose `time` is not text or whose `id` is not a whole number are not read (a
    /// kuma.db has none; a crafted one could loop the pages), and `msg` is read to 1 KiB.
    pub async fn page(
        &self,
        monitor: i64,
        after: Option<&(String, i64)>,
        limit: u32,
    ) -> anyhow::Result<Vec<Heartbeat>> {
        use sea_orm::{ConnectionTrait, Statement, Value as Sql};
        const COLUMNS: &str = "SELECT id, status, time, substr(CAST(msg AS TEXT), 1, 1024) AS msg, \
             ping FROM main.\"heartbeat\" WHERE monitor_id = ? \
             AND typeof(time) = 'text' AND typeof(id) = 'integer'";
        // A range on (time), then the tie broken by id: each page starts where the last
        // ended instead of reading every earlier one again.
        let (sql, values): (String, Vec<Sql>) = match after {
            None => (
                format!("{COLUMNS} ORDER BY time, id LIMIT ?"),
                vec![monitor.into(), limit.into()],
            ),
            Some((time, id)) => (
                format!(
                    "{COLUMNS} AND time >= ? AND (time > ? OR id > ?) ORDER BY time, id LIMIT ?"
                ),
                vec![
                    monitor.into(),
                    time.clone().into(),
                    time.clone().into(),
                    (*id).into(),
                    limit.into(),
                ],
            ),
        };
        let rows = self
            .db
            .query_all_raw(Statement::from_sql_and_values(
                self.db.get_database_backend(),
                sql,
                values,
            ))
            .await?;
        rows.into_iter()
            .map(|r| {
                let id = r.try_get::<i64>("", "id")?;
                let time = r.try_get::<String>("", "time")?;
                Ok(Heartbeat {
                    id,
                    time,
                    status: r.try_get::<i64>("", "status").unwrap_or_default(),
                    msg: r.try_get::<Option<String>>("", "msg").ok().flatten(),
                    ping: r
                        .try_get::<Option<f64>>("", "ping")
                        .ok()
                        .flatten()
                        .or_else(|| {
                            r.try_get::<Option<i64>>("", "ping")
                                .ok()
                                .flatten()
                                .map(|p| p as f64)
                        }),
                })
            })
            .collect::<Result<Vec<_>, sea_orm::DbErr>>()
            .context("a heartbeat could not be read")
    }
}

/// Open a 2.x `kuma.db` read-only.
async fn open(path: &Path) -> anyhow::Result<sea_orm::DatabaseConnection> {
    // Read-only and immutable: nothing is written, not even SQLite's -shm and -wal files
    // beside it. `%`, `?` and `#` in the path are escaped (the URL's path is decoded).
    let escaped = path
        .display()
        .to_string()
        .replace('%', "%25")
        .replace('?', "%3F")
        .replace('#', "%23");
    // Immutable means SQLite does not read the write-ahead log: a database whose log
    // still holds changes (Uptime Kuma running, or stopped uncleanly) would be read
    // without them.
    let wal = std::path::PathBuf::from(format!("{}-wal", path.display()));
    if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        bail!(
            "{} has recent changes still in {}: stop Uptime Kuma (it folds them in as it \
             stops), or copy the database with `sqlite3 kuma.db \".backup copy.db\"`, and \
             import that",
            path.display(),
            wal.display()
        );
    }
    let url = format!("sqlite://{escaped}?mode=ro&immutable=true");
    sea_orm::Database::connect(&url)
        .await
        .with_context(|| format!("cannot open {} as SQLite", path.display()))
}

/// A 2.x `kuma.db`, opened read-only.
pub async fn read_database(path: &Path) -> anyhow::Result<Kuma> {
    let db = open(path).await?;
    let monitors = rows(&db, "monitor", "id")
        .await
        .context("the database has no `monitor` table: is it Uptime Kuma's kuma.db?")?;
    if monitors.is_empty() && rows(&db, "notification", "id").await?.is_empty() {
        bail!("the database holds no monitors and no notifications: is it Uptime Kuma's kuma.db?");
    }
    let mut kuma = Kuma {
        monitors,
        ..Kuma::default()
    };
    for mut n in rows(&db, "notification", "id").await? {
        let config = n
            .get("config")
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or(Value::Null);
        n.insert("config".into(), config);
        kuma.notifications.push(n);
    }
    for l in rows(&db, "monitor_notification", "id").await? {
        kuma.links
            .entry(id_of(&l, "monitor_id"))
            .or_default()
            .insert(id_of(&l, "notification_id"));
    }
    let tag_names: BTreeMap<i64, String> = rows(&db, "tag", "id")
        .await?
        .into_iter()
        .map(|t| {
            let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
            (id_of(&t, "id"), name.to_string())
        })
        .collect();
    for mt in rows(&db, "monitor_tag", "id").await? {
        let Some(name) = tag_names.get(&id_of(&mt, "tag_id")) else {
            continue;
        };
        let value = mt.get("value").and_then(Value::as_str).unwrap_or_default();
        kuma.tags
            .entry(id_of(&mt, "monitor_id"))
            .or_default()
            .push((name.clone(), value.to_string()));
    }
    let covered = rows(&db, "monitor_maintenance", "id").await?;
    for row in rows(&db, "maintenance", "id").await? {
        let id = id_of(&row, "id");
        let monitors = covered
            .iter()
            .filter(|c| id_of(c, "maintenance_id") == id)
            .map(|c| id_of(c, "monitor_id"))
            .collect();
        kuma.maintenance.push(Maintenance { row, monitors });
    }
    let groups = rows(&db, "group", "weight, id").await?;
    let members = rows(&db, "monitor_group", "weight, id").await?;
    for row in rows(&db, "status_page", "id").await? {
        let id = id_of(&row, "id");
        let groups = groups
            .iter()
            .filter(|g| id_of(g, "status_page_id") == id)
            .map(|g| {
                let gid = id_of(g, "id");
                let name = g.get("name").and_then(Value::as_str).unwrap_or_default();
                let list = members
                    .iter()
                    .filter(|m| id_of(m, "group_id") == gid)
                    .map(|m| id_of(m, "monitor_id"))
                    .collect();
                (name.to_string(), list)
            })
            .collect();
        kuma.pages.push(Page { row, groups });
    }
    db.close().await.ok();
    Ok(kuma)
}

/// Kuma's content as Tocsin objects.
pub fn translate(kuma: &Kuma, options: &ImportOptions) -> Translation {
    let mut t = Translation::new();
    let channels = notifications(&mut t, kuma);
    let by_id: BTreeMap<i64, &Map<String, Value>> =
        kuma.monitors.iter().map(|m| (id_of(m, "id"), m)).collect();
    let mut keys: BTreeMap<i64, String> = BTreeMap::new();
    let mut policies: BTreeMap<String, String> = BTreeMap::new();
    for m in &kuma.monitors {
        if let Some(key) = monitor(&mut t, kuma, m, &by_id, &channels, &mut policies, options) {
            keys.insert(id_of(m, "id"), key);
        }
    }
    for w in &kuma.maintenance {
        maintenance(&mut t, w, &keys);
    }
    for p in &kuma.pages {
        page(&mut t, p, &keys);
    }
    t
}

/// The notifications Tocsin has a channel for, as channels: notification id → channel keys.
fn notifications(t: &mut Translation, kuma: &Kuma) -> BTreeMap<i64, Vec<String>> {
    let mut out = BTreeMap::new();
    for n in &kuma.notifications {
        let id = id_of(n, "id");
        let name = n
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("(unnamed)")
            .to_string();
        let what = format!("notification `{name}`");
        let empty = Map::new();
        let c = n.get("config").and_then(Value::as_object).unwrap_or(&empty);
        let kind = text(c, &["type"]).unwrap_or_default();
        let get = |f: &str| text(c, &[f]).map(str::to_string);
        let Some((tocsin, fields)) = channel_fields(kind, c) else {
            t.skip(what, format!("Tocsin has no channel of type `{kind}`"));
            continue;
        };
        let mut made: Vec<(String, Map<String, Value>)> = Vec::new();
        if tocsin == "email" {
            let to = get("smtpTo").unwrap_or_default();
            let addresses: Vec<&str> = to
                .split(',')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .collect();
            for addr in &addresses {
                let mut o = Map::new();
                o.insert("target".into(), Value::from(*addr));
                let raw = if addresses.len() == 1 {
                    id.to_string()
                } else {
                    format!("{id}:{addr}")
                };
                made.push((raw, o));
            }
            let mut left =
                vec!["its SMTP server (Tocsin sends e-mail through the server's smtp_* settings)"];
            if get("smtpCC").is_some() || get("smtpBCC").is_some() {
                left.push("CC and BCC");
            }
            if get("customSubject").is_some() || get("customBody").is_some() {
                left.push("its custom subject and body");
            }
            t.skip(
                format!("{what}: {}", left.join(", ")),
                "no per-channel equivalent",
            );
            if made.is_empty() {
                t.skip(what, "it has no recipient");
                continue;
            }
        } else {
            let mut o = Map::new();
            for (f, v) in fields {
                if let Some(v) = v {
                    o.insert(f.into(), Value::from(v));
                }
            }
            made.push((id.to_string(), o));
        }
        if flag(n, &["isDefault", "is_default"]) {
            t.skip(
                format!("{what}: default for new monitors"),
                "a new monitor gets the alert policy it is given",
            );
        }
        let mut keys = Vec::new();
        let several = made.len() > 1;
        for (raw, mut o) in made {
            let key = t.key(Kind::Channel, "kuma", &format!("notification:{raw}"));
            let label = match o.get("target").and_then(Value::as_str) {
                Some(addr) if several => format!("{name} ({addr})"),
                _ => name.clone(),
            };
            o.insert("key".into(), Value::from(key.clone()));
            o.insert("name".into(), Value::from(label));
            o.insert("type".into(), Value::from(tocsin));
            t.add_channel(o);
            keys.push(key);
        }
        out.insert(id, keys);
    }
    out
}

/// The Tocsin channel type of Kuma notification type `kind` and its settings from the
/// notification's `c`onfig; None when Tocsin has no such channel.
#[allow(clippy::type_complexity)]
fn channel_fields(
    kind: &str,
    c: &Map<String, Value>,
) -> Option<(&'static str, Vec<(&'static str, Option<String>)>)> {
    let get = |f: &str| text(c, &[f]).map(str::to_string);
    Some(match kind {
        "webhook" => ("webhook", vec![("url", get("webhookURL"))]),
        "telegram" => (
            "telegram",
            vec![
                ("chatId", get("telegramChatID")),
                ("botToken", get("telegramBotToken")),
            ],
        ),
        "slack" => ("slack", vec![("webhookUrl", get("slackwebhookURL"))]),
        "discord" => ("discord", vec![("webhookUrl", get("discordWebhookUrl"))]),
        "teams" => ("teams", vec![("webhookUrl", get("webhookUrl"))]),
        "mattermost" => (
            "mattermost",
            vec![("webhookUrl", get("mattermostWebhookUrl"))],
        ),
        "rocket.chat" => ("rocketchat", vec![("webhookUrl", get("rocketwebhookURL"))]),
        "GoogleChat" => (
            "googlechat",
            vec![("webhookUrl", get("googleChatWebhookURL"))],
        ),
        "gotify" => (
            "gotify",
            vec![
                ("serverUrl", get("gotifyserverurl")),
                ("appToken", get("gotifyapplicationToken")),
            ],
        ),
        "ntfy" => (
            "ntfy",
            vec![
                ("serverUrl", get("ntfyserverurl")),
                ("topic", get("ntfytopic")),
                ("accessToken", get("ntfyaccesstoken")),
            ],
        ),
        "pushover" => (
            "pushover",
            vec![
                ("appToken", get("pushoverapptoken")),
                ("userKey", get("pushoveruserkey")),
                ("device", get("pushoverdevice")),
            ],
        ),
        "PagerDuty" => (
            "pagerduty",
            vec![("routingKey", get("pagerdutyIntegrationKey"))],
        ),
        "Opsgenie" => (
            "opsgenie",
            vec![
                ("apiKey", get("opsgenieApiKey")),
                ("region", get("opsgenieRegion")),
            ],
        ),
        "matrix" => (
            "matrix",
            vec![
                ("homeserverUrl", get("homeserverUrl")),
                ("roomId", get("internalRoomId")),
                ("accessToken", get("accessToken")),
            ],
        ),
        "smtp" => ("email", Vec::new()),
        _ => return None,
    })
}

/// The monitor types Tocsin has, by Kuma's type.
fn tocsin_type(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "http" | "json-query" => "http",
        "keyword" => "keyword",
        "ping" => "ping",
        "port" => "tcp",
        "dns" => "dns",
        "push" => "heartbeat",
        "mysql" => "mysql",
        "postgres" => "postgres",
        "redis" => "redis",
        "mqtt" => "mqtt",
        _ => return None,
    })
}

/// `scheme://user:password@host:port/database` as its parts.
struct Dsn {
    host: String,
    port: Option<u16>,
    user: Option<String>,
    password: Option<String>,
    database: Option<String>,
}

fn dsn(text: &str) -> Option<Dsn> {
    let url = reqwest::Url::parse(text).ok()?;
    let decode = percent_decode;
    Some(Dsn {
        host: url.host_str()?.trim_matches(['[', ']']).to_string(),
        port: url.port(),
        user: Some(decode(url.username())).filter(|u| !u.is_empty()),
        password: url.password().map(decode),
        database: Some(url.path().trim_start_matches('/').to_string()).filter(|d| !d.is_empty()),
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One monitor; its key, or None when it was not imported.
fn monitor(
    t: &mut Translation,
    kuma: &Kuma,
    m: &Map<String, Value>,
    by_id: &BTreeMap<i64, &Map<String, Value>>,
    channels: &BTreeMap<i64, Vec<String>>,
    policies: &mut BTreeMap<String, String>,
    options: &ImportOptions,
) -> Option<String> {
    let id = id_of(m, "id");
    let name = text(m, &["name"]).unwrap_or("(unnamed)").to_string();
    let kind = text(m, &["type"]).unwrap_or_default();
    let what = format!("monitor `{name}`");
    if kind == "group" {
        // Its children carry its name as a tag.
        return None;
    }
    let Some(tocsin) = tocsin_type(kind) else {
        t.skip(what, format!("Tocsin has no monitor of type `{kind}`"));
        return None;
    };
    if flag(m, &["upsideDown", "upside_down"]) {
        t.skip(
            what,
            "it is in upside-down mode (up when the check fails), which Tocsin has no equivalent of",
        );
        return None;
    }
    let key = t.key(Kind::Monitor, "kuma", &id.to_string());
    let mut o = Map::new();
    o.insert("key".into(), Value::from(key.clone()));
    o.insert("name".into(), Value::from(name.clone()));
    o.insert("type".into(), Value::from(tocsin));
    let seconds = number(m, &["interval"]).unwrap_or(60.0);
    let interval = t.interval(&what, seconds, options);
    let mut secret: Vec<&'static str> = Vec::new();
    target(
        t,
        (&what, &key, &name),
        kind,
        m,
        &mut o,
        &mut secret,
        interval,
    )?;
    if tocsin != "heartbeat" {
        o.insert("interval".into(), Value::from(interval));
        if let Some(s) = number(m, &["timeout"]).filter(|s| *s > 0.0) {
            let timeout = t.timeout(&what, s, interval);
            o.insert("timeout".into(), Value::from(timeout));
        }
        if let Some(r) = number(m, &["retryInterval", "retry_interval"]) {
            let r = r.round() as u32;
            if r < interval {
                let r = r.max(options.min_interval);
                o.insert("retryInterval".into(), Value::from(r));
            }
        }
    }
    let mut tags = Vec::new();
    for (tag, value) in kuma.tags.get(&id).into_iter().flatten() {
        let raw = if value.is_empty() {
            tag.clone()
        } else {
            format!("{tag}:{value}")
        };
        if let Some(tag) = t.tag(&what, &raw) {
            tags.push(tag);
        }
    }
    if let Some(parent) = number(m, &["parent"]).map(|p| p as i64)
        && let Some(group) = by_id.get(&parent)
        && let Some(group_name) = text(group, &["name"])
        && let Some(tag) = t.tag(&what, group_name)
    {
        tags.push(tag);
    }
    tags.sort();
    tags.dedup();
    if !tags.is_empty() {
        o.insert("tags".into(), json!(tags));
    }
    if let Some(d) = text(m, &["description"]) {
        t.skip(
            format!("{what}: description `{d}`"),
            "monitors have no description",
        );
    }
    alert_policy(t, kuma, (&what, id), m, channels, policies, &mut o);
    if number(m, &["resendInterval", "resend_interval"]).unwrap_or(0.0) > 0.0 {
        t.skip(
            format!("{what}: resend every few checks while down"),
            "reminders are an alert policy's repeatEvery (minutes); set it on the policy",
        );
    }
    t.add(Kind::Monitor, o, &secret);
    if !flag(m, &["active"]) {
        t.paused.push(key.clone());
    }
    Some(key)
}

/// What a monitor of Kuma type `kind` checks, from Kuma's row `m` into `o`; None when it
/// cannot be imported (the reason is recorded).
fn target(
    t: &mut Translation,
    (what, key, name): (&str, &str, &str),
    kind: &str,
    m: &Map<String, Value>,
    o: &mut Map<String, Value>,
    secret: &mut Vec<&'static str>,
    interval: u32,
) -> Option<()> {
    let hostname = text(m, &["hostname"]).unwrap_or_default().to_string();
    let port = number(m, &["port"]).map(|p| p as u64);
    match kind {
        "http" | "keyword" | "json-query" => http_target(t, what, kind, m, o, secret)?,
        "ping" => {
            o.insert("hostname".into(), Value::from(hostname));
            if let Some(n) = number(m, &["ping_count", "pingCount"]) {
                o.insert("packetCount".into(), Value::from((n as u64).clamp(1, 10)));
            }
        }
        "port" => {
            o.insert(
                "config".into(),
                json!({"host": hostname, "port": port.unwrap_or(0)}),
            );
        }
        "dns" => {
            let mut c = Map::new();
            c.insert("hostname".into(), Value::from(hostname));
            if let Some(r) = text(m, &["dns_resolve_server"]) {
                c.insert("resolver".into(), Value::from(r));
            }
            if let Some(p) = port.filter(|p| *p != 53 && *p != 0) {
                c.insert("port".into(), Value::from(p));
            }
            if let Some(r) = text(m, &["dns_resolve_type"]) {
                c.insert("recordType".into(), Value::from(r));
            }
            o.insert("config".into(), Value::Object(c));
        }
        "push" => {
            o.insert("period".into(), Value::from(interval));
            let token = text(m, &["pushToken", "push_token"]).unwrap_or_default();
            t.pings.push(Ping {
                key: key.to_string(),
                name: name.to_string(),
                old: format!("/api/push/{token}?status=up&msg=OK&ping="),
            });
        }
        "mysql" | "postgres" | "redis" => {
            let conn = text(
                m,
                &["databaseConnectionString", "database_connection_string"],
            )
            .unwrap_or_default();
            let Some(d) = dsn(conn) else {
                t.skip(what, "its connection string is not a URL (scheme://user:password@host:port/database)");
                return None;
            };
            let mut c = Map::new();
            c.insert("host".into(), Value::from(d.host));
            if let Some(p) = d.port {
                c.insert("port".into(), Value::from(p));
            }
            if let Some(u) = d.user {
                let f = if kind == "redis" { "username" } else { "user" };
                c.insert(f.into(), Value::from(u));
            }
            if let Some(p) = d.password {
                c.insert("password".into(), Value::from(p));
            }
            if let Some(db) = d.database {
                match kind {
                    "redis" => match db.parse::<u64>() {
                        Ok(n) => {
                            c.insert("database".into(), Value::from(n));
                        }
                        Err(_) => t.skip(format!("{what}: database `{db}`"), "not a number"),
                    },
                    _ => {
                        c.insert("database".into(), Value::from(db));
                    }
                }
            }
            if kind != "redis"
                && let Some(q) = text(m, &["databaseQuery", "database_query"])
            {
                c.insert("query".into(), Value::from(q));
            }
            o.insert("config".into(), Value::Object(c));
            secret.push("config");
        }
        "mqtt" => {
            let mut c = Map::new();
            c.insert("host".into(), Value::from(hostname));
            if let Some(p) = port.filter(|p| *p != 0) {
                c.insert("port".into(), Value::from(p));
            }
            for (from, to) in [
                (&["mqttUsername", "mqtt_username"], "username"),
                (&["mqttPassword", "mqtt_password"], "password"),
                (&["mqttTopic", "mqtt_topic"], "topic"),
            ] {
                if let Some(v) = text(m, from) {
                    c.insert(to.into(), Value::from(v));
                }
            }
            secret.push("config");
            if text(m, &["mqttSuccessMessage", "mqtt_success_message"]).is_some() {
                t.skip(
                    format!("{what}: expected message"),
                    "Tocsin's mqtt check publishes and receives its own message on the topic",
                );
            }
            o.insert("config".into(), Value::Object(c));
        }
        _ => {}
    }
    Some(())
}

/// An http, keyword or json-query monitor's request and what it expects.
fn http_target(
    t: &mut Translation,
    what: &str,
    kind: &str,
    m: &Map<String, Value>,
    o: &mut Map<String, Value>,
    secret: &mut Vec<&'static str>,
) -> Option<()> {
    let url = text(m, &["url"]).unwrap_or_default().to_string();
    o.insert("url".into(), Value::from(url));
    let method = text(m, &["method"]).unwrap_or("GET").to_uppercase();
    if method != "GET" {
        o.insert("method".into(), Value::from(method));
    }
    let mut headers = Map::new();
    if let Some(h) = text(m, &["headers"]) {
        match serde_json::from_str::<Value>(h) {
            Ok(Value::Object(h)) => {
                for (k, v) in h {
                    let v = v.as_str().map(str::to_string).unwrap_or(v.to_string());
                    headers.insert(k, Value::from(v));
                }
            }
            _ => t.skip(format!("{what}: headers"), "they are not a JSON object"),
        }
    }
    match text(m, &["authMethod", "auth_method"]) {
        Some("basic") => {
            let user = text(m, &["basic_auth_user"]).unwrap_or_default();
            let pass = text(m, &["basic_auth_pass"]).unwrap_or_default();
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
            headers.insert(
                "Authorization".into(),
                Value::from(format!("Basic {token}")),
            );
            t.note(format!(
                "{what}: its basic auth became an Authorization header"
            ));
        }
        None | Some("") | Some("null") => {}
        Some(other) => t.skip(
            format!("{what}: {other} authentication"),
            "only basic auth has an equivalent (as a header)",
        ),
    }
    if !headers.is_empty() {
        o.insert("headers".into(), Value::Object(headers));
        secret.push("headers");
    }
    if let Some(body) = text(m, &["body"]) {
        o.insert("body".into(), Value::from(body));
    }
    let redirects = number(m, &["maxredirects"]).unwrap_or(10.0) as u64;
    if redirects == 0 {
        o.insert("followRedirects".into(), Value::from(false));
    } else if redirects != 10 {
        o.insert("maxRedirects".into(), Value::from(redirects.min(20)));
    }
    statuses(t, what, m, o);
    if flag(m, &["ignoreTls", "ignore_tls"]) {
        t.skip(
            format!("{what}: ignore TLS errors"),
            "http checks always verify certificates (add the CA with tls_extra_roots)",
        );
    }
    if kind == "keyword" {
        o.insert(
            "keyword".into(),
            Value::from(text(m, &["keyword"]).unwrap_or_default()),
        );
        if flag(m, &["invertKeyword", "invert_keyword"]) {
            o.insert("keywordMode".into(), Value::from("absent"));
        }
    }
    if kind == "json-query" {
        let path = text(m, &["jsonPath", "json_path"]).unwrap_or("$");
        let path = if path.starts_with('$') {
            path.to_string()
        } else {
            format!("$.{path}")
        };
        let op = match text(m, &["jsonPathOperator", "json_path_operator"]).unwrap_or("==") {
            "==" => "eq",
            "!=" => "ne",
            "<" => "lt",
            ">" => "gt",
            "contains" => "contains",
            other => {
                t.skip(
                    what,
                    format!("its JSON query operator `{other}` has no equivalent"),
                );
                return None;
            }
        };
        let expected = text(m, &["expectedValue", "expected_value"]).unwrap_or_default();
        let value = match op {
            "lt" | "gt" => expected
                .parse::<f64>()
                .map(Value::from)
                .unwrap_or(Value::from(expected)),
            _ => Value::from(expected),
        };
        o.insert(
            "jsonAssertions".into(),
            json!([{"path": path, "op": op, "value": value}]),
        );
    }
    Some(())
}

/// The alert policy of monitor `id` (row `m`): its notifications and retries.
fn alert_policy(
    t: &mut Translation,
    kuma: &Kuma,
    (what, id): (&str, i64),
    m: &Map<String, Value>,
    channels: &BTreeMap<i64, Vec<String>>,
    policies: &mut BTreeMap<String, String>,
    o: &mut Map<String, Value>,
) {
    let retries = number(m, &["maxretries"]).unwrap_or(0.0).max(0.0) as u64;
    let linked: Vec<i64> = kuma
        .links
        .get(&id)
        .into_iter()
        .flatten()
        .copied()
        .filter(|n| channels.contains_key(n))
        .collect();
    if linked.is_empty() && retries > 0 {
        t.skip(
            format!("{what}: {retries} retries before down"),
            "Tocsin counts failures in an alert policy, which needs a channel, and the monitor had no notification",
        );
    }
    if !linked.is_empty() {
        let ids: Vec<String> = linked.iter().map(i64::to_string).collect();
        let identity = format!("{}:{retries}", ids.join("+"));
        let policy = match policies.get(&identity) {
            Some(k) => k.clone(),
            None => {
                let pkey = t.key(Kind::Policy, "kuma", &format!("policy:{identity}"));
                let names: Vec<String> = linked
                    .iter()
                    .filter_map(|n| {
                        kuma.notifications
                            .iter()
                            .find(|x| id_of(x, "id") == *n)
                            .and_then(|x| x.get("name").and_then(Value::as_str))
                            .map(str::to_string)
                    })
                    .collect();
                let failures = retries + 1;
                let label = format!(
                    "Kuma: {} after {failures} failure{}",
                    if names.is_empty() {
                        "nobody".to_string()
                    } else {
                        names.join(", ")
                    },
                    if failures == 1 { "" } else { "s" }
                );
                let entries: Vec<Value> = linked
                    .iter()
                    .flat_map(|n| channels[n].iter())
                    .map(|c| json!({"channel": c}))
                    .collect();
                t.add(
                    Kind::Policy,
                    json!({
                        "key": pkey,
                        "name": label,
                        "failureThreshold": failures,
                        "recoveryThreshold": 1,
                        "notifyOnRecovery": true,
                        "channels": entries,
                    })
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                    &[],
                );
                policies.insert(identity, pkey.clone());
                pkey
            }
        };
        o.insert("alertPolicy".into(), Value::from(policy));
    }
}

/// Accepted status codes: one code, or 200-299.
fn statuses(t: &mut Translation, what: &str, m: &Map<String, Value>, o: &mut Map<String, Value>) {
    let list: Vec<String> = match field(m, &["accepted_statuscodes", "accepted_statuscodes_json"]) {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or_default(),
        _ => vec!["200-299".into()],
    };
    let mut used = false;
    let mut left = Vec::new();
    for code in &list {
        if !used && code == "200-299" {
            o.insert("expectedStatusRange".into(), Value::from(true));
            used = true;
        } else if !used && let Ok(n) = code.parse::<u16>() {
            o.insert("expectedStatusCode".into(), Value::from(n));
            used = true;
        } else {
            left.push(code.clone());
        }
    }
    if !left.is_empty() {
        t.skip(
            format!("{what}: accepted status codes {}", left.join(", ")),
            "a monitor accepts one status code, or any 2xx",
        );
    }
}

/// Kuma's date and time (`2026-01-01T00:00`, `2026-01-01 00:00:00`) in `tz`, as UTC.
fn kuma_time(text: &str, tz: chrono_tz::Tz) -> Option<String> {
    use chrono::TimeZone;
    let text = text.trim().replace(' ', "T");
    let naive = [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ]
    .iter()
    .find_map(|f| chrono::NaiveDateTime::parse_from_str(&text, f).ok())?;
    let local = tz.from_local_datetime(&naive).earliest()?;
    Some(
        local
            .with_timezone(&chrono::Utc)
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string(),
    )
}

fn maintenance(t: &mut Translation, w: &Maintenance, keys: &BTreeMap<i64, String>) {
    let r = &w.row;
    let title = text(r, &["title"]).unwrap_or("(untitled)").to_string();
    let what = format!("maintenance `{title}`");
    if !flag(r, &["active"]) {
        t.skip(what, "it is inactive");
        return;
    }
    let zone = match text(r, &["timezone"]) {
        None | Some("SAME_AS_SERVER") => {
            t.note(format!(
                "{what}: its time zone was the Kuma server's; read as UTC"
            ));
            "UTC".to_string()
        }
        Some(z) => z.to_string(),
    };
    let Ok(tz) = zone.parse::<chrono_tz::Tz>() else {
        t.skip(what, format!("its time zone `{zone}` is unknown"));
        return;
    };
    let strategy = text(r, &["strategy"]).unwrap_or_default();
    let start = text(r, &["start_date"]).and_then(|s| kuma_time(s, tz));
    let end = text(r, &["end_date"]).and_then(|s| kuma_time(s, tz));
    let key = t.key(
        Kind::Window,
        "kuma",
        &format!("maintenance:{}", id_of(r, "id")),
    );
    let mut o = json!({"key": key, "name": title, "timezone": zone})
        .as_object()
        .cloned()
        .unwrap_or_default();
    if let Some(d) = text(r, &["description"]) {
        o.insert("description".into(), Value::from(d));
    }
    match strategy {
        "single" => {
            let (Some(s), Some(e)) = (start, end) else {
                t.skip(what, "its start or end is missing");
                return;
            };
            o.insert("start".into(), Value::from(s));
            o.insert("end".into(), Value::from(e));
        }
        "manual" => {
            t.skip(
                what,
                "it is switched on and off by hand; Tocsin's windows have a schedule",
            );
            return;
        }
        _ => {
            let Some(cron) = text(r, &["cron"]) else {
                t.skip(what, format!("its `{strategy}` schedule has no cron form"));
                return;
            };
            let Some(minutes) = number(r, &["duration"])
                .map(|s| (s / 60.0).round() as i64)
                .filter(|m| (1..=10_080).contains(m))
            else {
                t.skip(what, "its duration is missing or longer than a week");
                return;
            };
            o.insert("cron".into(), Value::from(cron));
            o.insert("durationMinutes".into(), Value::from(minutes));
            o.insert(
                "start".into(),
                Value::from(start.unwrap_or_else(|| "2020-01-01T00:00:00Z".into())),
            );
            if let Some(e) = end {
                o.insert("end".into(), Value::from(e));
            }
        }
    }
    let monitors: Vec<&String> = w.monitors.iter().filter_map(|m| keys.get(m)).collect();
    if monitors.is_empty() {
        t.skip(
            what,
            "none of its monitors was imported (a window without monitors covers every monitor)",
        );
        return;
    }
    o.insert("monitors".into(), json!(monitors));
    t.add(Kind::Window, o, &[]);
}

fn page(t: &mut Translation, p: &Page, keys: &BTreeMap<i64, String>) {
    let r = &p.row;
    let slug = text(r, &["slug"]).unwrap_or_default().to_string();
    let what = format!("status page `{slug}`");
    let key = t.key(Kind::Page, "kuma", &format!("page:{}", id_of(r, "id")));
    let mut o = json!({
        "key": key,
        "slug": slug,
        "name": text(r, &["title"]).unwrap_or(&slug),
        "public": flag(r, &["published"]),
    })
    .as_object()
    .cloned()
    .unwrap_or_default();
    if let Some(d) = text(r, &["description"]) {
        o.insert("description".into(), Value::from(d));
    }
    let mut monitors: Vec<&String> = Vec::new();
    for (_, list) in &p.groups {
        for m in list {
            if let Some(k) = keys.get(m)
                && !monitors.contains(&k)
            {
                monitors.push(k);
            }
        }
    }
    if p.groups.len() > 1 {
        let names: Vec<&str> = p.groups.iter().map(|(n, _)| n.as_str()).collect();
        t.skip(
            format!("{what}: its groups ({})", names.join(", ")),
            "the page lists the monitors in the groups' order, without headings",
        );
    }
    let extras: Vec<&str> = [
        ("footer_text", "footer"),
        ("custom_css", "custom CSS"),
        ("icon", "icon"),
        ("google_analytics_tag_id", "analytics"),
        ("domain_name_list", "custom domains"),
    ]
    .iter()
    .filter(|(f, _)| text(r, &[f]).is_some_and(|v| v != "/icon.svg"))
    .map(|(_, label)| *label)
    .collect();
    if !extras.is_empty() {
        t.skip(
            format!("{what}: its {}", extras.join(", ")),
            "no equivalent on Tocsin's pages",
        );
    }
    o.insert("monitors".into(), json!(monitors));
    t.add(Kind::Page, o, &[]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::{ConnectionTrait, Statement};

    /// A database whose names try to smuggle SQL into the import's queries.
    async fn hostile(path: &Path, notification: &str) {
        let url = format!("sqlite://{}?mode=rwc", path.display());
        let db = sea_orm::Database::connect(&url).await.expect("create");
        let backend = db.get_database_backend();
        for sql in [
            r#"CREATE TABLE monitor (id INTEGER, name TEXT, type TEXT, "x', 1) AS j FROM ""monitor""; ATTACH 'other.db' AS t; SELECT json_object('id', 1) AS j --" TEXT)"#,
            r#"INSERT INTO monitor VALUES (1, 'api', 'http', 'y')"#,
            notification,
        ] {
            db.execute_raw(Statement::from_string(backend, sql))
                .await
                .expect(sql);
        }
        db.close().await.ok();
    }

    #[tokio::test]
    async fn names_in_the_database_never_become_sql() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kuma.db");
        hostile(
            &path,
            "CREATE TABLE notification (id INTEGER, name TEXT, config TEXT)",
        )
        .await;
        let kuma = read_database(&path).await.expect("read");
        assert_eq!(kuma.monitors.len(), 1);
        let m = &kuma.monitors[0];
        assert_eq!(m["name"], "api");
        assert_eq!(
            m["x', 1) AS j FROM \"monitor\"; ATTACH 'other.db' AS t; SELECT json_object('id', 1) AS j --"],
            "y"
        );
        assert!(!dir.path().join("other.db").exists());
        // Opened immutable: nothing written beside it.
        assert!(!dir.path().join("kuma.db-shm").exists());
        assert!(!dir.path().join("kuma.db-wal").exists());
    }

    #[tokio::test]
    async fn generated_columns_and_an_unfolded_log_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kuma.db");
        hostile(
            &path,
            "CREATE TABLE notification (id INTEGER, name TEXT, big TEXT AS (printf('%.*c', 1000, 'x')))",
        )
        .await;
        let e = read_database(&path).await.expect_err("generated");
        assert!(e.to_string().contains("generated columns"), "{e}");

        let other = dir.path().join("live.db");
        hostile(
            &other,
            "CREATE TABLE notification (id INTEGER, name TEXT, config TEXT)",
        )
        .await;
        std::fs::write(dir.path().join("live.db-wal"), b"changes").expect("wal");
        let e = read_database(&other).await.expect_err("a log");
        assert!(e.to_string().contains("recent changes"), "{e}");
    }

    #[tokio::test]
    async fn a_view_in_place_of_a_table_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kuma.db");
        hostile(
            &path,
            "CREATE VIEW notification AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x AS id FROM c",
        )
        .await;
        let e = read_database(&path).await.expect_err("a view");
        assert!(e.to_string().contains("is a view"), "{e}");
    }
}
