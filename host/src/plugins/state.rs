//! What one plugin call's `Store` holds: a WASI context that grants nothing, the call's
//! limits, and the context host imports need (who is calling, what it may do, time left).

use super::limits;
use std::sync::Arc;
use std::time::{Duration, Instant};
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Host capabilities a plugin may use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Grants {
    pub http: bool,
    pub net: bool,
    pub tls: bool,
    pub smtp: bool,
}

/// Services host imports use, shared by every call.
pub struct HostServices {
    /// Never follows redirects itself; the http import follows them one by one.
    pub http_client: reqwest::Client,
    /// The configured SMTP relay, if any.
    pub smtp: Option<super::smtp::SmtpRelay>,
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

/// The data of one call's `Store`.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limits: CallLimits,
    pub call: CallContext,
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
        }
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
