//! `/v1/status-pages/{id}/updates` and `/v1/status-pages/{id}/subscribers`: what a
//! workspace tells a status page's visitors (investigating, identified, monitoring,
//! resolved), and who has subscribed to hear it. Each update reaches the page's confirmed
//! subscribers through the outbox, in the transaction that stores it.

use super::AppState;
use super::envelope::{ListBody, NoContent, Paged, Pagination, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError, OrNotFound, Resource};
use super::extract::{ApiObject, ApiPath, ApiQuery};
use super::paging::{self, PageParams};
use crate::ids;
use crate::outbox::subscribers;
use crate::store::keys::Principal;
use crate::store::status_pages::StatusPageRow;
use crate::store::subscriptions::{StatusUpdateEdit, StatusUpdateRow, SubscriberRow};
use axum::Extension;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// The states an update may give.
pub const STATUSES: [&str; 4] = ["investigating", "identified", "monitoring", "resolved"];
/// Longest update text.
pub const MAX_BODY_CHARS: usize = 5000;

/// An update on a status page.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct StatusUpdateBody {
    #[schema(read_only, example = "upd_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: Option<String>,
    /// `investigating`, `identified`, `monitoring` or `resolved`.
    #[schema(example = "identified")]
    pub status: String,
    /// What visitors read, 1 to 5000 characters (plain text).
    #[schema(example = "A failed disk slows the database; we are moving it to a replica.")]
    pub body: String,
    /// The incident it is about, if any (an incident of the workspace).
    pub incident_id: Option<String>,
    /// How many confirmed subscribers it was sent to.
    #[schema(read_only)]
    pub sent_to: Option<usize>,
    #[schema(read_only)]
    pub created_at: Option<String>,
    /// When the update was last edited; null when never.
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

fn update_view(u: &StatusUpdateRow, sent_to: Option<usize>) -> StatusUpdateBody {
    StatusUpdateBody {
        id: Some(u.id.clone()),
        status: u.status.clone(),
        body: u.body.clone(),
        incident_id: u.incident_id.clone(),
        sent_to,
        created_at: Some(crate::time::format_ms(u.created_at)),
        updated_at: u.updated_at.map(crate::time::format_ms),
    }
}

/// A subscriber of a status page.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriberView {
    #[schema(example = "sub_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: String,
    /// `email` or `webhook`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The address or URL.
    pub target: String,
    /// An e-mail subscriber hears nothing until they follow the confirmation link; a
    /// webhook subscriber nothing until a member approves it
    /// (`POST /v1/status-pages/{id}/subscribers/{subscriberId}/approve`).
    pub confirmed: bool,
    pub created_at: String,
}

fn subscriber_view(s: &SubscriberRow) -> SubscriberView {
    SubscriberView {
        id: s.id.clone(),
        kind: s.kind.clone(),
        target: s.target.clone(),
        confirmed: s.confirmed,
        created_at: crate::time::format_ms(s.created_at),
    }
}

async fn page_of(state: &AppState, p: &Principal, id: &str) -> Result<StatusPageRow, ApiError> {
    state
        .store
        .status_page(&p.workspace_id, id)
        .await?
        .or_not_found(Resource::STATUS_PAGE, id)
}

/// Post an update to a status page; its confirmed subscribers receive it.
#[utoipa::path(post, path = "/v1/status-pages/{id}/updates", tag = "status-pages",
    params(("id" = String, Path, description = "Status page id")),
    request_body = StatusUpdateBody,
    responses(
        (status = 201, description = "The update", body = SuccessBody<StatusUpdateBody>),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND", body = ErrorBody),
        (status = 422, description = "The incident is not in the workspace", body = ErrorBody),
    ))]
pub async fn create_update(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiObject(object): ApiObject,
) -> Result<Success<StatusUpdateBody>, ApiError> {
    let page = page_of(&state, &p, &id).await?;
    let fields = read_fields(&state, &p, &object, true).await?;
    let (Some(status), Some(body)) = (fields.status, fields.body) else {
        return Err(ApiError::internal(
            "a whole update was read without its fields",
        ));
    };
    let incident_id = fields.incident_id.flatten();
    let now = state.clock.now_ms();
    let row = StatusUpdateRow {
        id: ids::new_id(ids::prefix::STATUS_UPDATE),
        workspace_id: p.workspace_id.clone(),
        page_id: page.id.clone(),
        incident_id,
        status,
        body,
        created_at: now,
        updated_at: None,
    };
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "status_update.create",
            "status_update",
            Some(&row.id),
        )
        .after(update_view(&row, None)),
    );
    let txn = state.store.begin_write().await?;
    txn.insert_status_update(row.clone()).await?;
    let sent = if page.public {
        subscribers::announce_update(&txn, &state.config.public_url, &page, &row, now).await?
    } else {
        0
    };
    txn.commit().await?;
    Ok(Success::created(update_view(&row, Some(sent))))
}

/// What a request gives of an update: on a new one every field it must have, on an edit
/// the fields it changes (`incident_id`: Some(None) clears it).
struct UpdateFields {
    status: Option<String>,
    body: Option<String>,
    incident_id: Option<Option<String>>,
}

