//! The egress policy: which addresses checks and deliveries may connect to. Every host
//! import that opens a connection (`http`, `net`, `tls`, `smtp`) resolves the name once,
//! asks [`EgressPolicy::check`] about each address, and connects only to an address it
//! allowed, so a name that resolves differently the second time (DNS rebinding) cannot
//! slip past. Redirects are checked hop by hop the same way.
//!
//! A preset decides first; then `egress_allow` may allow what the preset denies, and
//! `egress_deny` denies whatever it lists (deny wins over allow).
//!
//! What anonymous visitors give (a status page's webhook subscribers) goes by a stricter
//! policy, [`EgressPolicy::for_visitors`]: public addresses only, whatever the preset and
//! `egress_allow` say, unless the operator set `subscriptions.allow_private_targets`.

use ipnet::IpNet;
use std::fmt;
use std::net::IpAddr;

/// The preset the operator picks (`egress`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EgressPreset {
    /// For a self-hoster, who monitors private services: everything but cloud metadata
    /// and link-local addresses.
    #[default]
    Default,
    /// For a shared server: public addresses only.
    PublicOnly,
}

impl EgressPreset {
    /// The configuration's spelling.
    pub fn name(self) -> &'static str {
        match self {
            EgressPreset::Default => "default",
            EgressPreset::PublicOnly => "public-only",
        }
    }

    pub fn parse(text: &str) -> Option<EgressPreset> {
        match text {
            "default" => Some(EgressPreset::Default),
            "public-only" => Some(EgressPreset::PublicOnly),
            _ => None,
        }
    }

    /// The ranges the preset denies, each with what it is.
    fn denied(self) -> &'static [(&'static str, &'static str)] {
        match self {
            EgressPreset::Default => DEFAULT_DENIED,
            EgressPreset::PublicOnly => PUBLIC_ONLY_DENIED,
        }
    }
}

/// Cloud metadata services and link-local addresses (the metadata services live there).
const DEFAULT_DENIED: &[(&str, &str)] = &[
    (
        "169.254.0.0/16",
        "link-local, where cloud metadata services answer",
    ),
    ("fd00:ec2::254/128", "the EC2 IPv6 metadata service"),
    ("fe80::/10", "IPv6 link-local"),
];

/// Everything that is not a public unicast address.
const PUBLIC_ONLY_DENIED: &[(&str, &str)] = &[
    (
        "169.254.0.0/16",
        "link-local, where cloud metadata services answer",
    ),
    ("fd00:ec2::254/128", "the EC2 IPv6 metadata service"),
    ("fe80::/10", "IPv6 link-local"),
    ("0.0.0.0/8", "this network"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("100.64.0.0/10", "carrier-grade NAT"),
    ("192.0.0.0/24", "IETF protocol assignments"),
    ("192.0.2.0/24", "documentation (TEST-NET-1)"),
    ("192.88.99.0/24", "deprecated 6to4 relay anycast"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation (TEST-NET-2)"),
    ("203.0.113.0/24", "documentation (TEST-NET-3)"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    // Addresses that embed an IPv4 address are checked as that address too (`canonical`);
    // these tunnelling and deprecated forms are denied outright besides.
    ("::/96", "IPv4-compatible (deprecated)"),
    ("::ffff:0:0:0/96", "IPv4-translated"),
    ("100::/64", "discard-only"),
    ("2001::/32", "Teredo, which tunnels to an IPv4 address"),
    ("2001:2::/48", "benchmarking"),
    ("2001:db8::/32", "documentation"),
    ("2002::/16", "6to4, which tunnels to an IPv4 address"),
    ("3fff::/20", "documentation"),
    ("fc00::/7", "unique local (ULA)"),
    ("fec0::/10", "deprecated site-local"),
    ("ff00::/8", "multicast"),
    ("64:ff9b:1::/48", "local-use NAT64"),
];

/// Names that only mean something inside a network (RFC 6761, 6762, 8375 and common use).
const LOCAL_NAME_SUFFIXES: &[&str] = &[
    ".localhost",
    ".localdomain",
    ".local",
    ".internal",
    ".intranet",
    ".lan",
    ".home",
    ".corp",
    ".private",
    ".home.arpa",
    ".in-addr.arpa",
    ".ip6.arpa",
];

/// A CIDR list entry as the operator wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    net: IpNet,
}

/// The policy in force.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EgressPolicy {
    preset: EgressPreset,
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    /// `subscriptions.allow_private_targets`: visitors' targets go by this policy itself.
    private_visitor_targets: bool,
}

/// Why an address may not be reached: the address and the rule that denies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressDenied {
    pub address: IpAddr,
    pub rule: String,
}

impl fmt::Display for EgressDenied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the egress policy denies {}: {}",
            self.address, self.rule
        )
    }
}

