//! `/v1/monitors`: create, list, read, edit, delete, pause, resume, check history, uptime.

use super::AppState;
use super::envelope::{ListBody, NoContent, Paged, Pagination, RawPaged, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError, OrNotFound, Resource};
use super::extract::{ApiObject, ApiPath, ApiQuery};
use super::managed::DryRun;
use super::monitor_input::{self, InputRules, MonitorInput, MonitorView};
use super::monitor_pages::RenderedPage;
use super::paging::{self, PageParams};
use crate::ids::{self, prefix};
use crate::plans::Counted;
use crate::plugins::secrets::SchemaSecrets;
use crate::store::keys::Principal;
use crate::store::managed::Declared;
use crate::store::monitors::{MonitorListQuery, MonitorSort};
use crate::store::{MonitorRow, MonitorState};
use axum::Extension;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use utoipa::{IntoParams, ToSchema};

/// Fields of a monitor on creation. The `http` fields apply to `http` and `keyword` monitors,
/// `keyword` and `keywordMode` to `keyword` monitors, `hostname` and `packetCount` to `ping`
/// monitors, `hostname`, `port` and the expiry thresholds to `ssl` monitors;
/// other plugin types take their settings under `config`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct MonitorCreate {
    /// Display name, 1 to 200 characters.
    #[schema(example = "Public API")]
    pub name: String,
    /// Monitor type: `http`, or any type a loaded plugin provides (see `GET /v1/plugins`).
    #[serde(rename = "type")]
    #[schema(example = "http")]
    pub kind: String,
    /// Seconds between checks, from the server's `min_interval` (default 30) to 86400.
    #[schema(example = 60)]
    pub interval: u32,
    /// Seconds from a failing check to the next while the failures have not yet reached
    /// the policy's `failureThreshold` (fast re-checks), from `min_interval` to
    /// `interval` (422 when longer); then the interval's rhythm resumes. Default: none
    /// (the interval). Not for heartbeat monitors, nor with `regionalConfirmation`. See
    /// docs/alerting.md.
    #[schema(example = 10)]
    pub retry_interval: Option<u32>,
    /// Seconds before a check fails, 1 to 60, at most `interval`; default 10 (or `interval` when shorter).
    #[schema(default = 10)]
    pub timeout: Option<u32>,
    /// Milliseconds, 1 to the timeout (422 when longer): a passing check slower than this
    /// is slow, and the policy's `degradedThreshold` slow checks in a row make the monitor
    /// `degraded` until a check is fast again; uptime counts it up. Default: none (never
    /// degraded). Not for heartbeat monitors.
    #[schema(example = 1500)]
    pub degraded_after_ms: Option<u32>,
    /// The uptime it should reach, in percent (up to four decimals, e.g. 99.9): uptime
    /// reports mark it met or missed. Default none.
    #[schema(example = 99.9)]
    pub sla_target: Option<f64>,
    /// Alert policy to attach.
    pub alert_policy_id: Option<String>,
    /// Regions that run the checks; default every configured region.
    pub regions: Option<Vec<String>>,
    /// When true, a failed check is repeated at once from another of the monitor's regions
    /// that has a live node, and counts only if that check fails too. See docs/alerting.md.
    #[schema(default = false)]
    pub regional_confirmation: Option<bool>,
    /// Labels to group and filter monitors by: up to 20, each 1 to 50 characters
    /// (letters, digits, `-`, `_`, `.`, `:`, `/`).
    #[schema(example = json!(["production", "team:payments"]))]
    pub tags: Option<Vec<String>>,
    /// Your stable identifier for the monitor: 1 to 100 characters (letters, digits, `-`,
    /// `_`, `.`, `:`, `/`), unique among the workspace's monitors (409 `CONFLICT`).
    /// Configuration files (`tocsin apply`) match monitors by it.
    #[schema(example = "public-api")]
    pub key: Option<String>,
    /// The tool that owns the monitor (`tocsin apply` sets `tocsin-apply`); people can
    /// still edit it, and the tool's next run puts its fields back.
    pub managed_by: Option<String>,
    /// http: full URL including scheme.
    #[schema(example = "https://example.com/health")]
    pub url: Option<String>,
    /// http: GET, POST, PUT or HEAD.
    #[schema(example = "GET")]
    pub method: Option<String>,
    /// http: headers sent with each check.
    pub headers: Option<BTreeMap<String, String>>,
    /// http: request body, POST and PUT only.
    pub body: Option<String>,
    /// http: whether 3xx answers are followed.
    #[schema(default = true)]
    pub follow_redirects: Option<bool>,
    /// http: longest redirect chain that passes, 0 to 20.
    #[schema(default = 10)]
    pub max_redirects: Option<u32>,
    /// http: status code required to pass.
    #[schema(default = 200)]
    pub expected_status_code: Option<u16>,
    /// http: when true, any 2xx status passes.
    #[schema(default = false)]
    pub expected_status_range: Option<bool>,
    /// http: text that must appear in the body (read up to 1 MiB).
    pub body_contains: Option<String>,
    /// http: text that must not appear in the body.
    pub body_not_contains: Option<String>,
    /// http: fail when the response takes longer than this many milliseconds.
    pub max_response_time_ms: Option<u32>,
    /// http and keyword: assertions on the body read as JSON, at most 20, each
    /// `{"path": "$.status", "op": "eq", "value": "ok"}` (ops eq, ne, lt, gt, contains,
    /// exists, matches); every failing one is named in the check's reason.
    #[schema(value_type = Option<Vec<Object>>, example = json!([{"path": "$.status", "op": "eq", "value": "ok"}]))]
    pub json_assertions: Option<Vec<Value>>,
    /// keyword: text to look for in the response body (case-sensitive, first 1 MiB).
    pub keyword: Option<String>,
    /// keyword: `present` (default; fail when missing) or `absent` (fail when found).
    #[schema(default = "present")]
    pub keyword_mode: Option<String>,
    /// ping and ssl: host name or IP address (no scheme, port or path).
    #[schema(example = "example.com")]
    pub hostname: Option<String>,
    /// ping: ICMP echo requests per check, 1 to 10; passes when any reply arrives.
    #[schema(default = 3, minimum = 1, maximum = 10)]
    pub packet_count: Option<u8>,
    /// ssl: TCP port of the TLS service.
    #[schema(default = 443, minimum = 1, maximum = 65535)]
    pub port: Option<u16>,
    /// ssl: emit `ssl.expiry_warning` when at most this many days are left (1 to 3650).
    /// Not together with `warningPercent`.
    #[schema(default = 30)]
    pub warning_days: Option<u32>,
    /// ssl: emit `ssl.expiry_critical` when at most this many days are left (0 to 3650).
    /// Not together with `criticalPercent`.
    #[schema(default = 7)]
    pub critical_days: Option<u32>,
    /// ssl: instead of `warningDays`, warn when at most this share (percent, above 0, up
    /// to 100) of the certificate's lifetime is left.
    pub warning_percent: Option<f64>,
    /// ssl: instead of `criticalDays`, the share of the lifetime left for the critical notice.
    pub critical_percent: Option<f64>,
    /// Settings of a plugin-provided type, checked against its JSON Schema.
    pub config: Option<Map<String, Value>>,
}

