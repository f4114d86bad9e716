//! End to end: an uptime report over October 2026. A month of stored checks five minutes
//! apart, with two failures, a failure another region did not confirm, a maintenance
//! window and a gap, and two incidents (and one of September, outside the period); the
//! figures the test works out from how it built the month match the report's to the
//! second, in JSON, CSV and HTML, chosen by ids, by tag and by status page.

use crate::support;

use serde_json::{Value, json};
use std::time::Duration;
use support::{Server, create};
use tocsin::store::checks::CheckRow;
use tocsin::store::{IncidentRow, IncidentState};

const STEP_S: i64 = 300;
/// The heartbeat monitors' grace: a missed ping is recorded this long after its deadline.
const GRACE_S: i64 = 60;
const MONTH_S: i64 = 31 * 86_400;
/// Failing checks: two runs, by check number.
const FAILING: [std::ops::Range<i64>; 2] = [1_000..1_012, 5_000..5_003];
/// A failure another region did not confirm.
const UNCONFIRMED: i64 = 6_000;
/// Checks taken in a maintenance window (failing, which must not matter).
const MAINTENANCE: std::ops::Range<i64> = 7_000..7_024;
/// Checks that never ran (the server was stopped).
const GAP: std::ops::Range<i64> = 8_000..8_020;

fn ms(text: &str) -> i64 {
    tocsin::time::parse_ms(text).expect("time")
}

fn response_ms(i: i64) -> i32 {
    20 + (i % 50) as i32
}

/// An incident of `monitor` opened at `opened` and resolved at `resolved` (ms).
fn resolved_incident(
    id: &str,
    workspace: &str,
    monitor: &str,
    opened: i64,
    resolved: i64,
) -> IncidentRow {
    IncidentRow {
        id: id.to_string(),
        workspace_id: workspace.to_string(),
        monitor_id: monitor.to_string(),
        policy_id: None,
        status: IncidentState::Resolved,
        open_key: None,
        created_at: opened,
        acknowledged_at: None,
        acknowledged_by: None,
        resolved_at: Some(resolved),
        escalate_at: None,
        escalated_at: None,
        failure: "{}".into(),
        monitor: "{}".into(),
        hold: None,
        notified: true,
        group_id: None,
        remind_at: None,
        reminders: 0,
        escalation_step: 0,
    }
}

/// Store the month's checks and the incidents of `monitor`.
fn store_month(server: &Server, workspace: &str, monitor: &str, from: i64) {
    let at = move |i: i64| from + i * STEP_S * 1000;
    support::on_store(server, |store| async move {
        let rows: Vec<CheckRow> = (0..MONTH_S / STEP_S)
            .filter(|i| !GAP.contains(i))
            .map(|i| {
                let failing = FAILING.iter().any(|r| r.contains(&i))
                    || i == UNCONFIRMED
                    || MAINTENANCE.contains(&i);
                CheckRow {
                    id: format!("chk_{i:08}"),
                    monitor_id: monitor.to_string(),
                    workspace_id: workspace.to_string(),
                    checked_at: at(i),
                    ok: !failing,
                    reason: failing.then(|| "Expected 200, got 503".to_string()),
                    status_code: Some(if failing { 503 } else { 200 }),
                    response_time_ms: Some(response_ms(i)),
                    region: "eu".into(),
                    details: "{}".into(),
                    counted: i != UNCONFIRMED && !MAINTENANCE.contains(&i),
                    maintenance: MAINTENANCE.contains(&i),
                }
            })
            .collect();
        let incident = |id: &str, opened: i64, resolved: i64| {
            resolved_incident(id, workspace, monitor, opened, resolved)
        };
        let tx = store.begin_write().await.expect("tx");
        tx.insert_checks(rows).await.expect("checks");
        for (id, run) in ["inc_report_1", "inc_report_2"].iter().zip(&FAILING) {
            tx.insert_incident(incident(id, at(run.start), at(run.end)))
                .await
                .expect("incident");
        }
        tx.insert_incident(incident(
            "inc_report_september",
            ms("2026-09-10T00:00:00.000Z"),
            ms("2026-09-10T01:00:00.000Z"),
        ))
        .await
        .expect("incident");
        tx.commit().await.expect("commit");
        (store, ())
    });
}

