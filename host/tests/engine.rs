//! The incident engine, driven by a manual clock against a real SQLite store: every
//! transition, the thresholds, never reopening, and escalation timing, without sleeping.

use serde_json::json;
use tocsin::clock::{Clock, ManualClock};
use tocsin::engine::actions::{self, ActionError};
use tocsin::engine::escalation::escalate_due;
use tocsin::engine::recorder::write_batch;
use tocsin::engine::{CheckRecord, EngineContext};
use tocsin::plans::Plan;
use tocsin::store::incidents::IncidentFilter;
use tocsin::store::{DeliveryRow, IncidentRow, MonitorRow, Order, Page, PolicyRow, State, Store};

const T0: i64 = 1_795_253_400_000;
/// One page holding everything a test makes.
const ALL: Page = Page {
    page: 1,
    limit: 10_000,
};

struct Fixture {
    store: Store,
    ctx: EngineContext,
    clock: std::sync::Arc<ManualClock>,
    ws: String,
    _dir: tempfile::TempDir,
}

impl Fixture {
    async fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::connect(&format!("sqlite://{}", dir.path().join("e.db").display()))
            .await
            .expect("store");
        store.migrate().await.expect("migrate");
        let ws = store
            .create_workspace("Engine", Plan::Enterprise, T0)
            .await
            .expect("workspace")
            .id;
        Fixture {
            store,
            ctx: EngineContext::new("https://tocsin.test"),
            clock: ManualClock::new(T0),
            ws,
            _dir: dir,
        }
    }

    async fn policy(
        &self,
        id: &str,
        failure: i32,
        recovery: i32,
        notify_on_recovery: bool,
        escalation_minutes: Option<u32>,
    ) {
        let escalation = escalation_minutes.map(|m| json!({"delayMinutes": m, "channels": [{"type": "email", "target": "boss@tocsin.test"}]}).to_string());
        self.store
            .insert_alert_policy(PolicyRow {
                id: id.into(),
                workspace_id: self.ws.clone(),
                name: id.into(),
                failure_threshold: failure,
                recovery_threshold: recovery,
                notify_on_recovery,
                channels: json!([{"type": "webhook", "url": "https://hooks.tocsin.test/x"}])
                    .to_string(),
                escalation,
                group_window_secs: 0,
                flap_changes: 0,
                flap_window_minutes: 0,
                repeat_every_minutes: 0,
                repeat_limit: 10,
                created_at: T0,
                updated_at: T0,
                apply_key: None,
                managed_by: None,
                degraded_threshold: 3,
                notify_degraded: false,
                pipeline: None,
            })
            .await
            .expect("policy");
    }

    async fn monitor(&self, id: &str, policy: Option<&str>) {
        self.store
            .insert_monitor(MonitorRow {
                config: r#"{"url":"https://shop.tocsin.test/","method":"GET"}"#.into(),
                alert_policy_id: policy.map(String::from),
                ..MonitorRow::new(id, &self.ws, "http", T0)
            })
            .await
            .expect("monitor");
    }

    /// One check of `monitor` now, then a minute passes.
    async fn check(&self, monitor: &str, ok: bool) {
        let record = CheckRecord {
            monitor_id: monitor.into(),
            workspace_id: self.ws.clone(),
            checked_at: self.clock.now_ms(),
            ok,
            reason: (!ok).then(|| "Connection refused".to_string()),
            status_code: None,
            response_time_ms: ok.then_some(20),
            region: "eu".into(),
            details: "{}".into(),
            confirmation: None,
            probe: None,
        };
        write_batch(&self.store, &self.ctx, &[record])
            .await
            .expect("batch");
        self.clock.advance_ms(60_000);
    }

    async fn incidents(&self, monitor: &str) -> Vec<IncidentRow> {
        let filter = IncidentFilter {
            monitor_id: Some(monitor.to_string()),
            ..IncidentFilter::default()
        };
        self.store
            .list_incidents(&self.ws, &filter, Order::Asc, ALL)
            .await
            .expect("incidents")
            .0
    }

    async fn all_deliveries(&self) -> Vec<DeliveryRow> {
        self.store
            .list_deliveries(&self.ws, None, None, None, ALL)
            .await
            .expect("deliveries")
            .0
    }

    async fn deliveries(&self, event: &str, kind: &str) -> u64 {
        self.all_deliveries()
            .await
            .iter()
            .filter(|d| d.event == event && d.channel_kind == kind)
            .count() as u64
    }

    async fn status(&self, monitor: &str) -> &'static str {
        self.store
            .monitor(&self.ws, monitor)
            .await
            .expect("q")
            .expect("monitor")
            .status
            .name()
    }
}

#[tokio::test]
async fn thresholds_open_and_resolve_exactly_once() {
    let f = Fixture::new().await;
    f.policy("pol_a", 3, 2, true, None).await;
    f.monitor("mon_a", Some("pol_a")).await;

    f.check("mon_a", true).await;
    f.check("mon_a", false).await;
    f.check("mon_a", false).await;
    assert!(
        f.incidents("mon_a").await.is_empty(),
        "two failures are below a threshold of three"
    );
    assert_eq!(f.status("mon_a").await, "up");
    f.check("mon_a", false).await;
    let open = f.incidents("mon_a").await;
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].status.name(), "open");
    assert_eq!(
        open[0].created_at,
        T0 + 3 * 60_000,
        "opened by the check that crossed the threshold"
    );
    assert_eq!(f.status("mon_a").await, "down");
    assert_eq!(f.deliveries("incident.created", "webhook").await, 1);
    let failure: serde_json::Value = serde_json::from_str(&open[0].failure).expect("json");
    assert_eq!(
        failure,
        json!({"reason": "Connection refused", "responseTime": null, "region": "eu"})
    );

    // More failures: still one incident, no more notifications.
    for _ in 0..5 {
        f.check("mon_a", false).await;
    }
    assert_eq!(f.incidents("mon_a").await.len(), 1);
    assert_eq!(f.deliveries("incident.created", "webhook").await, 1);

    // A success then a failure resets the recovery count.
    f.check("mon_a", true).await;
    f.check("mon_a", false).await;
    f.check("mon_a", true).await;
    assert_eq!(f.incidents("mon_a").await[0].status.name(), "open");
    assert_eq!(f.status("mon_a").await, "down");
    f.check("mon_a", true).await;
    let done = &f.incidents("mon_a").await[0];
    assert_eq!(done.status.name(), "resolved");
    assert_eq!(done.open_key, None);
    assert_eq!(f.status("mon_a").await, "up");
    assert_eq!(f.deliveries("incident.resolved", "webhook").await, 1);

    // The next outage is a new incident; the resolved one stays resolved.
    for _ in 0..3 {
        f.check("mon_a", false).await;
    }
    let all = f.incidents("mon_a").await;
    assert_eq!(all.len(), 2);
    assert_eq!(
        all.iter().filter(|i| i.status.name() == "resolved").count(),
        1
    );
}