/// Query of the monitor list.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct MonitorListParams {
    /// `pending`, `up`, `down` or `paused`.
    pub status: Option<String>,
    /// `createdAt` (default), `updatedAt`, `name` or `status`.
    pub sort_by: Option<String>,
    /// `asc` or `desc` (default).
    pub order: Option<String>,
    /// Only monitors with this tag.
    pub tag: Option<String>,
}

/// Query of check history.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CheckListParams {
    /// Oldest check time included (ISO 8601).
    pub from: Option<String>,
    /// Newest check time included (ISO 8601).
    pub to: Option<String>,
    /// `json` (the default): a page of checks, newest first. `csv` or `ndjson`: every
    /// check of the range as a download, oldest first, streamed (no `page` or `limit`).
    /// CSV columns: checkedAt, ok, statusCode, responseTimeMs, region, reason, counted,
    /// maintenance, id, details (JSON text).
    pub format: Option<String>,
}

/// Query of uptime.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UptimeParams {
    /// Window start (ISO 8601); default 24 hours before `to`.
    pub from: Option<String>,
    /// Window end (ISO 8601); default now.
    pub to: Option<String>,
}

/// One check that ran.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckView {
    #[schema(example = "chk_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: String,
    pub checked_at: String,
    pub ok: bool,
    /// Why it failed.
    pub reason: Option<String>,
    pub status_code: Option<i32>,
    /// None when it timed out.
    pub response_time_ms: Option<i32>,
    pub region: String,
    /// What the monitor type reports besides (e.g. ping: `address`, `received`; ssl:
    /// `certificate` and `expiry`; keyword: `keyword`). An object; `{}` when nothing.
    #[schema(value_type = Object)]
    pub details: Value,
    /// False for a check kept as history only: with `regionalConfirmation`, of the two
    /// checks of a confirmed round one counts; `details.confirmation` says how it ended.
    /// Also false for a check made under maintenance.
    pub counted: bool,
    /// True for a check made while a maintenance window covered the monitor: kept, but it
    /// opened no incident, sent nothing and is left out of uptime.
    pub maintenance: bool,
}

