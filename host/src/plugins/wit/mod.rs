//! The plugin contract, one module per version (`since_v0_1_0.rs`, `since_v0_2_0.rs`),
//! each with the bindings generated from its frozen `wit/v<version>` folder. The host
//! implements the newest version's imports once (`http.rs`, `net.rs`, ...); an older
//! version's module maps its imports and exports onto the newest, so plugins built
//! against it keep loading. `latest` names the newest version.
//!
//! Adding a contract version means adding its `since_v*.rs` file, pointing `latest` at
//! it, and one line in [`VERSIONS`]; the plugin host's load, check and deliver code does
//! not change.

pub mod since_v0_1_0;
pub mod since_v0_2_0;

pub use since_v0_2_0 as latest;

pub use latest::channel::exports::tocsin::plugin::channel_plugin::{
    Failure as DeliveryFailure, Notification, Receipt,
};
pub use latest::channel::tocsin::plugin::smtp;
pub use latest::monitor::exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest};
pub use latest::monitor::tocsin::plugin::{http, log, net, tls, types};

use super::state::CallState;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use types::{FieldError, PluginInfo};
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
}

/// Every contract version this server loads, oldest first.
pub const VERSIONS: &[Version] = &[since_v0_1_0::VERSION, since_v0_2_0::VERSION];

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
