//! The store on both backends: SQLite always, PostgreSQL when `TOCSIN_TEST_DATABASE_URL`
//! names a server (each run gets its own database there, dropped afterwards).

use crate::support;

use std::collections::HashSet;
use tocsin::engine::CheckRecord;
use tocsin::engine::EngineContext;
use tocsin::engine::actions;
use tocsin::engine::recorder::write_batch;
use tocsin::plans::Plan;
use tocsin::store::State;
use tocsin::store::keys::Role;
use tocsin::store::monitors::{MonitorListQuery, MonitorRow, MonitorSort};
use tocsin::store::{MonitorChange, Order, Page, Store};

const NOW: i64 = 1_795_253_400_000;

fn monitor(id: &str, ws: &str, name: &str, created_at: i64) -> MonitorRow {
    MonitorRow {
        name: name.into(),
        config: r#"{"url":"http://127.0.0.1/","method":"GET"}"#.into(),
        ..MonitorRow::new(id, ws, "http", created_at)
    }
}

fn record(monitor_id: &str, ws: &str, at: i64, ok: bool, rt: Option<u32>) -> CheckRecord {
    CheckRecord {
        monitor_id: monitor_id.into(),
        workspace_id: ws.into(),
        checked_at: at,
        ok,
        reason: (!ok).then(|| "Expected status 200, got 503".to_string()),
        status_code: Some(if ok { 200 } else { 503 }),
        response_time_ms: rt,
        region: "local".into(),
        details: "{}".into(),
        confirmation: None,
        probe: None,
    }
}

fn page(page: u64, limit: u64) -> Page {
    Page { page, limit }
}

