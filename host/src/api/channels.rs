//! `/v1/channels`: stored notification channels, and a test button.

use super::AppState;
use super::channel_input;
use super::deliveries::{self, DeliveryView};
use super::envelope::{ListBody, NoContent, Paged, Pagination, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError, OrNotFound, Resource};
use super::extract::{ApiObject, ApiPath, ApiQuery};
use super::managed::{DryRun, Managed};
use super::paging::{self, PageParams};
use crate::ids;
use crate::outbox::{self, Origin, Target, events};
use crate::store::alerting::{ChannelDeletion, ChannelRow};
use crate::store::keys::Principal;
use crate::store::managed::Declared;
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::Duration;
use utoipa::ToSchema;

/// How long the test button waits for the first attempt to finish.
const TEST_WAIT: Duration = Duration::from_secs(15);

/// A stored channel.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct ChannelBody {
    #[schema(read_only, example = "ch_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: Option<String>,
    /// Unique within the workspace.
    pub name: String,
    /// `email`, `telegram`, `webhook`, or a type a loaded plugin provides.
    #[serde(rename = "type")]
    pub kind: String,
    /// email: recipient address.
    pub target: Option<String>,
    /// telegram: chat id.
    pub chat_id: Option<String>,
    /// telegram: bot token, write-only (defaults to the server's).
    #[schema(write_only)]
    pub bot_token: Option<String>,
    /// webhook: HTTPS URL.
    pub url: Option<String>,
    /// Your stable identifier for the channel: 1 to 100 characters (letters, digits, `-`,
    /// `_`, `.`, `:`, `/`), unique among the workspace's channels (409 `CONFLICT`).
    /// Configuration files (`tocsin apply`) match channels by it.
    pub key: Option<String>,
    /// The tool that owns the channel (`tocsin apply` sets `tocsin-apply`).
    pub managed_by: Option<String>,
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

/// A stored channel as the API shows it: its type's settings beside the common fields,
/// write-only ones (a bot token) left out.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelView {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(flatten)]
    pub settings: Map<String, Value>,
    pub key: Option<String>,
    pub managed_by: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

fn view(state: &AppState, row: &ChannelRow) -> ChannelView {
    ChannelView {
        id: row.id.clone(),
        name: row.name.clone(),
        kind: row.kind.clone(),
        settings: channel_input::visible(&state.plugins.channel_secrets(&row.kind), &row.config),
        key: row.apply_key.clone(),
        managed_by: row.managed_by.clone(),
        created_at: crate::time::format_ms(row.created_at),
        updated_at: crate::time::format_ms(row.updated_at),
    }
}

/// The view as `p` may see it (a read key does not see what the type's schema marks
/// secret: a webhook URL keeps its origin only).
fn view_for(state: &AppState, p: &Principal, row: &ChannelRow) -> ChannelView {
    let mut v = view(state, row);
    if super::redact::applies(p) {
        let secrets = state.plugins.channel_secrets(&row.kind);
        super::redact::channel_settings(&secrets, &mut v.settings);
    }
    v
}

/// A channel's view as the audit log keeps it: secrets redacted.
fn audited(state: &AppState, row: &ChannelRow) -> Value {
    super::redact::audit::channel(&state.plugins.channel_secrets(&row.kind), &view(state, row))
}

async fn find(state: &AppState, p: &Principal, id: &str) -> Result<ChannelRow, ApiError> {
    state
        .store
        .channel(&p.workspace_id, id)
        .await?
        .or_not_found(Resource::CHANNEL, id)
}

/// A channel object as validated.
struct Validated {
    name: String,
    kind: String,
    /// The type's settings, normalised (JSON text).
    config: String,
    managed: Managed,
}

/// Validate a full channel object.
async fn validate(state: &AppState, object: Map<String, Value>) -> Result<Validated, ApiError> {
    let mut errors = Vec::new();
    let name = super::fields::name(object.get("name"), &mut errors).unwrap_or_default();
    let managed = super::managed::read(&object, &mut errors);
    let kind = match object.get("type") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => {
            errors.push(FieldError::new(
                "type",
                "is required: email, telegram, webhook or a plugin's channel type",
            ));
            String::new()
        }
    };
    for ro in ["id", "createdAt", "updatedAt"] {
        if object.contains_key(ro) {
            errors.push(FieldError::new(ro, "is read-only"));
        }
    }
    paging::finish(errors)?;
    let mut settings = object;
    for common in ["name", "type", "key", "managedBy"] {
        settings.remove(common);
    }
    let config = channel_input::validate_settings(state, &kind, settings, "").await?;
    Ok(Validated {
        name,
        kind,
        config,
        managed,
    })
}

fn conflict(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "CONFLICT",
        format!("A channel named `{name}` already exists in this workspace"),
    )
}

/// Create a stored channel.
#[utoipa::path(post, path = "/v1/channels", tag = "channels", request_body = ChannelBody, params(DryRun),
    responses(
        (status = 201, description = "The created channel", body = SuccessBody<ChannelBody>),
        (status = 200, description = "With `dryRun=true`: the channel as it would be created; nothing was saved", body = SuccessBody<ChannelBody>),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 403, description = "PLAN_UPGRADE_REQUIRED: the plan's channel count is reached", body = ErrorBody),
        (status = 409, description = "CONFLICT: the name or the key is taken", body = ErrorBody),
        (status = 422, description = "No plugin provides the type", body = ErrorBody),
    ))]
