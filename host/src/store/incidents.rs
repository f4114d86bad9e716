//! Incident and delivery reads for the API.

use super::entities::{delivery, delivery_attempt, incident, incident_event, workspace};
use super::{Order, Page, Store, StoreError};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ActiveValue::Set, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
};

/// Filters of the incident list.
#[derive(Debug, Clone, Default)]
pub struct IncidentFilter {
    pub from: Option<i64>,
    pub to: Option<i64>,
    pub status: Option<String>,
    pub monitor_id: Option<String>,
    /// Sort by `resolvedAt` instead of `createdAt`.
    pub by_resolved: bool,
}

impl Store {
    pub async fn incident(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<incident::Model>, StoreError> {
        Ok(incident::Entity::find_by_id(id.to_string())
            .filter(incident::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?)
    }

    /// Incidents of some monitors that are unresolved or were created since `since`,
    /// newest first (at most `limit`), for status pages.
    pub async fn incidents_for_page(
        &self,
        monitor_ids: Vec<String>,
        since: i64,
        limit: u64,
    ) -> Result<Vec<incident::Model>, StoreError> {
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
            .await?)
    }

    pub async fn list_incidents(
        &self,
        workspace_id: &str,
        f: &IncidentFilter,
        order: Order,
        page: Page,
    ) -> Result<(Vec<incident::Model>, u64), StoreError> {
        let mut select =
            incident::Entity::find().filter(incident::Column::WorkspaceId.eq(workspace_id));
        if let Some(from) = f.from {
            select = select.filter(incident::Column::CreatedAt.gte(from));
        }
        if let Some(to) = f.to {
            select = select.filter(incident::Column::CreatedAt.lte(to));
        }
        if let Some(s) = &f.status {
            select = select.filter(incident::Column::Status.eq(s.as_str()));
        }
        if let Some(m) = &f.monitor_id {
            select = select.filter(incident::Column::MonitorId.eq(m.as_str()));
        }
        let total = select.clone().count(self.db()).await?;
        let column = if f.by_resolved {
            incident::Column::ResolvedAt
        } else {
            incident::Column::CreatedAt
        };
        let order = match order {
            Order::Asc => sea_orm::Order::Asc,
            Order::Desc => sea_orm::Order::Desc,
        };
        let rows = select
            .order_by(column, order.clone())
            .order_by(incident::Column::Id, order)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows, total))
    }

    /// The timeline of an incident, oldest first.
    pub async fn incident_timeline(
        &self,
        incident_id: &str,
    ) -> Result<Vec<incident_event::Model>, StoreError> {
        Ok(incident_event::Entity::find()
            .filter(incident_event::Column::IncidentId.eq(incident_id))
            .order_by_asc(incident_event::Column::At)
            .order_by_asc(incident_event::Column::Id)
            .all(self.db())
            .await?)
    }

    pub async fn delivery(
        &self,
        workspace_id: &str,
        id: &str,
    ) -> Result<Option<delivery::Model>, StoreError> {
        Ok(delivery::Entity::find_by_id(id.to_string())
            .filter(delivery::Column::WorkspaceId.eq(workspace_id))
            .one(self.db())
            .await?)
    }

    pub async fn list_deliveries(
        &self,
        workspace_id: &str,
        channel_id: Option<&str>,
        status: Option<&str>,
        incident_id: Option<&str>,
        page: Page,
    ) -> Result<(Vec<delivery::Model>, u64), StoreError> {
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
    ) -> Result<Vec<delivery_attempt::Model>, StoreError> {
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
    ) -> Result<Option<delivery::Model>, StoreError> {
        let updated = delivery::Entity::update_many()
            .col_expr(
                delivery::Column::Status,
                Expr::value(crate::outbox::status::PENDING),
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

    /// Replace a workspace's webhook signing secret.
    pub async fn rotate_webhook_secret(
        &self,
        workspace_id: &str,
        now: i64,
    ) -> Result<Option<workspace::Model>, StoreError> {
        let Some(ws) = self.workspace(workspace_id).await? else {
            return Ok(None);
        };
        let mut active: workspace::ActiveModel = ws.into();
        active.webhook_secret = Set(super::keys::generate_webhook_secret());
        active.updated_at = Set(now);
        Ok(Some(active.update(self.db()).await?))
    }
}