/// Everything the store promises, against one backend.
async fn exercise(store: Store) {
    let ctx = EngineContext::new("https://tocsin.test");
    store.migrate().await.expect("migrations run");
    // Running them again is a no-op.
    store.migrate().await.expect("migrations are idempotent");

    // --- bootstrap and keys -------------------------------------------------------
    let secret = "tcs_StoreTestKey0000000000000000000000000001".to_string();
    let boot = store
        .bootstrap(Plan::Business, Some(secret.clone()), NOW)
        .await
        .expect("bootstrap")
        .expect("first start");
    assert_eq!(boot.key_secret, secret);
    assert!(
        store
            .bootstrap(Plan::Business, None, NOW)
            .await
            .expect("bootstrap")
            .is_none(),
        "only on an empty database"
    );
    let ws = store
        .workspace(&boot.workspace_id)
        .await
        .expect("query")
        .expect("workspace");
    assert_eq!(
        (ws.name.as_str(), ws.plan.as_str()),
        ("Default", "business")
    );
    assert!(ws.webhook_secret.starts_with("whsec_"));
    let p = store
        .authenticate(&secret)
        .await
        .expect("query")
        .expect("valid key");
    assert_eq!(
        (p.workspace_id.as_str(), p.role),
        (boot.workspace_id.as_str(), Role::Owner),
        "the first start's key is the operator's owner key"
    );
    assert!(
        store
            .authenticate("tcs_0000000000000000000000000000000000000000")
            .await
            .expect("query")
            .is_none()
    );
    assert!(
        store
            .authenticate("garbage")
            .await
            .expect("query")
            .is_none()
    );
    let other = store
        .create_workspace("Other", Plan::Free, NOW)
        .await
        .expect("workspace");
    let (_, read_secret) = store
        .create_api_key(&other.id, "ci", Role::Read, None, NOW)
        .await
        .expect("key");
    assert_eq!(
        store
            .authenticate(&read_secret)
            .await
            .expect("query")
            .map(|p| p.role),
        Some(Role::Read)
    );

    // --- monitors -----------------------------------------------------------------
    let ws_id = boot.workspace_id.clone();
    let mut changes = store.subscribe_monitor_changes();
    for (i, name) in ["beta", "alpha", "gamma"].iter().enumerate() {
        store
            .insert_monitor(monitor(&format!("mon_{i}"), &ws_id, name, NOW + i as i64))
            .await
            .expect("insert");
    }
    store
        .insert_monitor(monitor("mon_other", &other.id, "theirs", NOW))
        .await
        .expect("insert");
    assert_eq!(
        changes.recv().await.expect("change"),
        MonitorChange::Upserted("mon_0".into())
    );

    let q = |sort, order, status: Option<&str>, p| MonitorListQuery {
        search: None,
        kind: None,
        tag: None,
        status: status.and_then(<tocsin::store::MonitorState as tocsin::store::State>::parse),
        sort,
        order,
        page: p,
    };
    let (rows, total) = store
        .list_monitors(
            &ws_id,
            &q(MonitorSort::CreatedAt, Order::Desc, None, page(1, 2)),
        )
        .await
        .expect("list");
    assert_eq!(total, 3, "other workspaces' monitors are not counted");
    assert_eq!(
        rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["gamma", "alpha"]
    );
    let (rows, _) = store
        .list_monitors(&ws_id, &q(MonitorSort::Name, Order::Asc, None, page(1, 10)))
        .await
        .expect("list");
    assert_eq!(
        rows.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
        ["alpha", "beta", "gamma"]
    );
    let (rows, _) = store
        .list_monitors(&ws_id, &q(MonitorSort::Name, Order::Asc, None, page(2, 2)))
        .await
        .expect("list");
    assert_eq!(rows.len(), 1);
    assert!(
        store
            .monitor(&other.id, "mon_0")
            .await
            .expect("query")
            .is_none(),
        "scoped by workspace"
    );

    let mut edited = store
        .monitor(&ws_id, "mon_0")
        .await
        .expect("query")
        .expect("monitor");
    edited.name = "beta 2".into();
    edited.updated_at = NOW + 100;
    // Counters are not overwritten by edits.
    edited.consecutive_failures = 99;
    let saved = store.update_monitor(edited).await.expect("update");
    assert_eq!(saved.name, "beta 2");
    assert_eq!(
        store
            .monitor(&ws_id, "mon_0")
            .await
            .expect("q")
            .expect("m")
            .consecutive_failures,
        0
    );

    // --- check results through the engine's batch writer ---------------------------
    let batch = vec![
        record("mon_0", &ws_id, NOW + 1_000, true, Some(10)),
        record("mon_0", &ws_id, NOW + 2_000, false, Some(20)),
        record("mon_0", &ws_id, NOW + 3_000, false, None),
        record("mon_1", &ws_id, NOW + 1_000, true, Some(30)),
        record("mon_gone", &ws_id, NOW + 1_000, true, Some(1)),
    ];
    write_batch(&store, &ctx, &batch)
        .await
        .expect("batch written");
    let m0 = store.monitor(&ws_id, "mon_0").await.expect("q").expect("m");
    assert_eq!(
        (
            m0.status.name(),
            m0.consecutive_failures,
            m0.consecutive_successes
        ),
        ("down", 2, 0)
    );
    assert_eq!(m0.last_checked_at, Some(NOW + 3_000));
    assert_eq!(m0.last_response_time_ms, None);
    let m1 = store.monitor(&ws_id, "mon_1").await.expect("q").expect("m");
    assert_eq!(
        (m1.status.name(), m1.last_response_time_ms),
        ("up", Some(30))
    );
    // A new interval moves the counters' row within the schedule; they and the last
    // check stay as they were, and the next batch finds them.
    let mut longer = m0.clone();
    longer.interval_secs = 300;
    let saved = store.update_monitor(longer).await.expect("update");
    assert_eq!(
        (
            saved.interval_secs,
            saved.consecutive_failures,
            saved.last_checked_at
        ),
        (300, 2, Some(NOW + 3_000))
    );
    assert_eq!(
        store
            .monitors_by_id(&ws_id, vec!["mon_0".into()])
            .await
            .expect("q")[0]
            .consecutive_failures,
        2
    );
    write_batch(
        &store,
        &ctx,
        &[record("mon_0", &ws_id, NOW + 4_000, true, Some(5))],
    )
    .await
    .expect("batch");
    assert_eq!(
        store
            .monitor(&ws_id, "mon_0")
            .await
            .expect("q")
            .expect("m")
            .status
            .name(),
        "up"
    );

    // The daily rollup adds up across batches (the second one hits the upsert).
    let day = tocsin::store::status_pages::day_of(NOW + 1_000);
    let rollup: Vec<(String, i32, i32)> = store
        .daily_uptime(vec!["mon_0".into(), "mon_1".into()], day)
        .await
        .expect("rollup")
        .into_iter()
        .map(|r| (r.monitor_id, r.total, r.up))
        .collect();
    let mut rollup = rollup;
    rollup.sort();
    assert_eq!(
        rollup,
        [("mon_0".to_string(), 4, 2), ("mon_1".to_string(), 1, 1)],
        "days must not straddle NOW in this test"
    );

    let (checks, total) = store
        .list_checks("mon_0", None, None, page(1, 10))
        .await
        .expect("checks");
    assert_eq!(total, 4);
    assert_eq!(checks[0].checked_at, NOW + 4_000, "newest first");
    assert_eq!(
        checks[1].reason.as_deref(),
        Some("Expected status 200, got 503")
    );
    let (window, total) = store
        .list_checks("mon_0", Some(NOW + 2_000), Some(NOW + 3_000), page(1, 10))
        .await
        .expect("checks");
    assert_eq!((window.len(), total), (2, 2));
    assert_eq!(
        store
            .list_checks("mon_gone", None, None, page(1, 10))
            .await
            .expect("checks")
            .1,
        0,
        "results of unknown monitors are dropped"
    );

    let up = store
        .uptime("mon_0", NOW, NOW + 10_000)
        .await
        .expect("uptime");
    assert_eq!((up.total, up.up, up.down), (4, 2, 2));
    assert_eq!(up.p95_response_ms, Some(20));

    // --- pause, resume, delete --------------------------------------------------------
    let (paused, changed) = actions::set_paused(&store, &ctx, &ws_id, "mon_1", true, NOW)
        .await
        .expect("pause");
    assert!(changed);
    assert_eq!(paused.status.name(), "paused");
    assert!(
        !actions::set_paused(&store, &ctx, &ws_id, "mon_1", true, NOW)
            .await
            .expect("pause")
            .1
    );
    // A check that finishes after the pause does not unpause it.
    write_batch(
        &store,
        &ctx,
        &[record("mon_1", &ws_id, NOW + 5_000, true, Some(1))],
    )
    .await
    .expect("batch");
    assert_eq!(
        store
            .monitor(&ws_id, "mon_1")
            .await
            .expect("q")
            .expect("m")
            .status
            .name(),
        "paused"
    );
    let active: Vec<String> = store
        .active_monitors_after(None, 10_000)
        .await
        .expect("active")
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert!(!active.contains(&"mon_1".to_string()));
    // Read a page at a time (as the scheduler does), the same monitors come back.
    let mut paged = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store
            .active_monitors_after(after.as_deref(), 1)
            .await
            .expect("page");
        let Some(last) = page.last() else { break };
        after = Some(last.id.clone());
        paged.extend(page.into_iter().map(|m| m.id));
    }
    let mut sorted = active.clone();
    sorted.sort();
    assert_eq!(paged, sorted);
    assert!(!paged.is_empty());
    let (resumed, _) = actions::set_paused(&store, &ctx, &ws_id, "mon_1", false, NOW)
        .await
        .expect("resume");
    assert_eq!(resumed.status.name(), "pending");
    // Resuming counts afresh, as the response and every later read say.
    let reread = store.monitor(&ws_id, "mon_1").await.expect("q").expect("m");
    assert_eq!(
        (
            resumed.consecutive_successes,
            reread.consecutive_successes,
            reread.status.name()
        ),
        (0, 0, "pending")
    );

    assert!(
        !actions::delete_monitor(&store, &other.id, "mon_0", NOW)
            .await
            .expect("delete"),
        "not across workspaces"
    );
    assert!(
        actions::delete_monitor(&store, &ws_id, "mon_0", NOW)
            .await
            .expect("delete")
    );
    assert!(
        !actions::delete_monitor(&store, &ws_id, "mon_0", NOW)
            .await
            .expect("delete")
    );
    // The kept count follows inserts and deletes, a refused delete included, and is what
    // an unfiltered list reports.
    let counted = store
        .list_monitors(
            &ws_id,
            &q(
                MonitorSort::CreatedAt,
                Order::Desc,
                Some("paused"),
                page(1, 100),
            ),
        )
        .await
        .expect("list")
        .1;
    let (all, kept) = store
        .list_monitors(
            &ws_id,
            &q(MonitorSort::CreatedAt, Order::Desc, None, page(1, 100)),
        )
        .await
        .expect("list");
    assert_eq!(kept, all.len() as u64);
    assert_eq!(kept, 2, "three created, one deleted");
    assert!(counted <= kept);
    assert_eq!(store.monitor_total(&other.id).await.expect("total"), 1);
    // The history follows in batches, with the retention sweep.
    let swept = tocsin::engine::retention::sweep(
        &store,
        &tocsin::engine::retention::RetentionSettings {
            checks: None,
            deliveries: None,
            incidents: None,
            audit: None,
        },
        NOW,
    )
    .await
    .expect("sweep");
    assert!(swept.deleted_monitor_checks > 0, "{swept:?}");
    assert_eq!(
        store
            .list_checks("mon_0", None, None, page(1, 10))
            .await
            .expect("checks")
            .1,
        0,
        "history goes with the monitor"
    );
    assert!(store.ping().await);

    // --- slot claims: one statement, each slot of a region to exactly one node -----
    // A node writes its heartbeat before it claims: a slot whose holder is not heard
    // from is taken over (below).
    for (node, region) in [
        ("node_a", "eu"),
        ("node_b", "eu"),
        ("node_c", "us"),
        ("node_d", "us"),
    ] {
        store
            .heartbeat(node, region, NOW, NOW)
            .await
            .expect("heartbeat");
    }
    let won_a = store
        .claim_slots("eu", &[(1, 7), (2, 7)], "node_a", NOW)
        .await
        .expect("claim");
    assert_eq!(won_a, HashSet::from([(1, 7), (2, 7)]));
    let won_b = store
        .claim_slots("eu", &[(1, 7), (2, 8), (3, 7)], "node_b", NOW)
        .await
        .expect("claim");
    assert_eq!(
        won_b,
        HashSet::from([(2, 8), (3, 7)]),
        "a slot node_a holds stays node_a's"
    );
    assert!(
        store
            .claim_slots("eu", &[(1, 7)], "node_b", NOW)
            .await
            .expect("claim")
            .is_empty(),
        "a batch of lost claims wins nothing"
    );
    assert_eq!(
        store
            .claim_slots("eu", &[(1, 7), (2, 8)], "node_a", NOW)
            .await
            .expect("claim again"),
        HashSet::from([(1, 7)]),
        "asking again for a slot it holds tells the node it is still its own"
    );
    assert_eq!(
        store
            .claim_slots("us", &[(1, 7)], "node_c", NOW)
            .await
            .expect("another region"),
        HashSet::from([(1, 7)]),
        "each region has its own slots"
    );
    assert!(
        store
            .claim_slots("eu", &[], "node_b", NOW)
            .await
            .expect("empty claim")
            .is_empty()
    );
    assert_eq!(
        store
            .slot_holder("eu", 1, 7)
            .await
            .expect("holder")
            .as_deref(),
        Some("node_a")
    );
    assert_eq!(store.slot_holder("eu", 9, 7).await.expect("holder"), None);
    store.leave("node_c", 8).await.expect("leave");
    assert_eq!(
        store
            .slot_holder("us", 1, 7)
            .await
            .expect("holder")
            .as_deref(),
        Some("node_c"),
        "a leaving node keeps the slots before the one it leaves in"
    );
    store.leave("node_c", 7).await.expect("leave");
    assert_eq!(
        store
            .claim_slots("us", &[(1, 7)], "node_d", NOW)
            .await
            .expect("claim a given-back slot"),
        HashSet::from([(1, 7)]),
        "a leaving node gives its slots back"
    );
    // A dead node's slots (ahead of the moment it died) go to the first live node that
    // asks, once its heartbeat is older than NODE_TTL_MS; a node never heard from holds
    // nothing against a live one.
    let ttl = tocsin::store::cluster::NODE_TTL_MS;
    store
        .heartbeat("node_dead", "eu", NOW - 60_000, NOW - ttl - 1)
        .await
        .expect("heartbeat");
    store
        .heartbeat("node_late", "eu", NOW - 60_000, NOW - ttl + 1_000)
        .await
        .expect("heartbeat");
    for (node, bucket) in [("node_dead", 5), ("node_late", 6), ("node_unknown", 7)] {
        assert_eq!(
            store
                .claim_slots("eu", &[(bucket, 9)], node, NOW - ttl - 1)
                .await
                .expect("claim"),
            HashSet::from([(bucket, 9)])
        );
    }
    assert_eq!(
        store
            .claim_slots("eu", &[(5, 9), (6, 9), (7, 9)], "node_a", NOW)
            .await
            .expect("take over"),
        HashSet::from([(5, 9), (7, 9)]),
        "the slots of a node not heard from are taken over; a node heard from lately keeps its own"
    );
    assert_eq!(
        store
            .slot_holder("eu", 5, 9)
            .await
            .expect("holder")
            .as_deref(),
        Some("node_a")
    );
    assert!(
        store
            .claim_slots("eu", &[(5, 9)], "node_dead", NOW)
            .await
            .expect("claim")
            .is_empty(),
        "a node back from the dead does not take its slot back from a live one"
    );
    store.prune_cluster(NOW + 3_600_001).await.expect("prune");
    assert_eq!(
        store.slot_holder("eu", 1, 7).await.expect("holder"),
        None,
        "claims are pruned after their retention"
    );

    // --- a page of monitors comes back exactly as stored -------------------------
    let third = store
        .create_workspace("Third", Plan::Free, NOW)
        .await
        .expect("workspace");
    let mut full = monitor("mon_full", &third.id, "quote \" back \\ tab \t ✓ 雪", NOW);
    full.config =
        r#"{"url":"http://127.0.0.1/a\"b","headers":{"X-É":"v\\1"},"n":[1,2.5,null,true]}"#.into();
    full.regions = r#"["eu","us"]"#.into();
    full.status = tocsin::store::MonitorState::Down;
    full.last_checked_at = Some(NOW + 5);
    full.last_response_time_ms = Some(123);
    full.consecutive_failures = 4;
    full.consecutive_successes = 2;
    full.region_cursor = 1;
    full.regional_confirmation = true;
    full.tags = r#"["prod","db"]"#.into();
    full.ping_token = Some("tok".into());
    full.depends_on = r#"["mon_x"]"#.into();
    full.snoozed_until = Some(NOW + 60_000);
    full.apply_key = Some("key-1".into());
    full.managed_by = Some("tocsin apply".into());
    full.updated_at = NOW + 9;
    store.insert_monitor(full.clone()).await.expect("insert");
    let plain = monitor("mon_plain", &third.id, "plain", NOW + 1);
    store.insert_monitor(plain.clone()).await.expect("insert");
    for filter in [None, Some("down")] {
        let (rows, total) = store
            .list_monitors(
                &third.id,
                &q(MonitorSort::CreatedAt, Order::Asc, filter, page(1, 10)),
            )
            .await
            .expect("list");
        let expected = if filter.is_some() {
            vec![full.clone()]
        } else {
            vec![full.clone(), plain.clone()]
        };
        assert_eq!(total, expected.len() as u64, "{filter:?}");
        assert_eq!(rows, expected, "every column as stored ({filter:?})");
    }
    let (rows, total) = store
        .list_monitors(
            &third.id,
            &q(MonitorSort::CreatedAt, Order::Asc, None, page(3, 10)),
        )
        .await
        .expect("past the end");
    assert!(rows.is_empty());
    assert_eq!(total, 2, "a page past the end still counts");

    metric_pages(&store, &ctx, &third.id).await;
    report_months_and_files(&store, &third.id).await;
}