#[tokio::test]
async fn no_policy_means_defaults_and_silence_and_recovery_can_be_quiet() {
    let f = Fixture::new().await;
    f.monitor("mon_plain", None).await;
    f.check("mon_plain", false).await;
    f.check("mon_plain", false).await;
    assert_eq!(
        f.incidents("mon_plain").await.len(),
        1,
        "default failure threshold 2"
    );
    f.check("mon_plain", true).await;
    assert_eq!(
        f.incidents("mon_plain").await[0].status.name(),
        "resolved",
        "default recovery threshold 1"
    );
    assert_eq!(f.all_deliveries().await.len() as u64, 0, "nobody to notify");

    f.policy("pol_quiet", 1, 1, false, None).await;
    f.monitor("mon_quiet", Some("pol_quiet")).await;
    f.check("mon_quiet", false).await;
    f.check("mon_quiet", true).await;
    assert_eq!(f.deliveries("incident.created", "webhook").await, 1);
    assert_eq!(
        f.deliveries("incident.resolved", "webhook").await,
        0,
        "notifyOnRecovery false"
    );
}

#[tokio::test]
async fn escalation_fires_once_at_its_delay_unless_acknowledged() {
    let f = Fixture::new().await;
    f.policy("pol_esc", 1, 1, true, Some(15)).await;
    f.monitor("mon_esc", Some("pol_esc")).await;
    f.monitor("mon_ack", Some("pol_esc")).await;
    f.check("mon_esc", false).await;
    let created = f.incidents("mon_esc").await[0].created_at;
    // Same moment for the second monitor's incident.
    f.clock.advance_ms(-60_000);
    f.check("mon_ack", false).await;
    let acked = f.incidents("mon_ack").await[0].clone();
    actions::acknowledge(
        &f.store,
        &f.ctx,
        &f.ws,
        &acked.id,
        "alice",
        Some("on it"),
        f.clock.now_ms(),
    )
    .await
    .expect("ack");
    // Acknowledging again changes nothing.
    let again = actions::acknowledge(
        &f.store,
        &f.ctx,
        &f.ws,
        &acked.id,
        "bob",
        None,
        f.clock.now_ms(),
    )
    .await
    .expect("ack");
    assert_eq!(again.acknowledged_by.as_deref(), Some("alice"));
    assert_eq!(f.deliveries("incident.acknowledged", "webhook").await, 1);

    let delay = 15 * 60_000;
    assert_eq!(
        escalate_due(&f.store, &f.ctx, created + delay - 1)
            .await
            .expect("pass"),
        0,
        "not before the delay"
    );
    assert_eq!(
        escalate_due(&f.store, &f.ctx, created + delay)
            .await
            .expect("pass"),
        1,
        "at the delay, only the unacknowledged one"
    );
    assert_eq!(
        escalate_due(&f.store, &f.ctx, created + delay + 60_000)
            .await
            .expect("pass"),
        0,
        "once"
    );
    assert_eq!(
        f.deliveries("incident.created", "email").await,
        1,
        "the escalation channel got the DOWN notification"
    );
    let esc = &f.incidents("mon_esc").await[0];
    assert_eq!(esc.escalated_at, Some(created + delay));
    assert_eq!(f.incidents("mon_ack").await[0].escalated_at, None);

    // Recovery reaches the escalation channels too, once escalated.
    f.clock.advance_ms(delay);
    f.check("mon_esc", true).await;
    assert_eq!(f.deliveries("incident.resolved", "email").await, 1);
    assert_eq!(f.deliveries("incident.resolved", "webhook").await, 1);

    // Manual resolve of the acknowledged one; a resolved incident cannot be acknowledged.
    let r = actions::resolve(
        &f.store,
        &f.ctx,
        &f.ws,
        &acked.id,
        "alice",
        f.clock.now_ms(),
    )
    .await
    .expect("resolve");
    assert_eq!(r.status.name(), "resolved");
    assert!(matches!(
        actions::acknowledge(
            &f.store,
            &f.ctx,
            &f.ws,
            &acked.id,
            "alice",
            None,
            f.clock.now_ms()
        )
        .await,
        Err(ActionError::Resolved)
    ));
    // Manual resolve restarts the count: one more failure (threshold 1) opens a new one,
    // but the monitor is up until then.
    assert_eq!(f.status("mon_ack").await, "up");
    assert!(matches!(
        actions::resolve(&f.store, &f.ctx, "ws_other", &acked.id, "x", 0).await,
        Err(ActionError::NotFound)
    ));
}