/// Uptime over a window.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UptimeView {
    pub monitor_id: String,
    pub from: String,
    pub to: String,
    /// Percentage of passed checks; null without checks.
    pub uptime_percent: Option<f64>,
    pub total_checks: u64,
    pub up_checks: u64,
    pub down_checks: u64,
    pub mean_response_time_ms: Option<f64>,
    /// 95th percentile response time, for windows up to 48 hours (longer windows are read
    /// from daily rollups, which keep counts and sums but not percentiles): null beyond.
    pub p95_response_time_ms: Option<i32>,
}

fn rules(state: &AppState) -> (u32, Vec<String>) {
    (state.config.min_interval, state.config.all_region_names())
}

async fn check_policy(
    state: &AppState,
    p: &Principal,
    input: &MonitorInput,
) -> Result<(), ApiError> {
    if let Some(id) = &input.alert_policy_id
        && state
            .store
            .alert_policy(&p.workspace_id, id)
            .await?
            .is_none()
    {
        return Err(ApiError::unprocessable(format!(
            "No alert policy `{id}` exists in this workspace"
        ))
        .with_details(vec![FieldError::new("alertPolicyId", "does not exist")]));
    }
    Ok(())
}

/// `dependsOn` may name only monitors of the workspace, never the monitor itself, and may
/// not close a loop (A depends on B depends on A): such a loop would hold both monitors'
/// alerts for ever.
async fn check_dependencies(
    state: &AppState,
    p: &Principal,
    monitor_id: &str,
    depends_on: &[String],
) -> Result<(), ApiError> {
    if depends_on.is_empty() {
        return Ok(());
    }
    let refuse = |message: String, detail: &str| {
        ApiError::unprocessable(message).with_details(vec![FieldError::new("dependsOn", detail)])
    };
    if depends_on.iter().any(|d| d == monitor_id) {
        return Err(refuse(
            "A monitor cannot depend on itself".into(),
            "lists the monitor itself",
        ));
    }
    let found = state
        .store
        .monitors_by_id(&p.workspace_id, depends_on.to_vec())
        .await?;
    if let Some(missing) = depends_on
        .iter()
        .find(|d| !found.iter().any(|m| &m.id == *d))
    {
        return Err(refuse(
            format!("No monitor `{missing}` exists in this workspace"),
            "names a monitor that does not exist",
        ));
    }
    let graph = state.store.dependency_graph(&p.workspace_id).await?;
    if let Some(path) = crate::engine::holds::cycle_through(&graph, monitor_id, depends_on) {
        return Err(refuse(
            format!("dependsOn would make a loop: {}", path.join(" → ")),
            "would make a loop",
        ));
    }
    Ok(())
}

pub(super) async fn find(
    state: &AppState,
    p: &Principal,
    id: &str,
) -> Result<MonitorRow, ApiError> {
    state
        .store
        .monitor(&p.workspace_id, id)
        .await?
        .or_not_found(Resource::MONITOR, id)
}

/// Create a monitor.
#[utoipa::path(post, path = "/v1/monitors", tag = "monitors", request_body = MonitorCreate, params(DryRun),
    responses(
        (status = 201, description = "The created monitor", body = SuccessBody<MonitorView>),
        (status = 200, description = "With `dryRun=true`: the monitor as it would be created; nothing was saved", body = SuccessBody<MonitorView>),
        (status = 409, description = "CONFLICT: another monitor has this key", body = ErrorBody),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 403, description = "PLAN_UPGRADE_REQUIRED: the plan's monitor count or shortest interval", body = ErrorBody),
        (status = 422, description = "Unknown type or alert policy, or timeout longer than interval", body = ErrorBody),
    ))]
