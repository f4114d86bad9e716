//! sea-orm entities, one module per table. Times are epoch milliseconds.

/// Workspaces: tenants of the server.
pub mod workspace {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "workspaces")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub name: String,
        pub plan: String,
        pub webhook_secret: String,
        pub created_at: i64,
        pub updated_at: i64,
        /// Members must have two-factor authentication to use the workspace.
        pub require_two_factor: bool,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// API keys. Only a SHA-256 hash of the secret is stored.
pub mod api_key {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "api_keys")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub name: String,
        pub role: String,
        pub prefix: String,
        pub secret_hash: String,
        pub created_at: i64,
        pub last_used_at: Option<i64>,
        pub revoked_at: Option<i64>,
        /// The member who made the key (none: the operator's, from the first start or
        /// the command line). The key never has more rights than that member has now.
        pub created_by: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

// `monitor` and `monitor_live` are kept beside the monitor's row type, so a new column is
// one edit of that file (see `store::monitors`).
pub(super) use super::monitors::{monitor, monitor_live};

/// Each monitor's counters and last check, which every check moves: a narrow table kept in
/// the schedule's order (by interval and phase; SQLite stores it in that order), found by
/// its unique monitor id.
pub mod monitor_health {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "monitor_health")]
    pub struct Model {
        pub interval_ms: i64,
        /// Where in its interval the monitor's rounds start.
        pub phase_ms: i64,
        #[sea_orm(primary_key, auto_increment = false)]
        pub monitor_id: String,
        pub consecutive_failures: i32,
        pub consecutive_successes: i32,
        pub last_checked_at: Option<i64>,
        pub last_response_time_ms: Option<i32>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// One row per check that ran.
pub mod check_result {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "check_results")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub monitor_id: String,
        pub workspace_id: String,
        pub checked_at: i64,
        pub ok: bool,
        pub reason: Option<String>,
        pub status_code: Option<i32>,
        pub response_time_ms: Option<i32>,
        pub region: String,
        pub details: String,
        /// False for a check kept as history only (see regional confirmation, and
        /// maintenance windows).
        pub counted: bool,
        /// Taken during a maintenance window (then never counted).
        pub maintenance: bool,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Alert policies. `channels` and `escalation` are JSON text.
pub mod alert_policy {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "alert_policies")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub name: String,
        pub failure_threshold: i32,
        pub recovery_threshold: i32,
        pub notify_on_recovery: bool,
        pub channels: String,
        pub escalation: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
        /// Seconds over which incidents it opens are gathered into one e-mail or Telegram
        /// message; 0 sends each at once.
        pub group_window_secs: i32,
        /// A monitor changing state more than this many times within
        /// `flap_window_minutes` is flapping; 0 is off.
        pub flap_changes: i32,
        pub flap_window_minutes: i32,
        /// A stable identifier chosen by the owner, unique in the workspace for this kind.
        pub apply_key: Option<String>,
        /// The tool that owns the object (`tocsin apply` sets it), if any.
        pub managed_by: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Stored notification channels. `config` is JSON text (may hold write-only secrets).
pub mod channel {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "channels")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub name: String,
        pub kind: String,
        pub config: String,
        pub created_at: i64,
        pub updated_at: i64,
        /// A stable identifier chosen by the owner, unique in the workspace for this kind.
        pub apply_key: Option<String>,
        /// The tool that owns the object (`tocsin apply` sets it), if any.
        pub managed_by: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Incidents. `open_key` is the monitor id while unresolved, NULL afterwards (unique).
pub mod incident {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel, serde::Deserialize)]
    #[sea_orm(table_name = "incidents")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub monitor_id: String,
        pub policy_id: Option<String>,
        pub status: crate::store::states::IncidentState,
        pub open_key: Option<String>,
        pub created_at: i64,
        pub acknowledged_at: Option<i64>,
        pub acknowledged_by: Option<String>,
        pub resolved_at: Option<i64>,
        pub escalate_at: Option<i64>,
        pub escalated_at: Option<i64>,
        /// JSON: the failure that opened it.
        pub failure: String,
        /// JSON: the monitor as the event payload describes it.
        pub monitor: String,
        /// JSON: why its notifications are held and until when (see `engine::holds`).
        pub hold: Option<String>,
        /// Whether its opening was notified (false while held, and after a held incident
        /// resolved before anyone was told).
        pub notified: bool,
        /// The notification group it went out in (`alert_group`), if its policy groups.
        pub group_id: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The timeline of an incident.
pub mod incident_event {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "incident_events")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub incident_id: String,
        pub at: i64,
        pub kind: String,
        pub details: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// The outbox: one row per notification to one channel, sent at least once.
