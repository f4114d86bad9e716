//! What one plugin call's `Store` holds: a WASI context that grants nothing, the call's
//! limits, and the context host imports need (who is calling, what it may do, time left).

use super::Capability;
use super::limits;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Host capabilities a plugin may use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Grants {
    /// The capabilities granted, in the contract's order.
    pub capabilities: Vec<Capability>,
    /// When set, the only hosts HTTP requests (and redirects) may reach.
    pub http_hosts: Option<Arc<[String]>>,
}

impl Grants {
    /// Grant `capabilities` (with no host list).
    pub fn of(capabilities: impl IntoIterator<Item = Capability>) -> Grants {
        let wanted: Vec<Capability> = capabilities.into_iter().collect();
        Grants {
            capabilities: Capability::ALL
                .into_iter()
                .filter(|c| wanted.contains(c))
                .collect(),
            http_hosts: None,
        }
    }

    /// Whether `capability` was granted.
    pub fn allows(&self, capability: Capability) -> bool {
        self.capabilities.contains(&capability)
    }

    /// Whether an HTTP request may go to `host`: any host without a list; otherwise an
    /// exact (case-insensitive) entry, or `*.suffix` for names under `suffix`.
    pub fn allows_http_host(&self, host: &str) -> bool {
        let Some(list) = &self.http_hosts else {
            return true;
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        list.iter().any(|entry| {
            let entry = entry.to_ascii_lowercase();
            match entry.strip_prefix("*.") {
                Some(suffix) => host.ends_with(&format!(".{suffix}")),
                None => host == entry,
            }
        })
    }

    /// The capability names granted, for listings.
    pub fn names(&self) -> Vec<&'static str> {
        self.capabilities.iter().map(|c| c.name()).collect()
    }
}

/// Why a call to an interface the plugin was not granted is refused.
pub fn not_granted(plugin: &str, capability: Capability) -> String {
    let capability = capability.name();
    format!(
        "plugin `{plugin}` was not granted the {capability} capability (the server operator \
         grants it under [plugin_grants.{plugin}] in the configuration)"
    )
}

/// Services host imports use, shared by every call.
pub struct HostServices {
    /// The HTTP clients, one per version a request may ask for. None follows redirects
    /// itself; the http import follows them one by one.
    pub http: super::http::Clients,
    /// The configured SMTP relay, if any.
    pub smtp: Option<super::relay::SmtpRelay>,
    /// Chain and name validation against the trusted roots, for TLS inspection.
    pub tls_verifier: Arc<rustls::client::WebPkiServerVerifier>,
    /// Which addresses connections may go to.
    pub egress: Arc<super::egress::EgressPolicy>,
}

/// Facts about the running call.
#[derive(Clone)]
pub struct CallContext {
    pub plugin: Arc<str>,
    pub grants: Grants,
    pub services: Arc<HostServices>,
    /// When the call's own budget (the check timeout) ends; host I/O must finish by then.
    pub budget_deadline: Instant,
    /// The whole budget, for messages.
    pub budget: Duration,
    /// The probe region a check runs in; named in the `User-Agent` of its HTTP requests so
    /// a monitored service can tell the regions apart.
    pub region: Option<Arc<str>>,
    /// The files a delivery carries (a monthly report's PDF): the first message the call
    /// sends through the SMTP relay has them attached, since the `smtp` interface's
    /// message has no attachments of its own.
    pub attachments: Arc<[super::relay::Attachment]>,
}

impl CallContext {
    /// Time left in the budget.
    pub fn remaining(&self) -> Duration {
        self.budget_deadline
            .saturating_duration_since(Instant::now())
    }
}

/// Memory and table limits that remember why they refused.
pub struct CallLimits {
    pub memory_exceeded: bool,
}

impl ResourceLimiter for CallLimits {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > limits::MEMORY_LIMIT_BYTES {
            self.memory_exceeded = true;
            return Err(wasmtime::Error::msg(format!(
                "plugin exceeded its memory limit of {} MiB",
                limits::MEMORY_LIMIT_BYTES >> 20
            )));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= limits::MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        limits::MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        limits::MAX_TABLES
    }

    fn memories(&self) -> usize {
        limits::MAX_MEMORIES
    }
}

/// What one call has used of its stream and socket limits.
#[derive(Debug, Default)]
pub struct StreamUsage {
    pub open: u32,
    pub bytes: u64,
    /// UDP sockets open, and bytes sent and received through them.
    pub sockets: u32,
    pub datagram_bytes: u64,
}

/// The data of one call's `Store`.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limits: CallLimits,
    pub call: CallContext,
    /// What the call has used of its TCP stream and UDP socket limits.
    pub streams: StreamUsage,
}

impl CallState {
    pub fn new(call: CallContext) -> CallState {
        // No files, environment, arguments, network sockets or name lookups: plugins reach
        // the outside only through Tocsin's own interfaces.
        let wasi = WasiCtxBuilder::new()
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let mut table = ResourceTable::new();
        table.set_max_capacity(limits::RESOURCE_TABLE_CAPACITY);
        CallState {
            wasi,
            table,
            limits: CallLimits {
                memory_exceeded: false,
            },
            call,
            streams: Default::default(),
        }
    }

    /// Make a kept store ready for its next call (see [`crate::plugins::kept`]): the new
    /// call's context, nothing used yet. Only a store whose last call left no host resource
    /// behind is kept, so the resource table is already empty.
    pub fn renew(&mut self, call: CallContext) {
        self.call = call;
        self.limits.memory_exceeded = false;
        self.streams = StreamUsage::default();
    }

    /// Whether the guest holds no host resource (a stream, a request, a WASI handle).
    pub fn holds_no_resources(&self) -> bool {
        self.table.is_empty()
    }

    /// The call's resource table (host resources such as TCP streams live there).
    pub fn table_mut(&mut self) -> &mut ResourceTable {
        &mut self.table
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_host_lists_match_exactly_or_by_subdomain() {
        let open = Grants::default();
        assert!(open.allows_http_host("anything.example"));
        let g = Grants {
            capabilities: vec![Capability::Http],
            http_hosts: Some(Arc::from(vec![
                "api.example.com".to_string(),
                "*.internal".to_string(),
                "::1".to_string(),
            ])),
        };
        assert!(g.allows_http_host("API.example.com"));
        assert!(g.allows_http_host("db.internal"));
        assert!(g.allows_http_host("[::1]"));
        assert!(!g.allows_http_host("internal"));
        assert!(!g.allows_http_host("evil-api.example.com"));
        assert!(!g.allows_http_host("api.example.com.evil"));
        assert_eq!(g.names(), ["http"]);
    }
}
