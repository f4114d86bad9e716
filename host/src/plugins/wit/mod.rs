//! The plugin contract, one module per version (`since_v0_1_0.rs`, `since_v0_2_0.rs`,
//! `since_v0_3_0.rs`), each with the bindings generated from its frozen `wit/v<version>`
//! folder. The host
//! implements the newest version's imports once (`http.rs`, `net.rs`, ...); an older
//! version's module maps its imports and exports onto the newest, so plugins built
//! against it keep loading. `latest` names the newest version.
//!
//! Adding a contract version means adding its `since_v*.rs` file, pointing `latest` at
//! it, and one line in [`VERSIONS`]; the plugin host's load, check and deliver code does
//! not change.

pub mod since_v0_1_0;
pub mod since_v0_2_0;
pub mod since_v0_3_0;

pub use since_v0_3_0 as latest;

pub use latest::channel::exports::tocsin::plugin::channel_plugin::{
    Failure as DeliveryFailure, Notification, Receipt,
};
pub use latest::channel::tocsin::plugin::smtp;
pub use latest::monitor::exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest};
pub use latest::monitor::tocsin::plugin::{http, log, net, tls, types};
pub use latest::pipeline::exports::tocsin::plugin::pipeline_plugin::{Alert, Decision, Delay};
pub use latest::pipeline::tocsin::plugin::clock;

use super::state::CallState;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use types::{Ability, FieldError, PluginInfo, PluginKind};
use wasmtime::Store;
use wasmtime::component::{Component, Linker};

/// One export call of a version module: instantiate the component in the call's store,
/// call `$call` on its `$iface` export with `$args`, and map the answer into the newest
/// version's types with `$map` (none when they already are).
macro_rules! export_call {
    ($pre:expr, $store:ident, $iface:ident . $call:ident ($($arg:expr),*)) => {
        export_call!($pre, $store, $iface.$call($($arg),*) => std::convert::identity)
    };
    ($pre:expr, $store:ident, $iface:ident . $call:ident ($($arg:expr),*) => $map:expr) => {{
        let pre = $pre.clone();
        Box::pin(async move {
            let instance = pre.instantiate_async(&mut *$store).await?;
            let answer = instance.$iface().$call(&mut *$store $(, $arg)*).await?;
            Ok($map(answer))
        })
    }};
}
pub(crate) use export_call;

/// What a plugin call returns, borrowing its `Store`.
pub type CallFuture<'s, T> = Pin<Box<dyn Future<Output = wasmtime::Result<T>> + Send + 's>>;

/// A monitor component of some contract version, ready to instantiate; it speaks the
/// newest version's types.
pub trait MonitorContract: Send + Sync {
    /// Instantiate only, calling nothing (to measure a call's pieces apart).
    fn instantiate<'s>(&self, store: &'s mut Store<CallState>) -> CallFuture<'s, ()>;
    fn describe<'s>(&self, store: &'s mut Store<CallState>) -> CallFuture<'s, PluginInfo>;
    fn validate_config<'s>(
        &self,
        store: &'s mut Store<CallState>,
        config: String,
    ) -> CallFuture<'s, Result<String, Vec<FieldError>>>;
    fn check<'s>(
        &self,
        store: &'s mut Store<CallState>,
        request: CheckRequest,
    ) -> CallFuture<'s, CheckOutcome>;
    /// Instantiate for several checks made one after another in the same store (see
    /// [`crate::plugins::kept`]).
    fn instance<'s>(
        &self,
        store: &'s mut Store<CallState>,
    ) -> CallFuture<'s, Box<dyn MonitorInstance>>;
}

/// A monitor component instantiated in a store that is kept between checks.
pub trait MonitorInstance: Send + Sync {
    /// One check in the store the instance lives in.
    fn check<'s>(
        &self,
        store: &'s mut Store<CallState>,
        request: CheckRequest,
    ) -> CallFuture<'s, CheckOutcome>;
}

