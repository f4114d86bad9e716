//! Notification groups: the incidents one alert policy opened within its group window,
//! told in one message per e-mail or Telegram channel when the window closes.

use super::entities::{alert_group, delivery};
use super::states::DeliveryState;
use super::{DeliveryRow, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, QueryFilter, QueryOrder,
};

/// A group as stored.
pub type AlertGroupRow = alert_group::Model;

impl Tx {
    /// The policy's group still gathering at `now` (the latest, if two nodes made two).
    pub async fn open_alert_group(
        &self,
        policy_id: &str,
        now: i64,
    ) -> Result<Option<AlertGroupRow>, StoreError> {
        Ok(alert_group::Entity::find()
            .filter(alert_group::Column::PolicyId.eq(policy_id))
            .filter(alert_group::Column::ClosesAt.gt(now))
            .order_by_desc(alert_group::Column::ClosesAt)
            .one(self.conn())
            .await?)
    }

    pub async fn insert_alert_group(&self, row: AlertGroupRow) -> Result<(), StoreError> {
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
            .await?)
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