pub async fn create_channel(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(object): ApiObject,
) -> Result<Success<ChannelView>, ApiError> {
    let Validated {
        name,
        kind,
        config,
        managed,
    } = validate(&state, object).await?;
    super::quota::room_for(&state, &p.workspace_id, crate::plans::Counted::Channels).await?;
    let k = Declared::Channel;
    super::managed::check_key_free(&state, k, &p.workspace_id, managed.key.as_deref(), None)
        .await?;
    let now = state.clock.now_ms();
    let row = ChannelRow {
        id: ids::new_id(ids::prefix::CHANNEL),
        workspace_id: p.workspace_id.clone(),
        name: name.clone(),
        kind,
        config,
        created_at: now,
        updated_at: now,
        apply_key: managed.key,
        managed_by: managed.managed_by,
    };
    if dry.on() {
        return Ok(Success::ok(view(&state, &row)));
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "channel.create",
            "channel",
            Some(&row.id),
        )
        .after(audited(&state, &row)),
    );
    let saved =
        super::error::or_conflict(state.store.insert_channel(row).await, || conflict(&name))?;
    Ok(Success::created(view(&state, &saved)))
}

/// List stored channels, newest first.
#[utoipa::path(get, path = "/v1/channels", tag = "channels", params(PageParams),
    responses((status = 200, description = "A page of channels", body = ListBody<ChannelBody>)))]
pub async fn list_channels(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(pg): ApiQuery<PageParams>,
) -> Result<Paged<ChannelView>, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    paging::finish(errors)?;
    let (rows, total) = state.store.list_channels(&p.workspace_id, page).await?;
    Ok(Paged {
        items: rows.iter().map(|r| view_for(&state, &p, r)).collect(),
        pagination: Pagination::new(page, total),
    })
}

/// Get a stored channel (write-only settings are not shown).
#[utoipa::path(get, path = "/v1/channels/{id}", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses(
        (status = 200, description = "The channel", body = SuccessBody<ChannelBody>),
        (status = 404, description = "CHANNEL_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn get_channel(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<ChannelView>, ApiError> {
    Ok(Success::ok(view_for(
        &state,
        &p,
        &find(&state, &p, &id).await?,
    )))
}

/// Change a stored channel; absent fields keep their values (`type` cannot change).
#[utoipa::path(patch, path = "/v1/channels/{id}", tag = "channels", params(("id" = String, Path, description = "Channel id"), DryRun),
    request_body(content = Object, description = "Fields to change, as in ChannelBody"),
    responses(
        (status = 200, description = "The updated channel (with `dryRun=true`: as it would be; nothing was saved)", body = SuccessBody<ChannelBody>),
        (status = 400, description = "Invalid fields, or a write-only value (a password, a token) not given again although its target (host, port, URL origin) changed", body = ErrorBody),
        (status = 404, description = "CHANNEL_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: the name or the key is taken", body = ErrorBody),
    ))]
pub async fn update_channel(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(patch): ApiObject,
) -> Result<Success<ChannelView>, ApiError> {
    edit(&state, &p, &id, dry.on(), patch, false).await
}

/// Replace a stored channel's fields: the body is a complete channel, and settings it
/// leaves out take their defaults (write-only ones, such as a bot token, keep their stored
/// values; `type` cannot change).
#[utoipa::path(put, path = "/v1/channels/{id}", tag = "channels", params(("id" = String, Path, description = "Channel id"), DryRun),
    request_body = ChannelBody,
    responses(
        (status = 200, description = "The channel as replaced (with `dryRun=true`: as it would be; nothing was saved)", body = SuccessBody<ChannelBody>),
        (status = 400, description = "Invalid fields, or a write-only value (a password, a token) not given again although its target (host, port, URL origin) changed", body = ErrorBody),
        (status = 404, description = "CHANNEL_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: the name or the key is taken", body = ErrorBody),
    ))]
pub async fn replace_channel(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(body): ApiObject,
) -> Result<Success<ChannelView>, ApiError> {
    edit(&state, &p, &id, dry.on(), body, true).await
}

