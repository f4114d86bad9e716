//! Contract 0.1.0 (`wit/v0.1.0`), frozen. Its imports are served by the newest version's
//! host implementation, and its exports are seen through the newest version's types: the
//! records are the same field for field, so each maps onto its newer twin (`attempt`,
//! new in 0.2.0, is not sent to a 0.1.0 plugin; a 0.1.0 plugin's description gets the
//! abilities of the built-in of its name, [`super::abilities_before_0_3_0`]).

/// The newest version's interfaces, as the host implements them.
mod latest {
    pub use super::super::{http, log, net, smtp, tls, types};
}
use super::{
    CallFuture, ChannelContract, MonitorContract, MonitorInstance, Version, export_call, list,
    older_version_glue, shared_twins, twin_enum, twin_record,
};
use crate::plugins::state::CallState;
use std::sync::Arc;
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker};

/// World `monitor`.
pub mod monitor {
    wasmtime::component::bindgen!({
        path: "../wit/v0.1.0",
        world: "monitor",
        imports: { default: async },
        exports: { default: async },
    });
}

/// World `channel`; its shared interfaces are the monitor world's.
pub mod channel {
    wasmtime::component::bindgen!({
        path: "../wit/v0.1.0",
        world: "channel",
        imports: { default: async },
        exports: { default: async },
        with: {
            "tocsin:plugin/types": super::monitor::tocsin::plugin::types,
            "tocsin:plugin/http": super::monitor::tocsin::plugin::http,
            "tocsin:plugin/log": super::monitor::tocsin::plugin::log,
        },
    });
}

use channel::exports::tocsin::plugin::channel_plugin;
use channel::tocsin::plugin::smtp;
use monitor::exports::tocsin::plugin::monitor_plugin;
use monitor::tocsin::plugin::{http, log, net, tls, types};

pub const VERSION: Version = Version {
    number: "0.1.0",
    link,
    monitor: |linker, component| {
        Ok(Arc::new(MonitorBinding(monitor::MonitorPre::new(
            linker.instantiate_pre(component)?,
        )?)))
    },
    channel: |linker, component| {
        Ok(Arc::new(ChannelBinding(channel::ChannelPre::new(
            linker.instantiate_pre(component)?,
        )?)))
    },
    pipeline: None,
};

// Linking, the imports served by the newest implementation, and the exports seen through
// the newest types: the same for every version before the newest.
older_version_glue!();

// A 0.1.0 plugin's description only ever flows up; 0.2.0 added the `tcp` capability, which
// has no 0.1.0 twin.
impl From<types::Capability> for latest::types::Capability {
    fn from(v: types::Capability) -> Self {
        match v {
            types::Capability::Http => Self::Http,
            types::Capability::Net => Self::Net,
            types::Capability::Tls => Self::Tls,
            types::Capability::Smtp => Self::Smtp,
        }
    }
}

// 0.2.0's `tls`, `limit` and `closed` come only from TCP streams, which 0.1.0 plugins cannot
// open; should one reach an older plugin, it reads as `other`.
impl From<latest::net::Error> for net::Error {
    fn from(v: latest::net::Error) -> Self {
        use latest::net::Error as New;
        match v {
            New::Timeout(x) => Self::Timeout(x),
            New::Dns(x) => Self::Dns(x),
            New::NotPermitted(x) => Self::NotPermitted(x),
            New::ConnectionRefused(x) => Self::ConnectionRefused(x),
            New::InvalidRequest(x) => Self::InvalidRequest(x),
            New::Denied(x) => Self::Denied(x),
            New::Other(x) | New::Tls(x) | New::Limit(x) | New::Closed(x) => Self::Other(x),
        }
    }
}

/// A 0.1.0 plugin is not told the attempt number.
impl From<super::CheckRequest> for monitor_plugin::CheckRequest {
    fn from(v: super::CheckRequest) -> Self {
        Self {
            config: v.config,
            timeout_ms: v.timeout_ms,
            monitor_id: v.monitor_id,
            region: v.region,
            settings: v.settings,
        }
    }
}

// The records, enums and variants every version before the newest shares with it, and
// the description, which gets the abilities of the built-in of its name.
shared_twins!();
