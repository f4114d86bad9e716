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
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}

/// Monitors. Type-specific settings live in `config` (JSON text).
pub mod monitor {
    use sea_orm::entity::prelude::*;

    #[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
    #[sea_orm(table_name = "monitors")]
    pub struct Model {
        #[sea_orm(primary_key, auto_increment = false)]
        pub id: String,
        pub workspace_id: String,
        pub name: String,
        pub kind: String,
        pub config: String,
        pub interval_secs: i32,
        pub timeout_secs: i32,
        pub alert_policy_id: Option<String>,
        pub regions: String,
        pub status: String,
        pub created_at: i64,
        pub updated_at: i64,
        pub last_checked_at: Option<i64>,
        pub last_response_time_ms: Option<i32>,
        pub consecutive_failures: i32,
        pub consecutive_successes: i32,
        pub region_cursor: i32,
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
    }

    #[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
    pub enum Relation {}

    impl ActiveModelBehavior for ActiveModel {}
}
