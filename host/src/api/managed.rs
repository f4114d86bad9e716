//! The two fields of every object a configuration file declares (monitors, alert policies,
//! channels, status pages, maintenance windows): `key`, a stable identifier the owner
//! chooses, unique in the workspace for that kind; and `managedBy`, the tool that owns the
//! object (`tocsin apply` sets it, and prunes only what carries its name). Also the
//! `dryRun` query parameter of their create and edit routes: validate, answer with the
//! object as it would be, and save nothing.

use super::AppState;
use super::error::{ApiError, FieldError};
use crate::store::managed::Declared;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa::IntoParams;

/// Longest key and `managedBy`, in characters.
const MAX_LEN: usize = 100;

/// `key` and `managedBy` as validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Managed {
    pub key: Option<String>,
    pub managed_by: Option<String>,
}

/// Query of the create and edit routes of declarable objects.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct DryRun {
    /// When true, validate the request and answer with the object as it would be saved
    /// (200), changing nothing; `tocsin apply --dry-run` shows its plan from these answers.
    #[param(default = false)]
    pub dry_run: Option<bool>,
}

impl DryRun {
    pub fn on(&self) -> bool {
        self.dry_run.unwrap_or(false)
    }
}

/// Read `key` and `managedBy` from a create body or a merged edit, collecting problems.
pub fn read(object: &Map<String, Value>, errors: &mut Vec<FieldError>) -> Managed {
    let key = match object.get("key") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if valid_key(s) => Some(s.clone()),
        Some(_) => {
            errors.push(FieldError::new(
                "key",
                "must be 1 to 100 characters: letters, digits, `-`, `_`, `.`, `:` or `/`",
            ));
            None
        }
    };
    let managed_by = match object.get("managedBy") {
        None | Some(Value::Null) => None,
        Some(Value::String(s))
            if !s.trim().is_empty()
                && s.chars().count() <= MAX_LEN
                && !s.chars().any(char::is_control) =>
        {
            Some(s.trim().to_string())
        }
        Some(_) => {
            errors.push(FieldError::new(
                "managedBy",
                "must be 1 to 100 characters without control characters, or null",
            ));
            None
        }
    };
    Managed { key, managed_by }
}

fn valid_key(s: &str) -> bool {
    !s.is_empty()
        && s.chars().count() <= MAX_LEN
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '/'))
}

/// Insert the two fields into a merge base (the editable fields of a stored object).
pub fn editable(base: &mut Map<String, Value>, key: &Option<String>, managed_by: &Option<String>) {
    base.insert("key".into(), key.clone().map_or(Value::Null, Value::String));
    base.insert(
        "managedBy".into(),
        managed_by.clone().map_or(Value::Null, Value::String),
    );
}

/// 409 `CONFLICT` when another object of `kind` in the workspace holds `key`.
pub async fn check_key_free(
    state: &AppState,
    kind: Declared,
    workspace: &str,
    key: Option<&str>,
    own_id: Option<&str>,
) -> Result<(), ApiError> {
    let Some(key) = key else { return Ok(()) };
    match state.store.key_holder(kind, workspace, key).await? {
        Some(holder) if Some(holder.as_str()) != own_id => Err(key_taken(kind, key, &holder)),
        _ => Ok(()),
    }
}

/// A save's result, with a unique-index violation answered as the key being taken: the
/// check before the save and this one agree, except when two requests race for a key.
pub fn or_key_taken<T>(
    result: Result<T, crate::store::StoreError>,
    kind: Declared,
    key: Option<&str>,
) -> Result<T, ApiError> {
    super::error::or_conflict(result, || {
        key_taken(kind, key.unwrap_or_default(), "another request")
    })
}

/// The answer to a key that another object holds (also when the unique index catches a
/// race between two requests).
pub fn key_taken(kind: Declared, key: &str, holder: &str) -> ApiError {
    let noun = match kind {
        Declared::Monitor => "monitor",
        Declared::AlertPolicy => "alert policy",
        Declared::Channel => "channel",
        Declared::StatusPage => "status page",
        Declared::MaintenanceWindow => "maintenance window",
    };
    ApiError::new(
        StatusCode::CONFLICT,
        "CONFLICT",
        format!("Another {noun} ({holder}) has the key `{key}`; keys are unique per kind"),
    )
    .with_details(vec![FieldError::new("key", "is taken")])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn keys_are_short_identifiers() {
        let mut errors = Vec::new();
        let m = read(
            &object(json!({"key": "team:payments/api-1", "managedBy": " tocsin-apply "})),
            &mut errors,
        );
        assert!(errors.is_empty());
        assert_eq!(m.key.as_deref(), Some("team:payments/api-1"));
        assert_eq!(m.managed_by.as_deref(), Some("tocsin-apply"));
        for bad in [
            json!(""),
            json!("has space"),
            json!(7),
            json!("x".repeat(101)),
        ] {
            let mut errors = Vec::new();
            read(&object(json!({ "key": bad })), &mut errors);
            assert_eq!(errors.len(), 1, "{bad}");
            assert_eq!(errors[0].field, "key");
        }
        let mut errors = Vec::new();
        read(&object(json!({"managedBy": "a\nb"})), &mut errors);
        assert_eq!(errors[0].field, "managedBy");
    }

    #[test]
    fn null_clears() {
        let mut errors = Vec::new();
        let m = read(
            &object(json!({"key": null, "managedBy": null})),
            &mut errors,
        );
        assert!(errors.is_empty());
        assert_eq!(m, Managed::default());
    }
}
