//! Contract 0.1.0 (`wit/v0.1.0`), frozen. Its imports are served by the newest version's
//! host implementation, and its exports are seen through the newest version's types: the
//! records are the same field for field, so each maps onto its newer twin (`attempt`,
//! new in 0.2.0, is not sent to a 0.1.0 plugin).

/// The newest version's interfaces, as the host implements them.
mod latest {
    pub use super::super::{http, log, net, smtp, tls, types};
}
use super::{CallFuture, ChannelContract, MonitorContract, MonitorInstance, Version, export_call};
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
};

fn link(
    monitors: &mut Linker<CallState>,
    channels: &mut Linker<CallState>,
) -> wasmtime::Result<()> {
    monitor::Monitor::add_to_linker::<CallState, HasSelf<CallState>>(monitors, |s| s)?;
    channel::Channel::add_to_linker::<CallState, HasSelf<CallState>>(channels, |s| s)?;
    Ok(())
}

// Imports: convert the arguments up, call the newest implementation, convert the result down.

impl types::Host for CallState {}

impl http::Host for CallState {
    async fn send(&mut self, req: http::Request) -> Result<http::Response, http::Error> {
        latest::http::Host::send(self, req.into())
            .await
            .map(Into::into)
            .map_err(Into::into)
    }
}

impl net::Host for CallState {
    async fn resolve(
        &mut self,
        hostname: String,
        timeout_ms: u32,
    ) -> Result<Vec<String>, net::Error> {
        latest::net::Host::resolve(self, hostname, timeout_ms)
            .await
            .map_err(Into::into)
    }

    async fn ping(&mut self, req: net::PingRequest) -> Result<net::PingResult, net::Error> {
        latest::net::Host::ping(self, req.into())
            .await
            .map(Into::into)
            .map_err(Into::into)
    }

    async fn tcp_connect(
        &mut self,
        host: String,
        port: u16,
        timeout_ms: u32,
    ) -> Result<net::TcpConnectResult, net::Error> {
        latest::net::Host::tcp_connect(self, host, port, timeout_ms)
            .await
            .map(Into::into)
            .map_err(Into::into)
    }
}

impl tls::Host for CallState {
    async fn inspect(
        &mut self,
        req: tls::InspectRequest,
    ) -> Result<tls::InspectResult, tls::Error> {
        latest::tls::Host::inspect(self, req.into())
            .await
            .map(Into::into)
            .map_err(Into::into)
    }
}

impl smtp::Host for CallState {
    async fn send(&mut self, msg: smtp::Message) -> Result<(), smtp::Error> {
        latest::smtp::Host::send(self, msg.into())
            .await
            .map_err(Into::into)
    }
}

impl log::Host for CallState {
    async fn log(&mut self, level: log::Level, message: String) {
        latest::log::Host::log(self, level.into(), message).await;
    }
}

// Exports: the newest types in, this version's calls, the newest types out.

struct MonitorBinding(monitor::MonitorPre<CallState>);

impl MonitorContract for MonitorBinding {
    fn instantiate<'s>(&self, store: &'s mut Store<CallState>) -> CallFuture<'s, ()> {
        let pre = self.0.clone();
        Box::pin(async move {
            pre.instantiate_async(&mut *store).await?;
            Ok(())
        })
    }

    fn describe<'s>(
        &self,
        store: &'s mut Store<CallState>,
    ) -> CallFuture<'s, latest::types::PluginInfo> {
        export_call!(self.0, store, tocsin_plugin_monitor_plugin.call_describe() => Into::into)
    }

    fn validate_config<'s>(
        &self,
        store: &'s mut Store<CallState>,
        config: String,
    ) -> CallFuture<'s, Result<String, Vec<latest::types::FieldError>>> {
        export_call!(
            self.0, store,
            tocsin_plugin_monitor_plugin.call_validate_config(&config) => field_errors
        )
    }

    fn check<'s>(
        &self,
        store: &'s mut Store<CallState>,
        request: super::CheckRequest,
    ) -> CallFuture<'s, super::CheckOutcome> {
        export_call!(
            self.0, store,
            tocsin_plugin_monitor_plugin.call_check(&monitor_plugin::CheckRequest::from(request))
                => Into::into
        )
    }

    fn instance<'s>(
        &self,
        store: &'s mut Store<CallState>,
    ) -> CallFuture<'s, Box<dyn MonitorInstance>> {
        let pre = self.0.clone();
        Box::pin(async move {
            let instance = pre.instantiate_async(&mut *store).await?;
            Ok(Box::new(KeptMonitor(Arc::new(instance))) as Box<dyn MonitorInstance>)
        })
    }
}

struct KeptMonitor(Arc<monitor::Monitor>);

impl MonitorInstance for KeptMonitor {
    fn check<'s>(
        &self,
        store: &'s mut Store<CallState>,
        request: super::CheckRequest,
    ) -> CallFuture<'s, super::CheckOutcome> {
        let instance = self.0.clone();
        Box::pin(async move {
            let outcome = instance
                .tocsin_plugin_monitor_plugin()
                .call_check(&mut *store, &monitor_plugin::CheckRequest::from(request))
                .await?;
            Ok(outcome.into())
        })
    }
}

struct ChannelBinding(channel::ChannelPre<CallState>);

