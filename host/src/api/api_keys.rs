//! `/v1/api-keys`: the workspace's API keys (admin keys only). The secret is shown once,
//! in the create response; only its SHA-256 hash is stored.

use super::AppState;
use super::envelope::{ListBody, NoContent, Paged, Pagination, Success, SuccessBody};
use super::error::{ApiError, ErrorBody, FieldError, Resource};
use super::extract::{ApiObject, ApiPath, ApiQuery};
use super::paging::{self, PageParams};
use crate::store::ApiKeyRow;
use crate::store::keys::{Principal, Role};
use axum::Extension;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use utoipa::ToSchema;

/// An API key as listed (never its secret).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyView {
    #[schema(example = "key_01JD6Z3Y5N8Q2W7R4T6V9X0B1C")]
    pub id: String,
    pub name: String,
    /// `owner`, `admin`, `write` or `read`.
    pub role: String,
    /// The first characters of the secret, to tell keys apart.
    #[schema(example = "tcs_Ab3x")]
    pub prefix: String,
    pub created_at: String,
    /// When the key last authenticated a request (to within a minute); null if never.
    pub last_used_at: Option<String>,
}

/// A key just created: the listing fields plus the secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedApiKey {
    #[serde(flatten)]
    pub key: ApiKeyView,
    /// `tcs_...`: store it now; it cannot be shown again.
    pub secret: String,
}

/// Body of `POST /v1/api-keys`.
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
pub struct ApiKeyCreate {
    /// 1 to 200 characters, e.g. `terraform` or `grafana (read)`.
    pub name: String,
    /// `owner` (everything; only an owner may create one), `admin` (everything but what only
    /// owners do: grant or take the owner role, the two-factor requirement, owner keys),
    /// `write` (everything but API keys and member changes) or `read` (GET only). A key
    /// never has more rights than its maker, now or later: it is capped by its maker's
    /// current role and stops working when the maker leaves the workspace.
    pub role: String,
}

/// When keys were last used, kept in memory and written in batches, so authenticating a
/// request costs no database write.
#[derive(Default)]
pub struct KeyUsage {
    pending: Mutex<HashMap<String, i64>>,
}

impl KeyUsage {
    pub fn record(&self, key_id: &str, now_ms: i64) {
        if let Ok(mut p) = self.pending.lock() {
            p.insert(key_id.to_string(), now_ms);
        }
    }

    /// Uses not written yet.
    pub fn peek(&self, key_id: &str) -> Option<i64> {
        self.pending.lock().ok()?.get(key_id).copied()
    }

    /// Take every use recorded since the last call.
    pub fn drain(&self) -> Vec<(String, i64)> {
        self.pending
            .lock()
            .map(|mut p| p.drain().collect())
            .unwrap_or_default()
    }
}

/// Write recorded key uses every `every`, and once more at shutdown.
pub async fn flush_usage_loop(
    store: crate::store::Store,
    usage: std::sync::Arc<KeyUsage>,
    every: std::time::Duration,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut last = false;
    while !last {
        tokio::select! {
            _ = tick.tick() => {}
            // Uses not written yet are written once more on the way out.
            _ = shutdown.wait_for(|stop| *stop) => last = true,
        }
        let uses = usage.drain();
        if !uses.is_empty()
            && let Err(e) = store.touch_api_keys(&uses).await
        {
            tracing::warn!(error = %e, "could not record when API keys were last used");
        }
    }
}

fn view(state: &AppState, k: &ApiKeyRow) -> ApiKeyView {
    let last = state.key_usage.peek(&k.id).or(k.last_used_at);
    ApiKeyView {
        id: k.id.clone(),
        name: k.name.clone(),
        role: k.role.clone(),
        prefix: k.prefix.clone(),
        created_at: crate::time::format_ms(k.created_at),
        last_used_at: last.map(crate::time::format_ms),
    }
}

/// List the workspace's live keys, newest first.
#[utoipa::path(get, path = "/v1/api-keys", tag = "api-keys", params(PageParams),
    responses(
        (status = 200, description = "A page of keys", body = ListBody<ApiKeyView>),
        (status = 403, description = "FORBIDDEN: not an admin key", body = ErrorBody),
    ))]
pub async fn list_api_keys(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiQuery(pg): ApiQuery<PageParams>,
) -> Result<Paged<ApiKeyView>, ApiError> {
    let mut errors = Vec::new();
    let page = pg.page(&mut errors);
    paging::finish(errors)?;
    let (rows, total) = state.store.list_api_keys(&p.workspace_id, page).await?;
    Ok(Paged {
        items: rows.iter().map(|k| view(&state, k)).collect(),
        pagination: Pagination::new(page, total),
    })
}

