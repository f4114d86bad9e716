//! Alert policy and stored channel rows.

use super::Owned;
use super::entities::monitor;
use super::{Page, Store, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
};

// Alert policies. `channels` and `escalation` are JSON text.
own_row! {
    /// A policy as stored.
    pub struct PolicyRow in alert_policy "alert_policies" {
        key {
            pub id: String,
        }
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
        /// Minutes between reminders of an open, unacknowledged incident; 0 is off.
        pub repeat_every_minutes: i32,
        /// The most reminders one incident gets.
        pub repeat_limit: i32,
        /// A stable identifier chosen by the owner, unique in the workspace for this kind.
        pub apply_key: Option<String>,
        /// The tool that owns the object (`tocsin apply` sets it), if any.
        pub managed_by: Option<String>,
        /// Slow passing checks in a row that make a monitor `degraded`.
        pub degraded_threshold: i32,
        /// Tell the channels when a monitor becomes degraded and when that ends.
        pub notify_degraded: bool,
        /// The alert pipeline: a JSON list of `{"plugin", "config"}` steps, or None.
        pub pipeline: Option<String>,
    }
}
impl PolicyRow {
    /// A policy named after its id, made `now`, with the defaults of a monitor without
    /// one (down after 2 failures, up after 1 success, told of recoveries) and no channel,
    /// escalation, grouping, flapping line or reminder. Code that makes a policy outside
    /// the API starts from it and sets what differs.
    pub fn new(id: &str, workspace_id: &str, now: i64) -> PolicyRow {
        PolicyRow {
            id: id.to_string(),
            workspace_id: workspace_id.to_string(),
            name: id.to_string(),
            failure_threshold: 2,
            recovery_threshold: 1,
            notify_on_recovery: true,
            channels: "[]".into(),
            escalation: None,
            created_at: now,
            updated_at: now,
            group_window_secs: 0,
            flap_changes: 0,
            flap_window_minutes: 0,
            repeat_every_minutes: 0,
            repeat_limit: 10,
            apply_key: None,
            managed_by: None,
            degraded_threshold: 3,
            notify_degraded: false,
            pipeline: None,
        }
    }
}