impl ChannelContract for ChannelBinding {
    fn describe<'s>(
        &self,
        store: &'s mut Store<CallState>,
    ) -> CallFuture<'s, latest::types::PluginInfo> {
        export_call!(self.0, store, tocsin_plugin_channel_plugin.call_describe() => Into::into)
    }

    fn validate_config<'s>(
        &self,
        store: &'s mut Store<CallState>,
        config: String,
    ) -> CallFuture<'s, Result<String, Vec<latest::types::FieldError>>> {
        export_call!(
            self.0, store,
            tocsin_plugin_channel_plugin.call_validate_config(&config) => field_errors
        )
    }

    fn deliver<'s>(
        &self,
        store: &'s mut Store<CallState>,
        notification: super::Notification,
    ) -> CallFuture<'s, Result<super::Receipt, super::DeliveryFailure>> {
        export_call!(
            self.0, store,
            tocsin_plugin_channel_plugin.call_deliver(&channel_plugin::Notification::from(notification))
                => delivered
        )
    }
}

/// `validate-config`'s answer in the newest types.
fn field_errors(
    answer: Result<String, Vec<types::FieldError>>,
) -> Result<String, Vec<latest::types::FieldError>> {
    answer.map_err(list)
}

/// `deliver`'s answer in the newest types.
fn delivered(
    answer: Result<channel_plugin::Receipt, channel_plugin::Failure>,
) -> Result<super::Receipt, super::DeliveryFailure> {
    answer.map(Into::into).map_err(Into::into)
}

fn list<A, B: From<A>>(items: Vec<A>) -> Vec<B> {
    items.into_iter().map(Into::into).collect()
}

/// `From` both ways between a record of this version and its newer twin. Fields under
/// `lists` hold lists of records and are converted item by item.
macro_rules! twin_record {
    ($old:ty, $new:ty { $($field:ident),* } $(lists { $($list:ident),* })?) => {
        impl From<$old> for $new {
            fn from(v: $old) -> Self {
                Self { $($field: v.$field.into(),)* $($($list: list(v.$list),)*)? }
            }
        }
        impl From<$new> for $old {
            fn from(v: $new) -> Self {
                Self { $($field: v.$field.into(),)* $($($list: list(v.$list),)*)? }
            }
        }
    };
}

/// `From` both ways between an enum or variant of this version and its newer twin; every
/// payload is a plain value (a number or a string).
macro_rules! twin_enum {
    ($old:ident :: $oldt:ident, $new:path { $($unit:ident),* } $(payload { $($case:ident),* })?) => {
        impl From<$old::$oldt> for $new {
            fn from(v: $old::$oldt) -> Self {
                type New = $new;
                match v {
                    $($old::$oldt::$unit => New::$unit,)*
                    $($($old::$oldt::$case(x) => New::$case(x),)*)?
                }
            }
        }
        impl From<$new> for $old::$oldt {
            fn from(v: $new) -> Self {
                type New = $new;
                match v {
                    $(New::$unit => $old::$oldt::$unit,)*
                    $($(New::$case(x) => $old::$oldt::$case(x),)*)?
                }
            }
        }
    };
}

twin_record!(types::Header, latest::types::Header { name, value });
twin_enum!(
    types::PluginKind,
    latest::types::PluginKind { Monitor, Channel }
);
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
impl From<types::PluginInfo> for latest::types::PluginInfo {
    fn from(v: types::PluginInfo) -> Self {
        Self {
            name: v.name,
            kind: v.kind.into(),
            version: v.version,
            description: v.description,
            config_schema: v.config_schema,
            capabilities: list(v.capabilities),
        }
    }
}
twin_record!(
    types::FieldError,
    latest::types::FieldError { field, message }
);

twin_record!(http::Request, latest::http::Request {
    method, url, body, timeout_ms, follow_redirects, max_redirects, max_body_bytes
} lists { headers });
twin_record!(http::Response, latest::http::Response {
    status, body, body_truncated, elapsed_ms, redirects, final_url, remote_address
} lists { headers });
twin_enum!(http::Error, latest::http::Error {} payload {
    Timeout, Dns, ConnectionRefused, Tls, TooManyRedirects, InvalidRequest, Denied, Other
});

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
twin_record!(
    net::PingRequest,
    latest::net::PingRequest {
        host,
        count,
        timeout_ms
    }
);
twin_record!(
    net::PingResult,
    latest::net::PingResult {
        address,
        sent,
        received,
        rtts_us
    }
);
twin_record!(
    net::TcpConnectResult,
    latest::net::TcpConnectResult {
        address,
        elapsed_ms
    }
);

twin_record!(
    tls::Certificate,
    latest::tls::Certificate {
        subject,
        issuer,
        sans,
        not_before,
        not_after,
        serial
    }
);
twin_record!(
    tls::InspectRequest,
    latest::tls::InspectRequest {
        host,
        port,
        server_name,
        timeout_ms
    }
);
twin_record!(
    tls::InspectResult,
    latest::tls::InspectResult {
        leaf,
        chain_length,
        chain_valid,
        hostname_matches,
        validation_error,
        protocol,
        elapsed_ms
    }
);
twin_enum!(tls::Error, latest::tls::Error {} payload {
    Timeout, Dns, ConnectionRefused, Handshake, InvalidRequest, Denied, Other
});

twin_record!(
    smtp::Message,
    latest::smtp::Message {
        to,
        subject,
        text_body,
        html_body
    }
);
twin_enum!(smtp::Error, latest::smtp::Error {} payload { NotConfigured, Rejected, Transient, Denied });

twin_enum!(
    log::Level,
    latest::log::Level {
        Trace,
        Debug,
        Info,
        Warn,
        Error
    }
);

twin_record!(
    monitor_plugin::CheckOutcome,
    super::CheckOutcome {
        ok,
        reason,
        status_code,
        response_time_ms,
        details
    }
);

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

twin_record!(channel_plugin::Notification, super::Notification {
    event, config, payload, timeout_ms, settings
} lists { headers });
twin_record!(
    channel_plugin::Receipt,
    super::Receipt {
        status_code,
        detail
    }
);
twin_record!(
    channel_plugin::Failure,
    super::DeliveryFailure {
        retryable,
        reason,
        status_code
    }
);
