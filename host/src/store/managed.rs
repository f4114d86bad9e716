//! The objects a configuration file declares (monitors, alert policies, channels, status
//! pages, maintenance windows) carry a `key` and a `managed_by`: who holds a key.

use super::{Store, StoreError};
use sea_orm::FromQueryResult;
use sea_orm::sea_query::{Alias, Expr, ExprTrait as _, Query};

/// A kind of object that has a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Declared {
    Monitor,
    AlertPolicy,
    Channel,
    StatusPage,
    MaintenanceWindow,
}

impl Declared {
    fn table(self) -> &'static str {
        match self {
            Declared::Monitor => "monitors",
            Declared::AlertPolicy => "alert_policies",
            Declared::Channel => "channels",
            Declared::StatusPage => "status_pages",
            Declared::MaintenanceWindow => "maintenance_windows",
        }
    }
}

#[derive(FromQueryResult)]
struct IdOnly {
    id: String,
}

impl Store {
    /// The id of the workspace's object of `kind` whose key is `key`, if there is one.
    pub async fn key_holder(
        &self,
        kind: Declared,
        workspace: &str,
        key: &str,
    ) -> Result<Option<String>, StoreError> {
        let query = Query::select()
            .column(Alias::new("id"))
            .from(Alias::new(kind.table()))
            .and_where(Expr::col(Alias::new("workspace_id")).eq(workspace))
            .and_where(Expr::col(Alias::new("apply_key")).eq(key))
            .to_owned();
        let db = self.db();
        let row = IdOnly::find_by_statement(db.get_database_backend().build(&query))
            .one(db)
            .await?;
        Ok(row.map(|r| r.id))
    }
}