pub mod delivery {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "deliveries")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub incident_id: Option<String>,
        pub monitor_id: Option<String>,
        pub channel_id: Option<String>,
        pub channel_kind: String,
        pub channel_config: String,
        pub event: String,
        pub payload: String,
        pub status: crate::store::states::DeliveryState,
        pub attempts: i32,
        pub next_attempt_at: i64,
        pub lease_until: Option<i64>,
        pub last_error: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
        pub delivered_at: Option<i64>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Each attempt at a delivery.
pub mod delivery_attempt {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "delivery_attempts")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub delivery_id: String,
        pub attempt: i32,
        pub at: i64,
        pub ok: bool,
        pub status_code: Option<i32>,
        pub error: Option<String>,
        pub duration_ms: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Certificate expiry notices already sent, one per monitor, serial and threshold.
pub mod certificate_notice {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "certificate_notices")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub monitor_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub serial: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub level: String,
        pub notified_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// People of a workspace.
pub mod member {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "members")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub email: String,
        pub name: String,
        pub role: String,
        pub created_at: i64,
        pub updated_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Public status pages.
pub mod status_page {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "status_pages")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub slug: String,
        pub title: String,
        pub description: String,
        pub public: bool,
        /// JSON list of monitor ids, in display order.
        pub monitor_ids: String,
        pub created_at: i64,
        pub updated_at: i64,
        /// A stable identifier chosen by the owner, unique in the workspace for this kind.
        pub apply_key: Option<String>,
        /// The tool that owns the object (`tocsin apply` sets it), if any.
        pub managed_by: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Checks per monitor and UTC day, for uptime bars.
pub mod daily_uptime {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "daily_uptime")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub monitor_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub day: i32,
        pub total: i32,
        pub up: i32,
        /// Sum and count of the day's response times, for means over long windows.
        pub response_ms_sum: i64,
        pub response_count: i32,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Deleted monitors whose history is still being removed, batch by batch.
pub mod monitor_tombstone {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "monitor_tombstones")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub monitor_id: String,
        pub deleted_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Nodes sharing the database, and when each was last heard from.
pub mod node {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "nodes")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub region: String,
        pub started_at: i64,
        pub last_seen_at: i64,
        pub version: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Which node runs a monitor's round: the primary key lets exactly one claim win.
pub mod check_claim {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "check_claims")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub monitor_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub round: i64,
        pub node_id: String,
        pub claimed_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Who runs one slot of a region's checks: every round of the monitors in `bucket` whose
/// start falls within second `slot` of the schedule.
pub mod check_slot_claim {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "check_slot_claims")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub region: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub bucket: i32,
        #[sea_orm(primary_key, auto_increment = false)]
        pub slot: i64,
        pub node_id: String,
        pub claimed_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// An open request to check a monitor again from another region before a failure counts.
pub mod check_confirmation {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "check_confirmations")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub monitor_id: String,
        pub round: i64,
        /// The region whose check failed.
        pub from_region: String,
        /// The region asked to confirm.
        pub target_region: String,
        pub requested_at: i64,
        /// After this the failure counts unconfirmed.
        pub deadline_at: i64,
        pub claimed_by: Option<String>,
        pub lease_until: Option<i64>,
        /// The failed check (JSON), written when the request is answered.
        pub original: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// People's accounts.