/// A monthly report's month is taken once; a delivery's file comes back byte for byte and
/// goes with its delivery.
async fn report_months_and_files(store: &Store, workspace: &str) {
    use tocsin::store::reports::DeliveryFileRow;
    use tocsin::store::{DeliveryRow, DeliveryState};
    store
        .set_monthly_report(workspace, &["ch_a".into()], "2026-09", NOW)
        .await
        .expect("set");
    let tx = store.begin_write().await.expect("tx");
    assert!(
        tx.take_report_month(workspace, "2026-10", NOW)
            .await
            .expect("take")
    );
    assert!(
        !tx.take_report_month(workspace, "2026-10", NOW)
            .await
            .expect("again")
    );
    let delivery = DeliveryRow {
        id: "whd_report_file".into(),
        workspace_id: workspace.to_string(),
        incident_id: None,
        monitor_id: None,
        channel_id: None,
        channel_kind: "email".into(),
        channel_config: "{}".into(),
        event: "report.monthly".into(),
        payload: "{}".into(),
        status: DeliveryState::Failed,
        attempts: 1,
        next_attempt_at: NOW,
        lease_until: None,
        last_error: None,
        created_at: NOW - 1,
        updated_at: NOW,
        delivered_at: None,
        pipeline: None,
    };
    tx.insert_delivery(delivery).await.expect("delivery");
    let data: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    tx.insert_delivery_file(DeliveryFileRow {
        delivery_id: "whd_report_file".into(),
        name: "uptime-2026-10.pdf".into(),
        content_type: "application/pdf".into(),
        data: data.clone(),
    })
    .await
    .expect("file");
    tx.commit().await.expect("commit");
    let row = store
        .monthly_report(workspace)
        .await
        .expect("read")
        .expect("row");
    assert_eq!(row.sent_for.as_deref(), Some("2026-10"));
    let files = store
        .delivery_files("whd_report_file")
        .await
        .expect("files");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].data, data, "every byte, 0 to 255");
    store.prune_deliveries(NOW, 100).await.expect("prune");
    history(store, workspace).await;
}

