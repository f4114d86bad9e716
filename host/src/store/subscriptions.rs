//! Status-page updates and subscribers.

use super::Owned;
use super::entities::{status_page, subscription_mail};
use super::status_pages::StatusPageRow;
use super::{Page, Store, StoreError, Tx};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
};

own_row! {
    /// An update as stored.
    pub struct StatusUpdateRow in status_update "status_updates" {
        key {
            pub id: String,
        }
        pub workspace_id: String,
        pub page_id: String,
        pub incident_id: Option<String>,
        /// `investigating`, `identified`, `monitoring` or `resolved`.
        pub status: String,
        pub body: String,
        pub created_at: i64,
        /// When it was last edited; none when never.
        pub updated_at: Option<i64>,
    }
}
own_row! {
    /// A subscriber as stored.
    pub struct SubscriberRow in status_subscriber "status_subscribers" {
        key {
            pub id: String,
        }
        pub workspace_id: String,
        pub page_id: String,
        /// `email` or `webhook`.
        pub kind: String,
        /// The address or URL.
        pub target: String,
        /// The secret in its confirmation and unsubscribe links.
        pub token: String,
        /// An e-mail subscriber counts once they followed the confirmation link; a
        /// webhook subscriber once a member approved it.
        pub confirmed: bool,
        pub created_at: i64,
        /// A webhook subscriber's own signing secret (`whsec_...`), shown once when it
        /// subscribed. None for e-mail subscribers and webhooks from before secrets.
        pub secret: Option<String>,
    }
}

/// How long an e-mail subscriber's confirmation link is valid: an address that has not
/// confirmed by then is forgotten.
pub const CONFIRMATION_VALID_MS: i64 = 2 * 86_400_000;
/// How long a webhook subscriber waits for a member's approval before it is forgotten.
pub const APPROVAL_WAIT_MS: i64 = 7 * 86_400_000;

/// Has a subscriber that never confirmed (or was never approved) waited too long?
pub fn pending_expired(sub: &SubscriberRow, now: i64) -> bool {
    !sub.confirmed
        && sub.created_at
            < now
                - match sub.kind.as_str() {
                    "webhook" => APPROVAL_WAIT_MS,
                    _ => CONFIRMATION_VALID_MS,
                }
}

/// The condition of subscribers that waited too long, as of `now`.
fn expired_condition(now: i64) -> sea_orm::Condition {
    use sea_orm::Condition;
    Condition::all()
        .add(status_subscriber::Column::Confirmed.eq(false))
        .add(
            Condition::any()
                .add(
                    Condition::all()
                        .add(status_subscriber::Column::Kind.eq("webhook"))
                        .add(status_subscriber::Column::CreatedAt.lt(now - APPROVAL_WAIT_MS)),
                )
                .add(
                    Condition::all()
                        .add(status_subscriber::Column::Kind.ne("webhook"))
                        .add(status_subscriber::Column::CreatedAt.lt(now - CONFIRMATION_VALID_MS)),
                ),
        )
}

/// Confirmation mails sent since some time, counted the ways the limits count them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailCounts {
    /// To the mailbox (the address in lower case without its `+tag`), on every page.
    pub mailbox: u64,
    /// For the page.
    pub page: u64,
    /// Asked for by the client address.
    pub client: u64,
}

/// The mailbox of a `subscription_mails` row that counts a webhook subscriber added, not
/// a mail (no address is empty).
pub const WEBHOOK_MAILBOX: &str = "";

/// A confirmation mail about to be sent (or a webhook subscriber added), for the counts.
/// The fields an edit of a status update sets (None: left as they are).
#[derive(Debug, Clone, Default)]
pub struct StatusUpdateEdit {
    pub status: Option<String>,
    pub body: Option<String>,
    /// Some(None) clears the incident.
    pub incident_id: Option<Option<String>>,
}

pub struct SentMail<'a> {
    pub id: &'a str,
    pub page_id: &'a str,
    pub mailbox: &'a str,
    pub client: &'a str,
    pub sent_at: i64,
}