/// A channel component of some contract version, ready to instantiate.
pub trait ChannelContract: Send + Sync {
    fn describe<'s>(&self, store: &'s mut Store<CallState>) -> CallFuture<'s, PluginInfo>;
    fn validate_config<'s>(
        &self,
        store: &'s mut Store<CallState>,
        config: String,
    ) -> CallFuture<'s, Result<String, Vec<FieldError>>>;
    fn deliver<'s>(
        &self,
        store: &'s mut Store<CallState>,
        notification: Notification,
    ) -> CallFuture<'s, Result<Receipt, DeliveryFailure>>;
}

/// A pipeline component, ready to instantiate (contract 0.3.0 on).
pub trait PipelineContract: Send + Sync {
    fn describe<'s>(&self, store: &'s mut Store<CallState>) -> CallFuture<'s, PluginInfo>;
    fn validate_config<'s>(
        &self,
        store: &'s mut Store<CallState>,
        config: String,
    ) -> CallFuture<'s, Result<String, Vec<FieldError>>>;
    fn decide<'s>(&self, store: &'s mut Store<CallState>, alert: Alert)
    -> CallFuture<'s, Decision>;
}

/// Binds a pipeline component to the newest types.
pub type BindPipeline =
    fn(&Linker<CallState>, &Component) -> wasmtime::Result<Arc<dyn PipelineContract>>;

/// The `pipeline` world of a version that has one: its imports and its binding.
pub struct PipelineWorld {
    pub link: fn(&mut Linker<CallState>) -> wasmtime::Result<()>,
    pub bind: BindPipeline,
}

/// Binds a monitor component of one version to the newest types.
pub type BindMonitor =
    fn(&Linker<CallState>, &Component) -> wasmtime::Result<Arc<dyn MonitorContract>>;
/// Binds a channel component of one version to the newest types.
pub type BindChannel =
    fn(&Linker<CallState>, &Component) -> wasmtime::Result<Arc<dyn ChannelContract>>;

/// One supported contract version: how to link its imports and bind its exports.
pub struct Version {
    /// `0.1.0`, as in the component's export names (`tocsin:plugin/monitor-plugin@0.1.0`).
    pub number: &'static str,
    /// Add this version's imports to the monitor world's and the channel world's linkers.
    pub link: fn(&mut Linker<CallState>, &mut Linker<CallState>) -> wasmtime::Result<()>,
    /// Bind a monitor component built against this version.
    pub monitor: BindMonitor,
    /// Bind a channel component built against this version.
    pub channel: BindChannel,
    /// The pipeline world, for versions that have one (0.3.0 on).
    pub pipeline: Option<PipelineWorld>,
}

/// Every contract version this server loads, oldest first.
pub const VERSIONS: &[Version] = &[
    since_v0_1_0::VERSION,
    since_v0_2_0::VERSION,
    since_v0_3_0::VERSION,
];

/// What a plugin of a contract before 0.3.0 asks of the host: its description cannot say,
/// so it gets what the built-in channel of its name had under that contract (abilities,
/// and the fields that must be https), and any other plugin nothing. The one place the
/// server reads a plugin's name for its behaviour, and only for plugins that predate
/// abilities.
pub fn abilities_before_0_3_0(kind: PluginKind, name: &str) -> (Vec<Ability>, Vec<String>) {
    use Ability::*;
    if kind != PluginKind::Channel {
        return (Vec::new(), Vec::new());
    }
    match name {
        "webhook" => (vec![Acknowledgements, Pauses, Signing], vec!["url".into()]),
        "pagerduty" | "opsgenie" => (vec![Acknowledgements], Vec::new()),
        "email" | "telegram" => (vec![Grouping], Vec::new()),
        _ => (Vec::new(), Vec::new()),
    }
}

fn list<A, B: From<A>>(items: Vec<A>) -> Vec<B> {
    items.into_iter().map(Into::into).collect()
}

