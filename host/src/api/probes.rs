//! Probes in private locations (`tocsin probe`).
//!
//! `/v1/probes` (admin): create a probe for a private location (its token is shown once),
//! list the workspace's probes with what each last reported, give one a new token, revoke
//! one.
//!
//! `/v1/probe/*` (a probe's token, nothing else): a probe asks which monitors to check
//! (`GET /v1/probe/assignments`, a long poll that answers as soon as they change) and posts
//! what it found (`POST /v1/probe/results`). A probe reads only its own workspace's monitors
//! that name its location, and posts results only for them.

use super::AppState;
use super::envelope::{NoContent, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError, Resource};
use super::extract::{ApiJson, ApiObject, ApiPath, ApiQuery};
use crate::engine::locations::Heard;
use crate::engine::recorder::{Ask, CheckRecord, Committed, Confirmation, ProbeSeq, annotate};
use crate::store::keys::Principal;
use crate::store::probes::{ProbeReport, ProbeRow};
use axum::Extension;
use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use utoipa::{IntoParams, ToSchema};

pub use crate::store::probes::PROBE_SILENCE_MS;
/// The header a probe names its running process by (a random id kept in its data
/// directory): one token, one process at a time.
pub const INSTANCE_HEADER: &str = "x-tocsin-probe-instance";
/// Longest a probe's request for assignments is held open.
const MAX_WAIT_SECS: u64 = 25;
/// How often a held request looks whether the assignments changed.
const LOOK_EVERY: Duration = Duration::from_millis(500);
/// Most results one request may carry.
pub const MAX_RESULTS: usize = 1000;
/// How far a probe's clock may be off: a result dated before its probe was made, by more
/// than this, is refused.
const MAX_CLOCK_AHEAD_MS: i64 = 60_000;
/// Longest a probe's request waits for its results to be committed before it is told to
/// send them again.
const COMMIT_WAIT: Duration = Duration::from_secs(30);

/// Probes whose results are being stored: one request at a time each, so a probe resending
/// after a timeout does not pile requests up.
static SENDING: std::sync::Mutex<std::collections::BTreeSet<String>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

struct Sending(String);

impl Sending {
    fn start(probe_id: &str) -> Option<Sending> {
        let mut set = SENDING.lock().unwrap_or_else(|e| e.into_inner());
        set.insert(probe_id.to_string())
            .then(|| Sending(probe_id.to_string()))
    }
}

impl Drop for Sending {
    fn drop(&mut self) {
        SENDING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.0);
    }
}

/// A probe as listed (never its token).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeView {
    #[schema(example = "prb_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: String,
    pub name: String,
    /// The private location (a `[[regions]]` entry with `private = true`) it checks from.
    pub location: String,
    /// The first characters of its token, to tell probes apart.
    #[schema(example = "tpb_Ab3x")]
    pub prefix: String,
    pub created_at: String,
    /// When it last called the server; null if never.
    pub last_contact_at: Option<String>,
    /// Heard from in the last 45 seconds.
    pub online: bool,
    /// Its `tocsin` version, as it last said.
    pub version: Option<String>,
    /// Results waiting in its buffer, as it last said.
    pub buffered: i64,
    /// Results it had to drop (its buffer full or too old), in all, as it last said.
    pub shed: i64,
    /// How old its oldest result not yet stored was, as it last said (ms); null when none
    /// was waiting.
    pub lag_ms: Option<i64>,
    /// Checks a second it ran, as it last said.
    pub checks_per_second: f64,
    /// The sequence number of its last result stored.
    pub last_sequence: i64,
    /// The heartbeat monitor its contacts ping, if any: when every probe that pings it
    /// goes silent it misses, and its alert policy tells someone.
    pub heartbeat_monitor_id: Option<String>,
}

/// A probe just created, or given a new token: the listing fields and the token, shown
/// this once.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeWithToken {
    #[serde(flatten)]
    pub probe: ProbeView,
    /// `tpb_...`: give it to the probe as `TOCSIN_PROBE_TOKEN`; it cannot be shown again.
    pub token: String,
}

/// Body of `POST /v1/probes`.
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct ProbeCreate {
    /// 1 to 200 characters, e.g. `office rack 2`.
    pub name: String,
    /// A private location: a configured region with `private = true`.
    pub location: String,
    /// A heartbeat monitor of the workspace that the probe's contacts ping (at most every
    /// 5 seconds): give it a period of 30 seconds or more and an alert policy, and link
    /// every probe of the location to it, to hear once when the location goes silent.
    pub heartbeat_monitor_id: Option<String>,
}

fn view(p: &ProbeRow, now: i64) -> ProbeView {
    ProbeView {
        id: p.id.clone(),
        name: p.name.clone(),
        location: p.location.clone(),
        prefix: p.prefix.clone(),
        created_at: crate::time::format_ms(p.created_at),
        last_contact_at: p.last_contact_at.map(crate::time::format_ms),
        online: p
            .last_contact_at
            .is_some_and(|t| now - t <= PROBE_SILENCE_MS),
        version: p.version.clone(),
        buffered: p.buffered,
        shed: p.shed,
        lag_ms: p.lag_ms,
        checks_per_second: p.rate_milli as f64 / 1000.0,
        last_sequence: p.acked_seq,
        heartbeat_monitor_id: p.heartbeat_monitor_id.clone(),
    }
}