#[tokio::test]
async fn escalation_steps_page_in_turn_repeat_and_stop_at_acknowledgement() {
    let f = Fixture::new().await;
    f.policy("pol_steps", 1, 1, true, None).await;
    let mut policy = f
        .store
        .alert_policy(&f.ws, "pol_steps")
        .await
        .expect("q")
        .expect("policy");
    policy.escalation = Some(
        json!({"steps": [
            {"afterMinutes": 5, "channels": [{"type": "email", "target": "first@tocsin.test"}]},
            {"afterMinutes": 15, "channels": [{"type": "telegram", "chatId": "42"}]}
        ], "repeat": true})
        .to_string(),
    );
    f.store
        .update_alert_policy(policy, None)
        .await
        .expect("update");
    f.monitor("mon_steps", Some("pol_steps")).await;
    f.check("mon_steps", false).await;
    let inc = f.incidents("mon_steps").await[0].clone();
    let at = |minutes: i64| inc.created_at + minutes * 60_000;
    assert_eq!(inc.escalate_at, Some(at(5)), "the first step's time");
    let pass = |now: i64| escalate_due(&f.store, &f.ctx, now);
    assert_eq!(pass(at(5) - 1).await.expect("pass"), 0);
    assert_eq!(pass(at(5)).await.expect("pass"), 1, "step 1");
    assert_eq!(pass(at(5)).await.expect("pass"), 0, "once");
    assert_eq!(f.deliveries("incident.created", "email").await, 1);
    assert_eq!(f.deliveries("incident.created", "telegram").await, 0);
    let after_one = f.incidents("mon_steps").await[0].clone();
    assert_eq!(
        (after_one.escalation_step, after_one.escalate_at),
        (1, Some(at(15))),
        "step 2 comes 10 minutes later"
    );
    assert_eq!(pass(at(15)).await.expect("pass"), 1, "step 2");
    assert_eq!(f.deliveries("incident.created", "telegram").await, 1);
    // Repeating: a new round starts as if just told, 5 minutes on.
    let after_two = f.incidents("mon_steps").await[0].clone();
    assert_eq!(after_two.escalate_at, Some(at(20)));
    assert_eq!(pass(at(20)).await.expect("pass"), 1, "round 2, step 1");
    assert_eq!(f.deliveries("incident.created", "email").await, 2);
    // Acknowledged: no more steps.
    actions::acknowledge(&f.store, &f.ctx, &f.ws, &inc.id, "alice", None, at(21))
        .await
        .expect("ack");
    assert_eq!(pass(at(60)).await.expect("pass"), 0);
    assert_eq!(f.deliveries("incident.created", "telegram").await, 1);
    // The recovery reaches every channel the steps told, each once.
    f.clock.advance_ms(at(61) - f.clock.now_ms());
    f.check("mon_steps", true).await;
    assert_eq!(f.deliveries("incident.resolved", "email").await, 1);
    assert_eq!(f.deliveries("incident.resolved", "telegram").await, 1);
    assert_eq!(f.deliveries("incident.resolved", "webhook").await, 1);
}

#[tokio::test]
async fn a_repeating_escalation_stops_after_its_last_round() {
    let f = Fixture::new().await;
    f.policy("pol_loop", 1, 1, true, None).await;
    let mut policy = f
        .store
        .alert_policy(&f.ws, "pol_loop")
        .await
        .expect("q")
        .expect("policy");
    policy.escalation = Some(
        json!({"steps": [{"afterMinutes": 1, "channels": [{"type": "email", "target": "b@tocsin.test"}]}],
               "repeat": true})
        .to_string(),
    );
    f.store
        .update_alert_policy(policy, None)
        .await
        .expect("update");
    f.monitor("mon_loop", Some("pol_loop")).await;
    f.check("mon_loop", false).await;
    let created = f.incidents("mon_loop").await[0].created_at;
    let mut sent = 0;
    for minute in 1..=30 {
        sent += escalate_due(&f.store, &f.ctx, created + minute * 60_000)
            .await
            .expect("pass");
    }
    assert_eq!(sent, 10, "ten rounds, then no more");
    let inc = &f.incidents("mon_loop").await[0];
    assert_eq!((inc.escalation_step, inc.escalate_at), (10, None));
}

#[tokio::test]
async fn deleting_a_monitor_closes_its_incident_silently() {
    let f = Fixture::new().await;
    f.policy("pol_d", 1, 1, true, None).await;
    f.monitor("mon_d", Some("pol_d")).await;
    f.check("mon_d", false).await;
    let before = f.all_deliveries().await.len() as u64;
    assert!(
        actions::delete_monitor(&f.store, &f.ws, "mon_d", f.clock.now_ms())
            .await
            .expect("delete")
    );
    let inc = &f.incidents("mon_d").await[0];
    assert_eq!(inc.status.name(), "resolved");
    assert_eq!(
        f.all_deliveries().await.len() as u64,
        before,
        "no notifications"
    );
    // Pausing with an open incident leaves it open; resuming keeps the monitor down.
    f.monitor("mon_p", Some("pol_d")).await;
    f.check("mon_p", false).await;
    let (m, changed) =
        actions::set_paused(&f.store, &f.ctx, &f.ws, "mon_p", true, f.clock.now_ms())
            .await
            .expect("pause");
    assert!(changed && m.status.name() == "paused");
    assert_eq!(f.incidents("mon_p").await[0].status.name(), "open");
    let (m, _) = actions::set_paused(&f.store, &f.ctx, &f.ws, "mon_p", false, f.clock.now_ms())
        .await
        .expect("resume");
    assert_eq!(m.status.name(), "down");
    assert_eq!(f.deliveries("monitor.paused", "webhook").await, 1);
    assert_eq!(f.deliveries("monitor.resumed", "webhook").await, 1);
}

#[tokio::test]
async fn an_escalation_removed_from_the_policy_no_longer_fires() {
    let f = Fixture::new().await;
    f.policy("pol_x", 1, 1, true, Some(5)).await;
    f.monitor("mon_x", Some("pol_x")).await;
    f.check("mon_x", false).await;
    let inc = f.incidents("mon_x").await.remove(0);
    assert!(inc.escalate_at.is_some());
    let mut policy = f
        .store
        .alert_policy(&f.ws, "pol_x")
        .await
        .expect("q")
        .expect("policy");
    policy.escalation = None;
    f.store
        .update_alert_policy(policy, None)
        .await
        .expect("update");
    assert_eq!(
        escalate_due(&f.store, &f.ctx, inc.created_at + 10 * 60_000)
            .await
            .expect("pass"),
        0
    );
    let inc = f.incidents("mon_x").await.remove(0);
    assert_eq!((inc.escalate_at, inc.escalated_at), (None, None));
    assert_eq!(f.deliveries("incident.created", "email").await, 0);
}

