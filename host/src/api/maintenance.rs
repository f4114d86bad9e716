//! `/v1/maintenance-windows`: planned work during which monitors' checks are kept but count
//! for nothing (no incident, no notification, no uptime). See `engine::maintenance`.

use super::AppState;
use super::envelope::{ListBody, NoContent, Paged, Pagination, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError, OrNotFound, Resource};
use super::extract::{ApiObject, ApiPath, ApiQuery};
use super::managed::DryRun;
use super::paging::{self, PageParams};
use crate::engine::maintenance::{MAX_DURATION_MINUTES, MAX_ONE_OFF_DAYS, Occurrence, Window};
use crate::ids;
use crate::store::keys::Principal;
use crate::store::maintenance::MaintenanceWindowRow;
use crate::store::managed::Declared;
use crate::time::{format_ms, parse_ms};
use axum::Extension;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::str::FromStr;
use utoipa::ToSchema;

/// Most windows a workspace keeps (each batch of checks reads them all).
pub const MAX_WINDOWS: u64 = 500;
/// Most monitors one window names.
pub const MAX_MONITORS: usize = 1000;
/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 2000;
/// How many upcoming occurrences a window shows.
pub const UPCOMING: usize = 5;
/// How long before an occurrence its subscribers are told, unless the window says.
pub const DEFAULT_NOTICE_MINUTES: i32 = 1440;
/// The longest notice (a week).
pub const MAX_NOTICE_MINUTES: i64 = 10_080;

/// One occurrence of a window.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OccurrenceBody {
    #[schema(example = "2026-11-29T01:00:00.000Z")]
    pub start: String,
    #[schema(example = "2026-11-29T03:00:00.000Z")]
    pub end: String,
}

impl From<Occurrence> for OccurrenceBody {
    fn from(o: Occurrence) -> Self {
        OccurrenceBody {
            start: format_ms(o.start),
            end: format_ms(o.end),
        }
    }
}

/// A maintenance window: one-off (`start`, `end`) or recurring (`rrule` or `cron`, each
/// occurrence lasting `durationMinutes`, read in `timezone`, from `start` until `end` if
/// given). It covers the monitors in `monitorIds`, the monitors with one of `tags`, or,
/// when both are empty, every monitor of the workspace.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct MaintenanceWindowBody {
    #[schema(read_only, example = "mw_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: Option<String>,
    /// 1 to 200 characters; shown on status pages.
    #[schema(example = "Database upgrade")]
    pub name: String,
    /// Up to 2000 characters; shown on status pages.
    #[schema(default = "")]
    pub description: Option<String>,
    /// ISO 8601. A one-off window's start; a recurring window's first possible occurrence
    /// (and, for `rrule`, the time of day and weekday its occurrences keep).
    #[schema(example = "2026-11-29T01:00:00Z")]
    pub start: String,
    /// ISO 8601. A one-off window's end (required; at most 366 days after `start`); a
    /// recurring window has no occurrence starting at or after it (optional).
    #[schema(example = "2026-11-29T03:00:00Z")]
    pub end: Option<String>,
    /// An RFC 5545 recurrence rule, at most hourly, e.g. `FREQ=WEEKLY;BYDAY=SU` (the
    /// `RRULE:` prefix is optional; `DTSTART` is `start`).
    #[schema(example = "FREQ=WEEKLY;BYDAY=SU")]
    pub rrule: Option<String>,
    /// A five-field cron expression, e.g. `0 2 * * 0`; give `rrule` or `cron`, not both.
    pub cron: Option<String>,
    /// How long each occurrence of a recurring window lasts, 1 to 10080 (a week).
    #[schema(example = 120)]
    pub duration_minutes: Option<i32>,
    /// The IANA time zone recurring schedules are read in.
    #[schema(default = "UTC", example = "Europe/Berlin")]
    pub timezone: Option<String>,
    /// Monitors covered (up to 1000).
    #[schema(default = json!([]))]
    pub monitor_ids: Option<Vec<String>>,
    /// Monitors with any of these tags are covered.
    #[schema(default = json!([]))]
    pub tags: Option<Vec<String>>,
    /// Your stable identifier for the window: 1 to 100 characters (letters, digits, `-`,
    /// `_`, `.`, `:`, `/`), unique among the workspace's windows (409 `CONFLICT`).
    /// Configuration files (`tocsin apply`) match windows by it.
    pub key: Option<String>,
    /// The tool that owns the window (`tocsin apply` sets `tocsin-apply`).
    pub managed_by: Option<String>,
    /// Minutes before each occurrence starts that the subscribers of the public status
    /// pages showing a monitor it covers are told of it (`status_page.maintenance`,
    /// `phase: "scheduled"`); they are told again when it ends (`"ended"`). 0 to 10080;
    /// 0 tells nobody.
    #[schema(default = 1440, example = 1440)]
    pub subscriber_notice_minutes: Option<i32>,
    /// Whether the window is in force now.
    #[schema(read_only)]
    pub active: Option<bool>,
    /// The occurrence in force now (overlapping occurrences joined), or null.
    #[schema(read_only)]
    pub current: Option<OccurrenceBody>,
    /// The next occurrences that have not started yet, up to five within a year.
    #[schema(read_only)]
    pub upcoming: Option<Vec<OccurrenceBody>>,
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