pub async fn create_monitor(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(object): ApiObject,
) -> Result<Success<MonitorView>, ApiError> {
    super::quota::room_for(&state, &p.workspace_id, Counted::Monitors).await?;
    let (min_interval, regions) = rules(&state);
    let input = monitor_input::validate(
        object,
        &InputRules {
            min_interval,
            regions: &regions,
        },
        &state.plugins,
    )
    .await?;
    check_policy(&state, &p, &input).await?;
    super::quota::interval(&state, &p.workspace_id, input.interval_secs).await?;
    if let Some(retry) = input.retry_interval_secs {
        super::quota::cadence(&state, &p.workspace_id, "retryInterval", retry).await?;
    }
    let now = state.clock.now_ms();
    let id = ids::new_id(prefix::MONITOR);
    check_dependencies(&state, &p, &id, &input.depends_on).await?;
    let kind = Declared::Monitor;
    super::managed::check_key_free(
        &state,
        kind,
        &p.workspace_id,
        input.managed.key.as_deref(),
        None,
    )
    .await?;
    let heartbeat = input.kind == crate::plugins::HEARTBEAT;
    let row = MonitorRow {
        name: input.name,
        config: input.config,
        interval_secs: i32::try_from(input.interval_secs).unwrap_or(i32::MAX),
        degraded_after_ms: input
            .degraded_after_ms
            .map(|d| i32::try_from(d).unwrap_or(i32::MAX)),
        sla_target_ppm: input
            .sla_target_ppm
            .map(|t| i32::try_from(t).unwrap_or(i32::MAX)),
        retry_interval_secs: input
            .retry_interval_secs
            .map(|r| i32::try_from(r).unwrap_or(i32::MAX)),
        timeout_secs: i32::try_from(input.timeout_secs).unwrap_or(i32::MAX),
        alert_policy_id: input.alert_policy_id,
        regions: serde_json::to_string(&input.regions).unwrap_or_else(|_| "[]".into()),
        regional_confirmation: input.regional_confirmation,
        tags: serde_json::to_string(&input.tags).unwrap_or_else(|_| "[]".into()),
        ping_token: heartbeat.then(|| ids::random_base62(24)),
        depends_on: serde_json::to_string(&input.depends_on).unwrap_or_else(|_| "[]".into()),
        apply_key: input.managed.key,
        managed_by: input.managed.managed_by,
        ..MonitorRow::new(&id, &p.workspace_id, &input.kind, now)
    };
    if dry.on() {
        return Ok(Success::ok(view(&state, &row, &regions)));
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "monitor.create",
            "monitor",
            Some(&row.id),
        )
        .after(audited(&state, &row, &regions)),
    );
    let key = row.apply_key.clone();
    let saved = super::managed::or_key_taken(
        state.store.insert_monitor(row).await,
        Declared::Monitor,
        key.as_deref(),
    )?;
    arm_heartbeat(&state, &saved, now).await?;
    Ok(Success::created(view(&state, &saved, &regions)))
}

/// Give a heartbeat monitor its deadline, counted from `from` (created or edited).
async fn arm_heartbeat(state: &AppState, row: &MonitorRow, from: i64) -> Result<(), ApiError> {
    if row.status == MonitorState::Paused {
        return Ok(());
    }
    if let Some(exp) = crate::engine::heartbeat::Expectation::of(&row.config)
        && row.ping_token.is_some()
    {
        crate::engine::heartbeat::arm(&state.store, row, &exp, from).await?;
    }
    Ok(())
}

/// The API view of a monitor, its type's fields placed as its plugin says.
fn view(state: &AppState, row: &MonitorRow, regions: &[String]) -> MonitorView {
    monitor_input::view(
        row,
        regions,
        state.plugins.fields_at_top_level(&row.kind),
        &state.plugins.monitor_write_only_fields(&row.kind),
        &state.config.public_url,
    )
}

/// A monitor's view as the audit log keeps it: what its type's schema marks secret
/// redacted.
fn audited(state: &AppState, row: &MonitorRow, regions: &[String]) -> Value {
    let secrets = state.plugins.monitor_secrets(&row.kind);
    let mut v = view(state, row, regions);
    // The ping token is a credential: the log keeps for a year what it was, not the token.
    hide_ping_token(&mut v);
    super::redact::audit::monitor(&secrets, &v)
}

/// The view as `p` may see it (a read key sees header values redacted).
pub(super) fn view_for(
    p: &Principal,
    state: &AppState,
    row: &MonitorRow,
    regions: &[String],
) -> MonitorView {
    let mut v = view(state, row, regions);
    v.stale = state
        .engine
        .offline
        .stale(&row.workspace_id, &row.region_list());
    if super::redact::applies(p) {
        let secrets = state.plugins.monitor_secrets(&row.kind);
        super::redact::monitor_fields(&secrets, &mut v.type_fields);
        hide_ping_token(&mut v);
    }
    v
}

