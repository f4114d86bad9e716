//! Status-page subscribers from anonymous visitors: each webhook subscriber gets its own
//! signing secret and waits for a member's approval (webhook subscribers made before this
//! migration were active at once, so they wait for approval too), and the confirmation
//! mails sent in the last hour are counted per mailbox, page and client address.

use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum StatusSubscribers {
    Table,
    Secret,
    Kind,
    Confirmed,
}

#[derive(DeriveIden)]
enum SubscriptionMails {
    Table,
    Id,
    PageId,
    Mailbox,
    Client,
    SentAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(StatusSubscribers::Table)
                    .add_column(string_len_null(StatusSubscribers::Secret, 64))
                    .to_owned(),
            )
            .await?;
        manager
            .exec_stmt(
                Query::update()
                    .table(StatusSubscribers::Table)
                    .value(StatusSubscribers::Confirmed, false)
                    .and_where(Expr::col(StatusSubscribers::Kind).eq("webhook"))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(SubscriptionMails::Table)
                    .col(string_len(SubscriptionMails::Id, 32).primary_key())
                    .col(string_len(SubscriptionMails::PageId, 32))
                    .col(string_len(SubscriptionMails::Mailbox, 320))
                    .col(string_len(SubscriptionMails::Client, 64))
                    .col(big_integer(SubscriptionMails::SentAt))
                    .to_owned(),
            )
            .await?;
        for (name, column) in [
            ("idx_subscription_mails_mailbox", SubscriptionMails::Mailbox),
            ("idx_subscription_mails_page", SubscriptionMails::PageId),
            ("idx_subscription_mails_client", SubscriptionMails::Client),
        ] {
            manager
                .create_index(
                    Index::create()
                        .name(name)
                        .table(SubscriptionMails::Table)
                        .col(column)
                        .col(SubscriptionMails::SentAt)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(SubscriptionMails::Table).to_owned())
            .await?;
        manager
            .alter_table(
                Table::alter()
                    .table(StatusSubscribers::Table)
                    .drop_column(StatusSubscribers::Secret)
                    .to_owned(),
            )
            .await
    }
}
