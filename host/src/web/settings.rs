//! `/settings`: the workspace, its members and invitations, API keys and the webhook
//! secret (admins), the person's own two-factor and sessions, the plugins, and the audit
//! log (admins). Lists are rendered here; every change is a call to the API from the page.

use super::{Layout, ago, page, viewer};
use crate::api::AppState;
use crate::store::Page;
use crate::store::audit::AuditFilter;
use askama::Template;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

struct MemberLine {
    id: String,
    name: String,
    email: String,
    role: String,
}

struct InvitationLine {
    id: String,
    email: String,
    role: String,
    expires: String,
}

struct KeyLine {
    id: String,
    name: String,
    role: String,
    prefix: String,
    last_used: String,
}

struct SessionLine {
    id: String,
    method: String,
    ip: String,
    agent: String,
    last_seen: String,
    current: bool,
}

struct PluginLine {
    name: String,
    kind: &'static str,
    version: String,
    capabilities: String,
    granted: String,
    source: String,
}

struct AuditLine {
    at: String,
    who: String,
    action: String,
    /// The resource's kind ("monitor"), its name where the entry recorded one (else its
    /// id), and its page in the dashboard, if it has one.
    kind: String,
    resource: String,
    href: Option<String>,
    ip: String,
}

/// The dashboard page of a resource named in the audit log.
fn page_of(kind: &str, id: &str) -> Option<String> {
    match kind {
        "monitor" => Some(format!("/monitors/{id}")),
        "incident" => Some(format!("/incidents/{id}")),
        "channel" => Some(format!("/alerting/channels/{id}/edit")),
        "alert_policy" => Some(format!("/alerting/policies/{id}/edit")),
        "delivery" => Some(format!("/alerting/deliveries/{id}")),
        "maintenance_window" => Some("/maintenance".to_string()),
        "status_page" => Some("/status-pages".to_string()),
        _ => None,
    }
}

/// The name an entry recorded for its resource (`name`, or a status page's `title`, in
/// the state after the change, else before it).
fn recorded_name(after: Option<&str>, before: Option<&str>) -> Option<String> {
    [after, before].into_iter().flatten().find_map(|text| {
        let v: serde_json::Value = serde_json::from_str(text).ok()?;
        ["name", "title"]
            .iter()
            .find_map(|k| v[*k].as_str().map(str::to_string))
    })
}

#[derive(Template)]
#[template(path = "settings.html")]
struct Settings {
    layout: Layout,
    /// The section shown (see [`SECTIONS`]).
    section: &'static str,
    /// The sections this person may open: (path segment, title).
    sections: Vec<(&'static str, &'static str)>,
    is_admin: bool,
    is_owner: bool,
    require_two_factor: bool,
    /// The workspace's IANA time zone (`UTC` until set).
    time_zone: String,
    /// The monthly report's form.
    monthly: MonthlyReport,
    roles: Vec<&'static str>,
    members: Vec<MemberLine>,
    invitations: Vec<InvitationLine>,
    keys: Vec<KeyLine>,
    two_factor: bool,
    sessions: Vec<SessionLine>,
    plugins: Vec<PluginLine>,
    audit: Vec<AuditLine>,
}

/// A channel the monthly report may go to.
struct ReportChannel {
    id: String,
    name: String,
    kind: String,
    chosen: bool,
}

/// The monthly report's setting as the workspace section shows it.
#[derive(Default)]
struct MonthlyReport {
    /// The channels it may go to, those it goes to ticked.
    channels: Vec<ReportChannel>,
    /// The last month whose report was sent (`2026-10`).
    last_sent: Option<String>,
    /// The names of the channels it goes to, for those who may not change them.
    to: String,
}

/// The workspace's channels for the monthly report's form, and the last month sent (only
/// for the workspace section).
async fn monthly_report(state: &AppState, workspace: &str, section: &str) -> MonthlyReport {
    if section != "workspace" {
        return MonthlyReport::default();
    }
    let setting = state.store.monthly_report(workspace).await.ok().flatten();
    let chosen: Vec<String> = setting
        .as_ref()
        .and_then(|s| serde_json::from_str(&s.channel_ids).ok())
        .unwrap_or_default();
    let channels = state
        .store
        .list_channels(
            workspace,
            Page {
                page: 1,
                limit: 200,
            },
        )
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default()
        .into_iter()
        .map(|c| ReportChannel {
            chosen: chosen.contains(&c.id),
            id: c.id,
            name: c.name,
            kind: c.kind,
        })
        .collect::<Vec<ReportChannel>>();
    MonthlyReport {
        to: channels
            .iter()
            .filter(|c| c.chosen)
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        channels,
        last_sent: setting.and_then(|s| s.sent_for),
    }
}

/// The settings' sections, each at `/settings/{segment}` (the first also at `/settings`),
/// and whether only admins may open it.
const SECTIONS: [(&str, &str, bool); 6] = [
    ("workspace", "Workspace", false),
    ("members", "Members", false),
    ("keys", "API keys", true),
    ("you", "You", false),
    ("plugins", "Plugins", false),
    ("audit", "Audit log", true),
];

pub async fn show(state: State<AppState>, headers: HeaderMap) -> Response {
    show_section(state, headers, "workspace").await
}

pub async fn section(
    state: State<AppState>,
    headers: HeaderMap,
    Path(section): Path<String>,
) -> Response {
    show_section(state, headers, &section).await
}

