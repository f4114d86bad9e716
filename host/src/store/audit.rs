//! The audit log: who changed what, when, from where.
//!
//! An API request runs inside an audit scope ([`scoped`]) that knows its actor. A handler
//! [`note`]s the change it is about to make (action, resource, before and after, with
//! secrets already left out), and the next write transaction the request commits
//! ([`super::Tx::commit`]) inserts the notes with it: the change and its entry are stored
//! together or not at all. A request that fails before writing leaves no entry.

use super::{Page, Store, StoreError};
use crate::clock::Millis;
use crate::ids::{self, prefix};
use sea_orm::{
    ActiveValue::Set, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect,
};
use serde_json::Value;
use std::cell::RefCell;

/// Who acts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// `user`, `key` or `system` (the CLI, the server itself).
    pub kind: &'static str,
    /// `usr_...`, `key_...`, or the command's name.
    pub id: String,
    /// The person's e-mail address or the key's name.
    pub name: String,
    /// The client address of the request.
    pub ip: Option<String>,
}

/// One change, as noted by the code that makes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub workspace_id: Option<String>,
    /// `monitor.create`, `api_key.revoke`, `member.update`, ...
    pub action: String,
    pub resource_type: &'static str,
    pub resource_id: Option<String>,
    pub before: Option<Value>,
    pub after: Option<Value>,
}

impl Change {
    pub fn new(
        workspace_id: Option<&str>,
        action: impl Into<String>,
        resource_type: &'static str,
        resource_id: Option<&str>,
    ) -> Change {
        Change {
            workspace_id: workspace_id.map(str::to_string),
            action: action.into(),
            resource_type,
            resource_id: resource_id.map(str::to_string),
            before: None,
            after: None,
        }
    }

    pub fn before(mut self, value: impl serde::Serialize) -> Change {
        self.before = serde_json::to_value(value).ok();
        self
    }

    pub fn after(mut self, value: impl serde::Serialize) -> Change {
        self.after = serde_json::to_value(value).ok();
        self
    }
}

struct Scope {
    actor: Actor,
    pending: Vec<Change>,
    now: Millis,
}

tokio::task_local! {
    static SCOPE: RefCell<Scope>;
}

/// Run `work` with `actor` as the author of every change it notes.
pub async fn scoped<F: Future>(actor: Actor, now: Millis, work: F) -> F::Output {
    SCOPE
        .scope(
            RefCell::new(Scope {
                actor,
                pending: Vec::new(),
                now,
            }),
            work,
        )
        .await
}

/// Note a change that the next committed write transaction of this request records.
/// Outside a scope (background work) it does nothing.
pub fn note(change: Change) {
    let _ = SCOPE.try_with(|s| s.borrow_mut().pending.push(change));
}

/// Note a membership added (no role `before`) or changed; `after` says what it is now.
pub fn note_membership(
    workspace_id: &str,
    member_id: &str,
    before: Option<String>,
    after: serde_json::Value,
) {
    let action = if before.is_some() {
        "member.update"
    } else {
        "member.add"
    };
    let mut change =
        Change::new(Some(workspace_id), action, "member", Some(member_id)).after(after);
    if let Some(b) = before {
        change = change.before(serde_json::json!({"role": b}));
    }
    note(change);
}

/// Forget what was noted and not yet written (a change that turned out not to happen).
pub fn discard() {
    let _ = SCOPE.try_with(|s| s.borrow_mut().pending.clear());
}

/// The actor of the current scope, if any.
pub fn actor() -> Option<Actor> {
    SCOPE.try_with(|s| s.borrow().actor.clone()).ok()
}

/// Write the noted changes through `conn` (the transaction about to commit).
pub(super) async fn flush<C: ConnectionTrait>(conn: &C) -> Result<(), StoreError> {
    let Ok((actor, pending, now)) = SCOPE.try_with(|s| {
        let mut s = s.borrow_mut();
        (s.actor.clone(), std::mem::take(&mut s.pending), s.now)
    }) else {
        return Ok(());
    };
    if pending.is_empty() {
        return Ok(());
    }
    let rows = pending.into_iter().map(|c| entry(&actor, c, now));
    audit_entry::Entity::insert_many(rows).exec(conn).await?;
    Ok(())
}

fn entry(actor: &Actor, c: Change, now: Millis) -> audit_entry::ActiveModel {
    let json = |v: Option<Value>| v.map(|v| v.to_string());
    audit_entry::ActiveModel {
        id: Set(ids::new_id(prefix::AUDIT)),
        workspace_id: Set(c.workspace_id),
        actor_type: Set(actor.kind.to_string()),
        actor_id: Set(actor.id.clone()),
        actor_name: Set(actor.name.chars().take(254).collect()),
        action: Set(c.action),
        resource_type: Set(c.resource_type.to_string()),
        resource_id: Set(c.resource_id),
        ip: Set(actor.ip.clone()),
        before: Set(json(c.before)),
        after: Set(json(c.after)),
        created_at: Set(now),
    }
}

// Who changed what, when.
own_row! {
    /// An entry as stored; `before` and `after` are JSON text.
    pub struct AuditRow in audit_entry "audit_log" {
        key {
            pub id: String,
        }
        pub workspace_id: Option<String>,
        pub actor_type: String,
        pub actor_id: String,
        pub actor_name: String,
        pub action: String,
        pub resource_type: String,
        pub resource_id: Option<String>,
        pub ip: Option<String>,
        pub before: Option<String>,
        pub after: Option<String>,
        pub created_at: i64,
    }
}

/// What `GET /v1/audit-log` filters on.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub actor_id: Option<String>,
    pub resource_id: Option<String>,
    pub action: Option<String>,
    pub from: Option<Millis>,
    pub to: Option<Millis>,
}

impl Store {
    /// Record changes made outside a request (the command line), in a transaction of
    /// their own.
    pub async fn record_audit(
        &self,
        actor: &Actor,
        changes: Vec<Change>,
        now: Millis,
    ) -> Result<(), StoreError> {
        if changes.is_empty() {
            return Ok(());
        }
        let tx = self.begin_write().await?;
        audit_entry::Entity::insert_many(changes.into_iter().map(|c| entry(actor, c, now)))
            .exec(tx.conn())
            .await?;
        tx.commit().await
    }

    /// A workspace's entries, newest first.
    pub async fn audit_log(
        &self,
        workspace_id: &str,
        filter: &AuditFilter,
        page: Page,
    ) -> Result<(Vec<AuditRow>, u64), StoreError> {
        let mut select =
            audit_entry::Entity::find().filter(audit_entry::Column::WorkspaceId.eq(workspace_id));
        if let Some(a) = &filter.actor_id {
            select = select.filter(audit_entry::Column::ActorId.eq(a.as_str()));
        }
        if let Some(r) = &filter.resource_id {
            select = select.filter(audit_entry::Column::ResourceId.eq(r.as_str()));
        }
        if let Some(a) = &filter.action {
            select = select.filter(audit_entry::Column::Action.eq(a.as_str()));
        }
        if let Some(from) = filter.from {
            select = select.filter(audit_entry::Column::CreatedAt.gte(from));
        }
        if let Some(to) = filter.to {
            select = select.filter(audit_entry::Column::CreatedAt.lt(to));
        }
        let total = select.clone().count(self.db()).await?;
        let rows = select
            .order_by_desc(audit_entry::Column::CreatedAt)
            .order_by_desc(audit_entry::Column::Id)
            .offset(page.offset())
            .limit(page.limit)
            .all(self.db())
            .await?;
        Ok((rows.into_iter().map(AuditRow::from).collect(), total))
    }
}