/// List the workspace's probes (revoked ones are gone), oldest first.
#[utoipa::path(get, path = "/v1/probes", tag = "probes",
    responses(
        (status = 200, description = "The workspace's probes", body = SuccessBody<Vec<ProbeView>>),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorBody),
    ))]
pub async fn list_probes(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
) -> Result<Success<Vec<ProbeView>>, ApiError> {
    let now = state.clock.now_ms();
    let rows = state.store.probes_of(&p.workspace_id).await?;
    Ok(Success::ok(rows.iter().map(|r| view(r, now)).collect()))
}

/// A region nodes check from, or a private location probes check from, and whether it is
/// checking now.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocationView {
    pub name: String,
    /// A private location (checked by this workspace's probes), or a region of nodes.
    pub private: bool,
    /// `online`: a node of the region, or one of the location's probes, was heard from
    /// recently. `offline`: none was (a location's monitors then keep their states, marked
    /// `stale`, and open no incident). `unknown`: a private location none of whose probes
    /// was ever heard from (or that has none).
    #[schema(example = "online")]
    pub status: String,
    /// Since when a private location is offline.
    pub offline_since: Option<String>,
    /// The location's probes that are not revoked (0 for a region of nodes).
    pub probes: usize,
    /// Of those, the ones heard from in the last 45 seconds.
    pub online_probes: usize,
    /// The workspace's monitors that name it in their `regions` (those that name none
    /// check from every region of nodes and are not counted).
    pub monitors: usize,
}

/// The regions and private locations monitors may check from, and whether each is
/// checking now. Any member may read it.
#[utoipa::path(get, path = "/v1/locations", tag = "probes",
    responses(
        (status = 200, description = "The configured regions and private locations, in the configuration's order", body = SuccessBody<Vec<LocationView>>),
    ))]
pub async fn list_locations(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
) -> Result<Success<Vec<LocationView>>, ApiError> {
    let now = state.clock.now_ms();
    let live_regions: std::collections::HashSet<String> = state
        .store
        .live_nodes(now)
        .await?
        .into_iter()
        .map(|n| n.region)
        .collect();
    let probes = state.store.probes_of(&p.workspace_id).await?;
    let heard = crate::engine::locations::heard(&probes, now);
    let stored: HashMap<String, crate::store::probes::LocationRow> = state
        .store
        .locations_of(&p.workspace_id)
        .await?
        .into_iter()
        .map(|l| (l.name.clone(), l))
        .collect();
    let mut out = Vec::with_capacity(state.config.regions.len());
    for region in &state.config.regions {
        let monitors = state
            .store
            .monitors_at_location(&p.workspace_id, &region.name)
            .await?
            .len();
        if !region.private {
            out.push(LocationView {
                name: region.name.clone(),
                private: false,
                status: if live_regions.contains(&region.name) {
                    "online"
                } else {
                    "offline"
                }
                .into(),
                offline_since: None,
                probes: 0,
                online_probes: 0,
                monitors,
            });
            continue;
        }
        let h = heard.get(&(p.workspace_id.clone(), region.name.clone()));
        let row = stored.get(&region.name);
        let (probes, online_probes) = h.map_or((0, 0), |h| (h.probes, h.online));
        // What the locations' pass last stored (what was alerted), or what the probes say
        // before its next pass.
        let offline_since = row.and_then(|r| r.offline_since);
        let status = if online_probes > 0 {
            "online"
        } else if probes > 0 && row.is_some() {
            "offline"
        } else {
            "unknown"
        };
        out.push(LocationView {
            name: region.name.clone(),
            private: true,
            status: status.into(),
            offline_since: (status == "offline")
                .then(|| offline_since.or_else(|| h.and_then(Heard::offline_since)))
                .flatten()
                .map(crate::time::format_ms),
            probes,
            online_probes,
            monitors,
        });
    }
    Ok(Success::ok(out))
}

/// Create a probe for a private location. The answer holds its token, shown this once.
#[utoipa::path(post, path = "/v1/probes", tag = "probes", request_body = ProbeCreate,
    responses(
        (status = 201, description = "The probe and its token", body = SuccessBody<ProbeWithToken>),
        (status = 400, description = "VALIDATION_ERROR: no name, or not a private location", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorBody),
    ))]