/// The occurrence of `w` in force at `now`, overlapping ones joined.
pub fn current(w: &Window, now: i64) -> Option<Occurrence> {
    let end = w.active_until(now)?;
    let start = w
        .occurrences(now, now + 1, 100)
        .iter()
        .map(|o| o.start)
        .min()
        .unwrap_or(now);
    Some(Occurrence { start, end })
}

/// Occurrences of `w` that start after `now`, at most `limit`.
pub fn upcoming(w: &Window, now: i64, limit: usize) -> Vec<Occurrence> {
    w.upcoming(now, limit + 2)
        .into_iter()
        .filter(|o| o.start > now)
        .take(limit)
        .collect()
}

fn json_list(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}

pub(crate) fn view(row: &MaintenanceWindowRow, now: i64) -> MaintenanceWindowBody {
    let window = Window::from_row(row).ok();
    let current = window.as_ref().and_then(|w| current(w, now));
    MaintenanceWindowBody {
        id: Some(row.id.clone()),
        name: row.name.clone(),
        description: Some(row.description.clone()),
        start: format_ms(row.starts_at),
        end: row.ends_at.map(format_ms),
        rrule: row.rrule.clone(),
        cron: row.cron.clone(),
        duration_minutes: row.duration_minutes,
        timezone: Some(row.timezone.clone()),
        monitor_ids: Some(json_list(&row.monitor_ids)),
        tags: Some(json_list(&row.tags)),
        key: row.apply_key.clone(),
        managed_by: row.managed_by.clone(),
        subscriber_notice_minutes: Some(row.subscriber_notice_minutes),
        active: Some(current.is_some()),
        current: current.map(Into::into),
        upcoming: Some(
            window
                .as_ref()
                .map(|w| upcoming(w, now, UPCOMING))
                .unwrap_or_default()
                .into_iter()
                .map(Into::into)
                .collect(),
        ),
        created_at: Some(format_ms(row.created_at)),
        updated_at: Some(format_ms(row.updated_at)),
    }
}

/// A time field: ISO 8601, or null where `nullable`.
fn time_field(
    key: &str,
    value: &Value,
    nullable: bool,
    errors: &mut Vec<FieldError>,
) -> Option<Option<i64>> {
    match value {
        Value::Null if nullable => Some(None),
        Value::String(s) => match parse_ms(s) {
            Some(ms) => Some(Some(ms)),
            None => {
                errors.push(FieldError::new(
                    key,
                    "must be an ISO 8601 time such as 2026-11-29T01:00:00Z",
                ));
                None
            }
        },
        _ => {
            errors.push(FieldError::new(key, "must be an ISO 8601 time"));
            None
        }
    }
}

/// An optional text field: a non-empty string, or null to clear it.
fn text_field(
    key: &str,
    value: &Value,
    max: usize,
    errors: &mut Vec<FieldError>,
) -> Option<Option<String>> {
    match value {
        Value::Null => Some(None),
        Value::String(s) if !s.trim().is_empty() && s.len() <= max => {
            Some(Some(s.trim().to_string()))
        }
        _ => {
            errors.push(FieldError::new(
                key,
                format!("must be a non-empty string of up to {max} characters, or null"),
            ));
            None
        }
    }
}

