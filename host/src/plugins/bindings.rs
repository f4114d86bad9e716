//! Host-side bindings of the plugin contract, generated from `wit/`. One module per world
//! and contract version; the channel world reuses the monitor world's shared interfaces.

/// `tocsin:plugin@0.1.0`, world `monitor`.
pub mod monitor_v0_1 {
    wasmtime::component::bindgen!({
        path: "../wit/v0.1.0",
        world: "monitor",
        imports: { default: async },
        exports: { default: async },
    });
}

/// `tocsin:plugin@0.1.0`, world `channel`.
pub mod channel_v0_1 {
    wasmtime::component::bindgen!({
        path: "../wit/v0.1.0",
        world: "channel",
        imports: { default: async },
        exports: { default: async },
        with: {
            "tocsin:plugin/types": super::monitor_v0_1::tocsin::plugin::types,
            "tocsin:plugin/http": super::monitor_v0_1::tocsin::plugin::http,
            "tocsin:plugin/log": super::monitor_v0_1::tocsin::plugin::log,
        },
    });
}

pub use channel_v0_1::tocsin::plugin::smtp;
pub use monitor_v0_1::tocsin::plugin::{http, log, net, tls, types};