pub async fn create_probe(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiObject(object): ApiObject,
) -> Result<Success<ProbeWithToken>, ApiError> {
    let mut errors = Vec::new();
    let name = super::fields::name(object.get("name"), &mut errors);
    let private: Vec<String> = state
        .config
        .regions
        .iter()
        .filter(|r| r.private)
        .map(|r| r.name.clone())
        .collect();
    let location = match object.get("location") {
        Some(Value::String(l)) if state.config.is_private_location(l) => Some(l.clone()),
        _ => {
            errors.push(FieldError::new(
                "location",
                if private.is_empty() {
                    "must name a private location, and none is configured (a `[[regions]]` entry with `private = true`)".to_string()
                } else {
                    format!("must name a private location ({})", private.join(", "))
                },
            ));
            None
        }
    };
    let heartbeat = heartbeat_field(&state, &p, object.get("heartbeatMonitorId"), &mut errors)
        .await?
        .flatten();
    for key in object.keys() {
        if !["name", "location", "heartbeatMonitorId"].contains(&key.as_str()) {
            errors.push(FieldError::new(key, "is not a field of a probe"));
        }
    }
    super::paging::finish(errors)?;
    let (Some(name), Some(location)) = (name, location) else {
        return Err(ApiError::bad_request("name and location are required"));
    };
    crate::store::audit::note(
        crate::store::audit::Change::new(Some(&p.workspace_id), "probe.create", "probe", None)
            .after(serde_json::json!({"name": name, "location": location, "heartbeatMonitorId": heartbeat})),
    );
    let now = state.clock.now_ms();
    let (probe, token) = state
        .store
        .create_probe(&p.workspace_id, &name, &location, heartbeat, p.maker(), now)
        .await?;
    Ok(Success::created(ProbeWithToken {
        probe: view(&probe, now),
        token,
    }))
}

/// `heartbeatMonitorId` as given: absent (None), null (Some(None)) or a heartbeat monitor
/// of the workspace (Some(Some(id))); anything else is a field error.
async fn heartbeat_field(
    state: &AppState,
    p: &Principal,
    value: Option<&Value>,
    errors: &mut Vec<FieldError>,
) -> Result<Option<Option<String>>, ApiError> {
    Ok(match value {
        None => None,
        Some(Value::Null) => Some(None),
        Some(Value::String(id)) => match state.store.monitor(&p.workspace_id, id).await? {
            Some(m) if m.kind == crate::plugins::HEARTBEAT => Some(Some(m.id)),
            _ => {
                errors.push(FieldError::new(
                    "heartbeatMonitorId",
                    "must name a heartbeat monitor of this workspace",
                ));
                None
            }
        },
        Some(_) => {
            errors.push(FieldError::new(
                "heartbeatMonitorId",
                "must be a monitor id or null",
            ));
            None
        }
    })
}

/// Body of `PATCH /v1/probes/{id}`: absent fields keep their values.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ProbeUpdate {
    /// 1 to 200 characters.
    pub name: Option<String>,
    /// A heartbeat monitor of the workspace that the probe's contacts ping, or null for
    /// none.
    pub heartbeat_monitor_id: Option<String>,
}

/// Rename a probe, or link it to a heartbeat monitor (or unlink it with null). Its
/// location and token do not change.
#[utoipa::path(patch, path = "/v1/probes/{id}", tag = "probes", request_body = ProbeUpdate,
    params(("id" = String, Path, description = "Probe id")),
    responses(
        (status = 200, description = "The probe", body = SuccessBody<ProbeView>),
        (status = 400, description = "VALIDATION_ERROR: an empty name, not a heartbeat monitor of this workspace, or another field (`location` cannot change: make a new probe)", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorBody),
        (status = 404, description = "PROBE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn update_probe(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiObject(object): ApiObject,
) -> Result<Success<ProbeView>, ApiError> {
    let mut errors = Vec::new();
    let name = match object.get("name") {
        None => None,
        given => super::fields::name(given, &mut errors),
    };
    let heartbeat =
        heartbeat_field(&state, &p, object.get("heartbeatMonitorId"), &mut errors).await?;
    for key in object.keys() {
        if key == "location" {
            errors.push(FieldError::new(
                key,
                "cannot change: a probe checks from one location (make a new probe)",
            ));
        } else if !["name", "heartbeatMonitorId"].contains(&key.as_str()) {
            errors.push(FieldError::new(key, "is not a field of a probe"));
        }
    }
    super::paging::finish(errors)?;
    let Some(before) = state.store.probe_in(&p.workspace_id, &id).await? else {
        return Err(Resource::PROBE.not_found(&id));
    };
    let snapshot = |r: &ProbeRow| serde_json::json!({"name": r.name, "location": r.location, "heartbeatMonitorId": r.heartbeat_monitor_id});
    let mut after = before.clone();
    if let Some(name) = name {
        after.name = name;
    }
    if let Some(h) = heartbeat {
        after.heartbeat_monitor_id = h;
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(Some(&p.workspace_id), "probe.update", "probe", Some(&id))
            .before(snapshot(&before))
            .after(snapshot(&after)),
    );
    let Some(saved) = state
        .store
        .update_probe(
            &p.workspace_id,
            &id,
            &after.name,
            after.heartbeat_monitor_id.as_deref(),
        )
        .await?
    else {
        crate::store::audit::discard();
        return Err(Resource::PROBE.not_found(&id));
    };
    Ok(Success::ok(view(&saved, state.clock.now_ms())))
}

/// Give a probe a new token. The old one is refused from the next request on, so the
/// probe stops until it is given the new one.
#[utoipa::path(post, path = "/v1/probes/{id}/rotate-token", tag = "probes",
    params(("id" = String, Path, description = "Probe id")),
    responses(
        (status = 200, description = "The probe and its new token", body = SuccessBody<ProbeWithToken>),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorBody),
        (status = 404, description = "PROBE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn rotate_probe_token(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<ProbeWithToken>, ApiError> {
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "probe.rotate_token",
        "probe",
        Some(&id),
    ));
    let Some((probe, token)) = state.store.rotate_probe_token(&p.workspace_id, &id).await? else {
        crate::store::audit::discard();
        return Err(Resource::PROBE.not_found(&id));
    };
    Ok(Success::ok(ProbeWithToken {
        probe: view(&probe, state.clock.now_ms()),
        token,
    }))
}