async fn read_fields(
    state: &AppState,
    p: &Principal,
    object: &serde_json::Map<String, Value>,
    whole: bool,
) -> Result<UpdateFields, ApiError> {
    let mut errors = Vec::new();
    let status = match object.get("status") {
        None if !whole => None,
        value => match value.and_then(Value::as_str) {
            Some(s) if STATUSES.contains(&s) => Some(s.to_string()),
            _ => {
                errors.push(FieldError::new(
                    "status",
                    "must be investigating, identified, monitoring or resolved",
                ));
                None
            }
        },
    };
    let body = match object.get("body") {
        None if !whole => None,
        value => match value.and_then(Value::as_str).map(str::trim) {
            Some(b) if !b.is_empty() && b.chars().count() <= MAX_BODY_CHARS => Some(b.to_string()),
            _ => {
                errors.push(FieldError::new(
                    "body",
                    format!("is required: 1 to {MAX_BODY_CHARS} characters"),
                ));
                None
            }
        },
    };
    let incident_id = match object.get("incidentId") {
        None if !whole => None,
        None | Some(Value::Null) => Some(None),
        Some(Value::String(i)) => Some(Some(i.clone())),
        Some(_) => {
            errors.push(FieldError::new(
                "incidentId",
                "must be an incident id or null",
            ));
            None
        }
    };
    for key in object.keys() {
        match key.as_str() {
            "status" | "body" | "incidentId" => {}
            "id" | "sentTo" | "createdAt" | "updatedAt" => {
                errors.push(FieldError::new(key, "is read-only"))
            }
            _ => errors.push(FieldError::new(key, "is not a field of a status update")),
        }
    }
    paging::finish(errors)?;
    if let Some(Some(inc)) = &incident_id
        && state.store.incident(&p.workspace_id, inc).await?.is_none()
    {
        return Err(ApiError::unprocessable(format!(
            "No incident with id `{inc}` in this workspace"
        )));
    }
    Ok(UpdateFields {
        status,
        body,
        incident_id,
    })
}

/// Correct an update: its status, text or incident. The page shows the new text marked
/// as edited; messages already sent to subscribers stay as they were, and nothing is sent
/// again.
#[utoipa::path(patch, path = "/v1/status-pages/{id}/updates/{updateId}", tag = "status-pages",
    params(("id" = String, Path, description = "Status page id"), ("updateId" = String, Path, description = "Update id")),
    request_body = StatusUpdateBody,
    responses(
        (status = 200, description = "The update as edited", body = SuccessBody<StatusUpdateBody>),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND or STATUS_UPDATE_NOT_FOUND", body = ErrorBody),
        (status = 422, description = "The incident is not in the workspace", body = ErrorBody),
    ))]
pub async fn edit_update(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath((id, update_id)): ApiPath<(String, String)>,
    ApiObject(object): ApiObject,
) -> Result<Success<StatusUpdateBody>, ApiError> {
    let sp = page_of(&state, &p, &id).await?;
    let fields = read_fields(&state, &p, &object, false).await?;
    let before = state
        .store
        .status_update(&sp.id, &update_id)
        .await?
        .or_not_found(Resource::STATUS_UPDATE, &update_id)?;
    // Only what differs is written: an edit that changes nothing leaves the update as it
    // was, not marked as edited.
    let edit = StatusUpdateEdit {
        status: fields.status.filter(|s| *s != before.status),
        body: fields.body.filter(|b| *b != before.body),
        incident_id: fields.incident_id.filter(|i| *i != before.incident_id),
    };
    if edit.status.is_none() && edit.body.is_none() && edit.incident_id.is_none() {
        return Ok(Success::ok(update_view(&before, None)));
    }
    let mut expected = before.clone();
    if let Some(status) = &edit.status {
        expected.status.clone_from(status);
    }
    if let Some(body) = &edit.body {
        expected.body.clone_from(body);
    }
    if let Some(incident_id) = &edit.incident_id {
        expected.incident_id.clone_from(incident_id);
    }
    let now = state.clock.now_ms();
    expected.updated_at = Some(now);
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "status_update.update",
            "status_update",
            Some(&update_id),
        )
        .before(update_view(&before, None))
        .after(update_view(&expected, None)),
    );
    match state
        .store
        .edit_status_update(&sp.id, &update_id, edit, now)
        .await?
    {
        Some(row) => Ok(Success::ok(update_view(&row, None))),
        None => Err(Resource::STATUS_UPDATE.not_found(&update_id)),
    }
}

/// A status page's updates, newest first.
#[utoipa::path(get, path = "/v1/status-pages/{id}/updates", tag = "status-pages",
    params(("id" = String, Path, description = "Status page id"), PageParams),
    responses(
        (status = 200, description = "A page of updates", body = ListBody<StatusUpdateBody>),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn list_updates(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(pg): ApiQuery<PageParams>,
) -> Result<Paged<StatusUpdateBody>, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    paging::finish(errors)?;
    let sp = page_of(&state, &p, &id).await?;
    let (rows, total) = state.store.list_status_updates(&sp.id, page).await?;
    Ok(Paged {
        items: rows.iter().map(|u| update_view(u, None)).collect(),
        pagination: Pagination::new(page, total),
    })
}

