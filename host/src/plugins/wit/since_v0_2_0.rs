//! Contract 0.2.0 (`wit/v0.2.0`), frozen. Its imports are served by the newest version's
//! host implementation, and its exports are seen through the newest version's types: the
//! records are the same field for field, so each maps onto its newer twin. A 0.2.0
//! plugin's description has no abilities; it gets those the built-in channel of its name
//! had under 0.2.0 ([`super::abilities_before_0_3_0`]).

/// The newest version's interfaces, as the host implements them.
mod latest {
    pub use super::super::{http, log, net, smtp, tls, types};
}
use super::{
    CallFuture, ChannelContract, MonitorContract, MonitorInstance, Version, export_call, list,
    older_version_glue, shared_twins, twin_enum, twin_record,
};
use crate::plugins::socket::TcpStream;
use crate::plugins::state::CallState;
use std::sync::Arc;
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker, Resource};

/// World `monitor`.
pub mod monitor {
    wasmtime::component::bindgen!({
        path: "../wit/v0.2.0",
        world: "monitor",
        imports: { default: async },
        exports: { default: async },
        with: {
            "tocsin:plugin/net.tcp-stream": crate::plugins::socket::TcpStream,
        },
    });
}

/// World `channel`; its shared interfaces are the monitor world's.
pub mod channel {
    wasmtime::component::bindgen!({
        path: "../wit/v0.2.0",
        world: "channel",
        imports: { default: async },
        exports: { default: async },
        with: {
            "tocsin:plugin/types": super::monitor::tocsin::plugin::types,
            "tocsin:plugin/http": super::monitor::tocsin::plugin::http,
            "tocsin:plugin/log": super::monitor::tocsin::plugin::log,
            "tocsin:plugin/net": super::monitor::tocsin::plugin::net,
        },
    });
}

use channel::exports::tocsin::plugin::channel_plugin;
use channel::tocsin::plugin::smtp;
use monitor::exports::tocsin::plugin::monitor_plugin;
use monitor::tocsin::plugin::{http, log, net, tls, types};

pub const VERSION: Version = Version {
    number: "0.2.0",
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

// The stream is the same host object in both versions; only the records around it convert.
impl net::HostTcpStream for CallState {
    async fn open(&mut self, req: net::StreamRequest) -> Result<Resource<TcpStream>, net::Error> {
        latest::net::HostTcpStream::open(self, req.into())
            .await
            .map_err(Into::into)
    }

    async fn peer_address(&mut self, handle: Resource<TcpStream>) -> String {
        latest::net::HostTcpStream::peer_address(self, handle).await
    }

    async fn connect_ms(&mut self, handle: Resource<TcpStream>) -> u32 {
        latest::net::HostTcpStream::connect_ms(self, handle).await
    }

    async fn write(
        &mut self,
        handle: Resource<TcpStream>,
        data: Vec<u8>,
        timeout_ms: u32,
    ) -> Result<(), net::Error> {
        latest::net::HostTcpStream::write(self, handle, data, timeout_ms)
            .await
            .map_err(Into::into)
    }

    async fn read(
        &mut self,
        handle: Resource<TcpStream>,
        max_bytes: u32,
        timeout_ms: u32,
    ) -> Result<Vec<u8>, net::Error> {
        latest::net::HostTcpStream::read(self, handle, max_bytes, timeout_ms)
            .await
            .map_err(Into::into)
    }

    async fn start_tls(
        &mut self,
        handle: Resource<TcpStream>,
        options: net::TlsOptions,
        timeout_ms: u32,
    ) -> Result<net::TlsSession, net::Error> {
        latest::net::HostTcpStream::start_tls(self, handle, options.into(), timeout_ms)
            .await
            .map(Into::into)
            .map_err(Into::into)
    }

    async fn tls_session(&mut self, handle: Resource<TcpStream>) -> Option<net::TlsSession> {
        latest::net::HostTcpStream::tls_session(self, handle)
            .await
            .map(Into::into)
    }

    async fn close(&mut self, handle: Resource<TcpStream>) {
        latest::net::HostTcpStream::close(self, handle).await;
    }

    async fn drop(&mut self, handle: Resource<TcpStream>) -> wasmtime::Result<()> {
        latest::net::HostTcpStream::drop(self, handle).await
    }
}

// A 0.2.0 plugin's description only ever flows up; 0.3.0 added the `udp` capability,
// which has no 0.2.0 twin.
impl From<types::Capability> for latest::types::Capability {
    fn from(v: types::Capability) -> Self {
        match v {
            types::Capability::Http => Self::Http,
            types::Capability::Net => Self::Net,
            types::Capability::Tls => Self::Tls,
            types::Capability::Smtp => Self::Smtp,
            types::Capability::Tcp => Self::Tcp,
        }
    }
}

twin_enum!(net::Error, latest::net::Error {} payload {
    Timeout, Dns, NotPermitted, ConnectionRefused, InvalidRequest, Denied, Other, Tls, Limit,
    Closed
});

twin_record!(
    net::TlsOptions,
    latest::net::TlsOptions {
        server_name,
        accept_invalid_certificates
    }
);
impl From<net::StreamRequest> for latest::net::StreamRequest {
    fn from(v: net::StreamRequest) -> Self {
        Self {
            host: v.host,
            port: v.port,
            tls: v.tls.map(Into::into),
            timeout_ms: v.timeout_ms,
        }
    }
}
twin_record!(
    net::TlsSession,
    latest::net::TlsSession {
        protocol,
        validation_error
    }
);

twin_record!(
    monitor_plugin::CheckRequest,
    super::CheckRequest {
        config,
        timeout_ms,
        monitor_id,
        region,
        settings,
        attempt
    }
);

// The records, enums and variants every version before the newest shares with it, and
// the description, which gets the abilities of the built-in of its name.
shared_twins!();