/// Revoke a probe: its token is refused from the next request on, and the probe stops.
#[utoipa::path(delete, path = "/v1/probes/{id}", tag = "probes",
    params(("id" = String, Path, description = "Probe id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 403, description = "FORBIDDEN: not an admin", body = ErrorBody),
        (status = 404, description = "PROBE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn revoke_probe(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "probe.revoke",
        "probe",
        Some(&id),
    ));
    if state
        .store
        .revoke_probe(&p.workspace_id, &id, state.clock.now_ms())
        .await?
    {
        Ok(NoContent)
    } else {
        crate::store::audit::discard();
        Err(Resource::PROBE.not_found(&id))
    }
}

/// Authenticate a probe's token (`Authorization: Bearer tpb_...`); the probe's row is
/// handed to the route. An API key, a session or a revoked token gets 401.
pub async fn require_probe(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let token = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_owned);
    let Some(token) = token else {
        return ApiError::unauthorized("A probe token is required: Authorization: Bearer tpb_...")
            .into_response();
    };
    match state.store.probe_by_token(&token).await {
        Ok(Some(probe)) => {
            let instance = req
                .headers()
                .get(INSTANCE_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let Some(instance) = instance.filter(|i| !i.is_empty() && i.len() <= 64) {
                match state
                    .store
                    .claim_probe_instance(
                        &probe.id,
                        &instance,
                        state.clock.now_ms(),
                        PROBE_SILENCE_MS,
                    )
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => {
                        return ApiError::new(
                            axum::http::StatusCode::CONFLICT,
                            "PROBE_IN_USE",
                            "Another running probe uses this token; give each probe its own token (POST /v1/probes)",
                        )
                        .into_response();
                    }
                    Err(e) => return ApiError::from(e).into_response(),
                }
            }
            ping_heartbeat(&state, &probe);
            req.extensions_mut().insert(probe);
            next.run(req).await
        }
        Ok(None) => super::auth::refused_credential(
            &state,
            &super::auth::client_address(&req),
            ApiError::unauthorized("This probe token is unknown or was revoked").into_response(),
        ),
        Err(e) => ApiError::from(e).into_response(),
    }
}

/// A probe's contacts ping its heartbeat monitor at most this often.
const HEARTBEAT_EVERY_MS: i64 = 5_000;

/// When each probe last pinged its heartbeat monitor.
static PINGED: std::sync::Mutex<BTreeMap<String, i64>> = std::sync::Mutex::new(BTreeMap::new());

/// Ping the probe's heartbeat monitor, at most every 5 seconds, beside the request (the
/// ping waits for its check to be committed; the probe does not).
fn ping_heartbeat(state: &AppState, probe: &ProbeRow) {
    let Some(monitor_id) = probe.heartbeat_monitor_id.clone() else {
        return;
    };
    let now = state.clock.now_ms();
    {
        let mut pinged = PINGED.lock().unwrap_or_else(|e| e.into_inner());
        if pinged
            .get(&probe.id)
            .is_some_and(|at| now - at < HEARTBEAT_EVERY_MS)
        {
            return;
        }
        // Forget revoked and silent probes' marks as they age (the map stays the size of
        // the probes calling).
        if pinged.len() > 64 {
            pinged.retain(|_, at| now - *at < PROBE_SILENCE_MS);
        }
        pinged.insert(probe.id.clone(), now);
    }
    let state = state.clone();
    let probe = probe.clone();
    tokio::spawn(async move {
        let token = match state.store.monitor(&probe.workspace_id, &monitor_id).await {
            Ok(Some(m)) => m.ping_token,
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(probe = %probe.id, error = %e, "cannot read the probe's heartbeat monitor");
                None
            }
        };
        let Some(token) = token else { return };
        let ping = crate::engine::heartbeat::Ping {
            signal: crate::engine::heartbeat::Signal::Success,
            method: "PROBE",
            body: b"",
            source: Some(format!("probe {} ({})", probe.name, probe.id)),
            user_agent: probe.version.clone(),
        };
        if let Err(e) = crate::engine::heartbeat::ping(
            &state.store,
            &state.recorder,
            &state.engine.work,
            &probe.location,
            &token,
            ping,
            now,
        )
        .await
        {
            tracing::warn!(probe = %probe.id, error = %e, "cannot ping the probe's heartbeat monitor");
        }
    });
}