/// Apply a body's fields to `row`, checking each and then the schedule as a whole.
/// `creating` requires name and start.
async fn apply(
    state: &AppState,
    p: &Principal,
    row: &mut MaintenanceWindowRow,
    object: &Map<String, Value>,
    creating: bool,
) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    for required in ["name", "start"] {
        if creating && !object.contains_key(required) {
            errors.push(FieldError::new(required, "is required"));
        }
    }
    let managed = super::managed::read(object, &mut errors);
    if object.contains_key("key") {
        row.apply_key = managed.key;
    }
    if object.contains_key("managedBy") {
        row.managed_by = managed.managed_by;
    }
    let mut monitor_ids: Option<Vec<String>> = None;
    for (key, value) in object {
        match key.as_str() {
            "key" | "managedBy" => {}
            "name" => {
                if let Some(n) = super::fields::name(Some(value), &mut errors) {
                    row.name = n;
                }
            }
            "description" => match value {
                Value::Null => row.description = String::new(),
                Value::String(d) if d.chars().count() <= MAX_DESCRIPTION_CHARS => {
                    row.description = d.trim().to_string()
                }
                _ => errors.push(FieldError::new(
                    "description",
                    format!("must be a string of up to {MAX_DESCRIPTION_CHARS} characters"),
                )),
            },
            "start" => {
                if let Some(Some(ms)) = time_field("start", value, false, &mut errors) {
                    row.starts_at = ms;
                }
            }
            "end" => {
                if let Some(end) = time_field("end", value, true, &mut errors) {
                    row.ends_at = end;
                }
            }
            "rrule" => {
                if let Some(r) = text_field("rrule", value, 500, &mut errors) {
                    row.rrule = r;
                }
            }
            "cron" => {
                if let Some(c) = text_field("cron", value, 200, &mut errors) {
                    row.cron = c;
                }
            }
            "durationMinutes" => match value {
                Value::Null => row.duration_minutes = None,
                v => match v.as_i64() {
                    Some(m) if (1..=MAX_DURATION_MINUTES).contains(&m) => {
                        row.duration_minutes = i32::try_from(m).ok()
                    }
                    _ => errors.push(FieldError::new(
                        "durationMinutes",
                        format!(
                            "must be a whole number of minutes from 1 to {MAX_DURATION_MINUTES}"
                        ),
                    )),
                },
            },
            "timezone" => match value.as_str() {
                Some(tz) if chrono_tz::Tz::from_str(tz).is_ok() => row.timezone = tz.to_string(),
                _ => errors.push(FieldError::new(
                    "timezone",
                    "must be an IANA time zone such as Europe/Berlin or UTC",
                )),
            },
            "monitorIds" => match value {
                Value::Null => monitor_ids = Some(Vec::new()),
                Value::Array(items) if items.len() <= MAX_MONITORS => {
                    let mut list: Vec<String> = Vec::new();
                    for item in items {
                        match item.as_str() {
                            Some(id) if !list.iter().any(|i| i == id) => list.push(id.to_string()),
                            Some(_) => {}
                            None => {
                                errors.push(FieldError::new(
                                    "monitorIds",
                                    "must be a list of monitor ids",
                                ));
                                break;
                            }
                        }
                    }
                    monitor_ids = Some(list);
                }
                _ => errors.push(FieldError::new(
                    "monitorIds",
                    format!("must be a list of up to {MAX_MONITORS} monitor ids"),
                )),
            },
            "subscriberNoticeMinutes" => match value.as_i64() {
                Some(m) if (0..=MAX_NOTICE_MINUTES).contains(&m) => {
                    row.subscriber_notice_minutes = i32::try_from(m).unwrap_or(0)
                }
                _ if value.is_null() => row.subscriber_notice_minutes = DEFAULT_NOTICE_MINUTES,
                _ => errors.push(FieldError::new(
                    "subscriberNoticeMinutes",
                    format!(
                        "must be a whole number of minutes from 0 (tell nobody) to {MAX_NOTICE_MINUTES}"
                    ),
                )),
            },
            "tags" => {
                let tags = super::monitor_input::tags_field(Some(value), &mut errors);
                row.tags = serde_json::to_string(&tags).unwrap_or_else(|_| "[]".into());
            }
            "id" | "active" | "current" | "upcoming" | "createdAt" | "updatedAt" => {
                errors.push(FieldError::new(key, "is read-only"))
            }
            _ => errors.push(FieldError::new(
                key,
                "is not a field of a maintenance window",
            )),
        }
    }
    paging::finish(errors)?;
    check_schedule(row)?;
    if let Some(list) = monitor_ids {
        let found = state
            .store
            .monitors_in_workspace(&p.workspace_id, list.clone())
            .await?;
        if let Some(missing) = list.iter().find(|id| !found.iter().any(|m| &m.id == *id)) {
            return Err(ApiError::unprocessable(format!(
                "No monitor with id `{missing}` in this workspace"
            )));
        }
        row.monitor_ids = serde_json::to_string(&list).unwrap_or_else(|_| "[]".into());
    }
    Ok(())
}