/// A read principal sees where a heartbeat monitor's ping URL points, not its token:
/// the token lets anyone change the monitor's state (`/fail`), which reading must not.
fn hide_ping_token(v: &mut MonitorView) {
    if let Some(url) = &mut v.ping_url
        && let Some(at) = url.rfind("/ping/")
    {
        url.truncate(at + "/ping/".len());
        url.push_str(super::redact::REDACTED);
    }
}

/// List monitors.
#[utoipa::path(get, path = "/v1/monitors", tag = "monitors", params(PageParams, PageParams, MonitorListParams),
    responses(
        (status = 200, description = "A page of monitors", body = ListBody<MonitorView>),
        (status = 400, description = "Invalid parameters", body = ErrorBody),
    ))]
pub async fn list_monitors(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(pg): ApiQuery<PageParams>,
    ApiQuery(q): ApiQuery<MonitorListParams>,
) -> Result<RawPaged, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    let order = paging::order(q.order.as_deref(), &mut errors);
    let sort = match q.sort_by.as_deref() {
        None | Some("createdAt") => MonitorSort::CreatedAt,
        Some("updatedAt") => MonitorSort::UpdatedAt,
        Some("name") => MonitorSort::Name,
        Some("status") => MonitorSort::Status,
        Some(_) => {
            errors.push(FieldError::new(
                "sortBy",
                "must be createdAt, updatedAt, name or status",
            ));
            MonitorSort::CreatedAt
        }
    };
    let status = paging::state::<MonitorState>("status", q.status.as_deref(), &mut errors);
    if let Some(t) = &q.tag
        && !monitor_input::is_tag(t)
    {
        errors.push(FieldError::new("tag", "is not a well-formed tag"));
    }
    paging::finish(errors)?;
    let query = MonitorListQuery {
        status,
        search: None,
        kind: None,
        tag: q.tag.clone(),
        sort,
        order,
        page,
    };
    let redact = super::redact::applies(&p);
    // The count is taken before the read (see `monitor_pages`).
    let commits = state.store.commits();
    let read_at = std::time::Instant::now();
    // Rendered with each monitor's `stale`, so kept per version of the offline locations.
    let key = format!(
        "{}\n{}",
        super::monitor_pages::key(&p.workspace_id, redact, &query),
        state.engine.offline.version()
    );
    if let Some(kept) = commits.and_then(|c| state.monitor_pages.get(&key, c)) {
        return Ok(RawPaged(kept));
    }
    let (rows, total) = state.store.list_monitors(&p.workspace_id, &query).await?;
    let regions = state.config.region_names();
    // Where each type's fields go and which are write-only, asked once per type, not
    // once per row.
    let mut shapes: BTreeMap<&str, (bool, Vec<String>, SchemaSecrets)> = BTreeMap::new();
    for r in &rows {
        shapes.entry(r.kind.as_str()).or_insert_with(|| {
            let secrets = state.plugins.monitor_secrets(&r.kind);
            (
                state.plugins.fields_at_top_level(&r.kind),
                secrets.write_only_fields(),
                secrets,
            )
        });
    }
    let unknown = SchemaSecrets::unknown();
    let items: Vec<MonitorView> = rows
        .iter()
        .map(|r| {
            let (top_level, write_only, secrets) = shapes
                .get(r.kind.as_str())
                .map_or((false, &[][..], &unknown), |(t, w, s)| {
                    (*t, w.as_slice(), s)
                });
            let mut v =
                monitor_input::view(r, &regions, top_level, write_only, &state.config.public_url);
            v.stale = state
                .engine
                .offline
                .stale(&r.workspace_id, &r.region_list());
            if redact {
                super::redact::monitor_fields(secrets, &mut v.type_fields);
                hide_ping_token(&mut v);
            }
            v
        })
        .collect();
    let items = serde_json::value::to_raw_value(&items)
        .map_err(|e| ApiError::internal(format!("rendering a list: {e}")))?;
    let page = RenderedPage {
        items: Arc::from(items),
        pagination: Pagination::new(page, total),
    };
    if let Some(c) = commits {
        state.monitor_pages.put(key, page.clone(), c, read_at);
    }
    Ok(RawPaged(page))
}