#[tokio::test]
async fn a_snooze_holds_an_opening_and_postpones_escalation() {
    use tocsin::engine::holds::release_due;
    let f = Fixture::new().await;
    f.policy("pol_s", 1, 1, true, Some(15)).await;
    f.monitor("mon_early", Some("pol_s")).await;
    f.monitor("mon_held", Some("pol_s")).await;

    // Down before the snooze: notified at once; the snooze then postpones its escalation.
    f.check("mon_early", false).await;
    let created = f.incidents("mon_early").await[0].created_at;
    assert_eq!(f.deliveries("incident.created", "webhook").await, 1);
    let snooze_end = created + 30 * 60_000;
    for m in ["mon_early", "mon_held"] {
        assert!(
            f.store
                .set_monitor_snooze(&f.ws, m, Some(snooze_end))
                .await
                .expect("snooze")
        );
    }
    let due = created + 15 * 60_000;
    assert_eq!(escalate_due(&f.store, &f.ctx, due).await.expect("pass"), 0);
    assert_eq!(
        f.incidents("mon_early").await[0].escalate_at,
        Some(snooze_end),
        "waits for the snooze"
    );

    // Down while snoozed: held, not notified, not escalating.
    f.check("mon_held", false).await;
    let held = f.incidents("mon_held").await[0].clone();
    assert_eq!(held.status.name(), "open");
    assert!(!held.notified);
    assert_eq!(held.escalate_at, None);
    assert_eq!(f.deliveries("incident.created", "webhook").await, 1);
    assert_eq!(
        release_due(&f.store, &f.ctx, snooze_end - 1)
            .await
            .expect("sweep"),
        0
    );

    // The snooze ends: the held incident is notified once, and starts its escalation delay.
    assert_eq!(
        release_due(&f.store, &f.ctx, snooze_end)
            .await
            .expect("sweep"),
        1
    );
    assert_eq!(
        release_due(&f.store, &f.ctx, snooze_end + 1000)
            .await
            .expect("sweep"),
        0,
        "once"
    );
    let released = f.incidents("mon_held").await[0].clone();
    assert!(released.notified);
    assert_eq!(released.hold, None);
    assert_eq!(released.escalate_at, Some(snooze_end + 15 * 60_000));
    assert_eq!(f.deliveries("incident.created", "webhook").await, 2);
    assert_eq!(
        escalate_due(&f.store, &f.ctx, snooze_end)
            .await
            .expect("pass"),
        1,
        "the early one escalates when the snooze ends"
    );
    assert_eq!(f.deliveries("incident.created", "email").await, 1);
}

#[tokio::test]
async fn a_parent_failing_in_the_same_batch_holds_its_child_which_recovers_silently() {
    let f = Fixture::new().await;
    // The parent needs three failures to open; the child one.
    f.policy("pol_parent", 3, 1, true, None).await;
    f.policy("pol_child", 1, 1, true, Some(5)).await;
    f.monitor("mon_parent", Some("pol_parent")).await;
    f.monitor("mon_child", Some("pol_child")).await;
    let child = f
        .store
        .monitor(&f.ws, "mon_child")
        .await
        .expect("q")
        .expect("child");
    f.store
        .update_monitor(MonitorRow {
            depends_on: r#"["mon_parent"]"#.into(),
            ..child
        })
        .await
        .expect("update");

    // Both fail in one batch, the parent's result first: its one failure is enough to
    // hold the child, though the parent's own incident has not opened yet.
    let now = f.clock.now_ms();
    let record = |monitor: &str| CheckRecord {
        monitor_id: monitor.into(),
        workspace_id: f.ws.clone(),
        checked_at: now,
        ok: false,
        reason: Some("Connection refused".into()),
        status_code: None,
        response_time_ms: None,
        region: "eu".into(),
        details: "{}".into(),
        confirmation: None,
        probe: None,
    };
    write_batch(
        &f.store,
        &f.ctx,
        &[record("mon_parent"), record("mon_child")],
    )
    .await
    .expect("batch");
    let inc = f.incidents("mon_child").await[0].clone();
    assert_eq!(inc.status.name(), "suppressed");
    assert!(!inc.notified);
    assert_eq!(inc.escalate_at, None, "no escalation while suppressed");
    assert!(
        inc.hold
            .as_deref()
            .is_some_and(|h| h.contains("mon_parent"))
    );
    assert_eq!(f.all_deliveries().await.len(), 0);

    // Acknowledged and then recovered: nobody heard of it, so nobody hears the end.
    actions::acknowledge(&f.store, &f.ctx, &f.ws, &inc.id, "alice", None, now)
        .await
        .expect("ack");
    f.clock.advance_ms(60_000);
    f.check("mon_child", true).await;
    assert_eq!(f.incidents("mon_child").await[0].status.name(), "resolved");
    assert_eq!(
        f.all_deliveries().await.len(),
        0,
        "{:?}",
        f.all_deliveries().await
    );
}