impl Store {
    /// The public pages of a workspace.
    pub async fn public_pages_of(
        &self,
        workspace_id: &str,
    ) -> Result<Vec<StatusPageRow>, StoreError> {
        Ok(status_page::Entity::find()
            .filter(status_page::Column::WorkspaceId.eq(workspace_id))
            .filter(status_page::Column::Public.eq(true))
            .all(self.db())
            .await?
            .owned())
    }

    /// A page's updates, newest first.
    pub async fn list_status_updates(
        &self,
        page_id: &str,
        page: Page,
    ) -> Result<(Vec<StatusUpdateRow>, u64), StoreError> {
        let select =
            status_update::Entity::find().filter(status_update::Column::PageId.eq(page_id));
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(status_update::Column::CreatedAt)
            .order_by_desc(status_update::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows.owned(), total))
    }

    /// One of a page's updates.
    pub async fn status_update(
        &self,
        page_id: &str,
        id: &str,
    ) -> Result<Option<StatusUpdateRow>, StoreError> {
        Ok(status_update::Entity::find_by_id(id.to_string())
            .filter(status_update::Column::PageId.eq(page_id))
            .one(self.db())
            .await?
            .map(Into::into))
    }

    /// Set the fields of an update that `edit` gives (each `Some`), marking it edited at
    /// `edited_at`; the others keep what they hold now, so two edits of different fields
    /// at once both stay. The update as it is afterwards; None when the page has no such
    /// update.
    pub async fn edit_status_update(
        &self,
        page_id: &str,
        id: &str,
        edit: StatusUpdateEdit,
        edited_at: i64,
    ) -> Result<Option<StatusUpdateRow>, StoreError> {
        // In a transaction of its own, so the request's audit entry is written with it.
        let tx = self.begin_write().await?;
        let mut update = status_update::Entity::update_many().col_expr(
            status_update::Column::UpdatedAt,
            Expr::value(Some(edited_at)),
        );
        if let Some(status) = edit.status {
            update = update.col_expr(status_update::Column::Status, Expr::value(status));
        }
        if let Some(body) = edit.body {
            update = update.col_expr(status_update::Column::Body, Expr::value(body));
        }
        if let Some(incident_id) = edit.incident_id {
            update = update.col_expr(status_update::Column::IncidentId, Expr::value(incident_id));
        }
        let changed = update
            .filter(status_update::Column::Id.eq(id))
            .filter(status_update::Column::PageId.eq(page_id))
            .exec(tx.conn())
            .await?
            .rows_affected;
        let after = status_update::Entity::find_by_id(id.to_string())
            .one(tx.conn())
            .await?
            .map(StatusUpdateRow::from);
        Ok(tx.commit_if(changed > 0).await?.then_some(after).flatten())
    }

    pub async fn delete_status_update(&self, page_id: &str, id: &str) -> Result<bool, StoreError> {
        // In a transaction of its own, so the request's audit entry is written with it.
        let tx = self.begin_write().await?;
        let deleted = status_update::Entity::delete_many()
            .filter(status_update::Column::Id.eq(id))
            .filter(status_update::Column::PageId.eq(page_id))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit_if(deleted > 0).await
    }

    /// A page's subscribers, newest first.
    pub async fn list_subscribers(
        &self,
        page_id: &str,
        page: Page,
    ) -> Result<(Vec<SubscriberRow>, u64), StoreError> {
        let select =
            status_subscriber::Entity::find().filter(status_subscriber::Column::PageId.eq(page_id));
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(status_subscriber::Column::CreatedAt)
            .order_by_desc(status_subscriber::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows.owned(), total))
    }

    pub async fn subscriber_by_token(
        &self,
        token: &str,
    ) -> Result<Option<SubscriberRow>, StoreError> {
        Ok(status_subscriber::Entity::find()
            .filter(status_subscriber::Column::Token.eq(token))
            .one(self.db())
            .await?
            .owned())
    }

    /// Confirm the subscriber with this token. False when there is none.
    pub async fn confirm_subscriber(&self, token: &str) -> Result<bool, StoreError> {
        Ok(status_subscriber::Entity::update_many()
            .col_expr(status_subscriber::Column::Confirmed, Expr::value(true))
            .filter(status_subscriber::Column::Token.eq(token))
            .exec(self.db())
            .await?
            .rows_affected
            > 0)
    }

    /// A subscriber by id, on any page (the delivery worker's question).
    pub async fn subscriber(&self, id: &str) -> Result<Option<SubscriberRow>, StoreError> {
        Ok(status_subscriber::Entity::find_by_id(id.to_string())
            .one(self.db())
            .await?
            .owned())
    }

    /// A page's subscriber by id.
    pub async fn page_subscriber(
        &self,
        page_id: &str,
        id: &str,
    ) -> Result<Option<SubscriberRow>, StoreError> {
        Ok(status_subscriber::Entity::find_by_id(id.to_string())
            .filter(status_subscriber::Column::PageId.eq(page_id))
            .one(self.db())
            .await?
            .owned())
    }

    /// Forget every subscriber that waited too long for its confirmation or approval (the
    /// retention sweep). Returns how many.
    pub async fn prune_pending_subscribers(&self, now: i64) -> Result<u64, StoreError> {
        Ok(status_subscriber::Entity::delete_many()
            .filter(expired_condition(now))
            .exec(self.db())
            .await?
            .rows_affected)
    }

    /// Remove the subscriber with this token. False when there is none.
    pub async fn unsubscribe(&self, token: &str) -> Result<bool, StoreError> {
        Ok(status_subscriber::Entity::delete_many()
            .filter(status_subscriber::Column::Token.eq(token))
            .exec(self.db())
            .await?
            .rows_affected
            > 0)
    }

    /// Remove a page's subscriber by id (the workspace's own action).
    pub async fn delete_subscriber(&self, page_id: &str, id: &str) -> Result<bool, StoreError> {
        // In a transaction of its own, so the request's audit entry is written with it.
        let tx = self.begin_write().await?;
        let deleted = status_subscriber::Entity::delete_many()
            .filter(status_subscriber::Column::Id.eq(id))
            .filter(status_subscriber::Column::PageId.eq(page_id))
            .exec(tx.conn())
            .await?
            .rows_affected;
        tx.commit_if(deleted > 0).await
    }
}