// Stored notification channels. `config` is JSON text (may hold write-only secrets).
own_row! {
    /// A channel as stored.
    pub struct ChannelRow in channel "channels" {
        key {
            pub id: String,
        }
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
}

impl Store {
    pub async fn insert_alert_policy(&self, row: PolicyRow) -> Result<PolicyRow, StoreError> {
        Ok(self
            .insert_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    pub async fn alert_policy(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<PolicyRow>, StoreError> {
        Ok(alert_policy::Entity::find_by_id(id.to_string())
            .filter(alert_policy::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?
            .owned())
    }

    pub async fn list_alert_policies(
        &self,
        workspace_id: &str,
        page: Page,
    ) -> Result<(Vec<PolicyRow>, u64), StoreError> {
        let select =
            alert_policy::Entity::find().filter(alert_policy::Column::WorkspaceId.eq(workspace_id));
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(alert_policy::Column::CreatedAt)
            .order_by_desc(alert_policy::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows.owned(), total))
    }

    /// Save an edited policy. With `reminders_from` (now), its reminders changed: in the
    /// same transaction its open incidents that were told and are not held have their next
    /// reminder one new interval from now (none when reminders are off, or for those that
    /// had their limit), so turning reminders on reaches incidents already open.
    pub async fn update_alert_policy(
        &self,
        row: PolicyRow,
        reminders_from: Option<i64>,
    ) -> Result<PolicyRow, StoreError> {
        use super::entities::incident;
        use super::states::IncidentState;
        let tx = self.begin_write().await?;
        let saved: PolicyRow = row
            .into_active_model()
            .reset_all()
            .update(tx.conn())
            .await?
            .into();
        if let Some(now) = reminders_from {
            let next = (saved.repeat_every_minutes > 0)
                .then(|| now + i64::from(saved.repeat_every_minutes) * 60_000);
            incident::Entity::update_many()
                .col_expr(incident::Column::RemindAt, Expr::value(next))
                .filter(incident::Column::PolicyId.eq(saved.id.as_str()))
                .filter(incident::Column::Status.eq(IncidentState::Open))
                .filter(incident::Column::Notified.eq(true))
                .filter(incident::Column::Hold.is_null())
                .filter(incident::Column::Reminders.lt(saved.repeat_limit))
                .exec(tx.conn())
                .await?;
        }
        tx.commit().await?;
        Ok(saved)
    }

    /// Delete a policy and detach it from its monitors (they keep running, unnotified).
    pub async fn delete_alert_policy(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<bool, StoreError> {
        let txn = self.begin_write().await?;
        let deleted = alert_policy::Entity::delete_many()
            .filter(alert_policy::Column::Id.eq(id))
            .filter(alert_policy::Column::WorkspaceId.eq(workspace_id))
            .exec(txn.conn())
            .await?
            .rows_affected;
        if deleted > 0 {
            monitor::Entity::update_many()
                .col_expr(
                    monitor::Column::AlertPolicyId,
                    Expr::value(Option::<String>::None),
                )
                .filter(monitor::Column::AlertPolicyId.eq(id))
                .exec(txn.conn())
                .await?;
        }
        txn.commit_if(deleted > 0).await
    }

    pub async fn insert_channel(&self, row: ChannelRow) -> Result<ChannelRow, StoreError> {
        Ok(self
            .insert_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    pub async fn channel(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<ChannelRow>, StoreError> {
        Ok(channel::Entity::find_by_id(id.to_string())
            .filter(channel::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?
            .owned())
    }

    /// Channels of a workspace among `ids`.
    pub async fn channels_by_ids(
        &self,
        workspace_id: &str,
        ids: Vec<String>,
    ) -> Result<Vec<ChannelRow>, StoreError> {
        Ok(channel::Entity::find()
            .filter(channel::Column::WorkspaceId.eq(workspace_id))
            .filter(channel::Column::Id.is_in(ids))
            .all(self.db())
            .await?
            .owned())
    }

    pub async fn list_channels(
        &self,
        workspace_id: &str,
        page: Page,
    ) -> Result<(Vec<ChannelRow>, u64), StoreError> {
        let select = channel::Entity::find().filter(channel::Column::WorkspaceId.eq(workspace_id));
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(channel::Column::CreatedAt)
            .order_by_desc(channel::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows.owned(), total))
    }

    pub async fn update_channel(&self, row: ChannelRow) -> Result<ChannelRow, StoreError> {
        Ok(self
            .update_one(row.into_active_model().reset_all())
            .await?
            .into())
    }

    /// Delete a stored channel unless a policy of its workspace names it (in `channels`, in
    /// its escalation, or in a pipeline step's configuration): then nothing changes and the policies are returned. The check
    /// and the delete are one write transaction, so a policy saved meanwhile cannot be
    /// left pointing at nothing.
    pub async fn delete_channel(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<ChannelDeletion, StoreError> {
        let tx = self.begin_write().await?;
        let policies = alert_policy::Entity::find()
            .filter(alert_policy::Column::WorkspaceId.eq(workspace_id))
            .order_by_asc(alert_policy::Column::Name)
            .all(tx.conn())
            .await?;
        let users: Vec<(String, String)> = policies
            .into_iter()
            .filter(|p| {
                names_channel(&p.channels, id)
                    || p.escalation
                        .as_deref()
                        .is_some_and(|e| names_channel(e, id))
                    || p.pipeline.as_deref().is_some_and(|s| mentions(s, id))
            })
            .map(|p| (p.id, p.name))
            .collect();
        if !users.is_empty() {
            return Ok(ChannelDeletion::InUse(users));
        }
        let deleted = channel::Entity::delete_many()
            .filter(channel::Column::Id.eq(id))
            .filter(channel::Column::WorkspaceId.eq(workspace_id))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit_if(deleted > 0).await?;
        Ok(if deleted > 0 {
            ChannelDeletion::Deleted
        } else {
            ChannelDeletion::NotFound
        })
    }
}

/// What deleting a stored channel came to.
#[derive(Debug, PartialEq, Eq)]
pub enum ChannelDeletion {
    Deleted,
    NotFound,
    /// Policies (id, name) that name the channel; it was kept.
    InUse(Vec<(String, String)>),
}

/// Does a stored channel list (or escalation) name the channel `id` anywhere?
/// Whether any string of `json` is `id` (a pipeline step's configuration names channels
/// in fields of its own, such as a rota's `channelIds`).
fn mentions(json: &str, id: &str) -> bool {
    fn walk(v: &serde_json::Value, id: &str) -> bool {
        match v {
            serde_json::Value::String(s) => s == id,
            serde_json::Value::Object(o) => o.values().any(|v| walk(v, id)),
            serde_json::Value::Array(a) => a.iter().any(|v| walk(v, id)),
            _ => false,
        }
    }
    serde_json::from_str(json).is_ok_and(|v: serde_json::Value| walk(&v, id))
}

fn names_channel(json: &str, id: &str) -> bool {
    fn walk(v: &serde_json::Value, id: &str) -> bool {
        match v {
            serde_json::Value::Object(o) => {
                o.get("channelId").and_then(|c| c.as_str()) == Some(id)
                    || o.values().any(|v| walk(v, id))
            }
            serde_json::Value::Array(a) => a.iter().any(|v| walk(v, id)),
            _ => false,
        }
    }
    serde_json::from_str(json).is_ok_and(|v: serde_json::Value| walk(&v, id))
}

/// Policies and the stored channels they name, as the engine reads them inside a change.
impl Tx {
    /// The policies among `ids` (in any workspace).
    pub async fn policies_by_ids(&self, ids: Vec<String>) -> Result<Vec<PolicyRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(alert_policy::Entity::find()
            .filter(alert_policy::Column::Id.is_in(ids))
            .all(self.conn())
            .await?
            .owned())
    }

    /// The stored channels among `ids` (in any workspace).
    pub async fn channels_among(&self, ids: Vec<String>) -> Result<Vec<ChannelRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(channel::Entity::find()
            .filter(channel::Column::Id.is_in(ids))
            .all(self.conn())
            .await?
            .owned())
    }
}
