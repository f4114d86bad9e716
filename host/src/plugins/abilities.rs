//! What a channel plugin asks of the host beyond delivering (contract 0.3.0's
//! `plugin-info.abilities` and `https-only`): to hear acknowledgements and pauses, to have
//! a group window's incidents in one delivery, to have its deliveries signed, and which of
//! its URLs must be https. The engine, the outbox and the API read a channel type's
//! abilities here and never its name; plugins of older contracts get theirs from
//! [`super::wit::abilities_before_0_3_0`].

pub use super::wit::types::Ability;
use super::wit::types::PluginKind;
use std::collections::HashMap;
use std::sync::Arc;

/// Most fields one plugin may name in `https-only`.
pub const MAX_HTTPS_ONLY: usize = 32;

impl Ability {
    /// Every ability, in the contract's order.
    pub const ALL: [Ability; 4] = [
        Ability::Acknowledgements,
        Ability::Pauses,
        Ability::Grouping,
        Ability::Signing,
    ];

    /// The name the API and the documentation use.
    pub fn name(self) -> &'static str {
        match self {
            Ability::Acknowledgements => "acknowledgements",
            Ability::Pauses => "pauses",
            Ability::Grouping => "grouping",
            Ability::Signing => "signing",
        }
    }
}

/// One channel type's abilities.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Abilities {
    /// Told of `incident.acknowledged`.
    pub acknowledgements: bool,
    /// Told of `monitor.paused` and `monitor.resumed`.
    pub pauses: bool,
    /// A group window's incidents reach it as one delivery.
    pub grouping: bool,
    /// Its deliveries carry the workspace's signature headers.
    pub signing: bool,
    /// Top-level configuration fields whose URL must be `https://`.
    pub https_only: Vec<String>,
}

impl Abilities {
    /// What a description lists.
    pub fn of(abilities: &[Ability], https_only: &[String]) -> Abilities {
        let has = |a: Ability| abilities.contains(&a);
        Abilities {
            acknowledgements: has(Ability::Acknowledgements),
            pauses: has(Ability::Pauses),
            grouping: has(Ability::Grouping),
            signing: has(Ability::Signing),
            https_only: https_only.to_vec(),
        }
    }

    /// The abilities' names, in the contract's order.
    pub fn names(&self) -> Vec<&'static str> {
        let on = [
            self.acknowledgements,
            self.pauses,
            self.grouping,
            self.signing,
        ];
        Ability::ALL
            .into_iter()
            .zip(on)
            .filter(|(_, on)| *on)
            .map(|(a, _)| a.name())
            .collect()
    }

    /// Whether the channel asked for `ability`.
    pub fn has(&self, ability: Ability) -> bool {
        match ability {
            Ability::Acknowledgements => self.acknowledgements,
            Ability::Pauses => self.pauses,
            Ability::Grouping => self.grouping,
            Ability::Signing => self.signing,
        }
    }
}

/// Every loaded channel type's abilities, as the engine and the outbox read them; cheap to
/// clone. A type no loaded plugin provides (a channel whose plugin was removed, or a test
/// without plugins) reads as a plugin of that name built before 0.3.0 would.
#[derive(Debug, Clone, Default)]
pub struct ChannelAbilities(Arc<HashMap<String, Abilities>>);

impl ChannelAbilities {
    /// The abilities of the loaded channel types, by type.
    pub fn new(types: HashMap<String, Abilities>) -> ChannelAbilities {
        ChannelAbilities(Arc::new(types))
    }

    /// The abilities of channel type `kind`.
    pub fn of(&self, kind: &str) -> Abilities {
        self.0.get(kind).cloned().unwrap_or_else(|| {
            let (abilities, https_only) =
                super::wit::abilities_before_0_3_0(PluginKind::Channel, kind);
            Abilities::of(&abilities, &https_only)
        })
    }

    /// Whether channel type `kind` asked for `ability`.
    pub fn has(&self, kind: &str, ability: Ability) -> bool {
        self.of(kind).has(ability)
    }

    /// Whether a group window gathers channel type `kind`'s deliveries into one.
    pub fn grouped(&self, kind: &str) -> bool {
        self.of(kind).grouping
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_lists_its_abilities() {
        let none = Abilities::default();
        assert!(Ability::ALL.iter().all(|a| !none.has(*a)));
        assert!(none.names().is_empty());
        let all = Abilities::of(&Ability::ALL, &[]);
        assert!(Ability::ALL.iter().all(|a| all.has(*a)));
        assert_eq!(
            all.names(),
            ["acknowledgements", "pauses", "grouping", "signing"]
        );
    }

    #[test]
    fn a_loaded_type_speaks_for_itself_and_an_unknown_one_as_before_0_3_0() {
        let mut types = HashMap::new();
        // A plugin called `webhook` built against 0.3.0 that asks for nothing gets nothing.
        types.insert("webhook".to_string(), Abilities::default());
        types.insert(
            "pager".to_string(),
            Abilities::of(&[Ability::Acknowledgements, Ability::Grouping], &[]),
        );
        let loaded = ChannelAbilities::new(types);
        assert_eq!(loaded.of("webhook"), Abilities::default());
        assert!(loaded.has("pager", Ability::Acknowledgements));
        assert!(loaded.grouped("pager"));
        // Not loaded: as the built-in of that name was under 0.2.0.
        let none = ChannelAbilities::default();
        let webhook = none.of("webhook");
        assert!(webhook.signing && webhook.acknowledgements && webhook.pauses);
        assert_eq!(webhook.https_only, ["url"]);
        assert!(none.grouped("email") && none.grouped("telegram"));
        assert!(none.has("pagerduty", Ability::Acknowledgements));
        assert!(!none.has("slack", Ability::Acknowledgements));
        assert_eq!(none.of("someone-elses"), Abilities::default());
    }
}
