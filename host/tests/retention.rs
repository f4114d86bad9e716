//! Retention on both backends: raw results past the window go, daily rollups stay (and
//! long-window uptime reads them, matching what the raw rows said); a deleted monitor's
//! history goes afterwards; old finished deliveries and resolved incidents go while
//! pending ones stay; and all of it in small batches.

use crate::support;

use serde_json::json;
use tocsin::engine::recorder::write_batch;
use tocsin::engine::retention::{BATCH, RetentionSettings, sweep};
use tocsin::engine::{CheckRecord, EngineContext, actions};
use tocsin::plans::Plan;
use tocsin::store::{MonitorRow, Page, PolicyRow, Store};

const DAY: i64 = 86_400_000;
/// Midnight UTC, so days line up with the rollups.
const NOW: i64 = 1_795_219_200_000;

fn keep(days: i64) -> Option<std::time::Duration> {
    Some(std::time::Duration::from_millis((days * DAY) as u64))
}

async fn monitor(store: &Store, ws: &str, id: &str, policy: Option<&str>) {
    store
        .insert_monitor(MonitorRow {
            interval_secs: 3600,
            alert_policy_id: policy.map(String::from),
            ..support::rows::monitor(id, ws, NOW - 200 * DAY)
        })
        .await
        .expect("monitor");
}

fn record(ws: &str, id: &str, at: i64, ok: bool) -> CheckRecord {
    CheckRecord {
        monitor_id: id.into(),
        workspace_id: ws.into(),
        checked_at: at,
        ok,
        reason: (!ok).then(|| "Connection refused".into()),
        status_code: ok.then_some(200),
        response_time_ms: ok.then_some(u32::try_from(at.rem_euclid(97)).unwrap_or(0) + 10),
        region: "local".into(),
        details: "{}".into(),
        confirmation: None,
        probe: None,
    }
}