pub mod user {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "users")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        /// In lower case.
        pub email: String,
        pub name: String,
        /// Argon2id in PHC form; none for accounts that only sign in with SSO.
        pub password_hash: Option<String>,
        /// Base32 TOTP secret, once enrolment is confirmed.
        pub totp_secret: Option<String>,
        /// A secret shown for enrolment, not yet confirmed with a code.
        pub totp_pending: Option<String>,
        /// JSON list of SHA-256 hashes of the unused recovery codes.
        pub recovery_codes: Option<String>,
        pub created_at: i64,
        pub updated_at: i64,
        pub last_login_at: Option<i64>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Signed-in sessions (the cookie's token only as a hash).
pub mod session {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "sessions")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub user_id: String,
        pub token_hash: String,
        pub workspace_id: Option<String>,
        /// `password` or `oidc:<provider>`.
        pub method: String,
        pub ip: String,
        pub user_agent: String,
        pub created_at: i64,
        pub last_seen_at: i64,
        pub expires_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// One-time tokens: setup links, invitations, password resets.
pub mod auth_token {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "auth_tokens")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub kind: String,
        pub token_hash: String,
        pub email: String,
        pub workspace_id: Option<String>,
        pub role: Option<String>,
        /// Who made the token, as a name to show (an e-mail address or a key's name).
        pub created_by: Option<String>,
        /// For an invitation: the member who sent it (none: an operator's key). Accepting
        /// grants no more than that member's role then, and nothing once they have left.
        pub inviter_member_id: Option<String>,
        pub created_at: i64,
        pub expires_at: i64,
        pub used_at: Option<i64>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// OpenID Connect sign-ins between the redirect to the provider and its callback.
pub mod oidc_login {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "oidc_logins")]
    pub struct Model {
        /// SHA-256 of the `state` parameter.
        #[sea_orm(primary_key, auto_increment = false)]
        pub state: String,
        pub provider: String,
        pub pkce_verifier: String,
        pub nonce: String,
        pub expires_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Who changed what, when.
pub mod audit_entry {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "audit_log")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: Option<String>,
        pub actor_type: String,
        pub actor_id: String,
        pub actor_name: String,
        pub action: String,
        pub resource_type: String,
        pub resource_id: Option<String>,
        pub ip: Option<String>,
        pub before: Option<String>,
        pub after: Option<String>,
        pub created_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Where each heartbeat monitor stands.
pub mod heartbeat_state {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "heartbeat_states")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub monitor_id: String,
        pub last_ping_at: Option<i64>,
        /// A run reported its start and has not finished.
        pub started_at: Option<i64>,
        /// The next ping is due by then; NULL while paused.
        pub deadline_at: Option<i64>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Snoozes of every monitor with a tag.
pub mod tag_snooze {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "tag_snoozes")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub workspace_id: String,
        #[sea_orm(primary_key, auto_increment = false)]
        pub tag: String,
        pub until: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Maintenance windows. One-off when `rrule` and `cron` are both NULL (`starts_at` to
/// `ends_at`); otherwise recurring from `starts_at` (until `ends_at`, if set), each
/// occurrence lasting `duration_minutes`, read in `timezone`. `monitor_ids` and `tags` are
/// JSON lists; both empty means every monitor of the workspace.
pub mod maintenance_window {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "maintenance_windows")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub name: String,
        pub description: String,
        pub starts_at: i64,
        pub ends_at: Option<i64>,
        pub rrule: Option<String>,
        pub cron: Option<String>,
        pub duration_minutes: Option<i32>,
        pub timezone: String,
        pub monitor_ids: String,
        pub tags: String,
        pub created_at: i64,
        pub updated_at: i64,
        /// A stable identifier chosen by the owner, unique in the workspace for this kind.
        pub apply_key: Option<String>,
        /// The tool that owns the object (`tocsin apply` sets it), if any.
        pub managed_by: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod alert_group {
    use sea_orm::entity::prelude::*;

    /// Incidents one policy opened within its group window, told in one message per
    /// e-mail or Telegram channel when the window closes.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "alert_groups")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub policy_id: String,
        pub started_at: i64,
        pub closes_at: i64,
        /// JSON list of the deliveries that send the group's message.
        pub delivery_ids: String,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod flap_state {
    use sea_orm::entity::prelude::*;

    /// A monitor's recent state changes, and whether it is flapping.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "flap_states")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub monitor_id: String,
        pub workspace_id: String,
        /// JSON list of the times (ms) of its changes within the policy's window.
        pub changes: String,
        /// Since when it is flapping; null when it is not.
        pub flapping_since: Option<i64>,
        /// Changes since it started flapping.
        pub flap_count: i32,
        pub last_change: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod status_update {
    use sea_orm::entity::prelude::*;

    /// What a workspace tells a status page's visitors.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "status_updates")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub page_id: String,
        pub incident_id: Option<String>,
        /// `investigating`, `identified`, `monitoring` or `resolved`.
        pub status: String,
        pub body: String,
        pub created_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// A confirmation mail sent to a status-page subscriber, kept for an hour to count
/// against the limits per mailbox, page and client address.
pub mod subscription_mail {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "subscription_mails")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub page_id: String,
        /// The address in lower case without its `+tag`.
        pub mailbox: String,
        /// The client address that asked (an IPv6 address's /64).
        pub client: String,
        pub sent_at: i64,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

pub mod status_subscriber {
    use sea_orm::entity::prelude::*;

    /// Someone who hears of a status page's updates and state changes.
    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "status_subscribers")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub page_id: String,
        /// `email` or `webhook`.
        pub kind: String,
        /// The address or URL.
        pub target: String,
        /// The secret in its confirmation and unsubscribe links.
        pub token: String,
        /// An e-mail subscriber counts once they followed the confirmation link; a
        /// webhook subscriber once a member approved it.
        pub confirmed: bool,
        pub created_at: i64,
        /// A webhook subscriber's own signing secret (`whsec_...`), shown once when it
        /// subscribed. None for e-mail subscribers and webhooks from before secrets.
        pub secret: Option<String>,
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