/// Past checks are written once, with their rollup; a repeat writes nothing; a monitor
/// that is gone gets nothing.
async fn history(store: &Store, workspace: &str) {
    use tocsin::store::checks::{CheckRow, HistoryWrite};
    let row = |n: i64| CheckRow {
        id: format!("chk_hpast{n}"),
        monitor_id: "mon_plain".into(),
        workspace_id: workspace.to_string(),
        checked_at: NOW - 86_400_000 * 3 + n * 60_000,
        ok: n != 1,
        reason: None,
        status_code: None,
        response_time_ms: Some(10),
        region: "imported".into(),
        details: "{}".into(),
        counted: true,
        maintenance: false,
    };
    let first = store
        .write_history("mon_plain", vec![row(0), row(1)])
        .await
        .expect("write");
    assert_eq!(
        first,
        HistoryWrite::Written {
            written: 2,
            already: 0
        }
    );
    let again = store
        .write_history("mon_plain", vec![row(0), row(1), row(2)])
        .await
        .expect("again");
    assert_eq!(
        again,
        HistoryWrite::Written {
            written: 1,
            already: 2
        }
    );
    let day = tocsin::store::status_pages::day_of(row(0).checked_at);
    let rollup = store
        .daily_uptime(vec!["mon_plain".into()], day)
        .await
        .expect("rollup");
    let counted: (i32, i32) = rollup
        .iter()
        .filter(|r| r.day == day)
        .fold((0, 0), |(t, u), r| (t + r.total, u + r.up));
    assert_eq!(counted, (3, 2), "each past check counted once: {rollup:?}");
    assert_eq!(
        store
            .write_history("mon_gone", vec![row(5)])
            .await
            .expect("gone"),
        HistoryWrite::MonitorGone
    );
    assert!(
        store
            .delivery_files("whd_report_file")
            .await
            .expect("files")
            .is_empty()
    );
}

