//! Certificate expiry notices already given, so each (certificate, level) is announced once.

use super::entities::certificate_notice;
use super::{StoreError, Tx};
use sea_orm::{ActiveValue::Set, ColumnTrait, EntityTrait, QueryFilter};

/// Certificate notices, written with the events they queue.
impl Tx {
    /// The levels already announced for a monitor's certificate `serial`.
    pub async fn certificate_levels_notified(
        &self,
        monitor_id: &str,
        serial: &str,
    ) -> Result<Vec<String>, StoreError> {
        Ok(certificate_notice::Entity::find()
            .filter(certificate_notice::Column::MonitorId.eq(monitor_id))
            .filter(certificate_notice::Column::Serial.eq(serial))
            .all(self.conn())
            .await?
            .into_iter()
            .map(|n| n.level)
            .collect())
    }

    /// Remember that `levels` were announced for a certificate.
    pub async fn add_certificate_notices(
        &self,
        monitor_id: &str,
        serial: &str,
        levels: &[&str],
        now: i64,
    ) -> Result<(), StoreError> {
        if levels.is_empty() {
            return Ok(());
        }
        let rows = levels.iter().map(|l| certificate_notice::ActiveModel {
            monitor_id: Set(monitor_id.to_string()),
            serial: Set(serial.to_string()),
            level: Set((*l).to_string()),
            notified_at: Set(now),
        });
        certificate_notice::Entity::insert_many(rows)
            .exec(self.conn())
            .await?;
        Ok(())
    }
}