#[tokio::test]
async fn maintenance_keeps_checks_opens_nothing_and_postpones_escalation() {
    use tocsin::engine::holds::release_due;
    use tocsin::store::maintenance::MaintenanceWindowRow;
    let f = Fixture::new().await;
    f.policy("pol_m", 1, 1, true, Some(15)).await;
    f.monitor("mon_open", Some("pol_m")).await;
    f.monitor("mon_quiet", Some("pol_m")).await;
    f.monitor("mon_parent", Some("pol_m")).await;
    f.monitor("mon_child", Some("pol_m")).await;
    let child = f
        .store
        .monitor(&f.ws, "mon_child")
        .await
        .expect("q")
        .expect("child");
    f.store
        .update_monitor(MonitorRow {
            depends_on: r#"["mon_parent"]"#.into(),
            ..child
        })
        .await
        .expect("update");

    // An incident opened before the window: notified, due to escalate in 15 minutes.
    f.check("mon_open", false).await;
    let opened = f.incidents("mon_open").await[0].clone();
    assert_eq!(opened.escalate_at, Some(opened.created_at + 15 * 60_000));
    // The child fails while its parent is down: held.
    f.check("mon_parent", false).await;
    f.check("mon_child", false).await;
    assert_eq!(
        f.incidents("mon_child").await[0].status.name(),
        "suppressed"
    );
    let sent_before = f.all_deliveries().await.len();

    // A one-off window over every monitor of the workspace, from now for an hour.
    let start = f.clock.now_ms();
    let end = start + 60 * 60_000;
    f.store
        .insert_maintenance_window(MaintenanceWindowRow {
            id: "mw_1".into(),
            workspace_id: f.ws.clone(),
            name: "Upgrade".into(),
            description: String::new(),
            starts_at: start,
            ends_at: Some(end),
            rrule: None,
            cron: None,
            duration_minutes: None,
            timezone: "UTC".into(),
            monitor_ids: "[]".into(),
            tags: "[]".into(),
            created_at: start,
            updated_at: start,
            apply_key: None,
            managed_by: None,
            subscriber_notice_minutes: 1440,
        })
        .await
        .expect("window");

    // Failures during the window: kept as uncounted maintenance checks, no incident.
    f.check("mon_quiet", false).await;
    f.check("mon_quiet", false).await;
    assert!(f.incidents("mon_quiet").await.is_empty());
    assert_eq!(f.status("mon_quiet").await, "pending");
    let (checks, _) = f
        .store
        .list_checks("mon_quiet", None, None, ALL)
        .await
        .expect("checks");
    assert_eq!(checks.len(), 2);
    assert!(checks.iter().all(|c| c.maintenance && !c.counted && !c.ok));
    // A recovery inside the window does not resolve the open incident either.
    f.check("mon_open", true).await;
    assert_eq!(f.incidents("mon_open").await[0].status.name(), "open");

    // The open incident's escalation waits for the window's end.
    let due = opened.created_at + 15 * 60_000;
    assert_eq!(escalate_due(&f.store, &f.ctx, due).await.expect("pass"), 0);
    assert_eq!(f.incidents("mon_open").await[0].escalate_at, Some(end));
    // The parent recovers inside the window; the held child is not let go until it ends.
    f.check("mon_parent", true).await;
    assert_eq!(
        release_due(&f.store, &f.ctx, f.clock.now_ms())
            .await
            .expect("sweep"),
        0
    );
    assert_eq!(f.all_deliveries().await.len(), sent_before, "nothing sent");

    // The window ends: the escalations fire (the first incident's and the parent's, which
    // fell due inside the window), the child is released, and failures count again.
    f.clock.advance_ms(end - f.clock.now_ms());
    assert_eq!(escalate_due(&f.store, &f.ctx, end).await.expect("pass"), 2);
    assert_eq!(f.deliveries("incident.created", "email").await, 2);
    assert_eq!(
        f.status("mon_parent").await,
        "down",
        "its recovery was not counted"
    );
    f.check("mon_parent", true).await;
    assert_eq!(
        release_due(&f.store, &f.ctx, f.clock.now_ms())
            .await
            .expect("sweep"),
        1
    );
    f.check("mon_quiet", false).await;
    assert_eq!(f.incidents("mon_quiet").await.len(), 1);
}

#[tokio::test]
async fn a_group_window_gathers_openings_into_one_message_per_grouped_channel() {
    let f = Fixture::new().await;
    f.store
        .insert_alert_policy(PolicyRow {
            id: "pol_g".into(),
            workspace_id: f.ws.clone(),
            name: "grouped".into(),
            failure_threshold: 1,
            recovery_threshold: 1,
            notify_on_recovery: true,
            channels: json!([{"type": "email", "target": "ops@tocsin.test"},
                             {"type": "webhook", "url": "https://hooks.tocsin.test/x"}])
            .to_string(),
            escalation: None,
            group_window_secs: 300,
            flap_changes: 0,
            flap_window_minutes: 0,
            repeat_every_minutes: 0,
            repeat_limit: 10,
            created_at: T0,
            updated_at: T0,
            apply_key: None,
            managed_by: None,
            degraded_threshold: 3,
            notify_degraded: false,
            pipeline: None,
        })
        .await
        .expect("policy");
    for m in ["mon_a", "mon_b", "mon_c", "mon_late"] {
        f.monitor(m, Some("pol_g")).await;
    }
    // Three openings a minute apart, inside the five-minute window.
    let start = f.clock.now_ms();
    for m in ["mon_a", "mon_b", "mon_c"] {
        f.check(m, false).await;
    }
    let mails: Vec<DeliveryRow> = f
        .all_deliveries()
        .await
        .into_iter()
        .filter(|d| d.channel_kind == "email")
        .collect();
    assert_eq!(mails.len(), 1, "one e-mail for the group");
    assert_eq!(
        mails[0].next_attempt_at,
        start + 300_000,
        "sent when it closes"
    );
    let payload: serde_json::Value = serde_json::from_str(&mails[0].payload).expect("json");
    assert_eq!(payload["group"]["count"], 3);
    let listed: Vec<&str> = payload["group"]["incidents"]
        .as_array()
        .expect("incidents")
        .iter()
        .filter_map(|e| e["monitor"]["name"].as_str())
        .collect();
    assert_eq!(listed, ["mon_a", "mon_b", "mon_c"]);
    // Webhooks: one each, at once, with the group's id.
    let hooks: Vec<DeliveryRow> = f
        .all_deliveries()
        .await
        .into_iter()
        .filter(|d| d.channel_kind == "webhook")
        .collect();
    assert_eq!(hooks.len(), 3);
    let group = payload["group"]["id"]
        .as_str()
        .expect("group id")
        .to_string();
    for h in &hooks {
        let p: serde_json::Value = serde_json::from_str(&h.payload).expect("json");
        assert_eq!(p["incident"]["groupId"], group.as_str());
        assert_eq!(h.next_attempt_at, h.created_at);
    }
    // After the window closed, an opening starts a new group.
    f.clock.advance_ms(300_000);
    f.check("mon_late", false).await;
    let late = f.incidents("mon_late").await[0].clone();
    assert!(late.group_id.is_some_and(|g| g != group));
    assert_eq!(f.deliveries("incident.created", "email").await, 2);
}