/// What `/metrics` reads comes in pages that, joined, are every row once, in id order;
/// the uptime sums add the right days.
async fn metric_pages(store: &Store, ctx: &EngineContext, ws: &str) {
    const DAY: i64 = 86_400_000;
    for id in ["mon_pa", "mon_pb", "mon_pc"] {
        store
            .insert_monitor(monitor(id, ws, id, NOW))
            .await
            .expect("insert");
    }
    let expected = ["mon_full", "mon_pa", "mon_pb", "mon_pc", "mon_plain"];
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let rows = store
            .monitor_metric_page(Some(ws), after.as_deref(), 2, false)
            .await
            .expect("page");
        assert!(rows.len() <= 2);
        assert!(
            rows.iter()
                .all(|r| r.workspace_id == ws && r.config.is_none())
        );
        seen.extend(rows.iter().map(|r| r.id.clone()));
        if rows.len() < 2 {
            break;
        }
        after = rows.last().map(|r| r.id.clone());
    }
    assert_eq!(seen, expected, "every monitor of the workspace once, by id");
    let with_config = store
        .monitor_metric_page(Some(ws), Some("mon_pb"), 1, true)
        .await
        .expect("page");
    assert_eq!(with_config.len(), 1);
    assert_eq!(with_config[0].id, "mon_pc");
    assert_eq!(
        with_config[0].config.as_deref(),
        Some(r#"{"url":"http://127.0.0.1/","method":"GET"}"#)
    );
    // Every workspace's: the pages hold every monitor of every workspace once.
    let mut all = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let rows = store
            .monitor_metric_page(None, after.as_deref(), 3, false)
            .await
            .expect("page");
        all.extend(rows.iter().map(|r| r.id.clone()));
        if rows.len() < 3 {
            break;
        }
        after = rows.last().map(|r| r.id.clone());
    }
    let mut sorted = all.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(all, sorted, "in id order, none twice");
    assert!(expected.iter().all(|id| all.contains(&id.to_string())));
    assert!(all.len() > expected.len(), "other workspaces' monitors too");

    // Daily counts: mon_pa checked yesterday, two days ago, 30 and 31 days ago and
    // today; mon_pb today only; mon_pc 31 days ago only (outside every window).
    let today = (NOW + 40 * DAY).div_euclid(DAY) as i32;
    let at = |days_ago: i64, ms: i64| i64::from(today) * DAY - days_ago * DAY + ms;
    let batch = vec![
        record("mon_pa", ws, at(1, 1_000), true, Some(1)),
        record("mon_pa", ws, at(1, 2_000), false, None),
        record("mon_pa", ws, at(2, 1_000), true, Some(1)),
        record("mon_pa", ws, at(30, 1_000), false, None),
        record("mon_pa", ws, at(31, 1_000), true, Some(1)),
        record("mon_pa", ws, at(0, 1_000), true, Some(1)),
        record("mon_pb", ws, at(0, 1_000), true, Some(1)),
        record("mon_pb", ws, at(0, 2_000), true, Some(1)),
        record("mon_pc", ws, at(31, 1_000), true, Some(1)),
    ];
    write_batch(store, ctx, &batch).await.expect("batch");
    let past = store
        .past_day_counts_page(today, None, 10)
        .await
        .expect("past");
    assert_eq!(
        past,
        vec![tocsin::store::metrics::PastDayCounts {
            monitor_id: "mon_pa".into(),
            yesterday_total: 2,
            yesterday_up: 1,
            month_total: 3,
            month_up: 2,
            edge_total: 1,
            edge_up: 0,
        }],
        "yesterday, the 29 days to it, and day -30 apart; today and day -31 left out"
    );
    assert!(
        store
            .past_day_counts_page(today, Some("mon_pa"), 10)
            .await
            .expect("past")
            .is_empty()
    );
    let first = store.day_counts_page(today, None, 1).await.expect("today");
    let second = store
        .day_counts_page(today, Some("mon_pa"), 1)
        .await
        .expect("today");
    let rest = store
        .day_counts_page(today, Some("mon_pb"), 1)
        .await
        .expect("today");
    let counts = |rows: &[(String, tocsin::store::metrics::DayCount)]| {
        rows.iter()
            .map(|(id, c)| (id.clone(), c.day, c.total, c.up))
            .collect::<Vec<_>>()
    };
    assert_eq!(counts(&first), vec![("mon_pa".to_string(), today, 1, 1)]);
    assert_eq!(counts(&second), vec![("mon_pb".to_string(), today, 2, 2)]);
    assert!(rest.is_empty());
}

