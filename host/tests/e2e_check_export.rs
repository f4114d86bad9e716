//! End to end: a monitor's raw check history as a download. 5,001 stored checks (more than
//! two of the export's batches, with two checks at the same millisecond on a batch's
//! edge) come back over HTTP as CSV and as NDJSON: every one once, oldest first, within
//! `from`..`to`; bad parameters are refused; another workspace's monitor is not found.

use crate::support;

use serde_json::json;
use support::{Server, create};
use tocsin::store::checks::CheckRow;

const T0: i64 = 1_795_000_000_000;
const N: i64 = 5_000;

/// Store `N` checks a second apart, plus one more at the same millisecond as the 2,000th.
fn store_checks(server: &Server, workspace: &str, monitor: &str) {
    support::on_store(server, |store| async move {
        let row = |i: i64, id: String| CheckRow {
            id,
            monitor_id: monitor.to_string(),
            workspace_id: workspace.to_string(),
            checked_at: T0 + i * 1000,
            ok: i % 10 != 0,
            reason: (i % 10 == 0).then(|| format!("Expected 200, got 503, \"try {i}\"")),
            status_code: Some(if i % 10 == 0 { 503 } else { 200 }),
            response_time_ms: Some(20 + (i % 7) as i32),
            region: "eu".into(),
            details: "{}".into(),
            counted: true,
            maintenance: false,
        };
        let mut rows: Vec<CheckRow> = (0..N).map(|i| row(i, format!("chk_{i:08}"))).collect();
        rows.push(row(1_999, "chk_zz_same_ms".into()));
        let tx = store.begin_write().await.expect("tx");
        tx.insert_checks(rows).await.expect("insert");
        tx.commit().await.expect("commit");
        (store, ())
    });
}

#[test]
fn every_check_of_a_range_downloads_once_oldest_first_as_csv_and_ndjson() {
    let server = Server::start(&[]);
    let api = server.client();
    let workspace = api.workspace_id();
    let monitor = create(
        &api,
        "/v1/monitors",
        json!({"name": "History", "type": "heartbeat", "period": 86400}),
    );
    let id = monitor["id"].as_str().expect("id").to_string();
    store_checks(&server, &workspace, &id);
    let http = support::client();
    let get = |query: &str| {
        http.get(format!("{}/v1/monitors/{id}/checks?{query}", server.base))
            .bearer_auth(support::ADMIN_KEY)
            .send()
            .expect("export")
    };

    // CSV: a header, then every check once, oldest first.
    let r = get("format=csv");
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        r.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("text/csv; charset=utf-8")
    );
    assert!(
        r.headers()
            .get("content-disposition")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|d| d.contains(&format!("{id}-checks.csv"))),
    );
    let text = r.text().expect("body");
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    assert_eq!(&reader.headers().expect("headers")[0], "checkedAt");
    let records: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("record")).collect();
    assert_eq!(records.len() as i64, N + 1, "every check once");
    let ids: std::collections::HashSet<&str> = records.iter().map(|r| &r[8]).collect();
    assert_eq!(ids.len() as i64, N + 1, "none twice");
    let times: Vec<&str> = records.iter().map(|r| &r[0]).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "oldest first");
    assert_eq!(&records[0][8], "chk_00000000");
    assert_eq!(&records[10][5], "Expected 200, got 503, \"try 10\"");
    assert_eq!((&records[10][1], &records[10][2]), ("false", "503"));

    // A range, as NDJSON.
    let from = tocsin::time::format_ms(T0 + 100_000);
    let to = tocsin::time::format_ms(T0 + 199_000);
    let r = get(&format!("format=ndjson&from={from}&to={to}"));
    assert_eq!(r.status().as_u16(), 200);
    assert_eq!(
        r.headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/x-ndjson")
    );
    let lines: Vec<serde_json::Value> = r
        .text()
        .expect("body")
        .lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 100, "100 s of checks, ends included");
    assert_eq!(lines[0]["checkedAt"], from.as_str());
    assert_eq!(lines[99]["checkedAt"], to.as_str());
    assert_eq!(lines[0]["ok"], false);

    // Refused, naming the field; JSON pages as before.
    for (query, field) in [
        ("format=xml", "format"),
        ("format=csv&page=2", "page"),
        ("format=csv&from=yesterday", "from"),
    ] {
        let r = api.get(&format!("/v1/monitors/{id}/checks?{query}"));
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
    let page = api.get(&format!("/v1/monitors/{id}/checks?limit=5"));
    assert_eq!(page.body["data"].as_array().map(Vec::len), Some(5));
    assert_eq!(page.body["pagination"]["total"], N + 1);

    // Another workspace's key does not find it.
    let other = server.cli(&["workspace", "create", "--name", "Other"]);
    let other_ws = other.trim().to_string();
    let key = server.cli(&["key", "create", "--workspace", &other_ws, "--role", "admin"]);
    let stranger = api.with_key(key.trim());
    stranger
        .get(&format!("/v1/monitors/{id}/checks?format=csv"))
        .assert_error(404, "MONITOR_NOT_FOUND");
}
