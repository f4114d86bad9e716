//! `/v1/status-pages`: which monitors a public status page shows, under which slug. The
//! pages themselves are served at `/status/{slug}` (see `public_status`).

use super::AppState;
use super::envelope::{ListBody, NoContent, Paged, Pagination, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError, OrNotFound, Resource};
use super::extract::{ApiObject, ApiPath, ApiQuery};
use super::managed::DryRun;
use super::paging::{self, PageParams};
use crate::ids;
use crate::store::keys::Principal;
use crate::store::managed::Declared;
use crate::store::status_pages::StatusPageRow;
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// Most monitors one page shows.
pub const MAX_MONITORS: usize = 100;
/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 1000;

/// A status page.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct StatusPageBody {
    #[schema(read_only, example = "sp_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: Option<String>,
    /// 3 to 64 lowercase letters, digits and `-`; unique on the server. The page is served at
    /// `/status/{slug}` and `/status/{slug}.json`.
    #[schema(example = "acme")]
    pub slug: String,
    /// The page's heading, 1 to 200 characters. (`title` is accepted on input as an older
    /// name for it.)
    #[schema(example = "Acme status")]
    pub name: String,
    /// Shown under the name; up to 1000 characters.
    #[schema(default = "")]
    pub description: Option<String>,
    /// A private page answers 404 to visitors.
    #[schema(default = true)]
    pub public: Option<bool>,
    /// Monitors shown, in this order (up to 100).
    pub monitor_ids: Vec<String>,
    /// Your stable identifier for the page: 1 to 100 characters (letters, digits, `-`,
    /// `_`, `.`, `:`, `/`), unique among the workspace's pages (409 `CONFLICT`).
    /// Configuration files (`tocsin apply`) match pages by it.
    pub key: Option<String>,
    /// The tool that owns the page (`tocsin apply` sets `tocsin-apply`).
    pub managed_by: Option<String>,
    /// Where visitors find it.
    #[schema(read_only, example = "https://status.example.com/status/acme")]
    pub url: Option<String>,
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

fn view(state: &AppState, row: &StatusPageRow) -> StatusPageBody {
    StatusPageBody {
        id: Some(row.id.clone()),
        slug: row.slug.clone(),
        name: row.title.clone(),
        description: Some(row.description.clone()),
        public: Some(row.public),
        monitor_ids: serde_json::from_str(&row.monitor_ids).unwrap_or_default(),
        key: row.apply_key.clone(),
        managed_by: row.managed_by.clone(),
        url: Some(format!("{}/status/{}", state.config.public_url, row.slug)),
        created_at: Some(crate::time::format_ms(row.created_at)),
        updated_at: Some(crate::time::format_ms(row.updated_at)),
    }
}

/// Whether a slug is 3 to 64 of `a-z`, `0-9` and `-`, not starting or ending with `-`.
pub fn valid_slug(slug: &str) -> bool {
    (3..=64).contains(&slug.len())
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !slug.starts_with('-')
        && !slug.ends_with('-')
}

/// Apply a body's fields to `row`, checking each. `creating` requires slug, name and
/// monitorIds. `title`, the field's name before it followed DECISIONS.md, is read as `name`.
async fn apply(
    state: &AppState,
    p: &Principal,
    row: &mut StatusPageRow,
    object: &Map<String, Value>,
    creating: bool,
) -> Result<(), ApiError> {
    let mut errors = Vec::new();
    for required in ["slug", "name", "monitorIds"] {
        let given =
            object.contains_key(required) || (required == "name" && object.contains_key("title"));
        if creating && !given {
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
        match (key.as_str(), value) {
            ("key" | "managedBy", _) => {}
            ("slug", Value::String(s)) if valid_slug(s) => row.slug = s.clone(),
            ("slug", _) => errors.push(FieldError::new(
                "slug",
                "must be 3 to 64 lowercase letters, digits and `-`",
            )),
            ("name" | "title", v) => {
                if let Some(t) = super::fields::name(Some(v), &mut errors) {
                    row.title = t;
                }
            }
            ("description", Value::Null) => row.description = String::new(),
            ("description", Value::String(d)) if d.chars().count() <= MAX_DESCRIPTION_CHARS => {
                row.description = d.trim().to_string()
            }
            ("description", _) => errors.push(FieldError::new(
                "description",
                "must be a string of up to 1000 characters",
            )),
            ("public", Value::Bool(b)) => row.public = *b,
            ("public", _) => errors.push(FieldError::new("public", "must be true or false")),
            ("monitorIds", Value::Array(items)) if items.len() <= MAX_MONITORS => {
                let mut ids: Vec<String> = Vec::new();
                for item in items {
                    match item.as_str() {
                        Some(id) if !ids.iter().any(|i| i == id) => ids.push(id.to_string()),
                        Some(_) => {}
                        None => errors.push(FieldError::new(
                            "monitorIds",
                            "must be a list of monitor ids",
                        )),
                    }
                }
                monitor_ids = Some(ids);
            }
            ("monitorIds", _) => errors.push(FieldError::new(
                "monitorIds",
                "must be a list of up to 100 monitor ids",
            )),
            ("id" | "url" | "createdAt" | "updatedAt", _) => {
                errors.push(FieldError::new(key, "is read-only"))
            }
            _ => errors.push(FieldError::new(key, "is not a field of a status page")),
        }
    }
    paging::finish(errors)?;
    if let Some(ids) = monitor_ids {
        let found = state
            .store
            .monitors_in_workspace(&p.workspace_id, ids.clone())
            .await?;
        if let Some(missing) = ids.iter().find(|id| !found.iter().any(|m| &m.id == *id)) {
            return Err(ApiError::unprocessable(format!(
                "No monitor with id `{missing}` in this workspace"
            )));
        }
        row.monitor_ids = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
    }
    Ok(())
}

fn conflict(slug: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "CONFLICT",
        format!("The slug `{slug}` is taken; choose another"),
    )
}