#[tokio::test]
async fn store_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!(
        "sqlite://{}",
        dir.path().join("nested/dir/tocsin.db").display()
    );
    let store = Store::connect(&url)
        .await
        .expect("sqlite opens, creating its directory");
    exercise(store).await;
}

/// A database from before the counters had a table of their own: each monitor's counters
/// and last check are there after the upgrade, and the next check moves them on.
#[tokio::test]
async fn an_upgrade_keeps_each_monitors_counters() {
    use sea_orm::ConnectionTrait;
    use tocsin_migrations::{Migrator, MigratorTrait};
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("old.db").display());
    let old = sea_orm::Database::connect(&url).await.expect("connect");
    Migrator::up(&old, Some(21))
        .await
        .expect("the schema before");
    old.execute_unprepared(
        "INSERT INTO workspaces (id, name, plan, webhook_secret, created_at, updated_at, \
         require_two_factor) VALUES ('ws_old', 'Old', 'business', 'secret', 1, 1, false)",
    )
    .await
    .expect("workspace");
    old.execute_unprepared(&format!(
        "INSERT INTO monitors (id, workspace_id, name, kind, config, interval_secs, \
         timeout_secs, alert_policy_id, regions, status, created_at, updated_at, \
         last_checked_at, last_response_time_ms, consecutive_failures, \
         consecutive_successes, region_cursor, regional_confirmation, tags, ping_token, \
         depends_on, snoozed_until, apply_key, managed_by) VALUES ('mon_old', 'ws_old', \
         'old', 'http', '{{}}', 60, 10, NULL, '[]', 'down', 1, 1, {}, 42, 3, 0, 0, false, \
         '[]', NULL, '[]', NULL, NULL, NULL)",
        NOW - 60_000
    ))
    .await
    .expect("monitor");
    old.close().await.expect("close");

    let store = Store::connect(&url).await.expect("open");
    store.migrate().await.expect("upgrade");
    let m = store.monitor_by_id("mon_old").await.expect("q").expect("m");
    assert_eq!(
        (
            m.status.name(),
            m.consecutive_failures,
            m.last_checked_at,
            m.last_response_time_ms
        ),
        ("down", 3, Some(NOW - 60_000), Some(42))
    );
    let ctx = EngineContext::new("https://tocsin.test");
    write_batch(
        &store,
        &ctx,
        &[record("mon_old", "ws_old", NOW, false, Some(7))],
    )
    .await
    .expect("batch");
    let m = store.monitor_by_id("mon_old").await.expect("q").expect("m");
    assert_eq!(
        (
            m.consecutive_failures,
            m.last_checked_at,
            m.last_response_time_ms
        ),
        (4, Some(NOW), Some(7))
    );
    // Deleting it takes its counters with it: the id can be written again.
    assert!(
        actions::delete_monitor(&store, "ws_old", "mon_old", NOW)
            .await
            .expect("delete")
    );
    store
        .insert_monitor(monitor("mon_old", "ws_old", "again", NOW))
        .await
        .expect("a monitor of the same id, with counters of its own");
    let again = store.monitor_by_id("mon_old").await.expect("q").expect("m");
    assert_eq!(
        (again.consecutive_failures, again.last_checked_at),
        (0, None)
    );
}