#[tokio::test]
async fn a_flapping_monitor_is_held_until_stable_then_summarised_once() {
    use tocsin::engine::flapping::summarize_due;
    let f = Fixture::new().await;
    f.store
        .insert_alert_policy(PolicyRow {
            id: "pol_f".into(),
            workspace_id: f.ws.clone(),
            name: "flaps".into(),
            failure_threshold: 1,
            recovery_threshold: 1,
            notify_on_recovery: true,
            channels: json!([{"type": "webhook", "url": "https://hooks.tocsin.test/x"}])
                .to_string(),
            escalation: None,
            group_window_secs: 0,
            flap_changes: 3,
            flap_window_minutes: 10,
            repeat_every_minutes: 0,
            repeat_limit: 10,
            created_at: T0,
            updated_at: T0,
            apply_key: None,
            managed_by: None,
            degraded_threshold: 3,
            notify_degraded: false,
            pipeline: None,
        })
        .await
        .expect("policy");
    f.monitor("mon_f", Some("pol_f")).await;

    // Three changes a minute apart are told as usual.
    f.check("mon_f", false).await;
    f.check("mon_f", true).await;
    f.check("mon_f", false).await;
    assert_eq!(f.deliveries("incident.created", "webhook").await, 2);
    assert_eq!(f.deliveries("incident.resolved", "webhook").await, 1);
    // The fourth crosses the line: flapping. Its recovery, and what follows, is held.
    f.check("mon_f", true).await;
    f.check("mon_f", false).await;
    f.check("mon_f", true).await;
    f.check("mon_f", false).await;
    let last_change = f.clock.now_ms() - 60_000;
    assert_eq!(f.deliveries("incident.created", "webhook").await, 2);
    assert_eq!(f.deliveries("incident.resolved", "webhook").await, 1);
    // The crossing is told once, by the change that crossed (a recovery: up).
    assert_eq!(f.deliveries("monitor.flapping_started", "webhook").await, 1);
    let start: serde_json::Value = serde_json::from_str(
        &f.all_deliveries()
            .await
            .into_iter()
            .find(|d| d.event == "monitor.flapping_started")
            .expect("the start")
            .payload,
    )
    .expect("json");
    assert_eq!(start["flapping"]["state"], "up", "{start}");
    assert_eq!(start["flapping"]["changes"], 4, "{start}");
    assert_eq!(start["flapping"]["windowMinutes"], 10, "{start}");
    let incidents = f.incidents("mon_f").await;
    let open = incidents.last().expect("open").clone();
    assert_eq!(open.status.name(), "open");
    assert!(!open.notified);
    assert!(open.hold.as_deref().is_some_and(|h| h.contains("flapping")));
    assert!(
        f.store
            .flapping_since("mon_f")
            .await
            .expect("state")
            .is_some()
    );

    // Not stable for ten minutes yet: nothing.
    let stable = last_change + 10 * 60_000;
    assert_eq!(
        summarize_due(&f.store, &f.ctx, stable - 1)
            .await
            .expect("pass"),
        0
    );
    // Stable: one summary, saying it is down, and the open incident is told by it.
    assert_eq!(
        summarize_due(&f.store, &f.ctx, stable).await.expect("pass"),
        1
    );
    assert_eq!(
        summarize_due(&f.store, &f.ctx, stable + 1)
            .await
            .expect("pass"),
        0
    );
    let summaries: Vec<DeliveryRow> = f
        .all_deliveries()
        .await
        .into_iter()
        .filter(|d| d.event == "monitor.flapping")
        .collect();
    assert_eq!(summaries.len(), 1);
    let p: serde_json::Value = serde_json::from_str(&summaries[0].payload).expect("json");
    assert_eq!(p["flapping"]["state"], "down");
    // Seven changes, the first at the start.
    assert_eq!(p["flapping"]["changes"], 7);
    assert_eq!(p["flapping"]["since"], tocsin::time::format_ms(T0).as_str());
    assert_eq!(p["incident"]["id"], open.id.as_str());
    let told = f.incidents("mon_f").await.last().expect("open").clone();
    assert!(told.notified);
    assert_eq!(told.hold, None);
    // No held recovery is left behind, and flapping is over.
    assert!(f.incidents("mon_f").await.iter().all(|i| i.hold.is_none()));
    assert_eq!(f.store.flapping_since("mon_f").await.expect("state"), None);
    // Its recovery is told like any other.
    f.clock.advance_ms(stable - f.clock.now_ms());
    f.check("mon_f", true).await;
    assert_eq!(f.deliveries("incident.resolved", "webhook").await, 2);
}

