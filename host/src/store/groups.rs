//! Notification groups: the incidents one alert policy opened within its group window,
//! told in one message per e-mail or Telegram channel when the window closes.

use super::Owned;
use super::entities::{alert_group, delivery};
use super::states::DeliveryState;
use super::{DeliveryRow, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter, QueryOrder,
};

/// Incidents one policy opened within its group window, told in one message per e-mail
/// or Telegram channel when the window closes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlertGroup {
    pub id: String,
    pub workspace_id: String,
    pub policy_id: String,
    pub started_at: i64,
    pub closes_at: i64,
    /// The deliveries that send the group's message.
    pub delivery_ids: Vec<String>,
}

impl Tx {
    /// The policy's group still gathering at `now` (the latest, if two nodes made two).
    pub async fn open_alert_group(
        &self,
        policy_id: &str,
        now: i64,
    ) -> Result<Option<AlertGroup>, StoreError> {
        let row = alert_group::Entity::find()
            .filter(alert_group::Column::PolicyId.eq(policy_id))
            .filter(alert_group::Column::ClosesAt.gt(now))
            .order_by_desc(alert_group::Column::ClosesAt)
            .one(self.conn())
            .await?;
        Ok(row.map(|g| AlertGroup {
            delivery_ids: super::monitors::read_list(&g.id, "group deliveries", &g.delivery_ids),
            id: g.id,
            workspace_id: g.workspace_id,
            policy_id: g.policy_id,
            started_at: g.started_at,
            closes_at: g.closes_at,
        }))
    }

    pub async fn insert_alert_group(&self, group: AlertGroup) -> Result<(), StoreError> {
        let row = alert_group::Model {
            delivery_ids: serde_json::to_string(&group.delivery_ids)
                .unwrap_or_else(|_| "[]".into()),
            id: group.id,
            workspace_id: group.workspace_id,
            policy_id: group.policy_id,
            started_at: group.started_at,
            closes_at: group.closes_at,
        };
        row.into_active_model()
            .reset_all()
            .insert(self.conn())
            .await?;
        Ok(())
    }

    /// A delivery by id, read in this transaction.
    pub async fn delivery_row(&self, id: &str) -> Result<Option<DeliveryRow>, StoreError> {
        Ok(delivery::Entity::find_by_id(id.to_string())
            .one(self.conn())
            .await?
            .owned())
    }

    /// Replace the payload of a delivery that has not been tried or taken by a worker yet,
    /// and whose payload is still `before`. False when it was (or changed meanwhile).
    pub async fn rewrite_untried_delivery(
        &self,
        id: &str,
        before: &str,
        payload: &str,
    ) -> Result<bool, StoreError> {
        let done = delivery::Entity::update_many()
            .col_expr(delivery::Column::Payload, Expr::value(payload.to_string()))
            .filter(delivery::Column::Id.eq(id))
            .filter(delivery::Column::Payload.eq(before))
            .filter(delivery::Column::Status.eq(DeliveryState::Pending))
            .filter(delivery::Column::Attempts.eq(0))
            .filter(delivery::Column::LeaseUntil.is_null())
            .exec(self.conn())
            .await?;
        Ok(done.rows_affected == 1)
    }
}
