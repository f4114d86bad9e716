//! Timestamps on the wire: ISO 8601 UTC with milliseconds, `2026-11-21T09:30:00.000Z`.

use crate::clock::Millis;
use chrono::{DateTime, SecondsFormat, Utc};

/// Format epoch milliseconds as the API writes timestamps.
pub fn format_ms(ms: Millis) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parse an ISO 8601 / RFC 3339 timestamp (any offset) into epoch milliseconds.
pub fn parse_ms(text: &str) -> Option<Millis> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_millis())
}

/// The current time in the API's format.
pub fn now_string() -> String {
    format_ms(Utc::now().timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_with_millis_and_z() {
        assert_eq!(format_ms(1_795_253_400_000), "2026-11-21T09:30:00.000Z");
        assert_eq!(format_ms(1_795_253_400_123), "2026-11-21T09:30:00.123Z");
    }

    #[test]
    fn parses_offsets_and_round_trips() {
        assert_eq!(
            parse_ms("2026-11-21T09:30:00.000Z"),
            Some(1_795_253_400_000)
        );
        assert_eq!(
            parse_ms("2026-11-21T10:30:00+01:00"),
            Some(1_795_253_400_000)
        );
        assert_eq!(parse_ms("yesterday"), None);
        assert_eq!(parse_ms(&format_ms(42)), Some(42));
    }
}
