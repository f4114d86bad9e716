//! Validators of body fields several resources share, each adding a clear message to the
//! collected problems.

use super::error::FieldError;

/// A required display name: 1 to 200 characters, trimmed.
pub fn name(value: Option<&serde_json::Value>, errors: &mut Vec<FieldError>) -> Option<String> {
    match value {
        Some(serde_json::Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= 200 => {
            Some(s.trim().to_string())
        }
        None | Some(serde_json::Value::Null) => {
            errors.push(FieldError::new("name", "is required"));
            None
        }
        Some(_) => {
            errors.push(FieldError::new(
                "name",
                "must be a string of 1 to 200 characters",
            ));
            None
        }
    }
}