#[tokio::test]
async fn reminders_repeat_a_down_until_acknowledged_and_stop_at_the_limit() {
    use tocsin::engine::reminders::remind_due;
    let f = Fixture::new().await;
    f.store
        .insert_alert_policy(PolicyRow {
            id: "pol_r".into(),
            workspace_id: f.ws.clone(),
            name: "reminding".into(),
            failure_threshold: 1,
            recovery_threshold: 1,
            notify_on_recovery: true,
            channels: json!([{"type": "webhook", "url": "https://hooks.tocsin.test/x"}])
                .to_string(),
            escalation: None,
            group_window_secs: 0,
            flap_changes: 0,
            flap_window_minutes: 0,
            repeat_every_minutes: 30,
            repeat_limit: 2,
            created_at: T0,
            updated_at: T0,
            apply_key: None,
            managed_by: None,
            degraded_threshold: 3,
            notify_degraded: false,
            pipeline: None,
        })
        .await
        .expect("policy");
    f.monitor("mon_r", Some("pol_r")).await;
    f.monitor("mon_ack", Some("pol_r")).await;
    f.check("mon_r", false).await;
    f.clock.advance_ms(-60_000);
    f.check("mon_ack", false).await;
    let created = f.incidents("mon_r").await[0].created_at;
    let acked = f.incidents("mon_ack").await[0].clone();
    assert_eq!(acked.remind_at, Some(created + 30 * 60_000));
    actions::acknowledge(&f.store, &f.ctx, &f.ws, &acked.id, "alice", None, created)
        .await
        .expect("ack");
    let half_hour = 30 * 60_000;
    // Not yet at 30 minutes.
    assert_eq!(
        remind_due(&f.store, &f.ctx, created + half_hour - 1)
            .await
            .expect("pass"),
        0
    );
    // At 30 minutes: one reminder, for the unacknowledged incident only.
    assert_eq!(
        remind_due(&f.store, &f.ctx, created + half_hour)
            .await
            .expect("pass"),
        1
    );
    assert_eq!(
        remind_due(&f.store, &f.ctx, created + half_hour + 1)
            .await
            .expect("pass"),
        0,
        "told once"
    );
    // At 60 minutes the second, the last of the policy's two.
    assert_eq!(
        remind_due(&f.store, &f.ctx, created + 2 * half_hour)
            .await
            .expect("pass"),
        1
    );
    assert_eq!(
        remind_due(&f.store, &f.ctx, created + 10 * half_hour)
            .await
            .expect("pass"),
        0,
        "no more than the limit"
    );
    let mut reminders: Vec<serde_json::Value> = f
        .all_deliveries()
        .await
        .into_iter()
        .filter(|d| d.event == "incident.reminder")
        .map(|d| serde_json::from_str(&d.payload).expect("json"))
        .collect();
    reminders.sort_by_key(|r| r["reminder"]["number"].as_i64());
    assert_eq!(reminders.len(), 2);
    let open = f.incidents("mon_r").await[0].clone();
    for (n, r) in reminders.iter().enumerate() {
        assert_eq!(r["incident"]["id"], open.id.as_str(), "{r}");
        assert_eq!(r["reminder"]["number"], n + 1, "{r}");
        assert_eq!(r["reminder"]["limit"], 2, "{r}");
        assert_eq!(r["failure"]["reason"], "Connection refused", "{r}");
    }
    assert_eq!(reminders[0]["reminder"]["downForSeconds"], 1800);
    assert_eq!(reminders[1]["reminder"]["text"], "still down for 1 h");
    assert_eq!(open.reminders, 2);
    assert_eq!(open.remind_at, None);

    // A new incident that resolves before its first reminder gets none.
    f.monitor("mon_short", Some("pol_r")).await;
    f.clock
        .advance_ms(created + 20 * half_hour - f.clock.now_ms());
    f.check("mon_short", false).await;
    f.check("mon_short", true).await;
    assert_eq!(
        remind_due(&f.store, &f.ctx, created + 30 * half_hour)
            .await
            .expect("pass"),
        0
    );
    assert_eq!(f.incidents("mon_short").await[0].remind_at, None);
}

#[tokio::test]
async fn a_snooze_postpones_reminders_and_ending_it_early_brings_them_back() {
    use tocsin::engine::reminders::remind_due;
    let f = Fixture::new().await;
    f.store
        .insert_alert_policy(PolicyRow {
            id: "pol_rs".into(),
            workspace_id: f.ws.clone(),
            name: "reminding".into(),
            failure_threshold: 1,
            recovery_threshold: 1,
            notify_on_recovery: true,
            channels: json!([{"type": "webhook", "url": "https://hooks.tocsin.test/x"}])
                .to_string(),
            escalation: None,
            group_window_secs: 0,
            flap_changes: 0,
            flap_window_minutes: 0,
            repeat_every_minutes: 10,
            repeat_limit: 5,
            created_at: T0,
            updated_at: T0,
            apply_key: None,
            managed_by: None,
            degraded_threshold: 3,
            notify_degraded: false,
            pipeline: None,
        })
        .await
        .expect("policy");
    f.monitor("mon_rs", Some("pol_rs")).await;
    f.check("mon_rs", false).await;
    let created = f.incidents("mon_rs").await[0].created_at;
    let ten = 10 * 60_000;
    // Snoozed for a day just before the first reminder: none while it lasts, and the
    // next look comes one interval on, not at the snooze's end.
    f.store
        .set_monitor_snooze(&f.ws, "mon_rs", Some(created + 24 * 60 * 60_000))
        .await
        .expect("snooze");
    assert_eq!(
        remind_due(&f.store, &f.ctx, created + ten)
            .await
            .expect("pass"),
        0
    );
    let held = f.incidents("mon_rs").await[0].clone();
    assert_eq!(held.remind_at, Some(created + 2 * ten), "{held:?}");
    assert_eq!(held.reminders, 0);
    // The snooze ended early: the next look reminds.
    f.store
        .set_monitor_snooze(&f.ws, "mon_rs", None)
        .await
        .expect("unsnooze");
    assert_eq!(
        remind_due(&f.store, &f.ctx, created + 2 * ten)
            .await
            .expect("pass"),
        1
    );
    assert_eq!(f.deliveries("incident.reminder", "webhook").await, 1);
}

