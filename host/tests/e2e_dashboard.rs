//! The dashboard's pages over HTTP against a running server: the sign-in page for
//! strangers, the overview of a signed-in person's workspace (counts by state, search,
//! filters, paging, names escaped), a monitor's page with its checks, another
//! workspace's monitor not found, and the security headers on every page.

use crate::support;

use serde_json::json;
use std::time::Duration;
use support::browser::{Browser, sign_up_owner};
use support::target::Target;
use support::{Server, wait_for};

fn html(b: &Browser, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    b.html(path)
}

#[test]
fn the_dashboard_shows_a_persons_workspace_on_sqlite() {
    the_dashboard_shows_a_persons_workspace(None);
}

#[test]
fn the_dashboard_shows_a_persons_workspace_on_postgres() {
    support::pg::with_database("the_dashboard_on_postgres", |url| {
        the_dashboard_shows_a_persons_workspace(Some(url));
    });
}

fn the_dashboard_shows_a_persons_workspace(database_url: Option<&str>) {
    let target = Target::start();
    let env: Vec<(&str, &str)> = database_url
        .map(|u| vec![("TOCSIN_DATABASE_URL", u)])
        .unwrap_or_default();
    let server = Server::start(&env);
    let api = server.client();

    // A stranger gets the sign-in page.
    let stranger = Browser::new(&server.base);
    let (status, headers, page) = html(&stranger, "/");
    assert_eq!(status, 200);
    assert!(page.contains(r#"<form id="login""#), "{page}");
    let csp = headers["content-security-policy"].to_str().expect("csp");
    assert!(
        csp.contains("default-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    assert_eq!(headers["x-frame-options"], "DENY");

    // The owner signs up through the setup link.
    let owner = sign_up_owner(&server);

    // Monitors: one checked against a live target, one with a hostile name, and enough
    // to need a second page.
    let live = api.post(
        "/v1/monitors",
        &json!({"name": "Live API", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 1, "timeout": 1}),
    );
    assert_eq!(live.status, 201, "{}", live.body);
    let live_id = live.body["data"]["id"].as_str().expect("id").to_string();
    let hostile = api.post(
        "/v1/monitors",
        &json!({"name": "<script>alert('x')</script>", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60}),
    );
    assert_eq!(hostile.status, 201, "{}", hostile.body);
    for i in 0..55 {
        let r = api.post(
            "/v1/monitors",
            &json!({"name": format!("batch {i:02}"), "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 3600}),
        );
        assert_eq!(r.status, 201, "{}", r.body);
    }
    let paused = api.post(&format!("/v1/monitors/{live_id}/pause"), &json!({}));
    assert_eq!(paused.status, 200);
    let resumed = api.post(&format!("/v1/monitors/{live_id}/resume"), &json!({}));
    assert_eq!(resumed.status, 200);
    wait_for("the live monitor to be up", Duration::from_secs(30), || {
        (api.get(&format!("/v1/monitors/{live_id}")).body["data"]["status"] == "up").then_some(())
    });

    // The overview: counts, first page of 50 by name, hostile name escaped.
    let (status, headers, page) = html(&owner, "/");
    assert_eq!(status, 200, "{page}");
    assert_eq!(headers["x-frame-options"], "DENY");
    assert!(page.contains("57 monitors, page 1 of 2"), "{page}");
    assert!(page.contains("olive@example.com") && page.contains("owner"));
    assert!(!page.contains("<script>alert"), "an unescaped name");
    assert!(page.contains(r#"rel="next""#));
    let (_, _, second) = html(&owner, "/?sort=name&page=2");
    assert!(second.contains("57 monitors, page 2 of 2") && second.contains(r#"rel="prev""#));

    // Tags: set over the API, filtered over the API and on the overview.
    let tagged = api.patch(
        &format!("/v1/monitors/{live_id}"),
        &json!({"tags": ["team:shop", "production", "production"]}),
    );
    assert_eq!(tagged.status, 200, "{}", tagged.body);
    assert_eq!(
        tagged.body["data"]["tags"],
        json!(["production", "team:shop"])
    );
    let listed = api.get("/v1/monitors?tag=team:shop");
    assert_eq!(listed.body["pagination"]["total"], 1, "{}", listed.body);
    api.get("/v1/monitors?tag=not%20a%20tag")
        .assert_error(400, "VALIDATION_ERROR");
    api.post(
        "/v1/monitors",
        &json!({"name": "x", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60, "tags": ["<b>"]}),
    )
    .assert_error(400, "VALIDATION_ERROR");
    let (_, _, by_tag) = html(&owner, "/?tag=team%3Ashop");
    assert!(
        by_tag.contains("1 monitor, page 1 of 1") && by_tag.contains("Live API"),
        "{by_tag}"
    );

    // Search and filters.
    let (_, _, found) = html(&owner, "/?q=live");
    assert!(found.contains("1 monitor, page 1 of 1"), "{found}");
    assert!(found.contains(&format!("/monitors/{live_id}")));
    let (_, _, up) = html(&owner, "/?status=up");
    assert!(up.contains("Live API") && !up.contains("batch 00"), "{up}");
    // Its checks so far all passed: 100 % over 24 hours and over the days rolled up.
    assert!(up.contains("<td>100.00 %</td>"), "{up}");
    // Its heartbeat bar: its last checks, all passed, summed up for a screen reader.
    assert!(
        up.contains(r#"<span class="beats mini" role="img" aria-label="Last "#)
            && up.contains(r#" checks: 0 failed"><span class="beat up" title=""#),
        "{up}"
    );
    let (_, _, none) = html(&owner, "/?q=%25");
    assert!(
        none.contains("No monitor matches"),
        "a % is a character, not a wildcard"
    );

    // A monitor's page with its recent checks.
    let (status, _, detail) = html(&owner, &format!("/monitors/{live_id}"));
    assert_eq!(status, 200, "{detail}");
    assert!(
        detail.contains("Recent checks") && detail.contains(">ok<"),
        "{detail}"
    );
    // Every check downloads from the page, with the session (on either database).
    let export = format!("/v1/monitors/{live_id}/checks?format=csv");
    assert!(
        detail.contains(&export.replace('&', "&amp;")) || detail.contains(&export),
        "{detail}"
    );
    let (status, headers, csv) = html(&owner, &export);
    assert_eq!(status, 200, "{csv}");
    assert_eq!(
        headers.get("content-type").and_then(|v| v.to_str().ok()),
        Some("text/csv; charset=utf-8")
    );
    let mut lines = csv.lines();
    assert!(
        lines.next().is_some_and(|h| h.starts_with("checkedAt,ok,")),
        "{csv}"
    );
    assert!(lines.next().is_some_and(|l| l.contains(",true,")), "{csv}");
    // The heartbeat bar holds its passing checks, and the chart draws them from the first
    // minutes, before a second quarter hour is aggregated.
    assert!(
        detail.contains(r#"<li class="beat up" tabindex="0" data-tip=""#),
        "{detail}"
    );
    assert!(!detail.contains(r#"class="beat down""#), "{detail}");
    assert!(
        !detail.contains("No timed check in this range") && detail.contains("<circle cx="),
        "{detail}"
    );
    // Ranges of the chart, today's rollup in the day strip; an unknown range falls back.
    let (status, _, month) = html(&owner, &format!("/monitors/{live_id}?range=30d"));
    assert_eq!(status, 200);
    assert!(
        month.contains("Uptime by day") && month.contains("100.0 %"),
        "{month}"
    );
    let (status, _, _) = html(&owner, &format!("/monitors/{live_id}?range=bogus"));
    assert_eq!(status, 200);

    // Another workspace's monitor is not found; a stranger is sent to sign in.
    let other_ws = server.cli_with(&["workspace", "create", "--name", "Other"], &env);
    let other_key = server.cli_with(
        &["key", "create", "--workspace", &other_ws, "--role", "admin"],
        &env,
    );
    let theirs = api.with_key(&other_key).post(
        "/v1/monitors",
        &json!({"name": "theirs", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 60}),
    );
    let theirs_id = theirs.body["data"]["id"].as_str().expect("id");
    let (status, _, _) = html(&owner, &format!("/monitors/{theirs_id}"));
    assert_eq!(status, 404);
    let (_, _, signin) = html(&stranger, &format!("/monitors/{live_id}"));
    assert!(signin.contains(r#"<form id="login""#));
}

#[test]
/// A monitor's chart hatches the maintenance windows that cover it (with each
/// occurrence's name and times on hover), and only those.
fn a_monitors_chart_hatches_its_maintenance() {
    let target = Target::start();
    let server = Server::start(&[]);
    let api = server.client();
    let owner = sign_up_owner(&server);
    let live = support::create(
        &api,
        "/v1/monitors",
        json!({"name": "Live API", "type": "http", "url": target.url("/ok"), "method": "GET", "interval": 1, "timeout": 1}),
    );
    let live_id = live["id"].as_str().expect("id").to_string();
    let other = support::create(
        &api,
        "/v1/monitors",
        json!({"name": "Other", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 3600}),
    );
    let now = chrono::Utc::now().timestamp_millis();
    let iso = tocsin::time::format_ms;
    support::create(
        &api,
        "/v1/maintenance-windows",
        json!({"name": "Database upgrade", "start": iso(now - 5 * 60_000), "end": iso(now + 10 * 60_000),
               "monitorIds": [live_id]}),
    );
    support::create(
        &api,
        "/v1/maintenance-windows",
        json!({"name": "Someone else's", "start": iso(now - 5 * 60_000), "end": iso(now + 10 * 60_000),
               "monitorIds": [other["id"]]}),
    );
    // Both windows are in force while the monitor is checked; a chart needs two timed
    // checks (a new monitor's chart starts at its first).
    let page = wait_for("a chart", Duration::from_secs(20), || {
        let (status, _, page) = html(&owner, &format!("/monitors/{live_id}?range=1h"));
        assert_eq!(status, 200, "{page}");
        (!page.contains("No timed check in this range")).then_some(page)
    });
    assert_eq!(
        page.matches(r#"class="band-maintenance""#).count(),
        1,
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "Maintenance \u{201c}Database upgrade\u{201d} from {} to {}",
            iso(now - 5 * 60_000),
            iso(now + 10 * 60_000)
        )),
        "{page}"
    );
    assert!(page.contains("1 maintenance period hatched"), "{page}");
    assert!(!page.contains("Someone else"), "{page}");
    // The hatching is drawn by a pattern inside the chart (no style attribute: the CSP).
    assert!(page.contains(r#"<pattern id="hatch""#), "{page}");
}

#[test]
/// A member previews a status page before it is public: the public page's own HTML under
/// its strict policy, never cached, marked as a preview; visitors still get 404, and a
/// stranger gets the sign-in page, not the preview.
fn a_private_status_page_is_previewed_by_members_only() {
    let server = Server::start(&[]);
    let api = server.client();
    let owner = sign_up_owner(&server);
    let shop = support::create(
        &api,
        "/v1/monitors",
        json!({"name": "Shop front", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 3600}),
    );
    let page = support::create(
        &api,
        "/v1/status-pages",
        json!({"slug": "soon", "name": "Coming soon status", "public": false, "monitorIds": [shop["id"]]}),
    );
    let id = page["id"].as_str().expect("id");
    assert_eq!(page["public"], false, "{page}");

    let stranger = Browser::new(&server.base);
    let (status, _, visitor) = html(&stranger, "/status/soon");
    assert_eq!(status, 404, "{visitor}");

    let (_, _, edit) = html(&owner, &format!("/status-pages/{id}"));
    assert!(
        edit.contains(&format!(r#"href="/status-pages/{id}/preview""#)),
        "{edit}"
    );
    let (status, headers, preview) = html(&owner, &format!("/status-pages/{id}/preview"));
    assert_eq!(status, 200, "{preview}");
    assert!(
        preview.contains("Coming soon status") && preview.contains("Shop front"),
        "{preview}"
    );
    assert!(preview.contains("this page is private"), "{preview}");
    let csp = headers["content-security-policy"].to_str().expect("csp");
    assert!(
        csp.contains("default-src 'none'") && !csp.contains("script"),
        "{csp}"
    );
    assert_eq!(headers["cache-control"], "no-store");

    let (_, _, refused) = html(&stranger, &format!("/status-pages/{id}/preview"));
    assert!(!refused.contains("Coming soon status"), "{refused}");
    assert!(refused.contains(r#"<form id="login""#), "{refused}");
    let (status, _, missing) = html(
        &owner,
        "/status-pages/sp_00000000000000000000000000/preview",
    );
    assert_eq!(status, 404, "{missing}");
}

#[test]
/// A new workspace's overview lists its first steps and ticks each off as it is done (a
/// monitor, a channel, a policy on the monitor, a notification that arrived); once all are
/// done the list goes away.
fn a_young_workspaces_first_steps_are_ticked_off_as_they_are_done() {
    let receiver = support::sinks::Receiver::start();
    let server = Server::start(&[("TOCSIN_ALLOW_INSECURE_WEBHOOKS", "true")]);
    let api = server.client();
    let owner = sign_up_owner(&server);
    let steps = |page: &str| -> Option<usize> {
        let at = page.find("Get started <span class=\"help\">(")?;
        let rest = &page[at + "Get started <span class=\"help\">(".len()..];
        rest.split(' ').next()?.parse().ok()
    };
    let (_, _, page) = html(&owner, "/");
    assert_eq!(steps(&page), Some(0), "{page}");
    assert!(page.contains(r#"href="/monitors/new""#), "{page}");

    let monitor = support::create(
        &api,
        "/v1/monitors",
        json!({"name": "Shop", "type": "http", "url": "http://127.0.0.1:9/", "method": "GET", "interval": 3600}),
    );
    assert_eq!(steps(&html(&owner, "/").2), Some(1));
    let channel = support::create(
        &api,
        "/v1/channels",
        json!({"name": "Ops hook", "type": "webhook", "url": receiver.url("/ops")}),
    );
    assert_eq!(steps(&html(&owner, "/").2), Some(2));
    let policy = support::create(
        &api,
        "/v1/alert-policies",
        json!({"name": "Ops", "channels": [{"channelId": channel["id"]}]}),
    );
    let id = monitor["id"].as_str().expect("id");
    let r = api.patch(
        &format!("/v1/monitors/{id}"),
        &json!({"alertPolicyId": policy["id"]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let (_, _, page) = html(&owner, "/");
    assert_eq!(steps(&page), Some(3), "{page}");
    assert_eq!(
        page.matches("<span class=\"step-done\">Done:</span>")
            .count(),
        3
    );

    let sent = api.post(
        &format!("/v1/channels/{}/test", channel["id"].as_str().expect("id")),
        &json!({}),
    );
    assert!(sent.status < 300, "{}", sent.body);
    wait_for("the test notification", Duration::from_secs(20), || {
        (!receiver.at("/ops").is_empty()).then_some(())
    });
    wait_for("the first steps done", Duration::from_secs(10), || {
        let (_, _, page) = html(&owner, "/");
        (steps(&page).is_none() && !page.contains("Get started")).then_some(())
    });
}

#[test]
/// A policy's inline channels are listed on its form beside the saved ones, ticked, as the
/// API shows them (a bot token left out); sent back as shown, the token is kept.
fn a_policys_inline_channels_are_on_its_form_without_their_secrets() {
    let server = Server::start(&[]);
    let api = server.client();
    let owner = sign_up_owner(&server);
    let saved = support::create(
        &api,
        "/v1/channels",
        json!({"name": "Mail ops", "type": "email", "target": "ops@example.test"}),
    );
    let policy = support::create(
        &api,
        "/v1/alert-policies",
        json!({"name": "On call", "channels": [{"type": "telegram", "chatId": "42", "botToken": "111:first-token"}]}),
    );
    let id = policy["id"].as_str().expect("id");
    let (status, _, form) = html(&owner, &format!("/alerting/policies/{id}/edit"));
    assert_eq!(status, 200, "{form}");
    assert!(!form.contains("first-token"), "{form}");
    assert!(form.contains("telegram: 42"), "{form}");
    assert!(form.contains("data-json"), "{form}");
    assert!(form.contains("Mail ops"), "{form}");
    // Its settings have their own form, generated from the type's schema: the chat id
    // shown, the token kept and not shown.
    let edit = format!("/alerting/policies/{id}/channels/0/edit");
    assert!(form.contains(&format!("href=\"{edit}\"")), "{form}");
    let (status, _, own) = html(&owner, &edit);
    assert_eq!(status, 200, "{own}");
    assert!(!own.contains("first-token"), "{own}");
    assert!(own.contains("id=\"f-chatId\""), "{own}");
    assert!(own.contains("value=\"42\""), "{own}");
    assert!(own.contains("set, unchanged"), "{own}");
    assert!(own.contains("data-inline-at=\"0\""), "{own}");
    // No such channel on the policy: past its end, not a number, another policy.
    for missing in [
        format!("/alerting/policies/{id}/channels/1/edit"),
        format!("/alerting/policies/{id}/channels/x/edit"),
        "/alerting/policies/ap_missing/channels/0/edit".to_string(),
    ] {
        assert_eq!(html(&owner, &missing).0, 404, "{missing}");
    }
    // What the form sends when the inline channel stays ticked and the saved one is ticked.
    let value_start =
        form.find("data-json value=\"").expect("inline value") + "data-json value=\"".len();
    let value = &form[value_start..];
    let value = &value[..value.find('"').expect("end")];
    let inline: serde_json::Value = serde_json::from_str(
        &value
            .replace("&quot;", "\"")
            .replace("&#x22;", "\"")
            .replace("&#34;", "\"")
            .replace("&amp;", "&"),
    )
    .expect("the inline channel as JSON");
    assert_eq!(inline["chatId"], "42", "{inline}");
    let r = api.patch(
        &format!("/v1/alert-policies/{id}"),
        &json!({"channels": [inline, {"channelId": saved["id"]}]}),
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let (_, _, form) = html(&owner, &format!("/alerting/policies/{id}/edit"));
    assert!(form.contains("telegram: 42"), "{form}");
    // A saved channel on the list is edited on its own form, not as the policy's.
    assert_eq!(
        html(&owner, &format!("/alerting/policies/{id}/channels/1/edit")).0,
        404
    );
    let shown = api.get(&format!("/v1/alert-policies/{id}")).body;
    assert_eq!(
        shown["data"]["channels"].as_array().map(Vec::len),
        Some(2),
        "{shown}"
    );
    assert!(!shown.to_string().contains("first-token"), "{shown}");
    // The token stayed with its channel in the stored policy.
    let workspace = api.workspace_id();
    let url = format!("sqlite://{}", server.data_dir.join("tocsin.db").display());
    let stored = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(async {
            let store = tocsin::store::Store::connect(&url).await.expect("store");
            let row = store
                .alert_policy(&workspace, id)
                .await
                .expect("read")
                .expect("policy row");
            store.close().await;
            row.channels
        });
    assert!(stored.contains("111:first-token"), "{stored}");
}