/// Delete an update (it leaves the page and the feed; messages sent stay sent).
#[utoipa::path(delete, path = "/v1/status-pages/{id}/updates/{updateId}", tag = "status-pages",
    params(("id" = String, Path, description = "Status page id"), ("updateId" = String, Path, description = "Update id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND or STATUS_UPDATE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn delete_update(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath((id, update_id)): ApiPath<(String, String)>,
) -> Result<NoContent, ApiError> {
    let sp = page_of(&state, &p, &id).await?;
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "status_update.delete",
        "status_update",
        Some(&update_id),
    ));
    if state.store.delete_status_update(&sp.id, &update_id).await? {
        Ok(NoContent)
    } else {
        crate::store::audit::discard();
        Err(Resource::STATUS_UPDATE.not_found(&update_id))
    }
}

/// A status page's subscribers, newest first.
#[utoipa::path(get, path = "/v1/status-pages/{id}/subscribers", tag = "status-pages",
    params(("id" = String, Path, description = "Status page id"), PageParams),
    responses(
        (status = 200, description = "A page of subscribers", body = ListBody<SubscriberView>),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn list_subscribers(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(pg): ApiQuery<PageParams>,
) -> Result<Paged<SubscriberView>, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    paging::finish(errors)?;
    let sp = page_of(&state, &p, &id).await?;
    let (rows, total) = state.store.list_subscribers(&sp.id, page).await?;
    Ok(Paged {
        items: rows.iter().map(subscriber_view).collect(),
        pagination: Pagination::new(page, total),
    })
}

/// Remove a subscriber.
#[utoipa::path(delete, path = "/v1/status-pages/{id}/subscribers/{subscriberId}", tag = "status-pages",
    params(("id" = String, Path, description = "Status page id"), ("subscriberId" = String, Path, description = "Subscriber id")),
    responses(
        (status = 204, description = "Removed"),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND or SUBSCRIBER_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn delete_subscriber(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath((id, subscriber_id)): ApiPath<(String, String)>,
) -> Result<NoContent, ApiError> {
    let sp = page_of(&state, &p, &id).await?;
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "status_subscriber.delete",
        "status_subscriber",
        Some(&subscriber_id),
    ));
    if state
        .store
        .delete_subscriber(&sp.id, &subscriber_id)
        .await?
    {
        Ok(NoContent)
    } else {
        crate::store::audit::discard();
        Err(Resource::SUBSCRIBER.not_found(&subscriber_id))
    }
}

/// Approve a webhook subscriber: it receives the page's updates and state changes from
/// now on, signed with its own secret. Approving an approved subscriber changes nothing.
/// An e-mail subscriber confirms only by the link sent to the address.
#[utoipa::path(post, path = "/v1/status-pages/{id}/subscribers/{subscriberId}/approve", tag = "status-pages",
    params(("id" = String, Path, description = "Status page id"), ("subscriberId" = String, Path, description = "Subscriber id")),
    responses(
        (status = 200, description = "The subscriber, approved", body = SuccessBody<SubscriberView>),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND or SUBSCRIBER_NOT_FOUND", body = ErrorBody),
        (status = 422, description = "An e-mail subscriber (it confirms by its link), or a URL the server may no longer reach for visitors", body = ErrorBody),
    ))]
pub async fn approve_subscriber(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath((id, subscriber_id)): ApiPath<(String, String)>,
) -> Result<Success<SubscriberView>, ApiError> {
    let sp = page_of(&state, &p, &id).await?;
    let mut sub = state
        .store
        .page_subscriber(&sp.id, &subscriber_id)
        .await?
        .or_not_found(Resource::SUBSCRIBER, &subscriber_id)?;
    if sub.kind != "webhook" {
        return Err(ApiError::unprocessable(
            "An e-mail subscriber confirms by following the link sent to the address",
        ));
    }
    if sub.confirmed {
        return Ok(Success::ok(subscriber_view(&sub)));
    }
    // A webhook left waiting too long is gone, whether or not the sweep has removed it.
    if crate::store::subscriptions::pending_expired(&sub, state.clock.now_ms()) {
        return Err(Resource::SUBSCRIBER.not_found(&subscriber_id));
    }
    // The settings may have changed since the visitor subscribed.
    let host = url::Url::parse(&sub.target)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    state
        .config
        .egress
        .check_visitor_host(&host)
        .map_err(|why| ApiError::unprocessable(format!("This URL may not be reached: {why}")))?;
    let before = subscriber_view(&sub);
    sub.confirmed = true;
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "status_subscriber.approve",
            "status_subscriber",
            Some(&sub.id),
        )
        .before(before)
        .after(subscriber_view(&sub)),
    );
    let txn = state.store.begin_write().await?;
    txn.approve_subscriber(&sp.id, &sub.id).await?;
    txn.commit().await?;
    Ok(Success::ok(subscriber_view(&sub)))
}
