//! The sign-in pages the links in e-mails and the start-up message point to: `/` (sign in,
//! or who is signed in), `/setup`, `/invite`, `/reset-password`. One static page and its
//! script and style; they call `/v1/auth/*` like any client, so the page holds no
//! secret and the server renders nothing per person.

use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

const HTML: &str = include_str!("pages/account.html");
const SCRIPT: &str = include_str!("pages/account.js");
const STYLE: &str = include_str!("pages/account.css");

/// A static page or asset with the security headers.
pub fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut r = body.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    secure_headers(r.headers_mut());
    r
}

/// The headers of every page and asset: scripts and styles from this origin only (no
/// inline script), no framing, no referrer (links carry one-time tokens), no caching.
pub fn secure_headers(h: &mut axum::http::HeaderMap) {
    // Scripts and styles only from this origin; no framing (clickjacking of the forms).
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        // The links carry one-time tokens: never send them on.
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

/// The page (every path shows its own form).
pub async fn page() -> Response {
    asset(HTML, "text/html; charset=utf-8")
}

pub async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

pub async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}