async fn exercise(store: Store) {
    let ctx = EngineContext::new("https://t.test");
    let ws = store
        .create_workspace("Retention", Plan::Enterprise, NOW - 200 * DAY)
        .await
        .expect("workspace")
        .id;
    monitor(&store, &ws, "mon_hourly", None).await;
    // 120 days of hourly checks, one in seven failing.
    let records: Vec<CheckRecord> = (0..120 * 24)
        .map(|h| {
            let at = NOW - 120 * DAY + h * 3_600_000;
            record(&ws, "mon_hourly", at, h % 7 != 0)
        })
        .collect();
    for chunk in records.chunks(500) {
        write_batch(&store, &ctx, chunk).await.expect("write");
    }
    let up = records.iter().filter(|r| r.ok).count() as u64;

    // Over a week inside the raw window, the rollup-based figures match the raw ones.
    let week = store
        .uptime("mon_hourly", NOW - 7 * DAY - 1_800_000, NOW - 1)
        .await
        .expect("uptime");
    let raw: Vec<&CheckRecord> = records
        .iter()
        .filter(|r| r.checked_at >= NOW - 7 * DAY - 1_800_000)
        .collect();
    assert_eq!(week.total, raw.len() as u64);
    assert_eq!(week.up, raw.iter().filter(|r| r.ok).count() as u64);
    let times: Vec<f64> = raw
        .iter()
        .filter_map(|r| r.response_time_ms.map(f64::from))
        .collect();
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    assert!(
        (week.mean_response_ms.expect("mean") - mean).abs() < 1e-6,
        "{week:?} vs {mean}"
    );

    // Sweep with a 90-day window: 30 days of raw rows go, in many small batches.
    let report = sweep(
        &store,
        &RetentionSettings {
            checks: keep(90),
            deliveries: None,
            incidents: None,
            audit: None,
        },
        NOW,
    )
    .await
    .expect("sweep");
    assert_eq!(report.checks, 30 * 24, "{report:?}");
    assert!(report.batches > (30 * 24) / BATCH, "{report:?}");
    let (_, left) = store
        .list_checks("mon_hourly", None, None, Page { page: 1, limit: 1 })
        .await
        .expect("checks");
    assert_eq!(left, 90 * 24);
    // The rollups keep the whole history: uptime over 120 days still counts every check.
    let all = store
        .uptime("mon_hourly", NOW - 120 * DAY, NOW - 1)
        .await
        .expect("uptime");
    assert_eq!((all.total, all.up), (records.len() as u64, up));
    assert_eq!(all.p95_response_ms, None, "long windows have no p95");

    // A deleted monitor's history goes afterwards, in batches.
    monitor(&store, &ws, "mon_gone", None).await;
    let history: Vec<CheckRecord> = (0..1_200)
        .map(|i| record(&ws, "mon_gone", NOW - 10 * DAY + i * 60_000, true))
        .collect();
    for chunk in history.chunks(500) {
        write_batch(&store, &ctx, chunk).await.expect("write");
    }
    assert!(
        actions::delete_monitor(&store, &ws, "mon_gone", NOW)
            .await
            .expect("delete")
    );
    let report = sweep(
        &store,
        &RetentionSettings {
            checks: None,
            deliveries: None,
            incidents: None,
            audit: None,
        },
        NOW,
    )
    .await
    .expect("sweep");
    assert_eq!(report.deleted_monitor_checks, 1_200, "{report:?}");
    assert!(report.batches >= 3, "{report:?}");
    let (_, left) = store
        .list_checks("mon_gone", None, None, Page { page: 1, limit: 1 })
        .await
        .expect("checks");
    assert_eq!(left, 0);

    // Deliveries and incidents: an old outage, resolved, and a recent one still open.
    store
        .insert_alert_policy(PolicyRow {
            name: "r".into(),
            failure_threshold: 1,
            channels: json!([{"type": "webhook", "url": "https://hooks.t.test/x"}]).to_string(),
            ..PolicyRow::new("pol_r", &ws, NOW - 200 * DAY)
        })
        .await
        .expect("policy");
    monitor(&store, &ws, "mon_alerting", Some("pol_r")).await;
    for (at, ok) in [
        (NOW - 60 * DAY, false),
        (NOW - 60 * DAY + 60_000, true),
        (NOW - DAY, false),
    ] {
        write_batch(&store, &ctx, &[record(&ws, "mon_alerting", at, ok)])
            .await
            .expect("write");
    }
    // The old outage's two deliveries were sent; the new one's is still pending.
    let (deliveries, _) = store
        .list_deliveries(&ws, None, None, None, Page { page: 1, limit: 10 })
        .await
        .expect("deliveries");
    assert_eq!(deliveries.len(), 3);
    for d in deliveries.iter().filter(|d| d.created_at < NOW - 30 * DAY) {
        let mut done = d.clone();
        done.status = tocsin::store::DeliveryState::Succeeded;
        done.attempts = 1;
        store
            .record_delivery_attempt(
                d.lease_until,
                done,
                tocsin::store::AttemptRow {
                    id: tocsin::ids::new_id(tocsin::ids::prefix::DELIVERY_ATTEMPT),
                    delivery_id: d.id.clone(),
                    attempt: 1,
                    at: d.created_at,
                    ok: true,
                    status_code: Some(200),
                    error: None,
                    duration_ms: 5,
                },
            )
            .await
            .expect("attempt");
    }
    let report = sweep(
        &store,
        &RetentionSettings {
            checks: None,
            deliveries: keep(30),
            incidents: keep(30),
            audit: None,
        },
        NOW,
    )
    .await
    .expect("sweep");
    assert_eq!((report.deliveries, report.incidents), (2, 1), "{report:?}");
    let (deliveries, _) = store
        .list_deliveries(&ws, None, None, None, Page { page: 1, limit: 10 })
        .await
        .expect("deliveries");
    assert_eq!(deliveries.len(), 1, "the pending delivery stays");
}

#[tokio::test]
async fn retention_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::connect(&format!("sqlite://{}", dir.path().join("r.db").display()))
        .await
        .expect("store");
    store.migrate().await.expect("migrate");
    exercise(store).await;
}

#[tokio::test]
async fn retention_on_postgres() {
    let Some(base) = support::pg::base_url("retention_on_postgres") else {
        return;
    };
    let db = support::pg::TestDb::create(&base).await;
    let store = Store::connect(&db.url).await.expect("store");
    store.migrate().await.expect("migrate");
    exercise(store.clone()).await;
    store.close().await;
    db.drop().await;
}