impl std::error::Error for EgressDenied {}

impl EgressPolicy {
    /// Build from the configuration: the preset and the two CIDR lists. A bare address is
    /// a one-address range. Errors name the bad entry.
    pub fn new(preset: EgressPreset, allow: &[String], deny: &[String]) -> Result<Self, String> {
        Ok(EgressPolicy {
            preset,
            allow: parse_rules("egress_allow", allow)?,
            deny: parse_rules("egress_deny", deny)?,
            private_visitor_targets: false,
        })
    }

    /// Let visitors' targets reach what this policy allows (loopback and private ranges
    /// under the `default` preset): `subscriptions.allow_private_targets`, for test and lab
    /// servers only.
    #[must_use]
    pub fn with_private_visitor_targets(mut self, allow: bool) -> Self {
        self.private_visitor_targets = allow;
        self
    }

    /// The policy for targets anonymous visitors give: public addresses only (the
    /// `public-only` preset, no `egress_allow`, the operator's `egress_deny` kept), or this
    /// policy itself when private visitor targets are allowed.
    pub fn for_visitors(&self) -> EgressPolicy {
        if self.private_visitor_targets {
            return self.clone();
        }
        EgressPolicy {
            preset: EgressPreset::PublicOnly,
            allow: Vec::new(),
            deny: self.deny.clone(),
            private_visitor_targets: false,
        }
    }

    /// Before a visitor's URL is stored: a host that is an address must be one the
    /// visitors' policy allows, and a name must not be one that only means something
    /// inside a network (`localhost`, `*.local`, `*.internal`, a name without a dot, ...).
    /// Names are resolved, and their addresses checked, when a delivery is made.
    pub fn check_visitor_host(&self, host: &str) -> Result<(), String> {
        let policy = self.for_visitors();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return policy.check(ip).map_err(|e| e.to_string());
        }
        if self.private_visitor_targets {
            return Ok(());
        }
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        if !name.contains('.') {
            return Err(format!(
                "`{host}` is a name without a domain, which only means something inside a network"
            ));
        }
        let local = LOCAL_NAME_SUFFIXES
            .iter()
            .find(|suffix| name == suffix[1..] || name.ends_with(*suffix));
        match local {
            Some(suffix) => Err(format!(
                "`{host}` is a name under `{}`, which only means something inside a network",
                &suffix[1..]
            )),
            None => Ok(()),
        }
    }

    pub fn preset(&self) -> EgressPreset {
        self.preset
    }

    /// May a connection go to `address`?
    pub fn check(&self, address: IpAddr) -> Result<(), EgressDenied> {
        // An address that embeds an IPv4 address is checked as both.
        let ip = canonical(address);
        let hit = |net: &IpNet| net.contains(&ip) || net.contains(&address);
        let denied = |rule: String| EgressDenied { address, rule };
        if let Some(rule) = self.deny.iter().find(|r| hit(&r.net)) {
            return Err(denied(format!("it is in {} (egress_deny)", rule.net)));
        }
        if self.allow.iter().any(|r| r.net.contains(&ip)) {
            return Ok(());
        }
        for (range, what) in self.preset.denied() {
            let net: IpNet = range.parse().expect("preset ranges are valid CIDR");
            if hit(&net) {
                return Err(denied(format!(
                    "it is in {range} ({what}), which the `{}` egress preset denies",
                    self.preset.name()
                )));
            }
        }
        Ok(())
    }

    /// The addresses of `addresses` the policy allows, in order; when none is allowed,
    /// why the first was denied.
    pub fn filter(&self, addresses: &[IpAddr]) -> Result<Vec<IpAddr>, EgressDenied> {
        let mut first_denial = None;
        let mut allowed = Vec::new();
        for ip in addresses {
            match self.check(*ip) {
                Ok(()) => allowed.push(*ip),
                Err(e) => {
                    first_denial.get_or_insert(e);
                }
            }
        }
        match (allowed.is_empty(), first_denial) {
            (true, Some(e)) => Err(e),
            _ => Ok(allowed),
        }
    }
}

/// An IPv4 address written as IPv6 is the IPv4 address: IPv4-mapped (`::ffff:a.b.c.d`),
/// IPv4-compatible (`::a.b.c.d`, deprecated but still routed by some stacks),
/// IPv4-translated (`::ffff:0:a.b.c.d`), behind the well-known NAT64 prefix
/// (`64:ff9b::/96`, which a NAT64 gateway turns back into it) and 6to4 (`2002:aabb:ccdd::/48`,
/// whose relay tunnels to `aa.bb.cc.dd`). `::` and `::1` stay what they are. Teredo
/// (`2001::/32`) hides its IPv4 address and is denied outright by the `public-only` preset.
fn canonical(ip: IpAddr) -> IpAddr {
    let IpAddr::V6(v6) = ip else {
        return ip;
    };
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, d))
    };
    match s {
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo]
        | [0, 0, 0, 0, 0, 0xffff, hi, lo]
        | [0, 0, 0, 0, 0xffff, 0, hi, lo] => v4(hi, lo),
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 || lo > 1 => v4(hi, lo),
        [0x2002, hi, lo, ..] => v4(hi, lo),
        _ => ip,
    }
}