/// Create a key. The answer holds its secret, shown this once.
#[utoipa::path(post, path = "/v1/api-keys", tag = "api-keys", request_body = ApiKeyCreate,
    responses(
        (status = 201, description = "The key and its secret", body = SuccessBody<CreatedApiKey>),
        (status = 400, description = "Invalid fields", body = ErrorBody),
        (status = 403, description = "FORBIDDEN: not an admin key, or a role above the caller's (owner keys: owners only); PLAN_UPGRADE_REQUIRED: the plan's count of active keys is reached", body = ErrorBody),
    ))]
pub async fn create_api_key(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiObject(object): ApiObject,
) -> Result<Success<CreatedApiKey>, ApiError> {
    let (name, role) = read_create(&object)?;
    if role == Role::Owner && !p.is_owner() {
        return Err(ApiError::forbidden(
            "Only an owner may create an owner key; choose admin, write or read",
        ));
    }
    if role > p.role {
        return Err(ApiError::forbidden(format!(
            "A key cannot have more rights than its maker (you have `{}`)",
            p.role.as_str()
        )));
    }
    super::quota::room_for(&state, &p.workspace_id, crate::plans::Counted::ApiKeys).await?;
    let id = crate::ids::new_id(crate::ids::prefix::API_KEY);
    crate::store::audit::note(
        crate::store::audit::Change::new(
            Some(&p.workspace_id),
            "api_key.create",
            "api_key",
            Some(&id),
        )
        .after(serde_json::json!({"name": name, "role": role.as_str()})),
    );
    let (key, secret) = state
        .store
        .create_api_key_with_id(
            id,
            &p.workspace_id,
            &name,
            role,
            None,
            p.maker(),
            state.clock.now_ms(),
        )
        .await?;
    Ok(Success::created(CreatedApiKey {
        key: view(&state, &key),
        secret,
    }))
}

fn read_create(object: &Map<String, Value>) -> Result<(String, Role), ApiError> {
    let mut errors = Vec::new();
    let name = super::fields::name(object.get("name"), &mut errors);
    let role = match object.get("role") {
        Some(Value::String(r)) => Role::parse(r),
        _ => None,
    };
    if role.is_none() {
        errors.push(FieldError::new(
            "role",
            "is required: owner, admin, write or read",
        ));
    }
    for key in object.keys() {
        if key != "name" && key != "role" {
            errors.push(FieldError::new(key, "is not a field of an API key"));
        }
    }
    paging::finish(errors)?;
    match (name, role) {
        (Some(n), Some(r)) => Ok((n, r)),
        _ => Err(ApiError::bad_request("name and role are required")),
    }
}

/// Revoke a key: it is refused from the next request on.
#[utoipa::path(delete, path = "/v1/api-keys/{id}", tag = "api-keys", params(("id" = String, Path, description = "API key id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 403, description = "FORBIDDEN: not an admin key, or an owner key revoked by a non-owner", body = ErrorBody),
        (status = 404, description = "API_KEY_NOT_FOUND", body = ErrorBody),
    ))]
pub async fn revoke_api_key(
    State(state): State<AppState>,
    Extension(p): Extension<Principal>,
    ApiPath(id): ApiPath<String>,
) -> Result<NoContent, ApiError> {
    let key = state
        .store
        .live_api_key(&p.workspace_id, &id)
        .await?
        .ok_or_else(|| Resource::API_KEY.not_found(&id))?;
    if Role::parse(&key.role) == Some(Role::Owner) && !p.is_owner() {
        return Err(ApiError::forbidden("Only owners may revoke an owner key"));
    }
    crate::store::audit::note(crate::store::audit::Change::new(
        Some(&p.workspace_id),
        "api_key.revoke",
        "api_key",
        Some(&id),
    ));
    if state
        .store
        .revoke_api_key(&p.workspace_id, &id, state.clock.now_ms())
        .await?
    {
        Ok(NoContent)
    } else {
        crate::store::audit::discard();
        Err(Resource::API_KEY.not_found(&id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_kept_until_drained() {
        let u = KeyUsage::default();
        u.record("key_a", 10);
        u.record("key_a", 20);
        assert_eq!(u.peek("key_a"), Some(20));
        assert_eq!(u.drain(), vec![("key_a".to_string(), 20)]);
        assert_eq!(u.peek("key_a"), None);
    }

    #[test]
    fn create_needs_a_name_and_a_known_role() {
        let o = |t: &str| -> Map<String, Value> { serde_json::from_str(t).expect("json") };
        assert!(read_create(&o(r#"{"name":"ci","role":"write"}"#)).is_ok());
        assert!(read_create(&o(r#"{"name":"ci","role":"owner"}"#)).is_ok());
        for bad in [
            r#"{"name":"ci","role":"member"}"#,
            r#"{"role":"read"}"#,
            r#"{"name":"ci","role":"read","secret":"x"}"#,
        ] {
            assert_eq!(
                read_create(&o(bad)).map_err(|e| e.code).err(),
                Some("VALIDATION_ERROR"),
                "{bad}"
            );
        }
    }
}