/// A duration as the reports write it (`1 h 34 min`).
fn words(seconds: i64) -> String {
    let parts = [
        (seconds / 86_400, "d"),
        (seconds % 86_400 / 3_600, "h"),
        (seconds % 3_600 / 60, "min"),
        (seconds % 60, "s"),
    ];
    let text: Vec<String> = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n} {unit}"))
        .collect();
    text.join(" ")
}

/// The text of a PDF, extracted by pypdf.
fn pdf_text(bytes: &[u8]) -> String {
    use std::process::Command;
    let present = Command::new("python3")
        .args(["-c", "import pypdf"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !present {
        let out = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", "pypdf==5.1.0"])
            .output()
            .expect("pip");
        assert!(
            out.status.success(),
            "installing pypdf: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("report.pdf");
    std::fs::write(&file, bytes).expect("write");
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, pypdf\nfor page in pypdf.PdfReader(sys.argv[1]).pages:\n    print(page.extract_text())",
        ])
        .arg(&file)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "pypdf could not read the report: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_month_with_maintenance_and_two_incidents_reports_to_the_second() {
    let server = Server::start(&[]);
    let api = server.client();
    let workspace = api.workspace_id();
    let heartbeat = |name: &str, tags: Value, target: Value| {
        create(
            &api,
            "/v1/monitors",
            json!({"name": name, "type": "heartbeat", "period": STEP_S, "grace": GRACE_S,
                   "tags": tags, "slaTarget": target}),
        )
    };
    let api_monitor = heartbeat("API", json!(["customer-a"]), json!(99.5));
    let idle = heartbeat("Batch", json!(["customer-a"]), Value::Null);
    let other = heartbeat("Elsewhere", json!([]), Value::Null);
    assert_eq!(api_monitor["slaTarget"], 99.5);
    assert_eq!(idle["slaTarget"], Value::Null);
    for bad in [json!(0), json!(100.5), json!(99.12345), json!("99.9")] {
        api.post(
            "/v1/monitors",
            &json!({"name": "x", "type": "heartbeat", "period": 60, "slaTarget": bad}),
        )
        .assert_error(400, "VALIDATION_ERROR");
    }
    let id = api_monitor["id"].as_str().expect("id").to_string();
    assert_eq!(api_monitor["interval"], STEP_S, "{api_monitor}");
    let from = ms("2026-10-01T00:00:00.000Z");
    store_month(&server, &workspace, &id, from);

    // What the month holds, worked out from how it was built.
    let failing_checks: i64 = FAILING.iter().map(|r| r.end - r.start).sum();
    let down = failing_checks * STEP_S;
    let maintenance = (MAINTENANCE.end - MAINTENANCE.start) * STEP_S;
    // The gap: the check before it vouches for two periods and the grace (a heartbeat's
    // missed ping is recorded at its deadline), the rest is unmonitored.
    let gap_span = (GAP.end - GAP.start + 1) * STEP_S;
    let unmonitored = gap_span - (2 * STEP_S + GRACE_S);
    let up = MONTH_S - down - maintenance - unmonitored;
    let counted: Vec<i64> = (0..MONTH_S / STEP_S)
        .filter(|i| !GAP.contains(i) && !MAINTENANCE.contains(i) && *i != UNCONFIRMED)
        .collect();
    let mut times: Vec<i32> = counted.iter().map(|i| response_ms(*i)).collect();
    times.sort_unstable();
    let rank = |q: f64| times[((times.len() as f64 * q).ceil() as usize) - 1];
    let uptime = up as f64 * 100.0 / (up + down) as f64;

    let query = "from=2026-10-01T00:00:00.000Z&to=2026-11-01T00:00:00.000Z&target=99.9";
    let r = api.get(&format!("/v1/reports/uptime?monitorIds={id}&{query}"));
    assert_eq!(r.status, 200, "{}", r.body);
    let report = &r.body["data"];
    assert_eq!(report["from"], "2026-10-01T00:00:00.000Z");
    assert_eq!(report["targetPercent"], 99.9);
    assert!(
        report["rules"][0]
            .as_str()
            .expect("rules")
            .contains("first failing check to the first passing one")
    );
    let m = &report["monitors"][0];
    assert_eq!(m["monitorId"], id.as_str());
    assert_eq!(
        (
            m["upSeconds"].as_i64(),
            m["downSeconds"].as_i64(),
            m["maintenanceSeconds"].as_i64(),
            m["unmonitoredSeconds"].as_i64(),
        ),
        (Some(up), Some(down), Some(maintenance), Some(unmonitored)),
        "{m}"
    );
    assert!((m["uptimePercent"].as_f64().expect("uptime") - uptime).abs() < 1e-9);
    assert_eq!(m["checks"], counted.len());
    assert_eq!(m["failedChecks"], failing_checks);
    assert_eq!(m["medianResponseTimeMs"], rank(0.5));
    assert_eq!(m["p95ResponseTimeMs"], rank(0.95));
    assert_eq!(
        (m["targetPercent"].as_f64(), m["targetMet"].as_bool()),
        (Some(99.9), Some(false)),
        "99.83 % is under the report's 99.9 %, which stands in for the monitor's own"
    );
    let incidents = m["incidents"].as_array().expect("incidents");
    assert_eq!(incidents.len(), 2, "September's is not in October: {m}");
    for (incident, run) in incidents.iter().zip(&FAILING) {
        assert_eq!(
            incident["secondsInPeriod"].as_i64(),
            Some((run.end - run.start) * STEP_S)
        );
    }
    assert_eq!(incidents[0]["id"], "inc_report_1");

    // Without a report target, each monitor is held to its own slaTarget.
    let own = api.get(&format!(
        "/v1/reports/uptime?monitorIds={id},{}&from=2026-10-01T00:00:00.000Z&to=2026-11-01T00:00:00.000Z",
        idle["id"].as_str().expect("id")
    ));
    let own = &own.body["data"];
    assert_eq!(own["targetPercent"], Value::Null);
    assert_eq!(
        (
            own["monitors"][0]["targetPercent"].as_f64(),
            own["monitors"][0]["targetMet"].as_bool()
        ),
        (Some(99.5), Some(true))
    );
    assert_eq!(own["monitors"][1]["targetMet"], Value::Null, "no target");
    // A target is changed and cleared like any field.
    let patched = api.patch(&format!("/v1/monitors/{id}"), &json!({"slaTarget": 99.95}));
    assert_eq!(patched.body["data"]["slaTarget"], 99.95, "{}", patched.body);
    let cleared = api.patch(&format!("/v1/monitors/{id}"), &json!({"slaTarget": null}));
    assert_eq!(cleared.body["data"]["slaTarget"], Value::Null);

    // By tag: both tagged monitors, in name order; the one without checks has no uptime.
    let tagged = api.get(&format!("/v1/reports/uptime?tag=customer-a&{query}"));
    let names: Vec<&str> = tagged.body["data"]["monitors"]
        .as_array()
        .expect("monitors")
        .iter()
        .map(|m| m["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["API", "Batch"]);
    let batch = &tagged.body["data"]["monitors"][1];
    assert_eq!(
        (batch["uptimePercent"].clone(), batch["targetMet"].clone()),
        (Value::Null, Value::Null)
    );
    assert_eq!(batch["unmonitoredSeconds"], MONTH_S);

    // By status page: the page's monitors.
    let page = create(
        &api,
        "/v1/status-pages",
        json!({"slug": "customer-a", "name": "Customer A", "monitorIds": [id]}),
    );
    let by_page = api.get(&format!(
        "/v1/reports/uptime?statusPageId={}&{query}",
        page["id"].as_str().expect("page id")
    ));
    assert_eq!(by_page.status, 200, "{}", by_page.body);
    assert_eq!(by_page.body["data"]["monitors"][0]["downSeconds"], down);

    // CSV: a header and one row per monitor, the same figures.
    let http = support::client();
    let csv = http
        .get(format!(
            "{}/v1/reports/uptime?tag=customer-a&{query}&format=csv",
            server.base
        ))
        .bearer_auth(support::ADMIN_KEY)
        .send()
        .expect("csv");
    assert!(
        csv.headers()["content-disposition"]
            .to_str()
            .expect("ascii")
            .contains("uptime-2026-10-01-2026-11-01.csv")
    );
    let text = csv.text().expect("text");
    let mut lines = text.lines();
    assert!(lines.next().expect("header").starts_with(
        "monitorId,name,type,uptimePercent,targetPercent,targetMet,upSeconds,downSeconds"
    ));
    let row: Vec<&str> = lines.next().expect("row").split(',').collect();
    assert_eq!(row[0], id);
    assert_eq!(row[3], format!("{uptime:.4}"));
    assert_eq!(row[4..6], ["99.9", "false"]);
    assert_eq!(
        row[6..10],
        [
            up.to_string(),
            down.to_string(),
            maintenance.to_string(),
            unmonitored.to_string()
        ]
    );
    assert_eq!(row[14], "2");

    // HTML: a page a person can print, with the figures, the verdict and the rules.
    let html = http
        .get(format!(
            "{}/v1/reports/uptime?monitorIds={id}&{query}&format=html",
            server.base
        ))
        .bearer_auth(support::ADMIN_KEY)
        .send()
        .expect("html")
        .text()
        .expect("text");
    assert!(html.contains(&format!("{uptime:.3}&nbsp;%")), "{html}");
    assert!(html.contains("missed"));
    assert!(
        html.contains("1 h 15 min"),
        "the down time in words: {html}"
    );
    assert!(html.contains("How it is counted"));

    // PDF: parsed back by a PDF library (pypdf, installed from PyPI when missing), its
    // text holds the same figures.
    let pdf = http
        .get(format!(
            "{}/v1/reports/uptime?tag=customer-a&{query}&format=pdf",
            server.base
        ))
        .bearer_auth(support::ADMIN_KEY)
        .send()
        .expect("pdf");
    assert_eq!(pdf.status(), 200);
    assert_eq!(
        pdf.headers()["content-type"].to_str().expect("ascii"),
        "application/pdf"
    );
    let bytes = pdf.bytes().expect("bytes");
    assert!(bytes.starts_with(b"%PDF-"));
    let text = pdf_text(&bytes);
    for wanted in [
        "Uptime report".to_string(),
        "From 2026-10-01T00:00:00.000Z to 2026-11-01T00:00:00.000Z; target 99.9 %".to_string(),
        format!("Uptime {uptime:.3} %; target 99.9 %: missed."),
        format!(
            "Down 1 h 15 min, maintenance 2 h, unmonitored {}.",
            words(unmonitored)
        ),
        format!(
            "Checks {} ({failing_checks} failed); response time median {} ms, p95 {} ms; incidents 2.",
            counted.len(),
            rank(0.5),
            rank(0.95)
        ),
        "Incident inc_report_1 from 2026-10-04T11:20:00.000Z".to_string(),
        "Batch (heartbeat,".to_string(),
        "How it is counted".to_string(),
    ] {
        assert!(
            text.contains(&wanted),
            "{wanted:?} not in the PDF's text:\n{text}"
        );
    }

    // The dashboard's Reports page: the choices, then the same figures for a month, with
    // the downloads, for a person signed in to the workspace.
    let owner = support::browser::sign_up_owner(&server);
    let (status, _, form) = owner.html("/reports");
    assert_eq!(status, 200, "{form}");
    assert!(
        form.contains("value=\"tag:customer-a\"") && form.contains("Status page Customer A"),
        "{form}"
    );
    // Last month (UTC, the workspace's zone) is offered, whatever today is.
    let today = chrono::Utc::now().date_naive();
    let last_month = (today - chrono::Duration::days(i64::from(chrono::Datelike::day(&today))))
        .format("%Y-%m")
        .to_string();
    assert!(
        form.contains(&format!("value=\"{last_month}\"")),
        "last month by default: {form}"
    );
    let (status, _, shown) = owner.html("/reports?by=tag%3Acustomer-a&month=2026-10&target=99.9");
    assert_eq!(status, 200, "{shown}");
    // The page escapes `&` in attributes as `&#38;`: read both spellings alike.
    let shown = shown.replace("&#38;", "&amp;");
    assert!(shown.contains(&format!("{uptime:.3} %")), "{shown}");
    assert!(
        shown.contains("1 h 15 min") && shown.contains(">missed<"),
        "{shown}"
    );
    let csv_link = "/v1/reports/uptime?tag=customer-a&amp;from=2026-10-01T00%3A00%3A00.000Z";
    assert!(shown.contains(csv_link), "{shown}");
    let (status, headers, csv) = owner.html(&format!(
        "{}&format=csv",
        csv_link.replace("&amp;", "&") + "&to=2026-11-01T00%3A00%3A00.000Z&target=99.9"
    ));
    assert_eq!(status, 200, "{csv}");
    assert_eq!(
        headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("text/csv; charset=utf-8")
    );
    assert!(csv.contains(&format!(",{up},{down},")), "{csv}");
    let (status, _, refused) = owner.html("/reports?by=tag%3Acustomer-a&month=2026-13");
    assert_eq!(status, 400);
    assert!(refused.contains("Choose a month."), "{refused}");

    // Refusals change nothing and say why.
    for bad in [
        query.to_string(),
        format!("monitorIds={id}&tag=customer-a&{query}"),
        format!("monitorIds={id}&from=2026-11-01T00:00:00.000Z&to=2026-10-01T00:00:00.000Z"),
        format!("monitorIds={id}&from=2025-01-01T00:00:00.000Z&to=2026-11-01T00:00:00.000Z"),
        format!("monitorIds={id}&{query}&format=pdf2"),
        format!(
            "monitorIds={id}&from=2026-10-01T00:00:00.000Z&to=2026-11-01T00:00:00.000Z&target=120"
        ),
        format!("tag=&{query}"),
    ] {
        api.get(&format!("/v1/reports/uptime?{bad}"))
            .assert_error(400, "VALIDATION_ERROR");
    }
    api.get(&format!(
        "/v1/reports/uptime?monitorIds={id},mon_nope&{query}"
    ))
    .assert_error(404, "MONITOR_NOT_FOUND");
    api.get(&format!("/v1/reports/uptime?statusPageId=sp_nope&{query}"))
        .assert_error(404, "STATUS_PAGE_NOT_FOUND");
    // Another workspace's monitor is not found.
    let elsewhere = server.cli(&["workspace", "create", "--name", "Other"]);
    let key = server.cli(&["key", "create", "--workspace", &elsewhere]);
    api.with_key(&key)
        .get(&format!("/v1/reports/uptime?monitorIds={id}&{query}"))
        .assert_error(404, "MONITOR_NOT_FOUND");
    let _ = (idle, other);
}

/// The PDF attached to a mail as the SMTP sink received it, read by Python's `email`.
fn attached_pdf(data: &str) -> (String, String, Vec<u8>) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let script = "import sys, email, email.policy\n\
m = email.message_from_bytes(sys.stdin.buffer.read(), policy=email.policy.default)\n\
files = [p for p in m.iter_attachments()]\n\
assert len(files) == 1, [p.get_filename() for p in files]\n\
sys.stderr.write(str(m['subject']) + '\\n' + files[0].get_filename() + '\\n')\n\
sys.stdout.buffer.write(files[0].get_payload(decode=True))\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(data.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("python3");
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "reading the mail: {said}\n{data}");
    let mut lines = said.lines();
    let subject = lines.next().unwrap_or_default().to_string();
    let name = lines.next().unwrap_or_default().to_string();
    (subject, name, out.stdout)
}

/// A month in UTC as `(label, title, from, to)`: the one before `now`'s.
fn month_before(now: chrono::DateTime<chrono::Utc>) -> (String, String, i64, i64) {
    use chrono::{Datelike, NaiveDate};
    let this = NaiveDate::from_ymd_opt(now.year(), now.month(), 1).expect("date");
    let last = this.pred_opt().expect("date").with_day(1).expect("date");
    let at = |d: NaiveDate| {
        d.and_hms_opt(0, 0, 0)
            .expect("time")
            .and_utc()
            .timestamp_millis()
    };
    (
        last.format("%Y-%m").to_string(),
        last.format("%B %Y").to_string(),
        at(last),
        at(this),
    )
}

#[test]
fn a_monthly_report_goes_out_once_by_mail_with_its_pdf_and_to_a_webhook() {
    let smtp = support::sinks::SmtpSink::start();
    let receiver = support::sinks::Receiver::start();
    let port = smtp.port.to_string();
    let env = [
        ("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true"),
        ("TOCSIN_SMTP_HOST", "127.0.0.1"),
        ("TOCSIN_SMTP_PORT", port.as_str()),
        ("TOCSIN_SMTP_TLS", "none"),
        ("TOCSIN_SMTP_FROM", "Tocsin <reports@tocsin.test>"),
        ("TOCSIN_PUBLIC_URL", "https://tocsin.test"),
    ];
    let dir = tempfile::tempdir().expect("dir");
    let mut server = Server::start_in(dir.path(), &env);
    let api = server.client();
    let workspace = api.workspace_id();
    receiver.set_secret(
        api.get("/v1/workspace/webhook-secret").body["data"]["secret"]
            .as_str()
            .expect("secret"),
    );

    // Last month: a check every five minutes, one hour of it failing, one incident.
    let (label, title, from, to) = month_before(chrono::Utc::now());
    let (before_label, ..) =
        month_before(chrono::DateTime::from_timestamp_millis(from).expect("time"));
    let monitor = create(
        &api,
        "/v1/monitors",
        json!({"name": "Checkout", "type": "heartbeat", "period": STEP_S, "grace": GRACE_S, "slaTarget": 99.9}),
    );
    let id = monitor["id"].as_str().expect("id").to_string();
    let steps = (to - from) / (STEP_S * 1000);
    let failing = 100..112;
    let at = move |i: i64| from + i * STEP_S * 1000;
    {
        let (workspace, id) = (workspace.clone(), id.clone());
        support::on_store(&server, |store| async move {
            let rows: Vec<CheckRow> = (0..steps)
                .map(|i| CheckRow {
                    id: format!("chk_m{i:06}"),
                    monitor_id: id.clone(),
                    workspace_id: workspace.clone(),
                    checked_at: at(i),
                    ok: !failing.contains(&i),
                    reason: failing.contains(&i).then(|| "Missed ping".to_string()),
                    status_code: None,
                    response_time_ms: None,
                    region: "eu".into(),
                    details: "{}".into(),
                    counted: true,
                    maintenance: false,
                })
                .collect();
            let tx = store.begin_write().await.expect("tx");
            tx.insert_checks(rows).await.expect("checks");
            tx.insert_incident(resolved_incident(
                "inc_monthly",
                &workspace,
                &id,
                at(100),
                at(112),
            ))
            .await
            .expect("incident");
            tx.commit().await.expect("commit");
            (store, ())
        });
    }
    let total = (to - from) / 1000;
    let uptime = (total - 3_600) as f64 * 100.0 / total as f64;

    let email = create(
        &api,
        "/v1/channels",
        json!({"name": "Reports", "type": "email", "target": "reports@customer.test"}),
    );
    let hook = create(
        &api,
        "/v1/channels",
        json!({"name": "Reports hook", "type": "webhook", "url": receiver.url("/reports")}),
    );
    let mut ids = vec![
        email["id"].as_str().expect("id").to_string(),
        hook["id"].as_str().expect("id").to_string(),
    ];
    ids.sort();

    // The setting is in the API's document.
    let doc = api.get("/v1/openapi.json").body;
    let schemas = &doc["components"]["schemas"];
    assert!(schemas["WorkspaceUpdate"]["properties"]["monthlyReport"].is_object());
    assert!(schemas["MonthlyReportView"]["properties"]["lastSentFor"].is_object());

    // Bad settings change nothing.
    for bad in [
        json!({"channelIds": []}),
        json!({"channelIds": ["ch_nope"]}),
        json!({"channelIds": [ids[0], ids[0]]}),
        json!({"channels": ids}),
        json!(["x"]),
    ] {
        api.patch("/v1/workspace", &json!({"monthlyReport": bad}))
            .assert_error(400, "VALIDATION_ERROR");
    }
    // Only admins choose where every monitor's figures go.
    let writer = create(
        &api,
        "/v1/api-keys",
        json!({"name": "writer", "role": "write"}),
    );
    api.with_key(writer["secret"].as_str().expect("secret"))
        .patch(
            "/v1/workspace",
            &json!({"monthlyReport": {"channelIds": [ids[0]]}}),
        )
        .assert_error(403, "FORBIDDEN");
    assert_eq!(
        api.get("/v1/workspace").body["data"]["monthlyReport"],
        Value::Null
    );
    // Turned on now, the month just ended counts as sent: the first report is next month's.
    let r = api.patch(
        "/v1/workspace",
        &json!({"monthlyReport": {"channelIds": [ids[1], ids[0]]}}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["data"]["monthlyReport"],
        json!({"channelIds": ids, "lastSentFor": label})
    );

    // As if the server had been down on the 1st: last sent the month before, it sends
    // last month's when it starts.
    server.stop();
    {
        let (workspace, ids) = (workspace.clone(), ids.clone());
        let before = before_label.clone();
        support::on_store(&server, |store| async move {
            store
                .set_monthly_report(&workspace, &[], &before, 0)
                .await
                .expect("off");
            store
                .set_monthly_report(&workspace, &ids, &before, 0)
                .await
                .expect("on");
            (store, ())
        });
    }
    server = Server::start_in(dir.path(), &env);
    let api = server.client();
    let mail = support::wait_for("the report by mail", Duration::from_secs(60), || {
        smtp.mails_to("reports@customer.test").into_iter().next()
    });
    let (subject, file, pdf) = attached_pdf(&mail.data);
    assert_eq!(
        subject,
        format!("Uptime report for {title}: 1 monitor, 1 target missed")
    );
    assert_eq!(file, format!("uptime-{label}.pdf"));
    assert!(pdf.starts_with(b"%PDF-"));
    let text = pdf_text(&pdf);
    for wanted in [
        format!(
            "From {} to {}",
            tocsin::time::format_ms(from),
            tocsin::time::format_ms(to)
        ),
        format!("Uptime {uptime:.3} %; target 99.9 %: missed."),
        "Down 1 h, maintenance 0 s, unmonitored 0 s.".to_string(),
        format!("Checks {steps} (12 failed)"),
        "Incident inc_monthly from".to_string(),
    ] {
        assert!(text.contains(&wanted), "{wanted:?} not in:\n{text}");
    }

    let hooked = support::wait_for("the report by webhook", Duration::from_secs(30), || {
        receiver.at("/reports").into_iter().next()
    });
    assert!(hooked.verified, "signed like every webhook");
    let p = &hooked.json;
    assert_eq!(p["event"], "report.monthly");
    assert_eq!(
        hooked.headers.get("x-service-event").map(String::as_str),
        Some("report.monthly")
    );
    let report = &p["report"];
    assert_eq!(
        (
            report["month"].as_str(),
            report["monitors"].as_u64(),
            report["targetsMissed"].as_u64(),
            report["incidents"].as_u64(),
        ),
        (Some(label.as_str()), Some(1), Some(1), Some(1)),
        "{p}"
    );
    assert_eq!(report["from"], tocsin::time::format_ms(from));
    let lowest = &report["lowestUptime"][0];
    assert_eq!(lowest["id"], id.as_str());
    assert!((lowest["uptimePercent"].as_f64().expect("uptime") - uptime).abs() < 1e-9);
    assert_eq!(lowest["downSeconds"], 3_600);
    assert_eq!(p["files"][0]["name"], format!("uptime-{label}.pdf"));
    assert_eq!(p["files"][0]["bytes"], pdf.len());
    assert_eq!(
        report["url"],
        format!("https://tocsin.test/reports?by=all&month={label}")
    );
    // The link opens the same month of every monitor in the dashboard, and the API gives
    // the same figures for all=true.
    let owner = support::browser::sign_up_owner(&server);
    let (status, _, page) = owner.html(&format!("/reports?by=all&month={label}"));
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("Checkout") && page.contains(&format!("{uptime:.3} %")),
        "{page}"
    );
    let all = api.get(&format!(
        "/v1/reports/uptime?all=true&from={}&to={}",
        tocsin::time::format_ms(from),
        tocsin::time::format_ms(to)
    ));
    assert_eq!(all.status, 200, "{}", all.body);
    api.get("/v1/reports/uptime?all=true&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z")
        .assert_error(400, "VALIDATION_ERROR");
    assert!(
        (all.body["data"]["monitors"][0]["uptimePercent"]
            .as_f64()
            .expect("uptime")
            - uptime)
            .abs()
            < 1e-9
    );
    assert_eq!(
        api.get("/v1/workspace").body["data"]["monthlyReport"]["lastSentFor"],
        label.as_str()
    );

    // Another start sends nothing again.
    server.stop();
    server = Server::start_in(dir.path(), &env);
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(smtp.mails_to("reports@customer.test").len(), 1);
    assert_eq!(receiver.at("/reports").len(), 1);

    // An admin sends last month's now, marked as a test (a write key may not); the month
    // due on the 1st stays as it was.
    let api = server.client();
    let send = "/v1/workspace/monthly-report/test";
    api.with_key(writer["secret"].as_str().expect("secret"))
        .post(send, &json!({}))
        .assert_error(403, "FORBIDDEN");
    let r = api.post(send, &json!({}));
    assert_eq!(r.status, 202, "{}", r.body);
    assert_eq!(r.body["data"], json!({"month": label, "deliveries": 2}));
    let again = support::wait_for("the test report by mail", Duration::from_secs(60), || {
        smtp.mails_to("reports@customer.test").get(1).cloned()
    });
    let (subject, file, pdf) = attached_pdf(&again.data);
    assert_eq!(
        subject,
        format!("[Test] Uptime report for {title}: 1 monitor, 1 target missed")
    );
    assert_eq!(file, format!("uptime-{label}.pdf"));
    assert!(pdf_text(&pdf).contains(&format!("Uptime {uptime:.3} %")));
    let hooked = support::wait_for(
        "the test report by webhook",
        Duration::from_secs(30),
        || receiver.at("/reports").get(1).cloned(),
    );
    assert_eq!(hooked.json["test"], true);
    assert_eq!(hooked.json["report"]["month"], label.as_str());
    assert_eq!(
        api.get("/v1/workspace").body["data"]["monthlyReport"]["lastSentFor"],
        label.as_str()
    );
    drop(server);
}