/// Query of `GET /v1/probe/assignments`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
pub struct AssignmentQuery {
    /// The `etag` of the assignments the probe has: the answer waits until they differ
    /// (or `wait` seconds pass, then 204).
    pub etag: Option<String>,
    /// Seconds to wait for a change, 0 to 25 (default 0: answer at once).
    pub wait: Option<u64>,
    /// The location the probe thinks it checks from: refused (403) unless it is the
    /// token's own.
    pub location: Option<String>,
    /// `true`: the probe answers confirmation requests (`confirm` in the answer). Only
    /// then is its location asked to confirm failures seen elsewhere, and only then does
    /// the answer list them.
    pub confirm: Option<bool>,
}

/// A monitor a probe checks.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Assignment {
    pub id: String,
    /// The monitor type (plugin).
    #[serde(rename = "type")]
    pub kind: String,
    /// The plugin's configuration, write-only secrets included.
    pub config: Value,
    pub interval_secs: i32,
    pub timeout_secs: i32,
    pub retry_interval_secs: Option<i32>,
    /// The monitor's regions: its rounds rotate over them, and the probe checks the rounds
    /// of its location.
    pub regions: Vec<String>,
}

/// What a probe checks.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Assignments {
    /// Changes whenever the list does.
    pub etag: String,
    pub location: String,
    /// The sequence number of the probe's last result stored: a probe whose own count is
    /// below it (its buffer was lost) continues after it.
    pub last_sequence: i64,
    /// This probe's share of its location's monitors (the location's online probes split
    /// them).
    pub monitors: Vec<Assignment>,
    /// Failures seen elsewhere of some of these monitors, to check again at once (regional
    /// confirmation): send the result with `confirms` set to the request's id.
    #[serde(default)]
    pub confirm: Vec<ConfirmRequest>,
}

/// A request to check a monitor again at once, to confirm a failure seen in another
/// region.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConfirmRequest {
    pub request_id: String,
    pub monitor_id: String,
}

/// Which of the location's online probes checks a monitor: the highest hash of the pair
/// (rendezvous hashing), so a probe going silent moves only its own monitors.
fn owner<'a>(monitor_id: &str, probes: &'a [String]) -> Option<&'a String> {
    probes.iter().max_by_key(|p| {
        let mut h = Sha256::new();
        h.update(p.as_bytes());
        h.update(b"/");
        h.update(monitor_id.as_bytes());
        let d = h.finalize();
        u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
    })
}

async fn assignments_of(
    state: &AppState,
    probe: &ProbeRow,
    answers: bool,
) -> Result<Assignments, ApiError> {
    let now = state.clock.now_ms();
    let mut online = state
        .store
        .probes_heard_since(&probe.workspace_id, &probe.location, now - PROBE_SILENCE_MS)
        .await?;
    if !online.contains(&probe.id) {
        online.push(probe.id.clone());
    }
    online.sort_unstable();
    let rows = state
        .store
        .monitors_at_location(&probe.workspace_id, &probe.location)
        .await?;
    let monitors: Vec<Assignment> = rows
        .into_iter()
        .filter(|m| m.kind != crate::plugins::HEARTBEAT)
        .filter(|m| owner(&m.id, &online) == Some(&probe.id))
        .map(|m| Assignment {
            config: serde_json::from_str(&m.config).unwrap_or(Value::Object(Map::new())),
            regions: m.region_list(),
            id: m.id,
            kind: m.kind,
            interval_secs: m.interval_secs,
            timeout_secs: m.timeout_secs,
            retry_interval_secs: m.retry_interval_secs,
        })
        .collect();
    let confirm: Vec<ConfirmRequest> = if !answers {
        Vec::new()
    } else {
        state
            .store
            .confirmations_for(
                &probe.location,
                &monitors.iter().map(|m| m.id.as_str()).collect(),
                now,
            )
            .await?
            .into_iter()
            .map(|c| ConfirmRequest {
                request_id: c.id,
                monitor_id: c.monitor_id,
            })
            .collect()
    };
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(&monitors).unwrap_or_default());
    h.update(serde_json::to_vec(&confirm).unwrap_or_default());
    Ok(Assignments {
        etag: hex::encode(&h.finalize()[..12]),
        location: probe.location.clone(),
        last_sequence: probe.acked_seq,
        monitors,
        confirm,
    })
}