/// Planned maintenance, told to a status page's subscribers: the next occurrence of a
/// weekly window once it is within the window's notice, once however many passes run;
/// its end once it has ended; the occurrence after it only when its own notice comes; a
/// window over monitors on no public page tells nobody.
#[tokio::test]
async fn maintenance_is_told_once_ahead_of_each_occurrence_and_once_it_ends() {
    use tocsin::engine::announcements::announce_due;
    use tocsin::store::maintenance::MaintenanceWindowRow;
    use tocsin::store::status_pages::StatusPageRow;
    use tocsin::store::subscriptions::SubscriberRow;

    let f = Fixture::new().await;
    f.monitor("mon_shop", None).await;
    f.monitor("mon_hidden", None).await;
    f.store
        .insert_status_page(StatusPageRow {
            id: "sp_1".into(),
            workspace_id: f.ws.clone(),
            slug: "shop".into(),
            title: "Shop status".into(),
            description: String::new(),
            public: true,
            monitor_ids: json!(["mon_shop"]).to_string(),
            created_at: T0,
            updated_at: T0,
            apply_key: None,
            managed_by: None,
        })
        .await
        .expect("page");
    let tx = f.store.begin_write().await.expect("tx");
    tx.insert_subscriber(SubscriberRow {
        id: "sub_1".into(),
        workspace_id: f.ws.clone(),
        page_id: "sp_1".into(),
        kind: "webhook".into(),
        target: "https://hooks.tocsin.test/sub".into(),
        token: "tok".into(),
        confirmed: true,
        created_at: T0,
        secret: Some("whsec_x".into()),
    })
    .await
    .expect("subscriber");
    tx.commit().await.expect("commit");
    let hour = 3_600_000;
    let week = 7 * 24 * hour;
    let window = |id: &str, monitor: &str| MaintenanceWindowRow {
        id: id.into(),
        workspace_id: f.ws.clone(),
        name: format!("Patching {id}"),
        description: String::new(),
        // Weekly, two hours long, the first in three days.
        starts_at: T0 + 3 * 24 * hour,
        ends_at: None,
        rrule: Some("FREQ=WEEKLY".into()),
        cron: None,
        duration_minutes: Some(120),
        timezone: "UTC".into(),
        monitor_ids: json!([monitor]).to_string(),
        tags: "[]".into(),
        created_at: T0,
        updated_at: T0,
        apply_key: None,
        managed_by: None,
        subscriber_notice_minutes: 24 * 60,
    };
    for w in [
        window("mw_shop", "mon_shop"),
        window("mw_hidden", "mon_hidden"),
    ] {
        f.store.insert_maintenance_window(w).await.expect("window");
    }
    let phases = |all: &[DeliveryRow]| -> Vec<String> {
        all.iter()
            .filter(|d| d.event == "status_page.maintenance")
            .map(|d| {
                let p: serde_json::Value = serde_json::from_str(&d.payload).expect("json");
                format!(
                    "{} {}",
                    p["maintenance"]["phase"].as_str().unwrap_or("?"),
                    p["maintenance"]["startsAt"].as_str().unwrap_or("?")
                )
            })
            .rev() // listed newest first
            .collect()
    };
    let pass = |at: i64| {
        f.clock.advance_ms(at - f.clock.now_ms());
        announce_due(&f.store, &f.ctx, at)
    };
    let first = tocsin::time::format_ms(T0 + 3 * 24 * hour);
    let second = tocsin::time::format_ms(T0 + 3 * 24 * hour + week);

    // Three days ahead: nothing yet.
    assert_eq!(pass(T0).await.expect("pass"), 0);
    // A day ahead: told, once, whatever the passes.
    assert_eq!(pass(T0 + 2 * 24 * hour).await.expect("pass"), 1);
    assert_eq!(pass(T0 + 2 * 24 * hour + 60_000).await.expect("pass"), 0);
    assert_eq!(
        pass(T0 + 3 * 24 * hour + hour).await.expect("pass"),
        0,
        "while it runs"
    );
    // Ended: told once.
    assert_eq!(pass(T0 + 3 * 24 * hour + 2 * hour).await.expect("pass"), 1);
    assert_eq!(pass(T0 + 3 * 24 * hour + 3 * hour).await.expect("pass"), 0);
    // The next week's, a day ahead of it.
    assert_eq!(pass(T0 + 9 * 24 * hour - 1).await.expect("pass"), 0);
    assert_eq!(pass(T0 + 9 * 24 * hour).await.expect("pass"), 1);
    assert_eq!(
        phases(&f.all_deliveries().await),
        [
            format!("scheduled {first}"),
            format!("ended {first}"),
            format!("scheduled {second}")
        ],
        "the window over a monitor on no public page told nobody"
    );
}

#[tokio::test]
async fn channels_are_told_what_their_plugin_asks_for_whatever_their_name() {
    use std::collections::HashMap;
    use tocsin::plugins::abilities::{Abilities, Ability, ChannelAbilities};
    let mut f = Fixture::new().await;
    // A `webhook` whose plugin asks for nothing, and a third-party `pager` that asks for
    // acknowledgements, pauses and grouping: the engine goes by what they declare.
    f.ctx.channels = ChannelAbilities::new(HashMap::from([
        ("webhook".to_string(), Abilities::default()),
        (
            "pager".to_string(),
            Abilities::of(
                &[
                    Ability::Acknowledgements,
                    Ability::Pauses,
                    Ability::Grouping,
                ],
                &[],
            ),
        ),
    ]));
    f.store
        .insert_alert_policy(PolicyRow {
            id: "pol_a".into(),
            workspace_id: f.ws.clone(),
            name: "declared".into(),
            failure_threshold: 1,
            recovery_threshold: 1,
            notify_on_recovery: true,
            channels: json!([{"type": "pager", "url": "https://pager.tocsin.test/k"},
                             {"type": "webhook", "url": "https://hooks.tocsin.test/x"}])
            .to_string(),
            escalation: None,
            group_window_secs: 300,
            flap_changes: 0,
            flap_window_minutes: 0,
            repeat_every_minutes: 0,
            repeat_limit: 10,
            created_at: T0,
            updated_at: T0,
            apply_key: None,
            managed_by: None,
            degraded_threshold: 3,
            notify_degraded: false,
            pipeline: None,
        })
        .await
        .expect("policy");
    for m in ["mon_a", "mon_b"] {
        f.monitor(m, Some("pol_a")).await;
        f.check(m, false).await;
    }
    // Grouping: one pager message for both; the webhook hears of each at once.
    assert_eq!(f.deliveries("incident.created", "pager").await, 1);
    assert_eq!(f.deliveries("incident.created", "webhook").await, 2);
    let incident = f.incidents("mon_a").await[0].id.clone();
    actions::acknowledge(
        &f.store,
        &f.ctx,
        &f.ws,
        &incident,
        "ada",
        None,
        f.clock.now_ms(),
    )
    .await
    .expect("acknowledge");
    assert_eq!(f.deliveries("incident.acknowledged", "pager").await, 1);
    assert_eq!(
        f.deliveries("incident.acknowledged", "webhook").await,
        0,
        "a webhook whose plugin does not ask is not told"
    );
    actions::set_paused(&f.store, &f.ctx, &f.ws, "mon_b", true, f.clock.now_ms())
        .await
        .expect("pause");
    assert_eq!(f.deliveries("monitor.paused", "pager").await, 1);
    assert_eq!(f.deliveries("monitor.paused", "webhook").await, 0);
}
