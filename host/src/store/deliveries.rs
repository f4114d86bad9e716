//! The outbox's rows: deliveries (one notification to one channel) and their attempts.
//! The engine inserts deliveries inside its transactions; the delivery worker claims,
//! attempts and records them; the API reads and redelivers them.

use super::entities::{delivery, delivery_attempt};
use super::states::DeliveryState;
use super::{Page, Store, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, EntityTrait, IntoActiveModel, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect,
};

/// One notification to one channel, as stored.
pub type DeliveryRow = delivery::Model;
/// One attempt at a delivery.
pub type AttemptRow = delivery_attempt::Model;

impl Store {
    pub async fn delivery(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<DeliveryRow>, StoreError> {
        Ok(delivery::Entity::find_by_id(id.to_string())
            .filter(delivery::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?)
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
        Ok((rows, total))
    }

    pub async fn delivery_attempts(
        &self,
        delivery_id: &str,
    ) -> Result<Vec<AttemptRow>, StoreError> {
        Ok(delivery_attempt::Entity::find()
            .filter(delivery_attempt::Column::DeliveryId.eq(delivery_id))
            .order_by_asc(delivery_attempt::Column::Attempt)
            .all(self.db())
            .await?)
    }

    /// Queue a new attempt of a delivery now, keeping its id (`webhookId`).
    pub async fn redeliver(
        &self,
        workspace_id: &str,
        id: &str,
        now: i64,
    ) -> Result<Option<DeliveryRow>, StoreError> {
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
            .exec(self.db())
            .await?
            .rows_affected;
        if updated == 0 {
            return Ok(None);
        }
        self.delivery(workspace_id, id).await
    }

    /// Claim up to `limit` due deliveries for `lease_ms`: a conditional update per row, so
    /// of several workers (or nodes) exactly one wins each.
    pub async fn claim_due_deliveries(
        &self,
        now: i64,
        lease_ms: i64,
        limit: u64,
    ) -> Result<Vec<DeliveryRow>, StoreError> {
        let free = Condition::any()
            .add(delivery::Column::LeaseUntil.is_null())
            .add(delivery::Column::LeaseUntil.lt(now));
        let candidates = delivery::Entity::find()
            .filter(delivery::Column::Status.eq(DeliveryState::Pending))
            .filter(delivery::Column::NextAttemptAt.lte(now))
            .filter(free.clone())
            .order_by_asc(delivery::Column::NextAttemptAt)
            .limit(limit)
            .all(self.db())
            .await?;
        let mut claimed = Vec::with_capacity(candidates.len());
        for d in candidates {
            let won = delivery::Entity::update_many()
                .col_expr(delivery::Column::LeaseUntil, Expr::value(now + lease_ms))
                .filter(delivery::Column::Id.eq(d.id.as_str()))
                .filter(delivery::Column::Status.eq(DeliveryState::Pending))
                .filter(free.clone())
                .exec(self.db())
                .await?
                .rows_affected;
            if won == 1 {
                claimed.push(d);
            }
        }
        Ok(claimed)
    }

    /// Write an attempt and the delivery's next state (`after`) in one transaction.
    pub async fn record_delivery_attempt(
        &self,
        after: DeliveryRow,
        attempt: AttemptRow,
    ) -> Result<(), StoreError> {
        let txn = self.begin_write().await?;
        attempt
            .into_active_model()
            .reset_all()
            .insert(txn.conn())
            .await?;
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
        active.update(txn.conn()).await?;
        txn.commit().await
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

/// Deliveries queued by a larger change (an incident transition, a monitor paused).
impl Tx {
    /// Queue a delivery.
    pub async fn insert_delivery(&self, row: DeliveryRow) -> Result<(), StoreError> {
        row.into_active_model()
            .reset_all()
            .insert(self.conn())
            .await?;
        Ok(())
    }
}
