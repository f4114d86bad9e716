//! One-click links in alerts. Every DOWN, reminder, escalation and flapping message about
//! an open incident carries four links: acknowledge, snooze the monitor for an hour, snooze
//! it until 09:00 in the workspace's time zone, resolve. Each is a random token whose hash
//! is stored with the delivery that carries it ([`crate::store::links`]): bound to the
//! incident, the action and the channel it went to; used once; working for the server's
//! `action_link_lifetime`. Opening one shows a confirmation page; only its button acts,
//! so a mail scanner that follows links changes nothing.

use super::{Origin, Target};
use crate::store::links::ActionLinkRow;
use crate::store::{StoreError, Tx};
use serde_json::{Map, Value};

/// Links are kept this long after they were made (the longest lifetime allowed, plus a
/// day), so a late click is told "expired" rather than "not valid".
pub const KEPT_MS: i64 = 31 * 86_400_000;

/// Random characters of a token (base62: about 190 bits).
const TOKEN_CHARS: usize = 32;

/// What a link does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Acknowledge,
    /// Snooze the incident's monitor for an hour.
    SnoozeHour,
    /// Snooze the incident's monitor until the next 09:00 in the workspace's time zone.
    SnoozeUntilMorning,
    Resolve,
}

impl Action {
    pub const ALL: [Action; 4] = [
        Action::Acknowledge,
        Action::SnoozeHour,
        Action::SnoozeUntilMorning,
        Action::Resolve,
    ];

    /// The key in a payload's `actions` object, and the stored name.
    pub fn name(self) -> &'static str {
        match self {
            Action::Acknowledge => "acknowledge",
            Action::SnoozeHour => "snooze1h",
            Action::SnoozeUntilMorning => "snoozeUntilMorning",
            Action::Resolve => "resolve",
        }
    }

    pub fn parse(name: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.name() == name)
    }

    /// What a button says.
    pub fn label(self) -> &'static str {
        match self {
            Action::Acknowledge => "Acknowledge",
            Action::SnoozeHour => "Snooze 1 h",
            Action::SnoozeUntilMorning => "Snooze until 09:00",
            Action::Resolve => "Resolve",
        }
    }
}

/// The path of a link, under the server's public URL.
pub fn path(token: &str) -> String {
    format!("/act/{token}")
}

/// Make the links of one delivery and store them in `tx`. Returns the payload's `actions`
/// object: `{"acknowledge": url, "snooze1h": url, "snoozeUntilMorning": url, "resolve":
/// url}`.
pub async fn mint(
    tx: &Tx,
    origin: &Origin<'_>,
    target: &Target,
    delivery_id: &str,
    public_url: &str,
    now: i64,
) -> Result<Option<Value>, StoreError> {
    let Some(incident_id) = origin.incident_id else {
        return Ok(None);
    };
    let mut links = Map::new();
    let mut rows = Vec::with_capacity(Action::ALL.len());
    for action in Action::ALL {
        let token = crate::ids::random_base62(TOKEN_CHARS);
        rows.push(ActionLinkRow {
            token_hash: hash(&token),
            workspace_id: origin.workspace_id.to_string(),
            incident_id: incident_id.to_string(),
            delivery_id: delivery_id.to_string(),
            channel_id: target.channel_id.clone(),
            channel_kind: target.kind.clone(),
            action: action.name().to_string(),
            created_at: now,
            used_at: None,
            used_by: None,
        });
        links.insert(
            action.name().into(),
            Value::from(format!("{public_url}{}", path(&token))),
        );
    }
    tx.insert_action_links(rows).await?;
    Ok(Some(Value::Object(links)))
}

/// The stored form of a token.
pub fn hash(token: &str) -> String {
    crate::store::keys::hash_secret(token)
}

#[cfg(test)]
mod tests {
    use super::Action;

    #[test]
    fn action_names_read_back() {
        for a in Action::ALL {
            assert_eq!(Action::parse(a.name()), Some(a));
        }
        assert_eq!(Action::parse("delete"), None);
    }
}
