//! Incidents and their timelines: reads for the API and the writes of the engine's
//! transitions.

use super::Owned;

use super::states::IncidentState;
use super::{Order, Page, Store, StoreError, Tx};
use crate::ids::{self, prefix};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter,
    QueryOrder, QuerySelect,
};
use std::collections::HashMap;

// Incidents. `open_key` is the monitor id while unresolved, NULL afterwards (unique).
own_row! {
    /// An incident as stored.
    #[derive(serde::Deserialize)]
    pub struct IncidentRow in incident "incidents" {
        key {
            pub id: String,
        }
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
        /// When its next reminder is due (its policy's `repeatEvery`), while it is open,
        /// told and not yet reminded its policy's limit of times.
        pub remind_at: Option<i64>,
        /// Reminders sent so far.
        pub reminders: i32,
        /// Escalation steps sent so far (`escalate_at` is when the next is due).
        pub escalation_step: i32,
    }
}
// The timeline of an incident.
own_row! {
    /// One entry of an incident's timeline.
    pub struct IncidentEventRow in incident_event "incident_events" {
        key {
            pub id: String,
        }
        pub incident_id: String,
        pub at: i64,
        pub kind: String,
        pub details: String,
    }
}

/// Filters of the incident list.
#[derive(Debug, Clone, Default)]
pub struct IncidentFilter {
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub status: Option<IncidentState>,
    pub monitor_id: Option<String>,
    /// Sort by `resolvedAt` instead of `createdAt`.
    pub by_resolved: bool,
}

