//! `/v1/workspace/members`: the people of a workspace and their roles. Any key may list
//! them; only admin keys change them. A workspace keeps at least one owner once it has one.

use super::AppState;
use super::envelope::{ListBody, NoContent, Paged, Pagination, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError, OrNotFound, Resource};
use super::extract::{ApiObject, ApiPath, ApiQuery};
use super::paging::{self, PageParams};
use crate::ids;
use crate::store::keys::Principal;
use crate::store::members::MemberRow;
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// Member roles, most powerful first.
pub const ROLES: [&str; 4] = crate::accounts::MEMBER_ROLES;
const OWNER: &str = "owner";

/// A member.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub struct MemberBody {
    #[schema(read_only, example = "mem_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: Option<String>,
    /// Unique within the workspace (compared without case).
    #[schema(example = "ada@example.com")]
    pub email: String,
    /// Display name; defaults to the part of the e-mail before `@`.
    pub name: Option<String>,
    /// `owner`, `admin`, `member` or `viewer`.
    #[schema(example = "member")]
    pub role: String,
    #[schema(read_only)]
    pub created_at: Option<String>,
    #[schema(read_only)]
    pub updated_at: Option<String>,
}

fn view(m: &MemberRow) -> MemberBody {
    MemberBody {
        id: Some(m.id.clone()),
        email: m.email.clone(),
        name: Some(m.name.clone()),
        role: m.role.clone(),
        created_at: Some(crate::time::format_ms(m.created_at)),
        updated_at: Some(crate::time::format_ms(m.updated_at)),
    }
}

fn conflict(email: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "CONFLICT",
        format!("`{email}` is already a member of this workspace"),
    )
}

/// The fields a body sets: (email, name, role); None where absent.
type Fields = (Option<String>, Option<String>, Option<String>);

fn read_fields(object: &Map<String, Value>, creating: bool) -> Result<Fields, ApiError> {
    let mut errors = Vec::new();
    let mut email = None;
    let mut name = None;
    let mut role = None;
    for (key, value) in object {
        match (key.as_str(), value) {
            ("email", Value::String(e)) if creating => {
                let e = e.trim().to_ascii_lowercase();
                if crate::accounts::is_email(&e) {
                    email = Some(e);
                } else {
                    errors.push(FieldError::new("email", "must be an e-mail address"));
                }
            }
            ("email", _) if creating => {
                errors.push(FieldError::new("email", "must be an e-mail address"))
            }
            ("email", _) => errors.push(FieldError::new(
                "email",
                "cannot be changed; remove the member and add the new address",
            )),
            ("name", v) => name = super::fields::name(Some(v), &mut errors),
            ("role", Value::String(r)) if ROLES.contains(&r.as_str()) => role = Some(r.clone()),
            ("role", _) => errors.push(FieldError::new(
                "role",
                "must be owner, admin, member or viewer",
            )),
            ("id" | "createdAt" | "updatedAt", _) => {
                errors.push(FieldError::new(key, "is read-only"))
            }
            _ => errors.push(FieldError::new(key, "is not a field of a member")),
        }
    }
    if creating && email.is_none() && !errors.iter().any(|e| e.field == "email") {
        errors.push(FieldError::new("email", "is required"));
    }
    if creating && role.is_none() && !errors.iter().any(|e| e.field == "role") {
        errors.push(FieldError::new(
            "role",
            "is required: owner, admin, member or viewer",
        ));
    }
    paging::finish(errors)?;
    Ok((email, name, role))
}

async fn find(state: &AppState, p: &Principal, id: &str) -> Result<MemberRow, ApiError> {
    state
        .store
        .member(&p.workspace_id, id)
        .await?
        .or_not_found(Resource::MEMBER, id)
}

/// Refuse to leave a workspace that has owners without any.
async fn keep_an_owner(state: &AppState, m: &MemberRow) -> Result<(), ApiError> {
    if m.role == OWNER
        && state
            .store
            .count_members_with_role(&m.workspace_id, OWNER)
            .await?
            <= 1
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "CONFLICT",
            "This is the workspace's last owner; make someone else owner first",
        ));
    }
    Ok(())
}

/// List the workspace's members, oldest first.
#[utoipa::path(get, path = "/v1/workspace/members", tag = "workspace", params(PageParams),
    responses((status = 200, description = "A page of members", body = ListBody<MemberBody>)))]
pub async fn list_members(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(pg): ApiQuery<PageParams>,
) -> Result<Paged<MemberBody>, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    paging::finish(errors)?;
    let (rows, total) = state.store.list_members(&p.workspace_id, page).await?;
    Ok(Paged {
        items: rows.iter().map(view).collect(),
        pagination: Pagination::new(page, total),
    })
}

