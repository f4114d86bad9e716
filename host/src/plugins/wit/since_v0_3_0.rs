//! Contract 0.3.0 (`wit/v0.3.0`), the newest: the host's imports implement it directly.
//! Changes from 0.2.0: `plugin-info.abilities` and `plugin-info.https-only`, what a channel
//! asks of the host (read in `plugins/abilities.rs`), and the `udp-socket` resource of
//! `net` (host side in `datagram.rs`) with the `udp` capability; the `pipeline` world, which
//! no older version has, and its `clock` import (host side in `clock.rs`).

use super::{
    CallFuture, ChannelContract, MonitorContract, MonitorInstance, PipelineContract, PipelineWorld,
    Version, export_call,
};
use crate::plugins::state::CallState;
use std::sync::Arc;
use wasmtime::Store;
use wasmtime::component::{HasSelf, Linker};

/// World `monitor`.
pub mod monitor {
    wasmtime::component::bindgen!({
        path: "../wit/v0.3.0",
        world: "monitor",
        imports: { default: async },
        exports: { default: async },
        with: {
            "tocsin:plugin/net.tcp-stream": crate::plugins::socket::TcpStream,
            "tocsin:plugin/net.udp-socket": crate::plugins::socket::UdpSocket,
        },
    });
}

/// World `channel`; its shared interfaces are the monitor world's.
pub mod channel {
    wasmtime::component::bindgen!({
        path: "../wit/v0.3.0",
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

/// World `pipeline`; its shared interfaces are the monitor world's.
pub mod pipeline {
    wasmtime::component::bindgen!({
        path: "../wit/v0.3.0",
        world: "pipeline",
        imports: { default: async },
        exports: { default: async },
        with: {
            "tocsin:plugin/types": super::monitor::tocsin::plugin::types,
            "tocsin:plugin/log": super::monitor::tocsin::plugin::log,
        },
    });
}

use channel::exports::tocsin::plugin::channel_plugin::{Failure, Notification, Receipt};
use monitor::exports::tocsin::plugin::monitor_plugin::{CheckOutcome, CheckRequest};
use monitor::tocsin::plugin::types::{FieldError, PluginInfo};
use pipeline::exports::tocsin::plugin::pipeline_plugin::{Alert, Decision};

pub const VERSION: Version = Version {
    number: "0.3.0",
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
    pipeline: Some(PipelineWorld {
        link: |linker| {
            pipeline::Pipeline::add_to_linker::<CallState, HasSelf<CallState>>(linker, |s| s)
        },
        bind: |linker, component| {
            Ok(Arc::new(PipelineBinding(pipeline::PipelinePre::new(
                linker.instantiate_pre(component)?,
            )?)))
        },
    }),
};

fn link(
    monitors: &mut Linker<CallState>,
    channels: &mut Linker<CallState>,
) -> wasmtime::Result<()> {
    monitor::Monitor::add_to_linker::<CallState, HasSelf<CallState>>(monitors, |s| s)?;
    channel::Channel::add_to_linker::<CallState, HasSelf<CallState>>(channels, |s| s)?;
    Ok(())
}

struct MonitorBinding(monitor::MonitorPre<CallState>);

impl MonitorContract for MonitorBinding {
    fn instantiate<'s>(&self, store: &'s mut Store<CallState>) -> CallFuture<'s, ()> {
        let pre = self.0.clone();
        Box::pin(async move {
            pre.instantiate_async(&mut *store).await?;
            Ok(())
        })
    }

    fn describe<'s>(&self, store: &'s mut Store<CallState>) -> CallFuture<'s, PluginInfo> {
        export_call!(self.0, store, tocsin_plugin_monitor_plugin.call_describe())
    }

    fn validate_config<'s>(
        &self,
        store: &'s mut Store<CallState>,
        config: String,
    ) -> CallFuture<'s, Result<String, Vec<FieldError>>> {
        export_call!(
            self.0,
            store,
            tocsin_plugin_monitor_plugin.call_validate_config(&config)
        )
    }

    fn check<'s>(
        &self,
        store: &'s mut Store<CallState>,
        request: CheckRequest,
    ) -> CallFuture<'s, CheckOutcome> {
        export_call!(
            self.0,
            store,
            tocsin_plugin_monitor_plugin.call_check(&request)
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
        request: CheckRequest,
    ) -> CallFuture<'s, CheckOutcome> {
        let instance = self.0.clone();
        Box::pin(async move {
            instance
                .tocsin_plugin_monitor_plugin()
                .call_check(&mut *store, &request)
                .await
        })
    }
}

struct ChannelBinding(channel::ChannelPre<CallState>);

impl ChannelContract for ChannelBinding {
    fn describe<'s>(&self, store: &'s mut Store<CallState>) -> CallFuture<'s, PluginInfo> {
        export_call!(self.0, store, tocsin_plugin_channel_plugin.call_describe())
    }

    fn validate_config<'s>(
        &self,
        store: &'s mut Store<CallState>,
        config: String,
    ) -> CallFuture<'s, Result<String, Vec<FieldError>>> {
        export_call!(
            self.0,
            store,
            tocsin_plugin_channel_plugin.call_validate_config(&config)
        )
    }

    fn deliver<'s>(
        &self,
        store: &'s mut Store<CallState>,
        notification: Notification,
    ) -> CallFuture<'s, Result<Receipt, Failure>> {
        export_call!(
            self.0,
            store,
            tocsin_plugin_channel_plugin.call_deliver(&notification)
        )
    }
}

struct PipelineBinding(pipeline::PipelinePre<CallState>);

impl PipelineContract for PipelineBinding {
    fn describe<'s>(&self, store: &'s mut Store<CallState>) -> CallFuture<'s, PluginInfo> {
        export_call!(self.0, store, tocsin_plugin_pipeline_plugin.call_describe())
    }

    fn validate_config<'s>(
        &self,
        store: &'s mut Store<CallState>,
        config: String,
    ) -> CallFuture<'s, Result<String, Vec<FieldError>>> {
        export_call!(
            self.0,
            store,
            tocsin_plugin_pipeline_plugin.call_validate_config(&config)
        )
    }

    fn decide<'s>(
        &self,
        store: &'s mut Store<CallState>,
        alert: Alert,
    ) -> CallFuture<'s, Decision> {
        export_call!(
            self.0,
            store,
            tocsin_plugin_pipeline_plugin.call_decide(&alert)
        )
    }
}