/// The monitors this probe checks. With `etag` and `wait`, held until they change (a
/// monitor added, edited, paused or moved, a probe of the location going silent or coming
/// back), at most `wait` seconds; unchanged, it answers 204.
#[utoipa::path(get, path = "/v1/probe/assignments", tag = "probes", params(AssignmentQuery),
    security(("probeToken" = [])),
    responses(
        (status = 200, description = "What the probe checks", body = SuccessBody<Assignments>),
        (status = 204, description = "Unchanged since `etag` after `wait` seconds"),
        (status = 401, description = "UNAUTHORIZED: not a live probe token", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: another location than the token's", body = ErrorBody),
        (status = 409, description = "PROBE_IN_USE: another running probe (`X-Tocsin-Probe-Instance`) used this token in the last 45 seconds", body = ErrorBody),
    ))]
pub async fn probe_assignments(
    State(state): State<AppState>,
    Extension(probe): Extension<ProbeRow>,
    ApiQuery(q): ApiQuery<AssignmentQuery>,
) -> Result<Response, ApiError> {
    if let Some(l) = &q.location
        && *l != probe.location
    {
        return Err(ApiError::forbidden(format!(
            "This probe token checks from `{}` only",
            probe.location
        )));
    }
    let wait = Duration::from_secs(q.wait.unwrap_or(0).min(MAX_WAIT_SECS));
    let until = tokio::time::Instant::now() + wait;
    // Heard from now; a held request lasts less than the silence that makes it offline.
    state
        .store
        .touch_probe_contact(&probe.id, state.clock.now_ms(), q.confirm == Some(true))
        .await?;
    let mut stopping = state.stopping.clone();
    loop {
        // Revoked or rotated meanwhile: refused at once, not at the end of the wait.
        let Some(current) = state.store.probe_in(&probe.workspace_id, &probe.id).await? else {
            return Err(ApiError::unauthorized("This probe token was revoked"));
        };
        if current.secret_hash != probe.secret_hash {
            return Err(ApiError::unauthorized("This probe token was replaced"));
        }
        let found = assignments_of(&state, &current, q.confirm == Some(true)).await?;
        if q.etag.as_deref() != Some(found.etag.as_str()) {
            return Ok(Success::ok(found).into_response());
        }
        if tokio::time::Instant::now() >= until || *stopping.borrow() {
            return Ok(axum::http::StatusCode::NO_CONTENT.into_response());
        }
        tokio::select! {
            _ = tokio::time::sleep(LOOK_EVERY.min(until - tokio::time::Instant::now())) => {}
            // Stopping, or nobody left to say so: answer now.
            _ = stopping.changed() => return Ok(axum::http::StatusCode::NO_CONTENT.into_response()),
        }
    }
}

/// One result a probe sends.
#[derive(Debug, Deserialize, Serialize, ToSchema, Clone)]
#[serde(rename_all = "camelCase")]
pub struct ProbeResult {
    /// The probe's own count, one more for every result: a result at or below the last
    /// stored one is a replay and is not stored again.
    pub seq: i64,
    pub monitor_id: String,
    /// When the check started, Unix milliseconds.
    pub checked_at_ms: i64,
    pub ok: bool,
    pub reason: Option<String>,
    pub status_code: Option<u16>,
    pub response_time_ms: Option<u32>,
    /// What the plugin reported, an object.
    pub details: Option<Map<String, Value>>,
    /// The id of the confirmation request (from the assignments' `confirm`) this check
    /// answers, if it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirms: Option<String>,
}

/// Body of `POST /v1/probe/results`: results in the order the probe took them, and how
/// the probe is doing.
#[derive(Debug, Deserialize, Serialize, ToSchema, Clone, Default)]
#[serde(rename_all = "camelCase")]
pub struct ProbeResults {
    /// The probe's `tocsin` version.
    pub version: String,
    /// Results in its buffer besides these.
    pub buffered: i64,
    /// Results it had to drop (buffer full or too old), in all.
    pub shed: i64,
    /// Age of its oldest result not yet stored (ms).
    pub lag_ms: Option<i64>,
    /// Checks a second it runs.
    pub checks_per_second: f64,
    /// At most 1,000, sequence numbers rising.
    pub results: Vec<ProbeResult>,
}

/// What the server kept.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResultsStored {
    /// Every result up to this sequence number is stored (or was a replay): the probe may
    /// forget them.
    pub last_sequence: i64,
}

/// Store a probe's results, in order, exactly once: each is written with the probe's
/// last stored sequence number in one transaction, and one at or below it is a replay.
/// The answer comes once they are committed. A result for a monitor that does not check
/// from this probe's location (another workspace's, deleted, paused, moved) refuses the
/// whole request with 403, naming each such result's `seq` in `details`, and stores nothing.
#[utoipa::path(post, path = "/v1/probe/results", tag = "probes", request_body = ProbeResults,
    security(("probeToken" = [])),
    responses(
        (status = 200, description = "Stored", body = SuccessBody<ResultsStored>),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 401, description = "UNAUTHORIZED: not a live probe token", body = ErrorBody),
        (status = 403, description = "PROBE_RESULT_REFUSED: results for monitors this probe does not check, or dated before the probe was made; `details[].field` is `results.<seq>`", body = ErrorBody),
        (status = 409, description = "PROBE_BUSY: this probe's previous request is still being stored; PROBE_IN_USE: another running probe used this token in the last 45 seconds", body = ErrorBody),
        (status = 503, description = "UNAVAILABLE: the server's buffer is full, the database slow or the server stopping; send again", body = ErrorBody),
    ))]
