//! Turning one HTTP exchange into a pass or a failure with a reason a person can act on.

use crate::config::HttpConfig;

/// The parts of a response a verdict looks at.
#[derive(Debug, Clone)]
pub struct Exchange<'a> {
    pub status: u16,
    pub body: &'a [u8],
    /// Whether the host cut the body at its cap.
    pub body_truncated: bool,
    pub elapsed_ms: u32,
}

/// Why the request itself failed, as the host reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportFailure {
    Timeout(u32),
    Dns(String),
    ConnectionRefused(String),
    Tls(String),
    TooManyRedirects(u32),
    InvalidRequest(String),
    Denied(String),
    Other(String),
}

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub ok: bool,
    pub reason: Option<String>,
    pub status_code: Option<u16>,
    pub response_time_ms: Option<u32>,
}

/// Seconds as people write them: `10 s`, `1.5 s`.
pub fn seconds(ms: u32) -> String {
    if ms.is_multiple_of(1000) {
        format!("{} s", ms / 1000)
    } else {
        format!("{:.1} s", f64::from(ms) / 1000.0)
    }
}

/// Judge a completed exchange against the configuration.
pub fn judge(config: &HttpConfig, exchange: &Exchange<'_>) -> Verdict {
    let fail = |reason: String| Verdict {
        ok: false,
        reason: Some(reason),
        status_code: Some(exchange.status),
        response_time_ms: Some(exchange.elapsed_ms),
    };
    if config.expected_status_range {
        if !(200..=299).contains(&exchange.status) {
            return fail(format!("Expected a 2xx status, got {}", exchange.status));
        }
    } else if exchange.status != config.expected_status_code {
        return fail(format!(
            "Expected status {}, got {}",
            config.expected_status_code, exchange.status
        ));
    }
    if let Some(needle) = &config.body_contains
        && !contains(exchange.body, needle.as_bytes())
    {
        return fail(format!(
            "Response body does not contain \"{}\"",
            quoted(needle)
        ));
    }
    if let Some(needle) = &config.body_not_contains
        && contains(exchange.body, needle.as_bytes())
    {
        return fail(format!("Response body contains \"{}\"", quoted(needle)));
    }
    if let Some(reason) = crate::json::judge(
        &config.json_assertions,
        exchange.body,
        exchange.body_truncated,
    ) {
        return fail(reason);
    }
    if let Some(limit) = config.max_response_time_ms
        && exchange.elapsed_ms > limit
    {
        return fail(format!(
            "Response took {} ms, over the limit of {limit} ms",
            exchange.elapsed_ms
        ));
    }
    Verdict {
        ok: true,
        reason: None,
        status_code: Some(exchange.status),
        response_time_ms: Some(exchange.elapsed_ms),
    }
}

/// Describe a transport failure.
pub fn transport_failure(config: &HttpConfig, failure: &TransportFailure) -> Verdict {
    let reason = match failure {
        TransportFailure::Timeout(ms) => format!("Timed out after {}", seconds(*ms)),
        TransportFailure::Dns(detail) => format!("Could not resolve the host name: {detail}"),
        TransportFailure::ConnectionRefused(_) => "Connection refused".to_string(),
        TransportFailure::Tls(detail) => format!("TLS error: {detail}"),
        TransportFailure::TooManyRedirects(_) => {
            format!("Too many redirects (more than {})", config.max_redirects)
        }
        TransportFailure::InvalidRequest(detail) => format!("Invalid request: {detail}"),
        TransportFailure::Denied(detail) => format!("Request not allowed: {detail}"),
        TransportFailure::Other(detail) => format!("Request failed: {detail}"),
    };
    Verdict {
        ok: false,
        reason: Some(reason),
        status_code: None,
        response_time_ms: None,
    }
}

/// Whether `needle` occurs in `haystack` (an empty needle always does). Linear in the
/// body's length, whatever the needle.
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// Most characters of a searched text a reason quotes.
pub const QUOTED_CHARS: usize = 64;

