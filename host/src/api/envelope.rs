//! The response envelope: `{success, data, meta}` (plus `pagination` on lists), and the
//! request id every response carries in `meta.requestId`.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

pub use super::meta::{Meta, REQUEST_ID, current_request_id};

/// A successful response.
#[derive(Debug, Serialize, ToSchema)]
pub struct SuccessBody<T> {
    /// Always true.
    pub success: bool,
    pub data: T,
    pub meta: Meta,
}

/// Paging facts of a list response.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Pagination {
    pub page: u64,
    pub limit: u64,
    pub total: u64,
    pub pages: u64,
    pub has_next: bool,
    pub has_prev: bool,
}

impl Pagination {
    pub fn new(page: crate::store::Page, total: u64) -> Pagination {
        let pages = total.div_ceil(page.limit);
        Pagination {
            page: page.page,
            limit: page.limit,
            total,
            pages,
            has_next: page.page < pages,
            has_prev: page.page > 1,
        }
    }
}

/// A successful list response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ListBody<T> {
    /// Always true.
    pub success: bool,
    pub data: Vec<T>,
    pub meta: Meta,
    pub pagination: Pagination,
}

/// A handler's successful answer: a status and the data to wrap.
pub struct Success<T>(pub StatusCode, pub T);

impl<T> Success<T> {
    pub fn ok(data: T) -> Self {
        Success(StatusCode::OK, data)
    }

    pub fn created(data: T) -> Self {
        Success(StatusCode::CREATED, data)
    }
}

impl<T: Serialize> IntoResponse for Success<T> {
    fn into_response(self) -> Response {
        let body = SuccessBody {
            success: true,
            data: self.1,
            meta: Meta::now(),
        };
        (self.0, axum::Json(body)).into_response()
    }
}

/// A handler's list answer.
pub struct Paged<T> {
    pub items: Vec<T>,
    pub pagination: Pagination,
}

impl<T: Serialize> IntoResponse for Paged<T> {
    fn into_response(self) -> Response {
        // Written into one buffer sized for the page up front: grown from axum's 128
        // bytes, a 100-item page (about 70 KB) was copied over again at every doubling.
        let capacity = LIST_ITEM_BYTES * self.items.len() + 512;
        list_response(
            &ListBody {
                success: true,
                data: self.items,
                meta: Meta::now(),
                pagination: self.pagination,
            },
            capacity,
        )
    }
}

/// A list body written as JSON into a buffer of `capacity` bytes.
fn list_response(body: &impl Serialize, capacity: usize) -> Response {
    let mut buf = Vec::with_capacity(capacity);
    match serde_json::to_writer(&mut buf, body) {
        Ok(()) => (
            [(
                axum::http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            buf,
        )
            .into_response(),
        Err(e) => {
            super::error::ApiError::internal(format!("rendering a list: {e}")).into_response()
        }
    }
}

/// A list answer whose items are JSON already (see [`super::monitor_pages`]).
pub struct RawPaged(pub super::monitor_pages::RenderedPage);

impl IntoResponse for RawPaged {
    fn into_response(self) -> Response {
        /// [`ListBody`] with its items as they were written.
        #[derive(Serialize)]
        struct RawListBody<'a> {
            success: bool,
            data: &'a serde_json::value::RawValue,
            meta: Meta,
            pagination: Pagination,
        }
        list_response(
            &RawListBody {
                success: true,
                data: &self.0.items,
                meta: Meta::now(),
                pagination: self.0.pagination,
            },
            self.0.items.get().len() + 512,
        )
    }
}

/// What a list item's JSON takes, about (a monitor is 500-900 bytes).
const LIST_ITEM_BYTES: usize = 1024;

/// 204 No Content.
pub struct NoContent;

impl IntoResponse for NoContent {
    fn into_response(self) -> Response {
        StatusCode::NO_CONTENT.into_response()
    }
}

/// Middleware: give each request an id, visible to handlers and in `X-Request-Id`.
pub async fn request_id(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let id = crate::ids::new_id(crate::ids::prefix::REQUEST);
    let mut response = REQUEST_ID.scope(id.clone(), next.run(req)).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert("x-request-id", value);
    }
    response
}

/// Stored JSON text passed through as it is, without building a tree of it (`null` when
/// the text is not JSON).
pub fn raw_json(text: &str) -> Box<serde_json::value::RawValue> {
    serde_json::value::RawValue::from_string(text.to_string()).unwrap_or_else(|_| {
        serde_json::value::RawValue::from_string("null".into()).unwrap_or_default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Page;

    #[test]
    fn pagination_counts_pages() {
        let p = Pagination::new(Page { page: 2, limit: 10 }, 25);
        assert_eq!((p.pages, p.has_next, p.has_prev), (3, true, true));
        let p = Pagination::new(Page { page: 1, limit: 20 }, 0);
        assert_eq!((p.pages, p.has_next, p.has_prev), (0, false, false));
        let p = Pagination::new(Page { page: 5, limit: 20 }, 20);
        assert_eq!((p.pages, p.has_next, p.has_prev), (1, false, true));
    }
}