/// `From` both ways between a record of an older version and its newer twin. Fields under
/// `lists` hold lists of records and are converted item by item.
macro_rules! twin_record {
    ($old:ty, $new:ty { $($field:ident),* } $(lists { $($list:ident),* })?) => {
        impl From<$old> for $new {
            fn from(v: $old) -> Self {
                Self { $($field: v.$field.into(),)* $($($list: super::list(v.$list),)*)? }
            }
        }
        impl From<$new> for $old {
            fn from(v: $new) -> Self {
                Self { $($field: v.$field.into(),)* $($($list: super::list(v.$list),)*)? }
            }
        }
    };
}
pub(crate) use twin_record;

/// `From` both ways between an enum or variant of an older version and its newer twin;
/// every payload is a plain value (a number or a string).
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
pub(crate) use twin_enum;

/// The conversions every version before 0.3.0 shares with the newest, for a version module
/// that names its bindings `types`, `http`, `net`, `tls`, `smtp`, `log`, `monitor_plugin`
/// and `channel_plugin`, and the newest's interfaces `latest`. A description of such a
/// version flows only up, and gets the abilities of the built-in of its name.
macro_rules! shared_twins {
    () => {
        twin_record!(types::Header, latest::types::Header { name, value });

        /// A description flows only up; an older plugin is never a pipeline step.
        impl From<types::PluginKind> for latest::types::PluginKind {
            fn from(v: types::PluginKind) -> Self {
                match v {
                    types::PluginKind::Monitor => Self::Monitor,
                    types::PluginKind::Channel => Self::Channel,
                }
            }
        }

        twin_record!(
            types::FieldError,
            latest::types::FieldError { field, message }
        );

        /// An older request speaks whatever HTTP the server offers, as it did.
        impl From<http::Request> for latest::http::Request {
            fn from(v: http::Request) -> Self {
                Self {
                    method: v.method,
                    url: v.url,
                    headers: list(v.headers),
                    body: v.body,
                    timeout_ms: v.timeout_ms,
                    follow_redirects: v.follow_redirects,
                    max_redirects: v.max_redirects,
                    max_body_bytes: v.max_body_bytes,
                    version: latest::http::HttpVersion::Any,
                }
            }
        }

        /// An older plugin is not told the answer's version or trailers.
        impl From<latest::http::Response> for http::Response {
            fn from(v: latest::http::Response) -> Self {
                Self {
                    status: v.status,
                    headers: list(v.headers),
                    body: v.body,
                    body_truncated: v.body_truncated,
                    elapsed_ms: v.elapsed_ms,
                    redirects: v.redirects,
                    final_url: v.final_url,
                    remote_address: v.remote_address,
                }
            }
        }

        twin_enum!(http::Error, latest::http::Error {} payload {
            Timeout, Dns, ConnectionRefused, Tls, TooManyRedirects, InvalidRequest, Denied, Other
        });

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

        impl From<types::PluginInfo> for latest::types::PluginInfo {
            fn from(v: types::PluginInfo) -> Self {
                let kind = v.kind.into();
                let (abilities, https_only) = super::abilities_before_0_3_0(kind, &v.name);
                Self {
                    name: v.name,
                    kind,
                    version: v.version,
                    description: v.description,
                    config_schema: v.config_schema,
                    capabilities: list(v.capabilities),
                    abilities,
                    https_only,
                }
            }
        }
    };
}
pub(crate) use shared_twins;

/// What every version module before the newest holds alike: `link`, the imports
/// (`types`, `http`, `net`'s functions, `tls`, `smtp`, `log`) served by the newest
/// implementation with their arguments and answers converted, and the bindings of the
/// exports (`MonitorBinding`, `KeptMonitor`, `ChannelBinding`) that speak the newest types.
/// For a module whose bindings are `monitor` and `channel`, with the interfaces named as
/// in [`shared_twins`].
macro_rules! older_version_glue {
    () => {
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
    };
}
pub(crate) use older_version_glue;

/// The supported version called `number`.
pub fn version(number: &str) -> Option<&'static Version> {
    VERSIONS.iter().find(|v| v.number == number)
}

/// The supported version numbers, e.g. for messages.
pub fn supported() -> Vec<&'static str> {
    VERSIONS.iter().map(|v| v.number).collect()
}

impl std::fmt::Debug for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "tocsin:plugin@{}", self.number)
    }
}