fn parse_rules(setting: &str, entries: &[String]) -> Result<Vec<Rule>, String> {
    entries
        .iter()
        .map(|text| {
            let t = text.trim();
            let net = t
                .parse::<IpNet>()
                .or_else(|_| t.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    format!(
                        "{setting}: `{text}` is not a CIDR range such as 10.0.0.0/8 or fd00::/8"
                    )
                })?;
            Ok(Rule { net: net.trunc() })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn the_default_allows_private_services_but_not_metadata() {
        let p = EgressPolicy::default();
        for ok in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.1.1",
            "::1",
            "fd12::1",
            "8.8.8.8",
        ] {
            assert_eq!(p.check(ip(ok)), Ok(()), "{ok}");
        }
        for bad in [
            "169.254.169.254",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:169.254.169.254",
        ] {
            let e = p.check(ip(bad)).expect_err(bad);
            assert!(e.to_string().contains("`default` egress preset"), "{e}");
        }
    }

    #[test]
    fn public_only_denies_everything_not_public() {
        let p = EgressPolicy::new(EgressPreset::PublicOnly, &[], &[]).expect("policy");
        for bad in [
            "127.0.0.1",
            "10.0.0.1",
            "172.20.0.1",
            "192.168.0.1",
            "100.64.0.1",
            "224.0.0.1",
            "::1",
            "fd00::1",
            "ff02::1",
            "0.0.0.0",
            "::",
        ] {
            let e = p.check(ip(bad)).expect_err(bad);
            assert!(e.to_string().contains("public-only"), "{e}");
        }
        for ok in ["1.1.1.1", "2606:4700::1111", "172.32.0.1"] {
            assert_eq!(p.check(ip(ok)), Ok(()), "{ok}");
        }
    }

    #[test]
    fn addresses_that_embed_ipv4_are_checked_as_that_address() {
        // Every form of 127.0.0.1 and 169.254.169.254 written as IPv6.
        let public_only = EgressPolicy::new(EgressPreset::PublicOnly, &[], &[]).expect("policy");
        for (bad, why) in [
            ("::127.0.0.1", "loopback"),
            ("::ffff:127.0.0.1", "loopback"),
            ("::ffff:0:7f00:1", "loopback"),
            ("64:ff9b::7f00:1", "loopback"),
            ("2002:7f00:1::", "loopback"),
            ("2002:a00:1::1", "private"),
            ("::ffff:0:a00:1", "private"),
            ("::a00:1", "private"),
        ] {
            let e = public_only.check(ip(bad)).expect_err(bad);
            assert!(e.to_string().contains(why), "{bad}: {e}");
        }
        assert_eq!(canonical(ip("::127.0.0.1")), ip("127.0.0.1"));
        assert_eq!(canonical(ip("::ffff:0:7f00:1")), ip("127.0.0.1"));
        assert_eq!(canonical(ip("2002:7f00:1::")), ip("127.0.0.1"));
        assert_eq!(canonical(ip("2002:c000:201:1::5")), ip("192.0.2.1"));
        assert_eq!(canonical(ip("::1")), ip("::1"));
        assert_eq!(canonical(ip("::")), ip("::"));
        assert_eq!(canonical(ip("2606:4700::1111")), ip("2606:4700::1111"));
        // The default preset, too, sees the metadata service behind them.
        let default = EgressPolicy::default();
        for bad in [
            "::169.254.169.254",
            "::ffff:0:a9fe:a9fe",
            "2002:a9fe:a9fe::",
            "64:ff9b::a9fe:a9fe",
        ] {
            assert!(default.check(ip(bad)).is_err(), "{bad}");
        }
        assert_eq!(default.check(ip("::1")), Ok(()));
        // An operator's IPv6 rule still matches the IPv6 form.
        let p =
            EgressPolicy::new(EgressPreset::Default, &[], &["2002::/16".into()]).expect("policy");
        assert!(p.check(ip("2002:101:101::")).is_err());
    }

    #[test]
    fn public_only_denies_tunnels_documentation_and_reserved_ranges() {
        let p = EgressPolicy::new(EgressPreset::PublicOnly, &[], &[]).expect("policy");
        for (bad, why) in [
            ("192.0.2.1", "documentation"),
            ("198.51.100.1", "documentation"),
            ("203.0.113.200", "documentation"),
            ("2001:db8::1", "documentation"),
            ("3fff::1", "documentation"),
            ("198.18.0.1", "benchmarking"),
            ("198.19.255.254", "benchmarking"),
            ("2001:2::1", "benchmarking"),
            ("224.0.0.251", "multicast"),
            ("239.255.255.250", "multicast"),
            ("ff05::1", "multicast"),
            ("240.0.0.1", "reserved"),
            ("255.255.255.255", "broadcast"),
            ("192.88.99.1", "6to4 relay"),
            ("fec0::1", "site-local"),
            ("feff::1", "site-local"),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
            ("2002:101:101::", "6to4"),
            ("::1.1.1.1", "IPv4-compatible"),
            ("::ffff:0:101:101", "IPv4-translated"),
            ("100::1", "discard-only"),
        ] {
            let e = p.check(ip(bad)).expect_err(bad);
            assert!(e.to_string().contains(why), "{bad}: {e}");
        }
        // Public neighbours of those ranges stay open.
        for ok in [
            "192.0.3.1",
            "198.51.101.1",
            "203.0.114.1",
            "198.20.0.1",
            "223.255.255.254",
            "2001:db9::1",
            "2001:4860:4860::8888",
            "2a00:1450::1",
            "64:ff9b::101:101",
            "::ffff:1.1.1.1",
        ] {
            assert_eq!(p.check(ip(ok)), Ok(()), "{ok}");
        }
    }

    #[test]
    fn allow_lists_open_the_preset_and_deny_wins() {
        let p = EgressPolicy::new(
            EgressPreset::PublicOnly,
            &["10.1.0.0/16".into(), "127.0.0.1".into()],
            &["10.1.2.0/24".into(), "1.2.3.4".into()],
        )
        .expect("policy");
        assert_eq!(p.check(ip("10.1.9.9")), Ok(()));
        assert_eq!(p.check(ip("127.0.0.1")), Ok(()));
        assert!(p.check(ip("127.0.0.2")).is_err());
        let e = p.check(ip("10.1.2.3")).expect_err("deny wins");
        assert!(e.to_string().contains("10.1.2.0/24 (egress_deny)"), "{e}");
        assert!(p.check(ip("1.2.3.4")).is_err());
        assert_eq!(
            p.filter(&[ip("127.0.0.2"), ip("10.1.9.9")]),
            Ok(vec![ip("10.1.9.9")])
        );
        assert!(p.filter(&[ip("127.0.0.2")]).is_err());
    }

    #[test]
    fn visitors_get_public_addresses_only_whatever_the_preset() {
        let server = EgressPolicy::new(
            EgressPreset::Default,
            &["10.0.0.0/8".into()],
            &["203.0.113.0/24".into()],
        )
        .expect("policy");
        assert_eq!(server.check(ip("127.0.0.1")), Ok(()));
        assert_eq!(server.check(ip("10.1.1.1")), Ok(()));
        let visitors = server.for_visitors();
        for bad in [
            "127.0.0.1",
            "10.1.1.1",
            "192.168.1.1",
            "::1",
            "::ffff:127.0.0.1",
            "64:ff9b::7f00:1",
            "169.254.169.254",
            "203.0.113.9",
        ] {
            assert!(visitors.check(ip(bad)).is_err(), "{bad}");
        }
        assert_eq!(visitors.check(ip("1.1.1.1")), Ok(()));
        // The server's own policy sees through NAT64 too.
        assert!(server.check(ip("64:ff9b::a9fe:a9fe")).is_err());
        for host in [
            "127.0.0.1",
            "[::1]",
            "localhost",
            "LocalHost.",
            "app.localhost",
            "printer.local",
            "db.internal",
            "redis",
            "router.home.arpa",
        ] {
            assert!(server.check_visitor_host(host).is_err(), "{host}");
        }
        for host in ["hooks.example.com", "1.1.1.1", "[2606:4700::1111]"] {
            assert_eq!(server.check_visitor_host(host), Ok(()), "{host}");
        }
        // Only an explicit setting lends the server's own policy to visitors.
        let lab = server.clone().with_private_visitor_targets(true);
        assert_eq!(lab.for_visitors().check(ip("127.0.0.1")), Ok(()));
        assert_eq!(lab.check_visitor_host("localhost"), Ok(()));
        assert!(lab.check_visitor_host("169.254.169.254").is_err());
    }

    #[test]
    fn bad_entries_are_named() {
        let e = EgressPolicy::new(EgressPreset::Default, &[], &["10.0.0.0/33".into()])
            .expect_err("bad");
        assert!(e.contains("egress_deny: `10.0.0.0/33`"), "{e}");
    }
}
