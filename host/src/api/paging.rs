//! Query parameters of lists: paging, sorting, state filters and time windows, validated
//! with clear messages.

use super::error::{ApiError, FieldError};
use crate::store::{Order, Page, State};

pub const DEFAULT_LIMIT: u64 = 20;
pub const MAX_LIMIT: u64 = 100;

/// `page` and `limit`, the query parameters of every list.
#[derive(Debug, Default, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Page number, from 1.
    pub page: Option<String>,
    /// Items per page, 1 to 100 (default 20).
    pub limit: Option<String>,
}

impl PageParams {
    /// The page asked for, collecting problems into `errors`.
    pub fn page(&self, errors: &mut Vec<FieldError>) -> Page {
        page(self.page.as_deref(), self.limit.as_deref(), errors)
    }
}

/// Parse `page` and `limit`, collecting problems into `errors`.
pub fn page(page: Option<&str>, limit: Option<&str>, errors: &mut Vec<FieldError>) -> Page {
    let page_n = match page {
        None => 1,
        Some(text) => match text.parse::<u64>() {
            Ok(n) if (1..=1_000_000).contains(&n) => n,
            _ => {
                errors.push(FieldError::new("page", "must be an integer of at least 1"));
                1
            }
        },
    };
    let limit_n = match limit {
        None => DEFAULT_LIMIT,
        Some(text) => match text.parse::<u64>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => {
                errors.push(FieldError::new(
                    "limit",
                    format!("must be an integer from 1 to {MAX_LIMIT}"),
                ));
                DEFAULT_LIMIT
            }
        },
    };
    Page {
        page: page_n,
        limit: limit_n,
    }
}

/// Parse `order` (default `desc`).
pub fn order(text: Option<&str>, errors: &mut Vec<FieldError>) -> Order {
    match text {
        None | Some("desc") => Order::Desc,
        Some("asc") => Order::Asc,
        Some(_) => {
            errors.push(FieldError::new("order", "must be asc or desc"));
            Order::Desc
        }
    }
}

/// Parse an ISO 8601 timestamp parameter.
pub fn timestamp(field: &str, text: Option<&str>, errors: &mut Vec<FieldError>) -> Option<i64> {
    let text = text?;
    let parsed = crate::time::parse_ms(text);
    if parsed.is_none() {
        errors.push(FieldError::new(
            field,
            "must be an ISO 8601 timestamp such as 2026-11-21T09:30:00.000Z",
        ));
    }
    parsed
}

/// Parse a state filter such as `status=open`, naming every choice when it is none of them.
pub fn state<S: State>(field: &str, text: Option<&str>, errors: &mut Vec<FieldError>) -> Option<S> {
    let text = text?;
    let parsed = S::parse(text);
    if parsed.is_none() {
        let choices = crate::text::or_list(&S::names());
        errors.push(FieldError::new(field, format!("must be {choices}")));
    }
    parsed
}

/// Fail with every collected problem, if any.
pub fn finish(errors: Vec<FieldError>) -> Result<(), ApiError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paging_defaults_and_bounds() {
        let mut e = Vec::new();
        assert_eq!(page(None, None, &mut e), Page { page: 1, limit: 20 });
        assert_eq!(
            page(Some("3"), Some("100"), &mut e),
            Page {
                page: 3,
                limit: 100
            }
        );
        assert!(e.is_empty());
        page(Some("0"), Some("101"), &mut e);
        page(Some("x"), Some("-1"), &mut e);
        assert_eq!(e.len(), 4);
        assert_eq!(order(Some("sideways"), &mut e), Order::Desc);
        assert_eq!(e.len(), 5);
        assert_eq!(timestamp("from", Some("nope"), &mut e), None);
        assert_eq!(e.len(), 6);
        assert!(finish(e).is_err());
    }
}