/// The schedule as a whole: an end after the start, a one-off window of bounded length,
/// a recurring one with a duration, a rule or cron expression that parses.
fn check_schedule(row: &MaintenanceWindowRow) -> Result<(), ApiError> {
    let recurring = row.rrule.is_some() || row.cron.is_some();
    let problem =
        |field: &str, message: &str| ApiError::validation(vec![FieldError::new(field, message)]);
    if let Some(end) = row.ends_at
        && end <= row.starts_at
    {
        return Err(problem("end", "must be after `start`"));
    }
    if !recurring {
        if row.duration_minutes.is_some() {
            return Err(problem(
                "durationMinutes",
                "applies to a recurring window (with `rrule` or `cron`); a one-off window runs from `start` to `end`",
            ));
        }
        if let Some(end) = row.ends_at
            && end - row.starts_at > MAX_ONE_OFF_DAYS * 86_400_000
        {
            return Err(problem(
                "end",
                "must be at most 366 days after `start`; use a recurring window for longer",
            ));
        }
    }
    Window::from_row(row)
        .map(|_| ())
        .map_err(|(field, message)| ApiError::validation(vec![FieldError::new(field, message)]))
}

/// A window with every field at its default, before a body's fields are applied (a
/// creation, or a PUT's replacement).
fn blank(id: String, workspace_id: String, created_at: i64) -> MaintenanceWindowRow {
    MaintenanceWindowRow {
        id,
        workspace_id,
        name: String::new(),
        description: String::new(),
        starts_at: created_at,
        ends_at: None,
        rrule: None,
        cron: None,
        duration_minutes: None,
        timezone: "UTC".into(),
        monitor_ids: "[]".into(),
        tags: "[]".into(),
        created_at,
        updated_at: created_at,
        apply_key: None,
        managed_by: None,
        subscriber_notice_minutes: DEFAULT_NOTICE_MINUTES,
    }
}

async fn find(state: &AppState, p: &Principal, id: &str) -> Result<MaintenanceWindowRow, ApiError> {
    state
        .store
        .maintenance_window(&p.workspace_id, id)
        .await?
        .or_not_found(Resource::MAINTENANCE_WINDOW, id)
}

/// Create a maintenance window.
#[utoipa::path(post, path = "/v1/maintenance-windows", tag = "maintenance", request_body = MaintenanceWindowBody, params(DryRun),
    responses(
        (status = 201, description = "The window", body = SuccessBody<MaintenanceWindowBody>),
        (status = 200, description = "With `dryRun=true`: the window as it would be created; nothing was saved", body = SuccessBody<MaintenanceWindowBody>),
        (status = 409, description = "CONFLICT: another window has this key", body = ErrorBody),
        (status = 400, description = "Invalid fields or schedule", body = ErrorBody),
        (status = 422, description = "A monitor id is not in the workspace, or the workspace has 500 windows", body = ErrorBody),
    ))]
pub async fn create_window(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(object): ApiObject,
) -> Result<Success<MaintenanceWindowBody>, ApiError> {
    let now = state.clock.now_ms();
    let mut row = blank(
        ids::new_id(ids::prefix::MAINTENANCE_WINDOW),
        p.workspace_id.clone(),
        now,
    );
    apply(&state, &p, &mut row, &object, true).await?;
    let kind = Declared::MaintenanceWindow;
    super::managed::check_key_free(
        &state,
        kind,
        &p.workspace_id,
        row.apply_key.as_deref(),
        None,
    )
    .await?;
    if state
        .store
        .count_maintenance_windows(&p.workspace_id)
        .await?
        >= MAX_WINDOWS
    {
        return Err(ApiError::unprocessable(format!(
            "A workspace keeps at most {MAX_WINDOWS} maintenance windows; delete some that have ended"
        )));
    }
    if dry.on() {
        return Ok(Success::ok(view(&row, now)));
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "maintenance_window.create",
            "maintenance_window",
            Some(&row.id),
        )
        .after(view(&row, now)),
    );
    let key = row.apply_key.clone();
    let saved = super::managed::or_key_taken(
        state.store.insert_maintenance_window(row).await,
        kind,
        key.as_deref(),
    )?;
    Ok(Success::created(view(&saved, now)))
}

/// List the workspace's maintenance windows, newest first.
#[utoipa::path(get, path = "/v1/maintenance-windows", tag = "maintenance", params(PageParams),
    responses((status = 200, description = "A page of windows", body = ListBody<MaintenanceWindowBody>)))]
pub async fn list_windows(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(pg): ApiQuery<PageParams>,
) -> Result<Paged<MaintenanceWindowBody>, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    paging::finish(errors)?;
    let now = state.clock.now_ms();
    let (rows, total) = state
        .store
        .list_maintenance_windows(&p.workspace_id, page)
        .await?;
    Ok(Paged {
        items: rows.iter().map(|r| view(r, now)).collect(),
        pagination: Pagination::new(page, total),
    })
}