async fn show_section(State(state): State<AppState>, headers: HeaderMap, wanted: &str) -> Response {
    let (p, layout) = match viewer(&state, &headers, "settings").await {
        Ok(v) => v,
        Err(r) => return r,
    };
    let open: Vec<(&'static str, &'static str)> = SECTIONS
        .iter()
        .filter(|(_, _, admin)| !admin || p.role.is_admin())
        .map(|(segment, title, _)| (*segment, *title))
        .collect();
    let Some(&(section, _)) = open.iter().find(|(segment, _)| *segment == wanted) else {
        return super::not_found(layout, "settings section");
    };
    let now = state.clock.now_ms();
    let is_admin = p.role.is_admin();
    let first = |limit| Page { page: 1, limit };
    let ws = state.store.workspace(&p.workspace_id).await.ok().flatten();
    let members = state
        .store
        .list_members(&p.workspace_id, first(100))
        .await
        .map(|(rows, _)| rows)
        .unwrap_or_default();
    let invitations = if is_admin {
        state
            .store
            .invitations(&p.workspace_id, now)
            .await
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let keys = if is_admin {
        state
            .store
            .list_api_keys(&p.workspace_id, first(100))
            .await
            .map(|(rows, _)| rows)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let audit = if is_admin {
        state
            .store
            .audit_log(&p.workspace_id, &AuditFilter::default(), first(50))
            .await
            .map(|(rows, _)| rows)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let session = p.session.clone();
    let user = match &session {
        Some(s) => state.store.user(&s.user_id).await.ok().flatten(),
        None => None,
    };
    let sessions = match &session {
        Some(s) => state
            .store
            .sessions_of(&s.user_id, now)
            .await
            .unwrap_or_default(),
        None => Vec::new(),
    };
    let audit = audit_lines(&state, &p.workspace_id, audit, now).await;
    let html = Settings {
        layout,
        section,
        sections: open,
        is_admin,
        is_owner: p.is_owner(),
        require_two_factor: ws.as_ref().is_some_and(|w| w.require_two_factor),
        time_zone: ws
            .as_ref()
            .and_then(|w| w.time_zone.clone())
            .unwrap_or_else(|| "UTC".into()),
        monthly: monthly_report(&state, &p.workspace_id, section).await,
        roles: crate::accounts::MEMBER_ROLES.to_vec(),
        members: members
            .into_iter()
            .map(|m| MemberLine {
                id: m.id,
                name: m.name,
                email: m.email,
                role: m.role,
            })
            .collect(),
        invitations: invitations
            .into_iter()
            .map(|i| InvitationLine {
                id: i.id,
                email: i.email,
                role: i.role.unwrap_or_default(),
                expires: crate::time::format_ms(i.expires_at),
            })
            .collect(),
        keys: keys
            .into_iter()
            .map(|k| KeyLine {
                id: k.id,
                name: k.name,
                role: k.role,
                prefix: k.prefix,
                last_used: k
                    .last_used_at
                    .map_or_else(|| "never".into(), |t| ago(now, t)),
            })
            .collect(),
        two_factor: user.as_ref().is_some_and(|u| u.totp_secret.is_some()),
        sessions: sessions
            .into_iter()
            .map(|s| SessionLine {
                current: session.as_ref().is_some_and(|c| c.session_id == s.id),
                id: s.id,
                method: s.method,
                ip: s.ip,
                agent: s.user_agent.chars().take(60).collect(),
                last_seen: ago(now, s.last_seen_at),
            })
            .collect(),
        plugins: state
            .plugins
            .descriptions()
            .into_iter()
            .map(|d| PluginLine {
                name: d.name,
                kind: d.kind,
                version: d.version,
                capabilities: if d.capabilities.is_empty() {
                    "none".into()
                } else {
                    d.capabilities.join(", ")
                },
                granted: if d.granted.is_empty() {
                    "none".into()
                } else {
                    d.granted.join(", ")
                },
                source: d.source,
            })
            .collect(),
        audit,
    }
    .render();
    page(StatusCode::OK, html)
}

/// The audit log's lines: each resource named (as the entry recorded it, else a monitor as
/// it is named now) and linked to its page.
async fn audit_lines(
    state: &AppState,
    workspace_id: &str,
    audit: Vec<crate::store::audit::AuditRow>,
    now: i64,
) -> Vec<AuditLine> {
    // Monitors named by entries that did not record a name are named as they are now.
    let monitor_ids: Vec<String> = audit
        .iter()
        .filter(|a| a.resource_type == "monitor")
        .filter_map(|a| a.resource_id.clone())
        .collect();
    let monitor_names: std::collections::HashMap<String, String> = if monitor_ids.is_empty() {
        Default::default()
    } else {
        state
            .store
            .monitors_in_workspace(workspace_id, monitor_ids)
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|m| (m.id, m.name))
            .collect()
    };
    audit
        .into_iter()
        .map(|a| {
            let id = a.resource_id.clone().unwrap_or_default();
            AuditLine {
                at: ago(now, a.created_at),
                who: a.actor_name,
                action: a.action,
                href: a
                    .resource_id
                    .as_deref()
                    .and_then(|id| page_of(&a.resource_type, id)),
                resource: recorded_name(a.after.as_deref(), a.before.as_deref())
                    .or_else(|| monitor_names.get(&id).cloned())
                    .unwrap_or(id),
                kind: a.resource_type.replace('_', " "),
                ip: a.ip.unwrap_or_default(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn audit_entries_name_and_link_their_resources() {
        assert_eq!(
            recorded_name(Some(r#"{"name":"Shop","url":"x"}"#), None).as_deref(),
            Some("Shop")
        );
        assert_eq!(
            recorded_name(None, Some(r#"{"title":"Status"}"#)).as_deref(),
            Some("Status")
        );
        assert_eq!(recorded_name(Some(r#"{"until":null}"#), None), None);
        assert_eq!(
            page_of("monitor", "mon_1").as_deref(),
            Some("/monitors/mon_1")
        );
        assert_eq!(page_of("api_key", "key_1"), None);
    }
}