impl Store {
    pub async fn incident(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<IncidentRow>, StoreError> {
        Ok(incident::Entity::find_by_id(id.to_string())
            .filter(incident::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?
            .owned())
    }

    /// Incidents of some monitors that are unresolved or were created since `since`,
    /// newest first (at most `limit`), for status pages.
    pub async fn incidents_for_page(
        &self,
        monitor_ids: Vec<String>,
        since: i64,
        limit: u64,
    ) -> Result<Vec<IncidentRow>, StoreError> {
        use sea_orm::Condition;
        Ok(incident::Entity::find()
            .filter(incident::Column::MonitorId.is_in(monitor_ids))
            .filter(
                Condition::any()
                    .add(incident::Column::ResolvedAt.is_null())
                    .add(incident::Column::CreatedAt.gte(since)),
            )
            .order_by_desc(incident::Column::CreatedAt)
            .limit(limit)
            .all(self.db())
            .await?
            .owned())
    }

    /// A monitor's incidents open at any time in `from..to`, oldest first (a report's).
    pub async fn incidents_overlapping(
        &self,
        workspace_id: &str,
        monitor_id: &str,
        from: i64,
        to: i64,
    ) -> Result<Vec<IncidentRow>, StoreError> {
        use sea_orm::Condition;
        Ok(incident::Entity::find()
            .filter(incident::Column::WorkspaceId.eq(workspace_id))
            .filter(incident::Column::MonitorId.eq(monitor_id))
            .filter(incident::Column::CreatedAt.lt(to))
            .filter(
                Condition::any()
                    .add(incident::Column::ResolvedAt.is_null())
                    .add(incident::Column::ResolvedAt.gt(from)),
            )
            .order_by_asc(incident::Column::CreatedAt)
            .order_by_asc(incident::Column::Id)
            .all(self.db())
            .await?
            .owned())
    }

    pub async fn list_incidents(
        &self,
        workspace_id: &str,
        f: &IncidentFilter,
        order: Order,
        page: Page,
    ) -> Result<(Vec<IncidentRow>, u64), StoreError> {
        let mut select =
            incident::Entity::find().filter(incident::Column::WorkspaceId.eq(workspace_id));
        if let Some(from) = f.from {
            select = select.filter(incident::Column::CreatedAt.gte(from));
        }
        if let Some(to) = f.to {
            select = select.filter(incident::Column::CreatedAt.lte(to));
        }
        if let Some(s) = f.status {
            select = select.filter(incident::Column::Status.eq(s));
        }
        if let Some(m) = &f.monitor_id {
            select = select.filter(incident::Column::MonitorId.eq(m.as_str()));
        }
        let total = super::pages::count_of(select.clone());
        let column = if f.by_resolved {
            incident::Column::ResolvedAt
        } else {
            incident::Column::CreatedAt
        };
        self.page_and_total(
            select,
            &[(column, order), (incident::Column::Id, order)],
            page,
            total,
        )
        .await
        .map(|(rows, total)| (rows.owned(), total))
    }

    /// The timeline of an incident, oldest first.
    pub async fn incident_timeline(
        &self,
        incident_id: &str,
    ) -> Result<Vec<IncidentEventRow>, StoreError> {
        Ok(incident_event::Entity::find()
            .filter(incident_event::Column::IncidentId.eq(incident_id))
            .order_by_asc(incident_event::Column::At)
            .order_by_asc(incident_event::Column::Id)
            .all(self.db())
            .await?
            .owned())
    }
}

impl Store {
    /// Open incidents whose escalation is due, oldest first.
    /// Whether any incident waits to escalate, any is held or any monitor flaps: what the
    /// engine's passes over incidents look at. One query.
    pub async fn incident_work_pending(&self) -> Result<bool, StoreError> {
        use sea_orm::{ConnectionTrait, Statement};
        let backend = self.db().get_database_backend();
        let sql = "SELECT CASE WHEN \
             EXISTS (SELECT 1 FROM incidents WHERE status = 'open' AND escalate_at IS NOT NULL) \
             OR EXISTS (SELECT 1 FROM incidents WHERE hold IS NOT NULL) \
             OR EXISTS (SELECT 1 FROM incidents WHERE status = 'open' AND remind_at IS NOT NULL) \
             OR EXISTS (SELECT 1 FROM flap_states WHERE flapping_since IS NOT NULL) \
             THEN 1 ELSE 0 END AS pending";
        let row = self
            .db()
            .query_one_raw(Statement::from_string(backend, sql))
            .await?;
        let pending: i32 = match row {
            Some(r) => r.try_get("", "pending")?,
            None => 0,
        };
        Ok(pending != 0)
    }

    /// Open incidents whose next reminder is due, oldest first.
    pub async fn due_reminders(
        &self,
        now: i64,
        limit: u64,
    ) -> Result<Vec<IncidentRow>, StoreError> {
        Ok(incident::Entity::find()
            .filter(incident::Column::Status.eq(IncidentState::Open))
            .filter(incident::Column::RemindAt.lte(now))
            .order_by_asc(incident::Column::RemindAt)
            .limit(limit)
            .all(self.db())
            .await?
            .owned())
    }

    pub async fn due_escalations(
        &self,
        now: i64,
        limit: u64,
    ) -> Result<Vec<IncidentRow>, StoreError> {
        Ok(incident::Entity::find()
            .filter(incident::Column::Status.eq(IncidentState::Open))
            .filter(incident::Column::EscalateAt.lte(now))
            .order_by_asc(incident::Column::EscalateAt)
            .limit(limit)
            .all(self.db())
            .await?
            .owned())
    }
}

/// The incident writes of the engine's transitions.
/// An incident's change, as open dashboards are told of it.
fn seen(row: &IncidentRow) -> super::live::Seen {
    super::live::Seen::Incident {
        workspace_id: row.workspace_id.clone(),
        incident_id: row.id.clone(),
        monitor_id: row.monitor_id.clone(),
    }
}

impl Tx {
    /// One incident of a workspace.
    pub async fn incident_in(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<IncidentRow>, StoreError> {
        Ok(incident::Entity::find_by_id(id.to_string())
            .filter(incident::Column::WorkspaceId.eq(workspace_id))
            .one(self.conn())
            .await?
            .owned())
    }

    /// The unresolved incident of a monitor, if any.
    pub async fn open_incident_of(
        &self,
        monitor_id: &str,
    ) -> Result<Option<IncidentRow>, StoreError> {
        Ok(incident::Entity::find()
            .filter(incident::Column::OpenKey.eq(monitor_id))
            .one(self.conn())
            .await?
            .owned())
    }

    /// The unresolved incidents of some monitors, by monitor id.
    pub async fn open_incidents_of(
        &self,
        monitor_ids: Vec<String>,
    ) -> Result<HashMap<String, IncidentRow>, StoreError> {
        Ok(incident::Entity::find()
            .filter(incident::Column::OpenKey.is_in(monitor_ids))
            .all(self.conn())
            .await?
            .into_iter()
            .map(|i| (i.monitor_id.clone(), i.into()))
            .collect())
    }

    /// Insert a new incident.
    pub async fn insert_incident(&self, row: IncidentRow) -> Result<IncidentRow, StoreError> {
        self.note(seen(&row));
        Ok(row
            .into_active_model()
            .reset_all()
            .insert(self.conn())
            .await?
            .into())
    }

    /// Save what changed between `before` (as read) and `after`: only the columns that
    /// differ are written, so a concurrent change to another column is not undone.
    pub async fn save_incident(
        &self,
        before: IncidentRow,
        after: &IncidentRow,
    ) -> Result<IncidentRow, StoreError> {
        let mut active = before.clone().into_active_model();
        if after.status != before.status {
            active.status = Set(after.status);
        }
        if after.open_key != before.open_key {
            active.open_key = Set(after.open_key.clone());
        }
        if after.acknowledged_at != before.acknowledged_at {
            active.acknowledged_at = Set(after.acknowledged_at);
        }
        if after.acknowledged_by != before.acknowledged_by {
            active.acknowledged_by = Set(after.acknowledged_by.clone());
        }
        if after.resolved_at != before.resolved_at {
            active.resolved_at = Set(after.resolved_at);
        }
        if after.hold != before.hold {
            active.hold = Set(after.hold.clone());
        }
        if after.notified != before.notified {
            active.notified = Set(after.notified);
        }
        if after.escalate_at != before.escalate_at {
            active.escalate_at = Set(after.escalate_at);
        }
        if after.group_id != before.group_id {
            active.group_id = Set(after.group_id.clone());
        }
        if after.remind_at != before.remind_at {
            active.remind_at = Set(after.remind_at);
        }
        self.note(seen(after));
        Ok(active.update(self.conn()).await?.into())
    }

    /// Add an entry to an incident's timeline.
    pub async fn add_incident_event(
        &self,
        incident_id: &str,
        at: i64,
        kind: &str,
        details: &serde_json::Value,
    ) -> Result<(), StoreError> {
        incident_event::ActiveModel {
            id: Set(ids::new_id(prefix::INCIDENT_EVENT)),
            incident_id: Set(incident_id.to_string()),
            at: Set(at),
            kind: Set(kind.to_string()),
            details: Set(details.to_string()),
        }
        .insert(self.conn())
        .await?;
        Ok(())
    }

    /// Record escalation step `step` (0-based) of an open incident as sent, with the next
    /// due at `next` (None: the last). False when another writer got there first or it was
    /// acknowledged or resolved meanwhile.
    pub async fn claim_escalation(
        &self,
        id: &str,
        step: i32,
        next: Option<i64>,
        now: i64,
    ) -> Result<bool, StoreError> {
        let claimed = incident::Entity::update_many()
            .col_expr(incident::Column::EscalatedAt, Expr::value(now))
            .col_expr(incident::Column::EscalationStep, Expr::value(step + 1))
            .col_expr(incident::Column::EscalateAt, Expr::value(next))
            .filter(incident::Column::Id.eq(id))
            .filter(incident::Column::Status.eq(IncidentState::Open))
            .filter(incident::Column::EscalationStep.eq(step))
            .filter(incident::Column::EscalateAt.is_not_null())
            .exec(self.conn())
            .await?
            .rows_affected;
        Ok(claimed == 1)
    }

    /// Take the reminder of `id` due at `due` (as read): count it and set the next one
    /// (`next`, None when it was the last). False when another writer took it first, or the
    /// incident was acknowledged or resolved meanwhile.
    pub async fn claim_reminder(
        &self,
        id: &str,
        due: i64,
        next: Option<i64>,
    ) -> Result<bool, StoreError> {
        use sea_orm::sea_query::ExprTrait;
        let claimed = incident::Entity::update_many()
            .col_expr(incident::Column::RemindAt, Expr::value(next))
            .col_expr(
                incident::Column::Reminders,
                Expr::col(incident::Column::Reminders).add(1),
            )
            .filter(incident::Column::Id.eq(id))
            .filter(incident::Column::Status.eq(IncidentState::Open))
            .filter(incident::Column::RemindAt.eq(due))
            .exec(self.conn())
            .await?
            .rows_affected;
        Ok(claimed == 1)
    }

    /// Move an open incident's next reminder to `at` (None: no more reminders).
    pub async fn set_reminder(&self, id: &str, at: Option<i64>) -> Result<(), StoreError> {
        incident::Entity::update_many()
            .col_expr(incident::Column::RemindAt, Expr::value(at))
            .filter(incident::Column::Id.eq(id))
            .filter(incident::Column::Status.eq(IncidentState::Open))
            .exec(self.conn())
            .await?;
        Ok(())
    }

    /// Stop waiting to escalate an incident (its policy no longer escalates).
    pub async fn cancel_escalation(&self, id: &str) -> Result<(), StoreError> {
        incident::Entity::update_many()
            .col_expr(
                incident::Column::EscalateAt,
                Expr::value(Option::<i64>::None),
            )
            .filter(incident::Column::Id.eq(id))
            .exec(self.conn())
            .await?;
        Ok(())
    }
}