/// Get one monitor.
#[utoipa::path(get, path = "/v1/monitors/{id}", tag = "monitors", params(("id" = String, Path, description = "Monitor id")),
    responses(
        (status = 200, description = "The monitor", body = SuccessBody<MonitorView>),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn get_monitor(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<MonitorView>, ApiError> {
    let row = find(&state, &p, &id).await?;
    Ok(Success::ok(view_for(
        &p,
        &state,
        &row,
        &state.config.region_names(),
    )))
}

/// Change some fields of a monitor. Absent fields keep their values; `null` clears a nullable field.
#[utoipa::path(patch, path = "/v1/monitors/{id}", tag = "monitors", params(("id" = String, Path, description = "Monitor id"), DryRun),
    request_body(content = Object, description = "Fields to change, as in MonitorCreate (`type` cannot change)"),
    responses(
        (status = 200, description = "The updated monitor (with `dryRun=true`: as it would be; nothing was saved)", body = SuccessBody<MonitorView>),
        (status = 400, description = "Invalid fields, or a write-only value (a password, a token) not given again although its target (host, port, URL origin) changed", body = ErrorBody),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
        (status = 403, description = "PLAN_UPGRADE_REQUIRED: an interval shorter than the plan allows", body = ErrorBody),
        (status = 409, description = "CONFLICT: another monitor has this key", body = ErrorBody),
        (status = 422, description = "Unknown alert policy, or timeout longer than interval", body = ErrorBody),
    ))]
pub async fn update_monitor(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(patch): ApiObject,
) -> Result<Success<MonitorView>, ApiError> {
    edit(&state, &p, &id, dry.on(), patch, false).await
}

/// Replace a monitor's fields: the body is a complete monitor as in MonitorCreate, and
/// fields it leaves out take their defaults (write-only ones, such as passwords, keep
/// their stored values). The id, the history and the state stay.
#[utoipa::path(put, path = "/v1/monitors/{id}", tag = "monitors", params(("id" = String, Path, description = "Monitor id"), DryRun),
    request_body = MonitorCreate,
    responses(
        (status = 200, description = "The monitor as replaced (with `dryRun=true`: as it would be; nothing was saved)", body = SuccessBody<MonitorView>),
        (status = 400, description = "Invalid fields, or a write-only value (a password, a token) not given again although its target (host, port, URL origin) changed", body = ErrorBody),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
        (status = 403, description = "PLAN_UPGRADE_REQUIRED: an interval shorter than the plan allows", body = ErrorBody),
        (status = 409, description = "CONFLICT: another monitor has this key", body = ErrorBody),
        (status = 422, description = "Unknown alert policy, or timeout longer than interval", body = ErrorBody),
    ))]
pub async fn replace_monitor(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(body): ApiObject,
) -> Result<Success<MonitorView>, ApiError> {
    edit(&state, &p, &id, dry.on(), body, true).await
}