/// Add a member (admin keys only).
#[utoipa::path(post, path = "/v1/workspace/members", tag = "workspace", request_body = MemberBody,
    responses(
        (status = 201, description = "The member", body = SuccessBody<MemberBody>),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: not an admin key; PLAN_UPGRADE_REQUIRED: the plan's member count is reached", body = ErrorBody),
        (status = 409, description = "CONFLICT: the e-mail address is already a member", body = ErrorBody),
    ))]
pub async fn add_member(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiObject(object): ApiObject,
) -> Result<Success<MemberBody>, ApiError> {
    let (email, name, role) = read_fields(&object, true)?;
    let (Some(email), Some(role)) = (email, role) else {
        return Err(ApiError::bad_request("email and role are required"));
    };
    super::quota::room_for(&state, &p.workspace_id, crate::plans::Counted::Members).await?;
    let now = state.clock.now_ms();
    let name = name.unwrap_or_else(|| email.split('@').next().unwrap_or_default().to_string());
    let row = MemberRow {
        id: ids::new_id(ids::prefix::MEMBER),
        workspace_id: p.workspace_id.clone(),
        email: email.clone(),
        name,
        role,
        created_at: now,
        updated_at: now,
    };
    if row.role == OWNER && !p.is_owner() {
        return Err(ApiError::forbidden("Only owners may make someone an owner"));
    }
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "member.add",
            "member",
            Some(&row.id),
        )
        .after(view(&row)),
    );
    let saved =
        super::error::or_conflict(state.store.insert_member(row).await, || conflict(&email))?;
    Ok(Success::created(view(&saved)))
}

/// Change a member's role or name (admin keys only).
#[utoipa::path(patch, path = "/v1/workspace/members/{id}", tag = "workspace", params(("id" = String, Path, description = "Member id")),
    request_body = MemberBody,
    responses(
        (status = 200, description = "The member", body = SuccessBody<MemberBody>),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 404, description = "MEMBER_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: the last owner cannot be demoted", body = ErrorBody),
    ))]
pub async fn update_member(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
    ApiObject(object): ApiObject,
) -> Result<Success<MemberBody>, ApiError> {
    let mut m = find(&state, &p, &id).await?;
    let before = view(&m);
    let (_, name, role) = read_fields(&object, false)?;
    if let Some(role) = &role
        && (m.role == OWNER || role == OWNER)
        && role != &m.role
        && !p.is_owner()
    {
        return Err(ApiError::forbidden(
            "Only owners may grant or take away the owner role",
        ));
    }
    if let Some(role) = role {
        if role != m.role {
            keep_an_owner(&state, &m).await?;
        }
        m.role = role;
    }
    if let Some(name) = name {
        m.name = name;
    }
    m.updated_at = state.clock.now_ms();
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "member.update",
            "member",
            Some(&m.id),
        )
        .before(before)
        .after(view(&m)),
    );
    Ok(Success::ok(view(&state.store.update_member(m).await?)))
}

/// Remove a member (admin keys only).
#[utoipa::path(delete, path = "/v1/workspace/members/{id}", tag = "workspace", params(("id" = String, Path, description = "Member id")),
    responses(
        (status = 204, description = "Removed"),
        (status = 404, description = "MEMBER_NOT_FOUND", body = ErrorBody),
        (status = 409, description = "CONFLICT: the last owner cannot be removed", body = ErrorBody),
    ))]
pub async fn remove_member(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    let m = find(&state, &p, &id).await?;
    if m.role == OWNER && !p.is_owner() {
        return Err(ApiError::forbidden("Only owners may remove an owner"));
    }
    keep_an_owner(&state, &m).await?;
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "member.remove",
            "member",
            Some(&m.id),
        )
        .before(view(&m)),
    );
    state.store.delete_member(&p.workspace_id, &id).await?;
    Ok(NoContent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(t: &str) -> Map<String, Value> {
        serde_json::from_str(t).expect("json")
    }

    #[test]
    fn fields_are_checked() {
        let (email, _, role) =
            read_fields(&o(r#"{"email":" Ada@Example.com ","role":"owner"}"#), true)
                .expect("valid");
        assert_eq!(email.as_deref(), Some("ada@example.com"));
        assert_eq!(role.as_deref(), Some("owner"));
        for bad in [
            r#"{"email":"not an address","role":"member"}"#,
            r#"{"email":"a@b.co","role":"boss"}"#,
            r#"{"role":"member"}"#,
            r#"{"email":"a@b.co","role":"member","team":"x"}"#,
        ] {
            assert!(read_fields(&o(bad), true).is_err(), "{bad}");
        }
        assert!(read_fields(&o(r#"{"email":"b@c.de"}"#), false).is_err());
        assert!(read_fields(&o(r#"{"role":"viewer"}"#), false).is_ok());
    }
}