async fn save(
    state: &AppState,
    row: StatusPageRow,
    insert: bool,
) -> Result<StatusPageRow, ApiError> {
    let slug = row.slug.clone();
    let saved = if insert {
        state.store.insert_status_page(row).await
    } else {
        state.store.update_status_page(row).await
    };
    super::error::or_conflict(saved, || conflict(&slug))
}

/// A page with every field at its default, before a body's fields are applied (a creation,
/// or a PUT's replacement).
fn blank(id: String, workspace_id: String, created_at: i64) -> StatusPageRow {
    StatusPageRow {
        id,
        workspace_id,
        slug: String::new(),
        title: String::new(),
        description: String::new(),
        public: true,
        monitor_ids: "[]".into(),
        created_at,
        updated_at: created_at,
        apply_key: None,
        managed_by: None,
    }
}

async fn find(state: &AppState, p: &Principal, id: &str) -> Result<StatusPageRow, ApiError> {
    state
        .store
        .status_page(&p.workspace_id, id)
        .await?
        .or_not_found(Resource::STATUS_PAGE, id)
}

/// Create a status page.
#[utoipa::path(post, path = "/v1/status-pages", tag = "status-pages", request_body = StatusPageBody, params(DryRun),
    responses(
        (status = 201, description = "The page", body = SuccessBody<StatusPageBody>),
        (status = 200, description = "With `dryRun=true`: the page as it would be created; nothing was saved", body = SuccessBody<StatusPageBody>),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 403, description = "PLAN_UPGRADE_REQUIRED: the plan's status page count is reached", body = ErrorBody),
        (status = 409, description = "CONFLICT: the slug or the key is taken", body = ErrorBody),
        (status = 422, description = "A monitor id is not in the workspace", body = ErrorBody),
    ))]
pub async fn create_status_page(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(object): ApiObject,
) -> Result<Success<StatusPageBody>, ApiError> {
    let now = state.clock.now_ms();
    let mut row = blank(
        ids::new_id(ids::prefix::STATUS_PAGE),
        p.workspace_id.clone(),
        now,
    );
    apply(&state, &p, &mut row, &object, true).await?;
    super::quota::room_for(&state, &p.workspace_id, crate::plans::Counted::StatusPages).await?;
    let kind = Declared::StatusPage;
    super::managed::check_key_free(
        &state,
        kind,
        &p.workspace_id,
        row.apply_key.as_deref(),
        None,
    )
    .await?;
    if dry.on() {
        return Ok(Success::ok(view(&state, &row)));
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "status_page.create",
            "status_page",
            Some(&row.id),
        )
        .after(view(&state, &row)),
    );
    let saved = save(&state, row, true).await?;
    Ok(Success::created(view(&state, &saved)))
}

/// List the workspace's status pages, newest first.
#[utoipa::path(get, path = "/v1/status-pages", tag = "status-pages", params(PageParams),
    responses((status = 200, description = "A page of status pages", body = ListBody<StatusPageBody>)))]