pub async fn probe_results(
    State(state): State<AppState>,
    Extension(probe): Extension<ProbeRow>,
    ApiJson(body): ApiJson<ProbeResults>,
) -> Result<Success<ResultsStored>, ApiError> {
    let Some(_sending) = Sending::start(&probe.id) else {
        return Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "PROBE_BUSY",
            "This probe's previous results are still being stored; send again when it answers",
        ));
    };
    let now = state.clock.now_ms();
    let mut errors = Vec::new();
    if body.results.len() > MAX_RESULTS {
        errors.push(FieldError::new(
            "results",
            format!("at most {MAX_RESULTS} a request"),
        ));
    }
    let mut last = 0;
    for r in &body.results {
        if r.seq <= last {
            errors.push(FieldError::new(
                format!("results.{}", r.seq),
                "sequence numbers must be positive and rise",
            ));
        }
        last = r.seq;
    }
    super::paging::finish(errors)?;
    // The batch's own monitors only, not the whole location's: a request costs the
    // same however many monitors the location has.
    let mut ids: Vec<String> = body.results.iter().map(|r| r.monitor_id.clone()).collect();
    ids.sort_unstable();
    ids.dedup();
    let here: HashMap<String, crate::store::MonitorRow> = state
        .store
        .monitors_in_workspace(&probe.workspace_id, ids)
        .await?
        .into_iter()
        .filter(|m| m.status != crate::store::MonitorState::Paused)
        .filter(|m| m.kind != crate::plugins::HEARTBEAT)
        .filter(|m| m.region_list().contains(&probe.location))
        .map(|m| (m.id.clone(), m))
        .collect();
    // The confirmation requests the batch answers, as stored (gone: settled already).
    let mut asked: Vec<String> = body
        .results
        .iter()
        .filter_map(|r| r.confirms.clone())
        .collect();
    asked.sort_unstable();
    asked.dedup();
    let requests: HashMap<String, crate::store::confirmations::ConfirmationRow> = state
        .store
        .confirmations_among(asked)
        .await?
        .into_iter()
        .map(|c| (c.id.clone(), c))
        .collect();
    let refused = refusals(&probe, &body.results, &here, &requests);
    if !refused.is_empty() {
        return Err(ApiError::new(
            axum::http::StatusCode::FORBIDDEN,
            "PROBE_RESULT_REFUSED",
            "Some results are for monitors this probe does not check; nothing was stored",
        )
        .with_details(refused));
    }
    state
        .store
        .touch_probe(
            &probe.id,
            now,
            &ProbeReport {
                version: body.version.clone(),
                buffered: body.buffered.max(0),
                shed: body.shed.max(0),
                lag_ms: body.lag_ms.map(|l| l.max(0)),
                rate_milli: (body.checks_per_second.clamp(0.0, 1e9) * 1000.0) as i64,
            },
        )
        .await?;
    let mut records: Vec<CheckRecord> = body
        .results
        .iter()
        .map(|r| CheckRecord {
            monitor_id: r.monitor_id.clone(),
            workspace_id: probe.workspace_id.clone(),
            // A probe's clock a little ahead: the result counts as taken now.
            checked_at: r.checked_at_ms.min(now),
            ok: r.ok,
            reason: if r.ok {
                None
            } else {
                Some(crate::text::bounded(
                    r.reason.as_deref().unwrap_or("Check failed"),
                    crate::text::MAX_REASON_BYTES,
                ))
            },
            status_code: r.status_code,
            response_time_ms: r.response_time_ms,
            region: probe.location.clone(),
            details: crate::scheduler::kept_details(
                r.details
                    .as_ref()
                    .map(|d| Value::Object(d.clone()).to_string())
                    .unwrap_or_else(|| "{}".into()),
            ),
            confirmation: None,
            probe: Some(ProbeSeq {
                probe_id: probe.id.clone(),
                seq: r.seq,
            }),
        })
        .collect();
    confirmations(
        &state,
        &probe,
        &body.results,
        &here,
        &requests,
        &mut records,
    )
    .await?;
    let busy = |why: &str| {
        ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            "UNAVAILABLE",
            format!("{why}; send these results again (those already stored are skipped)"),
        )
    };
    match tokio::time::timeout(COMMIT_WAIT, state.recorder.record_all_committed(records)).await {
        Ok(Committed::All) => {}
        Ok(Committed::Full) => return Err(busy("The server's result buffer is full")),
        Ok(Committed::Stopped) => return Err(busy("The server is stopping")),
        Err(_) => return Err(busy("The database is slow")),
    }
    Ok(Success::ok(ResultsStored {
        last_sequence: last.max(probe.acked_seq),
    }))
}

