//! sea-orm entities, one module per table. Times are epoch milliseconds.

// Tables whose rows the store hands out are defined beside their row type by `own_row!`
// (one field list for both), so a new column is one edit of that file.
pub(super) use super::alerting::channel;
pub(super) use super::audit::audit_entry;
pub(super) use super::checks::check_result;
pub(super) use super::deliveries::{delivery, delivery_attempt};
pub(super) use super::incidents::{incident, incident_event};
pub(super) use super::keys::workspace;
pub(super) use super::members::member;
pub(super) use super::monitors::{monitor, monitor_live};
pub(super) use super::status_pages::{daily_uptime, status_page};

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
        /// Slow passing checks in a row.
        pub consecutive_slow: i32,
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