impl Tx {
    pub async fn insert_status_update(&self, row: StatusUpdateRow) -> Result<(), StoreError> {
        row.into_active_model()
            .reset_all()
            .insert(self.conn())
            .await?;
        Ok(())
    }

    pub async fn insert_subscriber(&self, row: SubscriberRow) -> Result<(), StoreError> {
        row.into_active_model()
            .reset_all()
            .insert(self.conn())
            .await?;
        Ok(())
    }

    /// Confirm a page's subscriber by id (a member approving a webhook). False when there
    /// is none.
    pub async fn approve_subscriber(&self, page_id: &str, id: &str) -> Result<bool, StoreError> {
        Ok(status_subscriber::Entity::update_many()
            .col_expr(status_subscriber::Column::Confirmed, Expr::value(true))
            .filter(status_subscriber::Column::Id.eq(id))
            .filter(status_subscriber::Column::PageId.eq(page_id))
            .exec(self.conn())
            .await?
            .rows_affected
            > 0)
    }

    /// Forget a page's subscribers that waited too long for their confirmation or
    /// approval, so they neither stay nor count toward the page's limit.
    pub async fn prune_page_pending_subscribers(
        &self,
        page_id: &str,
        now: i64,
    ) -> Result<u64, StoreError> {
        Ok(status_subscriber::Entity::delete_many()
            .filter(status_subscriber::Column::PageId.eq(page_id))
            .filter(expired_condition(now))
            .exec(self.conn())
            .await?
            .rows_affected)
    }

    /// How many subscribers a page has (in this transaction).
    pub async fn count_page_subscribers(&self, page_id: &str) -> Result<u64, StoreError> {
        Ok(status_subscriber::Entity::find()
            .filter(status_subscriber::Column::PageId.eq(page_id))
            .count(self.conn())
            .await?)
    }