/// A searched text as a reason quotes it: at most [`QUOTED_CHARS`] characters, then `…`.
pub fn quoted(text: &str) -> String {
    if text.chars().count() <= QUOTED_CHARS {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(QUOTED_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;

    fn config(extra: &str) -> HttpConfig {
        parse(&format!(
            r#"{{"url":"http://127.0.0.1/","method":"GET"{extra}}}"#
        ))
        .expect("valid")
    }

    fn exchange(status: u16, body: &str, elapsed_ms: u32) -> Exchange<'_> {
        Exchange {
            status,
            body: body.as_bytes(),
            body_truncated: false,
            elapsed_ms,
        }
    }

    #[test]
    fn json_assertions_fail_the_check_by_name() {
        let c = config(
            r#","jsonAssertions":[{"path":"$.status","op":"eq","value":"ok"},{"path":"$.queue","op":"lt","value":100}]"#,
        );
        assert!(judge(&c, &exchange(200, r#"{"status":"ok","queue":3}"#, 5)).ok);
        let v = judge(&c, &exchange(200, r#"{"status":"ok","queue":340}"#, 5));
        assert_eq!(
            v.reason.as_deref(),
            Some("JSON assertion failed: $.queue lt 100 (got 340)")
        );
        let problems = parse(
            r#"{"url":"http://127.0.0.1/","method":"GET","jsonAssertions":[{"path":"status","op":"eq","value":1}]}"#,
        )
        .expect_err("invalid path");
        assert_eq!(problems[0].field, "jsonAssertions[0].path");
    }

    #[test]
    fn passes_on_expected_status() {
        let v = judge(&config(""), &exchange(200, "ok", 12));
        assert!(v.ok);
        assert_eq!(v.reason, None);
        assert_eq!(v.response_time_ms, Some(12));
    }

    #[test]
    fn names_expected_and_actual_status() {
        let v = judge(&config(""), &exchange(503, "", 5));
        assert!(!v.ok);
        assert_eq!(v.reason.as_deref(), Some("Expected status 200, got 503"));
        assert_eq!(v.status_code, Some(503));
    }

    #[test]
    fn status_range_accepts_any_2xx() {
        let c = config(r#","expectedStatusRange":true"#);
        assert!(judge(&c, &exchange(204, "", 1)).ok);
        assert!(judge(&c, &exchange(299, "", 1)).ok);
        let v = judge(&c, &exchange(301, "", 1));
        assert_eq!(v.reason.as_deref(), Some("Expected a 2xx status, got 301"));
    }

    #[test]
    fn checks_body_strings() {
        let c = config(r#","bodyContains":"ok","bodyNotContains":"error""#);
        assert!(judge(&c, &exchange(200, "all ok", 1)).ok);
        assert_eq!(
            judge(&c, &exchange(200, "fine", 1)).reason.as_deref(),
            Some("Response body does not contain \"ok\"")
        );
        assert_eq!(
            judge(&c, &exchange(200, "ok but error", 1))
                .reason
                .as_deref(),
            Some("Response body contains \"error\"")
        );
    }

    #[test]
    fn searches_are_exact_and_reasons_quote_briefly() {
        assert!(contains(b"abcabd", b"abd"));
        assert!(!contains(b"abcab", b"abd"));
        assert!(contains(b"anything", b""));
        // The case a windowed scan is slowest on: a long near-miss needle over a long body.
        let body = vec![b'a'; 1 << 20];
        let mut needle = vec![b'a'; 1023];
        needle.push(b'b');
        assert!(!contains(&body, &needle));
        let long = "n".repeat(1000);
        let q = quoted(&long);
        assert_eq!(q.chars().count(), QUOTED_CHARS);
        assert!(q.ends_with('…'));
        assert_eq!(quoted("ok"), "ok");
    }

    #[test]
    fn enforces_max_response_time() {
        let c = config(r#","maxResponseTimeMs":100"#);
        assert!(judge(&c, &exchange(200, "", 100)).ok);
        assert_eq!(
            judge(&c, &exchange(200, "", 101)).reason.as_deref(),
            Some("Response took 101 ms, over the limit of 100 ms")
        );
    }

    #[test]
    fn transport_failures_read_well() {
        let c = config(r#","maxRedirects":3"#);
        let reason = |f| transport_failure(&c, &f).reason.unwrap_or_default();
        assert_eq!(
            reason(TransportFailure::Timeout(10_000)),
            "Timed out after 10 s"
        );
        assert_eq!(
            reason(TransportFailure::Timeout(1_500)),
            "Timed out after 1.5 s"
        );
        assert_eq!(
            reason(TransportFailure::ConnectionRefused("x".into())),
            "Connection refused"
        );
        assert_eq!(
            reason(TransportFailure::TooManyRedirects(3)),
            "Too many redirects (more than 3)"
        );
        let v = transport_failure(&c, &TransportFailure::Timeout(1000));
        assert_eq!(v.response_time_ms, None);
    }
}
