//! The `log` host interface: plugin log lines join the server's log, tagged with the plugin.

use super::state::CallState;
use super::wit::log::{Host, Level};
use super::wit::types;

/// Longest log line kept from a plugin; the rest is cut.
const MAX_LINE: usize = 4096;

impl Host for CallState {
    async fn log(&mut self, level: Level, message: String) {
        let plugin = &*self.call.plugin;
        let mut message = message;
        if message.len() > MAX_LINE {
            let mut cut = MAX_LINE;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
        }
        match level {
            Level::Trace => tracing::trace!(plugin, "{message}"),
            Level::Debug => tracing::debug!(plugin, "{message}"),
            Level::Info => tracing::info!(plugin, "{message}"),
            Level::Warn => tracing::warn!(plugin, "{message}"),
            Level::Error => tracing::error!(plugin, "{message}"),
        }
    }
}

impl types::Host for CallState {}