/// An edit: a PATCH merged into the stored fields, or a PUT's complete object.
async fn edit(
    state: &AppState,
    p: &Principal,
    id: &str,
    dry_run: bool,
    patch: Map<String, Value>,
    replace: bool,
) -> Result<Success<ChannelView>, ApiError> {
    let row = find(state, p, id).await?;
    if patch
        .get("type")
        .is_some_and(|t| t.as_str() != Some(row.kind.as_str()))
    {
        return Err(ApiError::validation(vec![FieldError::new(
            "type",
            "cannot be changed; create a new channel instead",
        )]));
    }
    let stored: Map<String, Value> = serde_json::from_str(&row.config).unwrap_or_default();
    let secrets = state.plugins.channel_secrets(&row.kind);
    let given = patch.clone();
    let mut merged = if replace {
        // Only the write-only settings, which the API never shows, carry over.
        let write_only = secrets.write_only_fields();
        stored
            .clone()
            .into_iter()
            .filter(|(k, _)| write_only.contains(k))
            .collect()
    } else {
        let mut m = stored.clone();
        m.insert("name".into(), Value::from(row.name.clone()));
        super::managed::editable(&mut m, &row.apply_key, &row.managed_by);
        m
    };
    merged.insert("type".into(), Value::from(row.kind.clone()));
    for (k, v) in patch {
        merged.insert(k, v);
    }
    let Validated {
        name,
        config,
        managed,
        ..
    } = validate(state, merged).await?;
    let new: Map<String, Value> = serde_json::from_str(&config).unwrap_or_default();
    super::redact::secrets_follow_target(&secrets, &stored, &new, &given, "")?;
    let own = Some(row.id.as_str());
    let k = Declared::Channel;
    super::managed::check_key_free(state, k, &p.workspace_id, managed.key.as_deref(), own).await?;
    let before = row.clone();
    let updated = ChannelRow {
        name: name.clone(),
        config,
        apply_key: managed.key,
        managed_by: managed.managed_by,
        updated_at: state.clock.now_ms(),
        ..row
    };
    if dry_run {
        return Ok(Success::ok(view(state, &updated)));
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "channel.update",
            "channel",
            Some(&updated.id),
        )
        .before(audited(state, &before))
        .after(audited(state, &updated)),
    );
    let saved = super::error::or_conflict(state.store.update_channel(updated).await, || {
        conflict(&name)
    })?;
    Ok(Success::ok(view(state, &saved)))
}

/// Delete a stored channel. A channel that alert policies use is kept: 409 names them.
#[utoipa::path(delete, path = "/v1/channels/{id}", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "CHANNEL_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: alert policies use the channel (the message names them)", body = ErrorBody),
    ))]
pub async fn delete_channel(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    let before = find(&state, &p, &id).await?;
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "channel.delete",
            "channel",
            Some(&id),
        )
        .before(audited(&state, &before)),
    );
    match state.store.delete_channel(&p.workspace_id, &id).await? {
        ChannelDeletion::Deleted => Ok(NoContent),
        ChannelDeletion::NotFound => Err(Resource::CHANNEL.not_found(&id)),
        ChannelDeletion::InUse(policies) => {
            let named: Vec<String> = policies
                .iter()
                .map(|(pid, name)| format!("`{name}` ({pid})"))
                .collect();
            Err(ApiError::new(
                StatusCode::CONFLICT,
                "CONFLICT",
                format!(
                    "Channel {id} is used by alert {} {}; remove it from {} first",
                    if named.len() == 1 {
                        "policy"
                    } else {
                        "policies"
                    },
                    crate::text::and_list(&named),
                    if named.len() == 1 { "it" } else { "them" },
                ),
            ))
        }
    }
}

/// Send a test notification now: an `incident.created` event marked `"test": true`. Answers
/// with the delivery record after its first attempt (or after 15 s, still pending).
#[utoipa::path(post, path = "/v1/channels/{id}/test", tag = "channels", params(("id" = String, Path, description = "Channel id")),
    responses(
        (status = 200, description = "The test delivery", body = SuccessBody<DeliveryView>),
        (status = 404, description = "CHANNEL_NOT_FOUND", body = ErrorBody),
        (status = 429, description = "RATE_LIMITED: the workspace's test notifications (6 a minute, 3 at once)", body = ErrorBody),
    ))]
pub async fn test_channel(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<DeliveryView>, ApiError> {
    let ch = find(&state, &p, &id).await?;
    let now = state.clock.now_ms();
    let allowance = state.limits.channel_tests.check(&p.workspace_id, now);
    if !allowance.allowed {
        return Err(allowance.refusal("This workspace's test button"));
    }
    let ws = state
        .store
        .workspace(&p.workspace_id)
        .await?
        .ok_or_else(|| ApiError::internal("workspace vanished"))?;
    let body = events::test_event(
        now,
        &state.config.public_url,
        &ws.id,
        &ws.name,
        &state.config.region,
    );
    let target = Target {
        kind: ch.kind.clone(),
        config: ch.config.clone(),
        channel_id: Some(ch.id.clone()),
    };
    let tx = state.store.begin_write().await?;
    let delivery_id = outbox::enqueue(
        &tx,
        &Origin {
            workspace_id: &ws.id,
            incident_id: None,
            monitor_id: None,
        },
        &target,
        &body,
        now,
    )
    .await?;
    tx.commit().await?;
    state.engine.outbox_wakeup.notify_one();
    let deadline = tokio::time::Instant::now() + TEST_WAIT;
    loop {
        let d = state
            .store
            .delivery(&p.workspace_id, &delivery_id)
            .await?
            .ok_or_else(|| ApiError::internal("test delivery vanished"))?;
        if d.attempts > 0 || tokio::time::Instant::now() >= deadline {
            let attempts = state.store.delivery_attempts(&d.id).await?;
            return Ok(Success::ok(deliveries::view(&d, Some(&attempts))));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