/// Get a maintenance window.
#[utoipa::path(get, path = "/v1/maintenance-windows/{id}", tag = "maintenance", params(("id" = String, Path, description = "Maintenance window id")),
    responses(
        (status = 200, description = "The window", body = SuccessBody<MaintenanceWindowBody>),
        (status = 404, description = "MAINTENANCE_WINDOW_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn get_window(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<MaintenanceWindowBody>, ApiError> {
    let row = find(&state, &p, &id).await?;
    Ok(Success::ok(view(&row, state.clock.now_ms())))
}

/// Change a maintenance window; absent fields keep their values (null clears `end`,
/// `rrule`, `cron` and `durationMinutes`). Ending a window early is a PATCH of `end`.
#[utoipa::path(patch, path = "/v1/maintenance-windows/{id}", tag = "maintenance", params(("id" = String, Path, description = "Maintenance window id"), DryRun),
    request_body = MaintenanceWindowBody,
    responses(
        (status = 200, description = "The window (with `dryRun=true`: as it would be; nothing was saved)", body = SuccessBody<MaintenanceWindowBody>),
        (status = 400, description = "Invalid fields or schedule", body = ErrorBody),
        (status = 404, description = "MAINTENANCE_WINDOW_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: another window has this key", body = ErrorBody),
        (status = 422, description = "A monitor id is not in the workspace", body = ErrorBody),
    ))]
pub async fn update_window(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(object): ApiObject,
) -> Result<Success<MaintenanceWindowBody>, ApiError> {
    edit(&state, &p, &id, dry.on(), &object, false).await
}

/// Replace a maintenance window's fields: the body is a complete window (`name` and
/// `start` required), and fields it leaves out take their defaults.
#[utoipa::path(put, path = "/v1/maintenance-windows/{id}", tag = "maintenance", params(("id" = String, Path, description = "Maintenance window id"), DryRun),
    request_body = MaintenanceWindowBody,
    responses(
        (status = 200, description = "The window as replaced (with `dryRun=true`: as it would be; nothing was saved)", body = SuccessBody<MaintenanceWindowBody>),
        (status = 400, description = "Invalid fields or schedule", body = ErrorBody),
        (status = 404, description = "MAINTENANCE_WINDOW_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: another window has this key", body = ErrorBody),
        (status = 422, description = "A monitor id is not in the workspace", body = ErrorBody),
    ))]
pub async fn replace_window(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(object): ApiObject,
) -> Result<Success<MaintenanceWindowBody>, ApiError> {
    edit(&state, &p, &id, dry.on(), &object, true).await
}

/// An edit: a PATCH's fields applied to the stored window, or a PUT's complete window.
async fn edit(
    state: &AppState,
    p: &Principal,
    id: &str,
    dry_run: bool,
    object: &Map<String, Value>,
    replace: bool,
) -> Result<Success<MaintenanceWindowBody>, ApiError> {
    let now = state.clock.now_ms();
    let mut row = find(state, p, id).await?;
    let before = view(&row, now);
    if replace {
        row = MaintenanceWindowRow {
            starts_at: row.starts_at,
            updated_at: row.updated_at,
            ..blank(row.id, row.workspace_id, row.created_at)
        };
    }
    apply(state, p, &mut row, object, replace).await?;
    let kind = Declared::MaintenanceWindow;
    let own = Some(row.id.as_str());
    super::managed::check_key_free(state, kind, &p.workspace_id, row.apply_key.as_deref(), own)
        .await?;
    row.updated_at = now;
    if dry_run {
        return Ok(Success::ok(view(&row, now)));
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "maintenance_window.update",
            "maintenance_window",
            Some(id),
        )
        .before(before)
        .after(view(&row, now)),
    );
    let key = row.apply_key.clone();
    let saved = super::managed::or_key_taken(
        state.store.update_maintenance_window(row).await,
        kind,
        key.as_deref(),
    )?;
    Ok(Success::ok(view(&saved, now)))
}

/// Delete a maintenance window; monitors it covered count again at once.
#[utoipa::path(delete, path = "/v1/maintenance-windows/{id}", tag = "maintenance", params(("id" = String, Path, description = "Maintenance window id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "MAINTENANCE_WINDOW_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn delete_window(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "maintenance_window.delete",
        "maintenance_window",
        Some(&id),
    ));
    if state
        .store
        .delete_maintenance_window(&p.workspace_id, &id)
        .await?
    {
        Ok(NoContent)
    } else {
        crate::store::audit::discard();
        Err(Resource::MAINTENANCE_WINDOW.not_found(&id))
    }
}
