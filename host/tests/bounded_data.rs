//! What one monitor can store is bounded, and nothing one input or one plugin answer
//! holds can cost other results: NUL characters are refused at the API (PostgreSQL text
//! cannot store them), plugin text is cleaned and cut, configurations have documented
//! size limits, and a batch of results the database refuses is written record by record so
//! only the bad record is lost.

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::target::Target;
use support::{Server, wait_for};
use tocsin::engine::recorder::write_resiliently;
use tocsin::engine::{CheckRecord, EngineContext};
use tocsin::plans::Plan;
use tocsin::store::{Page, Store};

#[test]
fn nul_characters_are_refused_everywhere_and_nothing_is_created() {
    let server = Server::start(&[]);
    let api = server.client();
    let cases = [
        (
            json!({"name": "a\u{0}b", "type": "http", "method": "GET", "url": "http://127.0.0.1:9/", "interval": 60}),
            "name",
        ),
        (
            json!({"name": "k", "type": "keyword", "method": "GET", "url": "http://127.0.0.1:9/", "interval": 60, "keyword": "\u{0}"}),
            "keyword",
        ),
        (
            json!({"name": "h", "type": "http", "method": "GET", "url": "http://127.0.0.1:9/", "interval": 60, "headers": {"X-A": "x\u{0}"}}),
            "headers.X-A",
        ),
    ];
    for (body, field) in cases {
        let r = api.post("/v1/monitors", &body);
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }
    assert_eq!(api.get("/v1/monitors").body["pagination"]["total"], 0);
    // In a path id or a query, too; and the public pages answer 404, not an error.
    api.get("/v1/monitors/mon_%00x")
        .assert_error(400, "VALIDATION_ERROR");
    api.get("/v1/monitors?search=%00")
        .assert_error(400, "VALIDATION_ERROR");
    let page = api.without_key().get("/status/x%00y");
    assert_eq!(page.status, 404);
}

#[test]
fn sizes_have_documented_limits_and_reasons_quote_briefly() {
    let target = Target::start();
    let server = Server::start(&[]);
    let api = server.client();
    let monitor = |extra: serde_json::Value| {
        let mut m = json!({"name": format!("m{}", rand()), "type": "http", "method": "GET",
                           "url": target.url("/ok"), "interval": 1});
        for (k, v) in extra.as_object().expect("object") {
            m[k] = v.clone();
        }
        api.post("/v1/monitors", &m)
    };
    for (extra, field) in [
        (json!({"bodyContains": "x".repeat(1025)}), "bodyContains"),
        (
            json!({"method": "POST", "body": "x".repeat(65_537)}),
            "body",
        ),
        (
            json!({"headers": {"X-Big": "v".repeat(8193)}}),
            "headers.X-Big",
        ),
    ] {
        let r = monitor(extra);
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(r.body["error"]["details"][0]["field"], field, "{}", r.body);
    }

    // A long search text that is not found: the reason quotes its start only.
    let wanted = format!("{}-not-there", "w".repeat(1000));
    let r = monitor(json!({"bodyContains": wanted}));
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["data"]["id"].as_str().expect("id").to_string();
    let reason = wait_for("a failed check", Duration::from_secs(30), || {
        api.get(&format!("/v1/monitors/{id}/checks?limit=1")).body["data"][0]["reason"]
            .as_str()
            .map(str::to_string)
    });
    assert!(
        reason.starts_with("Response body does not contain \"www"),
        "{reason}"
    );
    assert!(reason.contains('…') && reason.len() < 200, "{reason}");
}

fn rand() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// Three monitors' results in one batch, the middle one with a reason PostgreSQL cannot
/// store (as a plugin could once produce): the other two are recorded.
async fn one_bad_record_costs_only_itself(store: Store) {
    let now = 1_795_253_400_000;
    let ws = store
        .create_workspace("Bounded", Plan::Enterprise, now)
        .await
        .expect("workspace")
        .id;
    for id in ["mon_a", "mon_b", "mon_c"] {
        store
            .insert_monitor(support::rows::monitor(id, &ws, now))
            .await
            .expect("monitor");
    }
    let record = |id: &str, reason: &str| CheckRecord {
        monitor_id: id.into(),
        workspace_id: ws.clone(),
        checked_at: now,
        ok: false,
        reason: Some(reason.into()),
        status_code: None,
        response_time_ms: None,
        region: "local".into(),
        details: "{}".into(),
        confirmation: None,
        probe: None,
    };
    let batch = [
        record("mon_a", "Connection refused"),
        record("mon_b", "bad\u{0}reason"),
        record("mon_c", "Connection refused"),
    ];
    write_resiliently(&store, &EngineContext::new("https://t.test"), &batch).await;
    let page = Page { page: 1, limit: 10 };
    for id in ["mon_a", "mon_c"] {
        let (rows, _) = store
            .list_checks(id, None, None, page)
            .await
            .expect("checks");
        assert_eq!(rows.len(), 1, "{id} lost its result with the bad one");
    }
}

#[tokio::test]
async fn a_refused_record_costs_only_itself_on_postgres() {
    let Some(base) = support::pg::base_url("a_refused_record_costs_only_itself_on_postgres") else {
        return;
    };
    let db = support::pg::TestDb::create(&base).await;
    let store = Store::connect(&db.url).await.expect("store");
    store.migrate().await.expect("migrate");
    one_bad_record_costs_only_itself(store.clone()).await;
    // PostgreSQL refused the bad one; it was dropped, not retried for ever.
    let (rows, _) = store
        .list_checks("mon_b", None, None, Page { page: 1, limit: 10 })
        .await
        .expect("checks");
    assert!(rows.is_empty());
    store.close().await;
    db.drop().await;
}

#[tokio::test]
async fn a_batch_is_written_whole_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::connect(&format!("sqlite://{}", dir.path().join("b.db").display()))
        .await
        .expect("store");
    store.migrate().await.expect("migrate");
    one_bad_record_costs_only_itself(store).await;
}