/// Before owner keys, every admin key acted as an owner. The upgrade makes the first
/// start's key (made with its workspace) an owner key and leaves every other admin key an
/// admin.
#[tokio::test]
async fn an_upgrade_makes_the_first_start_key_the_owner_key() {
    use sea_orm::ConnectionTrait;
    use tocsin_migrations::{Migrator, MigratorTrait};
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("old.db").display());
    let old = sea_orm::Database::connect(&url).await.expect("connect");
    Migrator::up(&old, Some(22))
        .await
        .expect("the schema before");
    old.execute_unprepared(
        "INSERT INTO workspaces (id, name, plan, webhook_secret, created_at, updated_at, \
         require_two_factor) VALUES ('ws_old', 'Old', 'business', 'secret', 5, 5, false)",
    )
    .await
    .expect("workspace");
    let boot = tocsin::store::keys::generate_secret();
    let later = tocsin::store::keys::generate_secret();
    for (id, name, secret, at) in [
        ("key_boot", "bootstrap admin", &boot, 5),
        ("key_later", "bootstrap admin", &later, 9),
    ] {
        old.execute_unprepared(&format!(
            "INSERT INTO api_keys (id, workspace_id, name, role, prefix, secret_hash, \
             created_at) VALUES ('{id}', 'ws_old', '{name}', 'admin', 'tcs_x', '{}', {at})",
            tocsin::store::keys::hash_secret(secret)
        ))
        .await
        .expect("key");
    }
    old.close().await.expect("close");

    let store = Store::connect(&url).await.expect("open");
    store.migrate().await.expect("upgrade");
    let role = |p: Option<tocsin::store::keys::Principal>| p.expect("a live key").role;
    assert_eq!(
        role(store.authenticate(&boot).await.expect("q")),
        Role::Owner
    );
    assert_eq!(
        role(store.authenticate(&later).await.expect("q")),
        Role::Admin,
        "a key an admin named like the first one stays an admin key"
    );
}

