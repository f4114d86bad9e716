//! `/v1/workspace/invitations` (admin): invite an e-mail address with a role. The person
//! gets a link by e-mail, valid 7 days, where they set a password (or they sign in with
//! single sign-on, which accepts it too).

use super::AppState;
use super::account::INVITATION_DAYS;
use super::envelope::{NoContent, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError};
use super::extract::{ApiJson, ApiPath};
use crate::accounts;
use crate::ids;
use crate::store::accounts::{TokenKind, TokenRow, normalize_email};
use crate::store::audit::{self, Change};
use crate::store::keys::Principal;
use axum::Extension;
use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /v1/workspace/invitations`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InvitationBody {
    #[schema(example = "ada@example.com")]
    pub email: String,
    /// `owner`, `admin`, `member` or `viewer`.
    #[schema(example = "member")]
    pub role: String,
}

/// A pending invitation.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationView {
    #[schema(example = "tok_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: String,
    pub email: String,
    pub role: String,
    /// Who invited (e-mail address or key name).
    pub invited_by: Option<String>,
    pub created_at: String,
    pub expires_at: String,
}

/// A new invitation: the link (to pass on by hand if e-mail is not set up) and whether
/// the e-mail went out.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationCreated {
    #[serde(flatten)]
    pub invitation: InvitationView,
    /// The acceptance link; shown only now.
    pub link: String,
    pub email_sent: bool,
    /// Why the e-mail could not be sent.
    pub email_error: Option<String>,
}

fn view(t: &TokenRow) -> InvitationView {
    InvitationView {
        id: t.id.clone(),
        email: t.email.clone(),
        role: t.role.clone().unwrap_or_default(),
        invited_by: t.created_by.clone(),
        created_at: crate::time::format_ms(t.created_at),
        expires_at: crate::time::format_ms(t.expires_at),
    }
}

/// Invite someone (admin). Only owners may invite owners. The invitation answers to the
/// inviting member: accepting it grants no more than their role at that moment, and
/// nothing once they have left the workspace.
#[utoipa::path(post, path = "/v1/workspace/invitations", tag = "workspace", request_body = InvitationBody,
    responses(
        (status = 201, description = "Invited", body = SuccessBody<InvitationCreated>),
        (status = 400, description = "VALIDATION_ERROR", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: not an admin; PLAN_UPGRADE_REQUIRED: member quota", body = ErrorBody),
        (status = 409, description = "CONFLICT: already a member", body = ErrorBody),
    ))]
pub async fn create_invitation(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiJson(body): ApiJson<InvitationBody>,
) -> Result<Success<InvitationCreated>, ApiError> {
    let email = normalize_email(&body.email);
    let mut errors = Vec::new();
    if !accounts::is_email(&email) {
        errors.push(FieldError::new("email", "must be an e-mail address"));
    }
    if !accounts::MEMBER_ROLES.contains(&body.role.as_str()) {
        errors.push(FieldError::new(
            "role",
            "must be owner, admin, member or viewer",
        ));
    }
    super::paging::finish(errors)?;
    if body.role == "owner" && !p.is_owner() {
        return Err(ApiError::forbidden("Only owners may invite owners"));
    }
    if state
        .store
        .membership(&email, &p.workspace_id)
        .await?
        .is_some()
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "CONFLICT",
            format!("`{email}` is already a member of this workspace"),
        ));
    }
    super::quota::room_for(&state, &p.workspace_id, crate::plans::Counted::Members).await?;
    let now = state.clock.now_ms();
    let token = accounts::new_token();
    let row = TokenRow {
        id: ids::new_id(ids::prefix::AUTH_TOKEN),
        kind: TokenKind::Invitation.as_str().into(),
        token_hash: accounts::hash_token(&token),
        email: email.clone(),
        workspace_id: Some(p.workspace_id.clone()),
        role: Some(body.role.clone()),
        created_by: Some(p.key_name.clone()),
        inviter_member_id: p.maker(),
        created_at: now,
        expires_at: now + INVITATION_DAYS * 86_400_000,
        used_at: None,
    };
    audit::note(
        Change::new(
            Some(&p.workspace_id),
            "invitation.create",
            "invitation",
            Some(&row.id),
        )
        .after(serde_json::json!({"email": email, "role": body.role})),
    );
    let saved = state.store.insert_token(row).await?;
    let workspace = state
        .store
        .workspace(&p.workspace_id)
        .await?
        .map(|w| w.name)
        .unwrap_or_default();
    let link = format!("{}/invite?token={token}", state.config.public_url);
    let text = format!(
        "Hello,\n\n{} invited you to the workspace \"{workspace}\" on Tocsin, as {}.\n\nAccept the invitation here (the link works for {INVITATION_DAYS} days):\n\n{link}\n\nIf you did not expect this, ignore this message.\n",
        p.key_name, body.role
    );
    let sent = state
        .plugins
        .send_mail(&email, &format!("Join {workspace} on Tocsin"), &text)
        .await;
    Ok(Success::created(InvitationCreated {
        invitation: view(&saved),
        link,
        email_sent: sent.is_ok(),
        email_error: sent.err(),
    }))
}

/// Pending invitations (admin), newest first.
#[utoipa::path(get, path = "/v1/workspace/invitations", tag = "workspace",
    responses((status = 200, description = "Invitations", body = SuccessBody<Vec<InvitationView>>)))]
pub async fn list_invitations(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
) -> Result<Success<Vec<InvitationView>>, ApiError> {
    let rows = state
        .store
        .invitations(&p.workspace_id, state.clock.now_ms())
        .await?;
    Ok(Success::ok(rows.iter().map(view).collect()))
}

/// Withdraw a pending invitation (admin); its link stops working.
#[utoipa::path(delete, path = "/v1/workspace/invitations/{id}", tag = "workspace",
    params(("id" = String, Path, description = "Invitation id")),
    responses(
        (status = 204, description = "Withdrawn"),
        (status = 404, description = "INVITATION_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn revoke_invitation(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    audit::note(Change::new(
        Some(&p.workspace_id),
        "invitation.revoke",
        "invitation",
        Some(&id),
    ));
    if state.store.delete_invitation(&p.workspace_id, &id).await? {
        Ok(NoContent)
    } else {
        audit::discard();
        Err(ApiError::not_found(
            "INVITATION_NOT_FOUND",
            "invitation",
            &id,
        ))
    }
}