/// An edit: a PATCH merged into the stored fields, or a PUT's complete object.
async fn edit(
    state: &AppState,
    p: &Principal,
    id: &str,
    dry_run: bool,
    body: Map<String, Value>,
    replace: bool,
) -> Result<Success<MonitorView>, ApiError> {
    let row = find(state, p, id).await?;
    let top_level = state.plugins.fields_at_top_level(&row.kind);
    // The request's own type fields: a stored password goes to a new host only if given.
    let given = if top_level {
        body.clone()
    } else {
        body.get("config")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let merged = if replace {
        let write_only = state.plugins.monitor_write_only_fields(&row.kind);
        monitor_input::replacement(&row, top_level, &write_only, body)?
    } else {
        monitor_input::merge_patch(&row, top_level, body)?
    };
    let (min_interval, regions) = rules(state);
    let input = monitor_input::validate(
        merged,
        &InputRules {
            min_interval,
            regions: &regions,
        },
        &state.plugins,
    )
    .await?;
    super::redact::secrets_follow_target(
        &state.plugins.monitor_secrets(&row.kind),
        &serde_json::from_str(&row.config).unwrap_or_default(),
        &serde_json::from_str(&input.config).unwrap_or_default(),
        &given,
        if top_level { "" } else { "config." },
    )?;
    check_policy(state, p, &input).await?;
    check_dependencies(state, p, &row.id, &input.depends_on).await?;
    super::managed::check_key_free(
        state,
        Declared::Monitor,
        &p.workspace_id,
        input.managed.key.as_deref(),
        Some(&row.id),
    )
    .await?;
    // A monitor kept from a larger plan keeps its interval until it is changed.
    if i64::from(input.interval_secs) != i64::from(row.interval_secs) {
        super::quota::interval(state, &p.workspace_id, input.interval_secs).await?;
    }
    if let Some(retry) = input.retry_interval_secs
        && Some(i64::from(retry)) != row.retry_interval_secs.map(i64::from)
    {
        super::quota::cadence(state, &p.workspace_id, "retryInterval", retry).await?;
    }
    let row_before = row.clone();
    let updated = MonitorRow {
        name: input.name,
        config: input.config,
        interval_secs: i32::try_from(input.interval_secs).unwrap_or(i32::MAX),
        degraded_after_ms: input
            .degraded_after_ms
            .map(|d| i32::try_from(d).unwrap_or(i32::MAX)),
        sla_target_ppm: input
            .sla_target_ppm
            .map(|t| i32::try_from(t).unwrap_or(i32::MAX)),
        retry_interval_secs: input
            .retry_interval_secs
            .map(|r| i32::try_from(r).unwrap_or(i32::MAX)),
        timeout_secs: i32::try_from(input.timeout_secs).unwrap_or(i32::MAX),
        alert_policy_id: input.alert_policy_id,
        regions: serde_json::to_string(&input.regions).unwrap_or_else(|_| "[]".into()),
        regional_confirmation: input.regional_confirmation,
        tags: serde_json::to_string(&input.tags).unwrap_or_else(|_| "[]".into()),
        depends_on: serde_json::to_string(&input.depends_on).unwrap_or_else(|_| "[]".into()),
        apply_key: input.managed.key,
        managed_by: input.managed.managed_by,
        updated_at: state.clock.now_ms(),
        ..row
    };
    if dry_run {
        return Ok(Success::ok(view(state, &updated, &regions)));
    }
    let schedule_changed = updated.config != row_before.config;
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "monitor.update",
            "monitor",
            Some(&updated.id),
        )
        .before(audited(state, &row_before, &regions))
        .after(audited(state, &updated, &regions)),
    );
    let key = updated.apply_key.clone();
    let saved = super::managed::or_key_taken(
        state.store.update_monitor(updated).await,
        Declared::Monitor,
        key.as_deref(),
    )?;
    // A new schedule counts from now; other edits leave the deadline alone.
    if schedule_changed {
        arm_heartbeat(state, &saved, state.clock.now_ms()).await?;
    }
    Ok(Success::ok(view(state, &saved, &regions)))
}

/// Delete a monitor and its check history; its unresolved incident is resolved without notifications.
#[utoipa::path(delete, path = "/v1/monitors/{id}", tag = "monitors", params(("id" = String, Path, description = "Monitor id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn delete_monitor(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    let now = state.clock.now_ms();
    let before = find(&state, &p, &id).await?;
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "monitor.delete",
            "monitor",
            Some(&id),
        )
        .before(audited(&state, &before, &state.config.region_names())),
    );
    match crate::engine::actions::delete_monitor(&state.store, &p.workspace_id, &id, now).await {
        Ok(true) => Ok(NoContent),
        Ok(false) => Err(Resource::MONITOR.not_found(&id)),
        Err(crate::engine::actions::ActionError::Store(e)) => Err(e.into()),
        Err(e) => Err(ApiError::internal(e)),
    }
}

async fn set_paused(
    state: AppState,
    p: Principal,
    id: String,
    paused: bool,
) -> Result<Success<MonitorView>, ApiError> {
    let now = state.clock.now_ms();
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        if paused {
            "monitor.pause"
        } else {
            "monitor.resume"
        },
        "monitor",
        Some(&id),
    ));
    let result = crate::engine::actions::set_paused(
        &state.store,
        &state.engine,
        &p.workspace_id,
        &id,
        paused,
        now,
    )
    .await;
    let (row, _changed) = match result {
        Ok(r) => r,
        Err(crate::engine::actions::ActionError::NotFound) => {
            return Err(Resource::MONITOR.not_found(&id));
        }
        Err(crate::engine::actions::ActionError::Store(e)) => return Err(e.into()),
        Err(e) => return Err(ApiError::internal(e)),
    };
    Ok(Success::ok(view(
        &state,
        &row,
        &state.config.region_names(),
    )))
}