    /// A page's subscriber with this address or URL, if any (in this transaction).
    pub async fn page_subscriber_by_target(
        &self,
        page_id: &str,
        target: &str,
    ) -> Result<Option<SubscriberRow>, StoreError> {
        Ok(status_subscriber::Entity::find()
            .filter(status_subscriber::Column::PageId.eq(page_id))
            .filter(status_subscriber::Column::Target.eq(target))
            .one(self.conn())
            .await?
            .owned())
    }

    /// Webhook subscribers added since `since` to a page, and by a client address: the
    /// rows of `subscription_mails` without a mailbox.
    pub async fn webhook_subscribes_since(
        &self,
        page_id: &str,
        client: &str,
        since: i64,
    ) -> Result<(u64, u64), StoreError> {
        let recent = || {
            subscription_mail::Entity::find()
                .filter(subscription_mail::Column::SentAt.gte(since))
                .filter(subscription_mail::Column::Mailbox.eq(WEBHOOK_MAILBOX))
        };
        Ok((
            recent()
                .filter(subscription_mail::Column::PageId.eq(page_id))
                .count(self.conn())
                .await?,
            recent()
                .filter(subscription_mail::Column::Client.eq(client))
                .count(self.conn())
                .await?,
        ))
    }

    /// Confirmation mails sent since `since` to a mailbox, for a page and asked for by a
    /// client address (webhook subscribes, counted in the same table, left out).
    pub async fn confirmation_mails_since(
        &self,
        mailbox: &str,
        page_id: &str,
        client: &str,
        since: i64,
    ) -> Result<MailCounts, StoreError> {
        let recent = || {
            subscription_mail::Entity::find()
                .filter(subscription_mail::Column::SentAt.gte(since))
                .filter(subscription_mail::Column::Mailbox.ne(WEBHOOK_MAILBOX))
        };
        Ok(MailCounts {
            mailbox: recent()
                .filter(subscription_mail::Column::Mailbox.eq(mailbox))
                .count(self.conn())
                .await?,
            page: recent()
                .filter(subscription_mail::Column::PageId.eq(page_id))
                .count(self.conn())
                .await?,
            client: recent()
                .filter(subscription_mail::Column::Client.eq(client))
                .count(self.conn())
                .await?,
        })
    }

    /// Count a confirmation mail (or, with the mailbox [`WEBHOOK_MAILBOX`], a webhook
    /// subscriber added), and forget those counted before `forget_before`.
    pub async fn record_confirmation_mail(
        &self,
        mail: SentMail<'_>,
        forget_before: i64,
    ) -> Result<(), StoreError> {
        subscription_mail::Entity::delete_many()
            .filter(subscription_mail::Column::SentAt.lt(forget_before))
            .exec(self.conn())
            .await?;
        subscription_mail::ActiveModel {
            id: sea_orm::ActiveValue::Set(mail.id.to_string()),
            page_id: sea_orm::ActiveValue::Set(mail.page_id.to_string()),
            mailbox: sea_orm::ActiveValue::Set(mail.mailbox.to_string()),
            client: sea_orm::ActiveValue::Set(mail.client.to_string()),
            sent_at: sea_orm::ActiveValue::Set(mail.sent_at),
        }
        .insert(self.conn())
        .await?;
        Ok(())
    }

    /// The confirmed subscribers of some pages.
    pub async fn confirmed_subscribers(
        &self,
        page_ids: Vec<String>,
    ) -> Result<Vec<SubscriberRow>, StoreError> {
        if page_ids.is_empty() {
            return Ok(Vec::new());
        }
        Ok(status_subscriber::Entity::find()
            .filter(status_subscriber::Column::PageId.is_in(page_ids))
            .filter(status_subscriber::Column::Confirmed.eq(true))
            .all(self.conn())
            .await?
            .owned())
    }

    /// The public pages of a workspace that show a monitor.
    pub async fn public_pages_showing(
        &self,
        workspace_id: &str,
        monitor_id: &str,
    ) -> Result<Vec<StatusPageRow>, StoreError> {
        Ok(status_page::Entity::find()
            .filter(status_page::Column::WorkspaceId.eq(workspace_id))
            .filter(status_page::Column::Public.eq(true))
            .filter(status_page::Column::MonitorIds.contains(format!("\"{monitor_id}\"")))
            .all(self.conn())
            .await?
            .owned())
    }
}
