//! A monitor's raw check history as a file: `GET /v1/monitors/{id}/checks?format=csv` (or
//! `ndjson`) streams every check of the range, oldest first, read in batches by key, so
//! memory stays the same at a thousand rows or a million and the first bytes leave at once.

use super::AppState;
use crate::store::checks::CheckRow;
use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Rows read per batch.
const BATCH: u64 = 2_000;

/// The file formats of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Ndjson,
}

impl Format {
    /// `csv` or `ndjson`; None for anything else (`json` is the paged list).
    pub fn parse(text: &str) -> Option<Format> {
        match text {
            "csv" => Some(Format::Csv),
            "ndjson" => Some(Format::Ndjson),
            _ => None,
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Format::Csv => "text/csv; charset=utf-8",
            Format::Ndjson => "application/x-ndjson",
        }
    }

    fn extension(self) -> &'static str {
        match self {
            Format::Csv => "csv",
            Format::Ndjson => "ndjson",
        }
    }
}

/// The CSV columns, in order.
pub const CSV_COLUMNS: [&str; 10] = [
    "checkedAt",
    "ok",
    "statusCode",
    "responseTimeMs",
    "region",
    "reason",
    "counted",
    "maintenance",
    "id",
    "details",
];

/// The response: the monitor's checks within `from..=to`, as a download.
pub fn response(
    state: &AppState,
    monitor_id: String,
    from: Option<i64>,
    to: Option<i64>,
    format: Format,
) -> Response {
    let store = state.store.clone();
    let first = Some(format == Format::Csv);
    let batches = futures::stream::try_unfold(
        (
            store,
            monitor_id.clone(),
            None::<(i64, String)>,
            first,
            false,
        ),
        move |(store, id, after, header_due, done)| async move {
            if done {
                return Ok::<_, std::io::Error>(None);
            }
            let rows = store
                .checks_after(&id, from, to, after, BATCH)
                .await
                .map_err(|e| {
                    tracing::warn!(monitor = %id, error = %e, "a check export stopped: the database failed");
                    std::io::Error::other(e.to_string())
                })?;
            let last = rows.last().map(|r| (r.checked_at, r.id.clone()));
            let finished = (rows.len() as u64) < BATCH;
            let chunk = encode(&rows, format, header_due == Some(true))?;
            Ok(Some((chunk, (store, id, last, Some(false), finished))))
        },
    );
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, format.content_type().to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!(
                    "attachment; filename=\"{monitor_id}-checks.{}\"",
                    format.extension()
                ),
            ),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
        Body::from_stream(batches),
    )
        .into_response()
}

/// One batch as bytes (with the CSV header row first when `header`).
fn encode(rows: &[CheckRow], format: Format, header: bool) -> std::io::Result<Bytes> {
    let mut out = Vec::with_capacity(rows.len() * 160 + 128);
    match format {
        Format::Csv => {
            let mut w = csv::Writer::from_writer(&mut out);
            if header {
                w.write_record(CSV_COLUMNS)?;
            }
            for r in rows {
                w.write_record([
                    crate::time::format_ms(r.checked_at),
                    r.ok.to_string(),
                    r.status_code.map(|c| c.to_string()).unwrap_or_default(),
                    r.response_time_ms
                        .map(|t| t.to_string())
                        .unwrap_or_default(),
                    r.region.clone(),
                    r.reason.clone().unwrap_or_default(),
                    r.counted.to_string(),
                    r.maintenance.to_string(),
                    r.id.clone(),
                    r.details.clone(),
                ])?;
            }
            w.flush()?;
        }
        Format::Ndjson => {
            for r in rows {
                let line = serde_json::json!({
                    "checkedAt": crate::time::format_ms(r.checked_at),
                    "ok": r.ok,
                    "statusCode": r.status_code,
                    "responseTimeMs": r.response_time_ms,
                    "region": r.region,
                    "reason": r.reason,
                    "counted": r.counted,
                    "maintenance": r.maintenance,
                    "id": r.id,
                    "details": serde_json::from_str::<serde_json::Value>(&r.details)
                        .unwrap_or_else(|_| serde_json::json!({})),
                });
                serde_json::to_writer(&mut out, &line)?;
                out.push(b'\n');
            }
        }
    }
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, reason: Option<&str>) -> CheckRow {
        CheckRow {
            id: id.into(),
            monitor_id: "mon_1".into(),
            workspace_id: "ws_1".into(),
            checked_at: 1_795_253_400_000,
            ok: reason.is_none(),
            reason: reason.map(str::to_string),
            status_code: Some(503),
            response_time_ms: None,
            region: "eu".into(),
            details: r#"{"keyword":"a,b"}"#.into(),
            counted: true,
            maintenance: false,
        }
    }

    #[test]
    fn csv_quotes_what_needs_it_and_ndjson_is_one_object_a_line() {
        let rows = [
            row("chk_1", Some("Expected \"ok\", got 503\nretry")),
            row("chk_2", None),
        ];
        let text = String::from_utf8(encode(&rows, Format::Csv, true).expect("csv").to_vec())
            .expect("utf8");
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(
            reader
                .headers()
                .expect("headers")
                .iter()
                .collect::<Vec<_>>(),
            CSV_COLUMNS
        );
        let records: Vec<csv::StringRecord> =
            reader.records().map(|r| r.expect("record")).collect();
        assert_eq!(records.len(), 2);
        assert_eq!(&records[0][5], "Expected \"ok\", got 503\nretry");
        assert_eq!(&records[0][0], "2026-11-21T09:30:00.000Z");
        assert_eq!(&records[0][3], "", "no response time: empty");
        assert_eq!(&records[1][9], r#"{"keyword":"a,b"}"#);
        // Without the header (a later batch).
        let more = encode(&rows[1..], Format::Csv, false).expect("csv");
        assert!(more.starts_with(b"2026-11-21T09:30:00.000Z,true,503,"));
        let lines = encode(&rows, Format::Ndjson, false).expect("ndjson");
        let parsed: Vec<serde_json::Value> = lines
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).expect("json line"))
            .collect();
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0]["details"]["keyword"], "a,b");
        assert_eq!(parsed[1]["responseTimeMs"], serde_json::Value::Null);
    }
}