/// Pause a monitor: no checks run until it is resumed; emits `monitor.paused`. Pausing a paused monitor changes nothing.
#[utoipa::path(post, path = "/v1/monitors/{id}/pause", tag = "monitors", params(("id" = String, Path, description = "Monitor id")),
    responses(
        (status = 200, description = "The paused monitor", body = SuccessBody<MonitorView>),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn pause_monitor(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<MonitorView>, ApiError> {
    set_paused(state, p, id, true).await
}

/// Resume a paused monitor; it is checked within a few seconds and its state starts from `pending`; emits `monitor.resumed`.
#[utoipa::path(post, path = "/v1/monitors/{id}/resume", tag = "monitors", params(("id" = String, Path, description = "Monitor id")),
    responses(
        (status = 200, description = "The resumed monitor", body = SuccessBody<MonitorView>),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn resume_monitor(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<MonitorView>, ApiError> {
    set_paused(state, p, id, false).await
}

/// A monitor's check history, newest first.
#[utoipa::path(get, path = "/v1/monitors/{id}/checks", tag = "monitors",
    params(("id" = String, Path, description = "Monitor id"), PageParams, CheckListParams),
    responses(
        (status = 200, description = "A page of checks (JSON), or every check of the range (format=csv or ndjson, streamed)",
            content((ListBody<CheckView> = "application/json"), (String = "text/csv"), (String = "application/x-ndjson"))),
        (status = 400, description = "Invalid parameters", body = ErrorBody),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn list_checks(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(pg): ApiQuery<PageParams>,
    ApiQuery(q): ApiQuery<CheckListParams>,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    let from = paging::timestamp("from", q.from.as_deref(), &mut errors);
    let to = paging::timestamp("to", q.to.as_deref(), &mut errors);
    let export = match q.format.as_deref() {
        None | Some("json") => None,
        Some(other) => match super::check_export::Format::parse(other) {
            Some(f) => Some(f),
            None => {
                errors.push(FieldError::new("format", "must be json, csv or ndjson"));
                None
            }
        },
    };
    if export.is_some() && (pg.page.is_some() || pg.limit.is_some()) {
        errors.push(FieldError::new(
            "page",
            "an export has no pages: it holds every check from `from` to `to`",
        ));
    }
    paging::finish(errors)?;
    let row = find(&state, &p, &id).await?;
    if let Some(format) = export {
        return Ok(super::check_export::response(
            &state, row.id, from, to, format,
        ));
    }
    let (rows, total) = state.store.list_checks(&row.id, from, to, page).await?;
    Ok(Paged {
        items: rows
            .into_iter()
            .map(|c| CheckView {
                id: c.id,
                checked_at: crate::time::format_ms(c.checked_at),
                ok: c.ok,
                reason: c.reason,
                status_code: c.status_code,
                response_time_ms: c.response_time_ms,
                region: c.region,
                details: serde_json::from_str(&c.details)
                    .unwrap_or_else(|_| Value::Object(Map::new())),
                counted: c.counted,
                maintenance: c.maintenance,
            })
            .collect(),
        pagination: Pagination::new(page, total),
    }
    .into_response())
}

/// Uptime percentage, check counts and response times over a window (default: the last 24 hours).
#[utoipa::path(get, path = "/v1/monitors/{id}/uptime", tag = "monitors",
    params(("id" = String, Path, description = "Monitor id"), UptimeParams),
    responses(
        (status = 200, description = "Uptime figures", body = SuccessBody<UptimeView>),
        (status = 400, description = "Invalid parameters", body = ErrorBody),
        (status = 404, description = "MONITOR_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn monitor_uptime(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<UptimeParams>,
) -> Result<Success<UptimeView>, ApiError> {
    let mut errors = Vec::new();
    let from = paging::timestamp("from", q.from.as_deref(), &mut errors);
    let to = paging::timestamp("to", q.to.as_deref(), &mut errors);
    paging::finish(errors)?;
    let to = to.unwrap_or_else(|| state.clock.now_ms());
    let from = from.unwrap_or(to - 24 * 3_600_000);
    if from > to {
        return Err(ApiError::validation(vec![FieldError::new(
            "from",
            "must not be after to",
        )]));
    }
    let row = find(&state, &p, &id).await?;
    let stats = state.store.uptime(&row.id, from, to).await?;
    Ok(Success::ok(UptimeView {
        monitor_id: row.id,
        from: crate::time::format_ms(from),
        to: crate::time::format_ms(to),
        uptime_percent: (stats.total > 0).then(|| stats.up as f64 * 100.0 / stats.total as f64),
        total_checks: stats.total,
        up_checks: stats.up,
        down_checks: stats.down,
        mean_response_time_ms: stats.mean_response_ms,
        p95_response_time_ms: stats.p95_response_ms,
    }))
}
