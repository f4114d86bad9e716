//! Which certificate expiry notices were sent: one row per monitor, certificate serial
//! and threshold, so `ssl.expiry_warning` and `ssl.expiry_critical` go out once each for
//! a certificate and again for its replacement.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum CertificateNotices {
    Table,
    MonitorId,
    Serial,
    Level,
    NotifiedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(CertificateNotices::Table)
                    .col(string_len(CertificateNotices::MonitorId, 32))
                    .col(string_len(CertificateNotices::Serial, 128))
                    .col(string_len(CertificateNotices::Level, 16))
                    .col(big_integer(CertificateNotices::NotifiedAt))
                    .primary_key(
                        Index::create()
                            .col(CertificateNotices::MonitorId)
                            .col(CertificateNotices::Serial)
                            .col(CertificateNotices::Level),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(CertificateNotices::Table).to_owned())
            .await
    }
}