/// The results a probe may not send, by `seq`: for a monitor it does not check, dated
/// before it was made, or answering another monitor's or location's confirmation request.
fn refusals(
    probe: &ProbeRow,
    results: &[ProbeResult],
    here: &HashMap<String, crate::store::MonitorRow>,
    requests: &HashMap<String, crate::store::confirmations::ConfirmationRow>,
) -> Vec<FieldError> {
    results
        .iter()
        .filter_map(|r| {
            let why = if !here.contains_key(&r.monitor_id) {
                format!(
                    "monitor `{}` does not check from `{}` in this workspace (deleted, paused or moved?)",
                    r.monitor_id, probe.location
                )
            } else if r.checked_at_ms < probe.created_at - MAX_CLOCK_AHEAD_MS {
                "checkedAtMs is before this probe was made: is the probe's clock right?".into()
            } else if let Some(c) = r.confirms.as_deref().and_then(|id| requests.get(id))
                && (c.target_region != probe.location || c.monitor_id != r.monitor_id)
            {
                format!(
                    "confirmation request `{}` is not for this monitor in `{}`",
                    c.id, probe.location
                )
            } else {
                return None;
            };
            Some(FieldError::new(format!("results.{}", r.seq), why))
        })
        .collect()
}

/// Time a request needs left before its deadline to be worth writing.
const STILL_ANSWERABLE_MS: i64 = 2_000;

/// Regional confirmation for a probe's results: an answer to a request settles it (late
/// when it was settled before); a failure of a monitor with `regionalConfirmation` asks
/// another region that can check now (a node region, or a location of the workspace with a
/// probe online), or counts as it is when none can.
async fn confirmations(
    state: &AppState,
    probe: &ProbeRow,
    results: &[ProbeResult],
    here: &HashMap<String, crate::store::MonitorRow>,
    requests: &HashMap<String, crate::store::confirmations::ConfirmationRow>,
    records: &mut [CheckRecord],
) -> Result<(), ApiError> {
    let mut live: Option<crate::scheduler::confirm::LiveRegions> = None;
    for (r, record) in results.iter().zip(records.iter_mut()) {
        if let Some(id) = &r.confirms {
            record.confirmation = Some(
                match requests
                    .get(id)
                    .and_then(|c| serde_json::from_str::<CheckRecord>(&c.original).ok())
                {
                    Some(original) => Confirmation::Answer {
                        request_id: id.clone(),
                        original: Box::new(original),
                    },
                    None => Confirmation::Late {
                        request_id: id.clone(),
                    },
                },
            );
            continue;
        }
        let Some(m) = here.get(&r.monitor_id) else {
            continue;
        };
        if r.ok || !m.regional_confirmation {
            continue;
        }
        let live = match &live {
            Some(l) => l,
            None => live.insert(
                crate::scheduler::confirm::LiveRegions::read_for(
                    &state.store,
                    &probe.workspace_id,
                    state.clock.now_ms(),
                )
                .await?,
            ),
        };
        let monitor = crate::scheduler::ScheduledMonitor::from_row(m);
        let timeout_ms = i64::try_from(monitor.timeout.as_millis()).unwrap_or(60_000);
        let deadline_at =
            record.checked_at + 2 * timeout_ms + crate::scheduler::confirm::DEADLINE_MARGIN_MS;
        // A failure sent late (buffered while the server was away) is too old to be
        // checked again elsewhere: it counts as it is.
        let target = (deadline_at > state.clock.now_ms() + STILL_ANSWERABLE_MS)
            .then(|| live.pick(&probe.workspace_id, &monitor.regions, &probe.location))
            .flatten();
        let Some(target) = target else {
            *record = annotate(record, serde_json::json!({"status": "unavailable"}));
            continue;
        };
        let every = i64::try_from(monitor.interval.as_millis())
            .unwrap_or(i64::MAX)
            .max(1);
        record.confirmation = Some(Confirmation::Ask(Box::new(Ask {
            id: crate::ids::new_id(crate::ids::prefix::CONFIRMATION),
            round: crate::scheduler::round_of(record.checked_at, monitor.phase_ms, every),
            target_region: target,
            deadline_at,
        })));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_silent_probe_moves_only_its_own_monitors() {
        let three: Vec<String> = vec!["prb_a".into(), "prb_b".into(), "prb_c".into()];
        let two: Vec<String> = vec!["prb_a".into(), "prb_c".into()];
        let mut moved = 0;
        let mut counts = HashMap::new();
        for i in 0..300 {
            let id = format!("mon_{i}");
            let before = owner(&id, &three).cloned();
            let after = owner(&id, &two).cloned();
            *counts.entry(before.clone()).or_insert(0) += 1;
            if before.as_deref() != Some("prb_b") {
                assert_eq!(before, after, "{id} moved though its probe is still there");
            } else {
                moved += 1;
            }
        }
        assert!(moved > 50, "prb_b had {moved} of 300");
        assert!(counts.values().all(|c| *c > 50), "{counts:?}");
    }
}
