//! The outbox's rows: deliveries (one notification to one channel) and their attempts.
//! The engine inserts deliveries inside its transactions; the delivery worker claims,
//! attempts and records them; the API reads and redelivers them.

use super::Owned;

use super::states::DeliveryState;
use super::{Page, Store, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, EntityTrait, IntoActiveModel, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

/// What a redelivery request came to.
#[derive(Debug)]
pub enum Redelivery {
    Queued(DeliveryRow),
    /// An attempt is under way; nothing changed.
    InFlight(DeliveryRow),
    NotFound,
}

/// No worker holds the row (never claimed, released, or the lease ran out).
fn lease_free(now: i64) -> Condition {
    Condition::any()
        .add(delivery::Column::LeaseUntil.is_null())
        .add(delivery::Column::LeaseUntil.lt(now))
}

// The outbox: one row per notification to one channel, sent at least once.
own_row! {
    /// One notification to one channel, as stored.
    pub struct DeliveryRow in delivery "deliveries" {
        key {
            pub id: String,
        }
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
        /// How far the delivery came through its policy's alert pipeline (JSON written by
        /// `outbox::pipeline`); None until the outbox first takes it.
        pub pipeline: Option<String>,
    }
}
// Each attempt at a delivery.
own_row! {
    /// One attempt at a delivery.
    pub struct AttemptRow in delivery_attempt "delivery_attempts" {
        key {
            pub id: String,
        }
        pub delivery_id: String,
        pub attempt: i32,
        pub at: i64,
        pub ok: bool,
        pub status_code: Option<i32>,
        pub error: Option<String>,
        pub duration_ms: i32,
    }
}

impl Store {
    pub async fn delivery(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<DeliveryRow>, StoreError> {
        Ok(delivery::Entity::find_by_id(id.to_string())
            .filter(delivery::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?
            .owned())
    }

    pub async fn list_deliveries(
        &self,
        workspace_id: &str,
        channel_id: Option<&str>,
        status: Option<DeliveryState>,
        incident_id: Option<&str>,
        page: Page,
    ) -> Result<(Vec<DeliveryRow>, u64), StoreError> {
        let mut select =
            delivery::Entity::find().filter(delivery::Column::WorkspaceId.eq(workspace_id));
        if let Some(c) = channel_id {
            select = select.filter(delivery::Column::ChannelId.eq(c));
        }
        if let Some(s) = status {
            select = select.filter(delivery::Column::Status.eq(s));
        }
        if let Some(i) = incident_id {
            select = select.filter(delivery::Column::IncidentId.eq(i));
        }
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(delivery::Column::CreatedAt)
            .order_by_desc(delivery::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows.owned(), total))
    }

    pub async fn delivery_attempts(
        &self,
        delivery_id: &str,
    ) -> Result<Vec<AttemptRow>, StoreError> {
        Ok(delivery_attempt::Entity::find()
            .filter(delivery_attempt::Column::DeliveryId.eq(delivery_id))
            .order_by_asc(delivery_attempt::Column::Attempt)
            .all(self.db())
            .await?
            .owned())
    }

    /// Queue a new attempt of a delivery now, keeping its id (`webhookId`). A delivery
    /// being attempted right now (its lease is held) is left alone: sending it again at
    /// the same time would deliver it twice.
    pub async fn redeliver(
        &self,
        workspace_id: &str,
        id: &str,
        now: i64,
    ) -> Result<Redelivery, StoreError> {
        let tx = self.begin_write().await?;
        let updated = delivery::Entity::update_many()
            .col_expr(
                delivery::Column::Status,
                Expr::value(DeliveryState::Pending),
            )
            .col_expr(delivery::Column::NextAttemptAt, Expr::value(now))
            .col_expr(
                delivery::Column::LeaseUntil,
                Expr::value(Option::<i64>::None),
            )
            .col_expr(delivery::Column::UpdatedAt, Expr::value(now))
            .filter(delivery::Column::Id.eq(id))
            .filter(delivery::Column::WorkspaceId.eq(workspace_id))
            .filter(lease_free(now))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit().await?;
        match self.delivery(workspace_id, id).await? {
            None => Ok(Redelivery::NotFound),
            Some(d) if updated == 0 => Ok(Redelivery::InFlight(d)),
            Some(d) => Ok(Redelivery::Queued(d)),
        }
    }

    /// When the next delivery not leased now is due (it may be due already).
    pub async fn next_delivery_due(&self, now: i64) -> Result<Option<i64>, StoreError> {
        let at: Option<Option<i64>> = delivery::Entity::find()
            .select_only()
            .column_as(delivery::Column::NextAttemptAt.min(), "at")
            .filter(delivery::Column::Status.eq(DeliveryState::Pending))
            .filter(lease_free(now))
            .into_tuple()
            .one(self.db())
            .await?;
        Ok(at.flatten())
    }

    /// Claim up to `limit` due deliveries for `lease_ms`, fairly across workspaces: each
    /// workspace gets at most `room(workspace)` (its share of the worker's slots), and the
    /// workspaces take turns, oldest due first, so one workspace's backlog never holds up
    /// another's alerts. Each claim is a conditional update, so of several workers (or
    /// nodes) exactly one wins each row. The rows come back with the lease they hold.
    pub async fn claim_due_deliveries(
        &self,
        now: i64,
        lease_ms: i64,
        limit: usize,
        room: impl Fn(&str) -> usize,
        skip: impl Fn(&str) -> bool,
    ) -> Result<Vec<DeliveryRow>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let due = || {
            delivery::Entity::find()
                .filter(delivery::Column::Status.eq(DeliveryState::Pending))
                .filter(delivery::Column::NextAttemptAt.lte(now))
                .filter(lease_free(now))
        };
        let workspaces: Vec<(String, Option<i64>)> = due()
            .select_only()
            .column(delivery::Column::WorkspaceId)
            .column_as(delivery::Column::NextAttemptAt.min(), "oldest")
            .group_by(delivery::Column::WorkspaceId)
            .into_tuple()
            .all(self.db())
            .await?;
        let mut workspaces = workspaces;
        workspaces.sort_by_key(|(_, oldest)| *oldest);
        let mut queues = Vec::new();
        for (workspace, _) in workspaces {
            let take = room(&workspace).min(limit);
            if take == 0 {
                continue;
            }
            let rows = due()
                .filter(delivery::Column::WorkspaceId.eq(workspace.as_str()))
                .order_by_asc(delivery::Column::NextAttemptAt)
                .limit(take as u64)
                .all(self.db())
                .await?;
            queues.push(rows.into_iter());
        }
        // Take turns: one from each workspace, then the next round.
        let mut claimed = Vec::with_capacity(limit);
        let lease = now + lease_ms;
        while claimed.len() < limit && !queues.is_empty() {
            queues.retain(|q| q.len() > 0);
            for q in queues.iter_mut() {
                if claimed.len() >= limit {
                    break;
                }
                let Some(mut d) = q.next() else { continue };
                if skip(&d.id) {
                    continue;
                }
                let won = delivery::Entity::update_many()
                    .col_expr(delivery::Column::LeaseUntil, Expr::value(lease))
                    .filter(delivery::Column::Id.eq(d.id.as_str()))
                    .filter(delivery::Column::Status.eq(DeliveryState::Pending))
                    .filter(lease_free(now))
                    .exec(self.db())
                    .await?
                    .rows_affected;
                if won == 1 {
                    d.lease_until = Some(lease);
                    claimed.push(d);
                }
            }
        }
        Ok(claimed.owned())
    }

    /// Write an attempt and the delivery's next state (`after`) in one transaction, if the
    /// worker still holds the lease it claimed (`held`). `Ok(false)`: the lease was lost
    /// (it ran out, or the delivery was handed on), nothing was written.
    pub async fn record_delivery_attempt(
        &self,
        held: Option<i64>,
        after: DeliveryRow,
        attempt: AttemptRow,
    ) -> Result<bool, StoreError> {
        let txn = self.begin_write().await?;
        txn.note(super::live::Seen::Delivery {
            workspace_id: after.workspace_id.clone(),
            delivery_id: after.id.clone(),
            incident_id: after.incident_id.clone(),
        });
        let mut active = after.into_active_model().reset_all();
        // The row's identity and what it carries never change.
        for column in [
            delivery::Column::WorkspaceId,
            delivery::Column::IncidentId,
            delivery::Column::MonitorId,
            delivery::Column::ChannelId,
            delivery::Column::ChannelKind,
            delivery::Column::ChannelConfig,
            delivery::Column::Event,
            delivery::Column::Payload,
            delivery::Column::CreatedAt,
        ] {
            active.not_set(column);
        }
        let lease_matches = match held {
            Some(lease) => delivery::Column::LeaseUntil.eq(lease),
            None => delivery::Column::LeaseUntil.is_null(),
        };
        match delivery::Entity::update(active)
            .validate()?
            .filter(lease_matches)
            .exec(txn.conn())
            .await
        {
            Ok(_) => {}
            Err(sea_orm::DbErr::RecordNotUpdated) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
        attempt
            .into_active_model()
            .reset_all()
            .insert(txn.conn())
            .await?;
        txn.commit().await?;
        Ok(true)
    }

    /// Release every lease (single-node start-up: no other worker can hold one).
    pub async fn release_delivery_leases(&self) -> Result<(), StoreError> {
        delivery::Entity::update_many()
            .col_expr(
                delivery::Column::LeaseUntil,
                Expr::value(Option::<i64>::None),
            )
            .filter(delivery::Column::Status.eq(DeliveryState::Pending))
            .exec(self.db())
            .await?;
        Ok(())
    }
}

/// The alert pipeline's reads (see `outbox::pipeline`).
impl Store {
    /// Pending, untried deliveries to the same channel as `d` that a pipeline step holds
    /// until the same moment: the notifications one summary gathers.
    pub async fn held_together(&self, d: &DeliveryRow) -> Result<Vec<DeliveryRow>, StoreError> {
        let channel = match &d.channel_id {
            Some(id) => delivery::Column::ChannelId.eq(id.as_str()),
            None => delivery::Column::ChannelId.is_null(),
        };
        Ok(delivery::Entity::find()
            .filter(delivery::Column::WorkspaceId.eq(d.workspace_id.as_str()))
            .filter(delivery::Column::Status.eq(DeliveryState::Pending))
            .filter(delivery::Column::Attempts.eq(0))
            .filter(delivery::Column::NextAttemptAt.eq(d.next_attempt_at))
            .filter(delivery::Column::ChannelKind.eq(d.channel_kind.as_str()))
            .filter(delivery::Column::ChannelConfig.eq(d.channel_config.as_str()))
            .filter(channel)
            .filter(delivery::Column::Pipeline.is_not_null())
            .order_by_asc(delivery::Column::CreatedAt)
            .order_by_asc(delivery::Column::Id)
            .limit(10_000)
            .all(self.db())
            .await?
            .owned())
    }
}

/// Deliveries queued by a larger change (an incident transition, a monitor paused).
impl Tx {
    /// Move a delivery a pipeline step decided on to `after` (its state, payload, pipeline
    /// progress, due time, note), if it is still as `before` was read: pending, untried,
    /// with the same progress through the pipeline and payload, and, with `held`, still
    /// under the lease this worker claimed. False when another worker or step moved it
    /// first; nothing is written then.
    pub async fn advance_delivery(
        &self,
        before: &DeliveryRow,
        after: &DeliveryRow,
        held: Option<Option<i64>>,
    ) -> Result<bool, StoreError> {
        let progress = match &before.pipeline {
            Some(p) => delivery::Column::Pipeline.eq(p.as_str()),
            None => delivery::Column::Pipeline.is_null(),
        };
        let lease = match held {
            Some(Some(lease)) => Condition::all().add(delivery::Column::LeaseUntil.eq(lease)),
            Some(None) => Condition::all().add(delivery::Column::LeaseUntil.is_null()),
            None => Condition::all(),
        };
        let done = delivery::Entity::update_many()
            .col_expr(delivery::Column::Status, Expr::value(after.status))
            .col_expr(
                delivery::Column::Payload,
                Expr::value(after.payload.clone()),
            )
            .col_expr(
                delivery::Column::Pipeline,
                Expr::value(after.pipeline.clone()),
            )
            .col_expr(
                delivery::Column::NextAttemptAt,
                Expr::value(after.next_attempt_at),
            )
            .col_expr(delivery::Column::LeaseUntil, Expr::value(after.lease_until))
            .col_expr(
                delivery::Column::LastError,
                Expr::value(after.last_error.clone()),
            )
            .col_expr(delivery::Column::UpdatedAt, Expr::value(after.updated_at))
            .filter(delivery::Column::Id.eq(before.id.as_str()))
            .filter(delivery::Column::Status.eq(DeliveryState::Pending))
            .filter(delivery::Column::Attempts.eq(0))
            .filter(delivery::Column::Payload.eq(before.payload.as_str()))
            .filter(progress)
            .filter(lease)
            .exec(self.conn())
            .await?;
        if done.rows_affected == 1 {
            self.note(super::live::Seen::Delivery {
                workspace_id: after.workspace_id.clone(),
                delivery_id: after.id.clone(),
                incident_id: after.incident_id.clone(),
            });
        }
        Ok(done.rows_affected == 1)
    }

    /// Whether the notification `d` carries (its incident or monitor, event and moment)
    /// already has a delivery to channel `channel_id` that is to be sent (not routed on or
    /// dropped): a second route there is not sent.
    pub async fn notification_reaches(
        &self,
        d: &DeliveryRow,
        channel_id: &str,
    ) -> Result<bool, StoreError> {
        let incident = match &d.incident_id {
            Some(id) => delivery::Column::IncidentId.eq(id.as_str()),
            None => delivery::Column::IncidentId.is_null(),
        };
        let monitor = match &d.monitor_id {
            Some(id) => delivery::Column::MonitorId.eq(id.as_str()),
            None => delivery::Column::MonitorId.is_null(),
        };
        Ok(delivery::Entity::find()
            .filter(delivery::Column::WorkspaceId.eq(d.workspace_id.as_str()))
            .filter(incident)
            .filter(monitor)
            .filter(delivery::Column::Event.eq(d.event.as_str()))
            .filter(delivery::Column::CreatedAt.eq(d.created_at))
            .filter(delivery::Column::ChannelId.eq(channel_id))
            .filter(delivery::Column::Id.ne(d.id.as_str()))
            .filter(
                delivery::Column::Status.is_not_in([DeliveryState::Routed, DeliveryState::Dropped]),
            )
            .count(self.conn())
            .await?
            > 0)
    }

    /// Queue a delivery.
    pub async fn insert_delivery(&self, row: DeliveryRow) -> Result<(), StoreError> {
        row.into_active_model()
            .reset_all()
            .insert(self.conn())
            .await?;
        Ok(())
    }
}