pub async fn list_status_pages(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(pg): ApiQuery<PageParams>,
) -> Result<Paged<StatusPageBody>, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    paging::finish(errors)?;
    let (rows, total) = state.store.list_status_pages(&p.workspace_id, page).await?;
    Ok(Paged {
        items: rows.iter().map(|r| view(&state, r)).collect(),
        pagination: Pagination::new(page, total),
    })
}

/// Get a status page.
#[utoipa::path(get, path = "/v1/status-pages/{id}", tag = "status-pages", params(("id" = String, Path, description = "Status page id")),
    responses(
        (status = 200, description = "The page", body = SuccessBody<StatusPageBody>),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn get_status_page(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<Success<StatusPageBody>, ApiError> {
    Ok(Success::ok(view(&state, &find(&state, &p, &id).await?)))
}

/// Change a status page; absent fields keep their values.
#[utoipa::path(patch, path = "/v1/status-pages/{id}", tag = "status-pages", params(("id" = String, Path, description = "Status page id"), DryRun),
    request_body = StatusPageBody,
    responses(
        (status = 200, description = "The page (with `dryRun=true`: as it would be; nothing was saved)", body = SuccessBody<StatusPageBody>),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: the slug or the key is taken", body = ErrorBody),
        (status = 422, description = "A monitor id is not in the workspace", body = ErrorBody),
    ))]
pub async fn update_status_page(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(object): ApiObject,
) -> Result<Success<StatusPageBody>, ApiError> {
    edit(&state, &p, &id, dry.on(), &object, false).await
}

/// Replace a status page's fields: the body is a complete page (`slug`, `name` and
/// `monitorIds` required), and fields it leaves out take their defaults.
#[utoipa::path(put, path = "/v1/status-pages/{id}", tag = "status-pages", params(("id" = String, Path, description = "Status page id"), DryRun),
    request_body = StatusPageBody,
    responses(
        (status = 200, description = "The page as replaced (with `dryRun=true`: as it would be; nothing was saved)", body = SuccessBody<StatusPageBody>),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: the slug or the key is taken", body = ErrorBody),
        (status = 422, description = "A monitor id is not in the workspace", body = ErrorBody),
    ))]
pub async fn replace_status_page(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(dry): ApiQuery<DryRun>,
    ApiObject(object): ApiObject,
) -> Result<Success<StatusPageBody>, ApiError> {
    edit(&state, &p, &id, dry.on(), &object, true).await
}

/// An edit: a PATCH's fields applied to the stored page, or a PUT's complete page.
async fn edit(
    state: &AppState,
    p: &Principal,
    id: &str,
    dry_run: bool,
    object: &Map<String, Value>,
    replace: bool,
) -> Result<Success<StatusPageBody>, ApiError> {
    let mut row = find(state, p, id).await?;
    let before = view(state, &row);
    if replace {
        row = StatusPageRow {
            slug: row.slug,
            updated_at: row.updated_at,
            ..blank(row.id, row.workspace_id, row.created_at)
        };
    }
    apply(state, p, &mut row, object, replace).await?;
    let kind = Declared::StatusPage;
    let own = Some(row.id.as_str());
    super::managed::check_key_free(state, kind, &p.workspace_id, row.apply_key.as_deref(), own)
        .await?;
    row.updated_at = state.clock.now_ms();
    if dry_run {
        return Ok(Success::ok(view(state, &row)));
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "status_page.update",
            "status_page",
            Some(id),
        )
        .before(before)
        .after(view(state, &row)),
    );
    let saved = save(state, row, false).await?;
    Ok(Success::ok(view(state, &saved)))
}

/// Delete a status page; its URL answers 404 from then on.
#[utoipa::path(delete, path = "/v1/status-pages/{id}", tag = "status-pages", params(("id" = String, Path, description = "Status page id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "STATUS_PAGE_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn delete_status_page(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "status_page.delete",
        "status_page",
        Some(&id),
    ));
    if state.store.delete_status_page(&p.workspace_id, &id).await? {
        Ok(NoContent)
    } else {
        crate::store::audit::discard();
        Err(Resource::STATUS_PAGE.not_found(&id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        for ok in ["acme", "acme-prod", "a1b", &"a".repeat(64)] {
            assert!(valid_slug(ok), "{ok}");
        }
        for bad in [
            "ab",
            "Acme",
            "-acme",
            "acme-",
            "ac me",
            "acme.json",
            &"a".repeat(65),
        ] {
            assert!(!valid_slug(bad), "{bad}");
        }
    }
}