/// Pending invitations sent from a person's session before invitations recorded their
/// sender's membership answer to that person after the upgrade; a key's stay the
/// operator's.
#[tokio::test]
async fn an_upgrade_gives_pending_invitations_their_sender() {
    use sea_orm::ConnectionTrait;
    use tocsin_migrations::{Migrator, MigratorTrait};
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("old.db").display());
    let old = sea_orm::Database::connect(&url).await.expect("connect");
    Migrator::up(&old, Some(24))
        .await
        .expect("the schema before");
    for sql in [
        "INSERT INTO workspaces (id, name, plan, webhook_secret, created_at, updated_at, \
         require_two_factor) VALUES ('ws_old', 'Old', 'business', 'secret', 5, 5, false)",
        "INSERT INTO members (id, workspace_id, email, name, role, created_at, updated_at) \
         VALUES ('mem_ada', 'ws_old', 'ada@example.com', 'Ada', 'admin', 5, 5)",
        "INSERT INTO auth_tokens (id, kind, token_hash, email, workspace_id, role, created_by, \
         created_at, expires_at) VALUES ('tok_person', 'invitation', 'h1', 'x@example.com', \
         'ws_old', 'admin', 'Ada@Example.com', 5, 9999999999999)",
        "INSERT INTO auth_tokens (id, kind, token_hash, email, workspace_id, role, created_by, \
         created_at, expires_at) VALUES ('tok_key', 'invitation', 'h2', 'y@example.com', \
         'ws_old', 'owner', 'bootstrap admin', 6, 9999999999999)",
    ] {
        old.execute_unprepared(sql).await.expect(sql);
    }
    old.close().await.expect("close");

    let store = Store::connect(&url).await.expect("open");
    store.migrate().await.expect("upgrade");
    let pending = store.invitations("ws_old", 10).await.expect("invitations");
    let sender = |id: &str| {
        pending
            .iter()
            .find(|t| t.id == id)
            .expect("pending")
            .inviter_member_id
            .clone()
    };
    assert_eq!(sender("tok_person").as_deref(), Some("mem_ada"));
    assert_eq!(sender("tok_key"), None);
}

#[tokio::test]
async fn store_on_postgres() {
    let Some(base) = support::pg::base_url("store_on_postgres") else {
        return;
    };
    let db = support::pg::TestDb::create(&base).await;
    let store = Store::connect(&db.url)
        .await
        .expect("connect to the test database");
    exercise(store.clone()).await;
    store.close().await;
    db.drop().await;
}

/// Wait (at most 20 s) until `done` holds.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within 20 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Two nodes on one PostgreSQL database: a key revoked on one is refused by the other
/// at once, not only when the other's cached entry expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revocation_reaches_every_node_at_once() {
    let Some(base) = support::pg::base_url("a_revocation_reaches_every_node_at_once") else {
        return;
    };
    let db = support::pg::TestDb::create(&base).await;
    let one = Store::connect(&db.url).await.expect("connect");
    let two = Store::connect(&db.url).await.expect("connect");
    one.migrate().await.expect("migrations run");
    let secret = "tcs_StoreTestKey0000000000000000000000000002".to_string();
    let boot = one
        .bootstrap(Plan::Business, Some(secret.clone()), NOW)
        .await
        .expect("bootstrap")
        .expect("first start");
    let (key, other_secret) = one
        .create_api_key(&boot.workspace_id, "ci", Role::Read, None, NOW)
        .await
        .expect("key");
    eventually("node two listens for revocations", || two.key_cache_on()).await;
    for s in [&secret, &other_secret] {
        assert!(two.authenticate(s).await.expect("query").is_some());
    }
    let before = two.key_cache_forgotten();
    assert!(
        one.revoke_api_key(&boot.workspace_id, &key.id, NOW)
            .await
            .expect("revoke")
    );
    eventually("node two hears of the revocation", || {
        two.key_cache_forgotten() > before
    })
    .await;
    assert!(
        two.authenticate(&other_secret)
            .await
            .expect("query")
            .is_none(),
        "the revoked key is refused on the other node"
    );
    assert!(
        two.authenticate(&secret).await.expect("query").is_some(),
        "the other keys still work"
    );
    one.close().await;
    two.close().await;
    db.drop().await;
}

/// While a node cannot hear revocations (its database went away), it remembers no key;
/// once it listens again, it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_cache_is_off_while_revocations_cannot_be_heard() {
    let Some(pg) =
        support::pg::PrivatePg::start("the_key_cache_is_off_while_revocations_cannot_be_heard")
    else {
        return;
    };
    let url = pg.database("tocsin").await;
    let store = Store::connect(&url).await.expect("connect");
    store.migrate().await.expect("migrations run");
    eventually("the listener connects", || store.key_cache_on()).await;
    pg.stop();
    eventually("the cache turns off with the listener", || {
        !store.key_cache_on()
    })
    .await;
    pg.start_again();
    eventually("the cache turns on again", || store.key_cache_on()).await;
    let secret = "tcs_StoreTestKey0000000000000000000000000003".to_string();
    let boot = store
        .bootstrap(Plan::Business, Some(secret.clone()), NOW)
        .await
        .expect("bootstrap")
        .expect("first start");
    assert!(!boot.workspace_id.is_empty());
    assert!(store.authenticate(&secret).await.expect("query").is_some());
    store.close().await;
}

/// Here, not beside `read_list`: the count is the process's, and the library's own tests
/// compare whole scrapes that include it.
#[test]
fn a_stored_list_that_does_not_read_is_taken_as_empty_and_counted() {
    use tocsin::store::monitors::read_list;
    let counted = || tocsin::telemetry::global().unreadable_fields.get();
    assert_eq!(
        read_list::<String>("mon_a", "tags", r#"["db","eu"]"#),
        ["db", "eu"]
    );
    let before = counted();
    assert!(read_list::<String>("mon_a", "tags", "db,eu").is_empty());
    assert!(read_list::<String>("mon_a", "regions", r#"[1,2]"#).is_empty());
    assert!(counted() >= before + 2);
}
