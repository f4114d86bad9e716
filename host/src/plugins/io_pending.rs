//! Host interfaces whose contract is part of 0.1.0 but whose I/O this server version does
//! not perform yet (`net`, `tls`). A plugin that calls them gets a clear error
//! result, never a trap, so it can report the reason in its own outcome.

use super::bindings::{net, tls};
use super::state::CallState;

const PENDING: &str = "is not available in this server version";

impl net::Host for CallState {
    async fn resolve(
        &mut self,
        _hostname: String,
        _timeout_ms: u32,
    ) -> Result<Vec<String>, net::Error> {
        Err(net::Error::Other(format!("name resolution {PENDING}")))
    }

    async fn ping(&mut self, _req: net::PingRequest) -> Result<net::PingResult, net::Error> {
        Err(net::Error::Other(format!("ICMP ping {PENDING}")))
    }

    async fn tcp_connect(
        &mut self,
        _host: String,
        _port: u16,
        _timeout_ms: u32,
    ) -> Result<net::TcpConnectResult, net::Error> {
        Err(net::Error::Other(format!("TCP connect {PENDING}")))
    }
}

impl tls::Host for CallState {
    async fn inspect(
        &mut self,
        _req: tls::InspectRequest,
    ) -> Result<tls::InspectResult, tls::Error> {
        Err(tls::Error::Other(format!("TLS inspection {PENDING}")))
    }
}
