//! Serving and fetching over the blobs protocol, on loopback only: the
//! endpoint binds 127.0.0.1, has no relays, no address lookup
//! (DNS/pkarr/mDNS), no port mapping, and net reports without HTTPS probes
//! or captive-portal checks.

use std::{
    collections::HashMap,
    net::{IpAddr, Ipv4Addr, SocketAddr},
};

use iroh::{
    endpoint::{presets, Connection, PortmapperConfig},
    protocol::{AcceptError, ProtocolHandler, Router},
    Endpoint, EndpointAddr, NetReportConfig, PublicKey, RelayMode,
};
use iroh_blobs::{protocol::GetRequest, BlobsProtocol, Hash};

use crate::{
    errors::{map_get_error, Error, Result},
    export::chunk_ranges,
    store::{status, Store},
    E_INTERNAL, E_INVALID, E_IO, E_NETWORK,
};

/// A store's network side: its endpoint, bound by the first serve or
/// fetch, the router that serves, and the connections that fetches reuse.
#[derive(Default)]
pub(crate) struct Net {
    endpoint: Option<Endpoint>,
    router: Option<Router>,
    conns: HashMap<PublicKey, Connection>,
    closed: bool,
}

/// Binds an endpoint on 127.0.0.1 with everything that would reach another
/// address turned off.
async fn bind_loopback_endpoint() -> Result<Endpoint> {
    Endpoint::builder(presets::Minimal)
        .relay_mode(RelayMode::Disabled)
        .clear_address_lookup()
        .clear_ip_transports()
        .bind_addr(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0))
        .map_err(|e| Error::new(E_INTERNAL, format!("endpoint address: {e}")))?
        .portmapper_config(PortmapperConfig::Disabled)
        .net_report_config(NetReportConfig::minimal())
        .bind()
        .await
        .map_err(|e| Error::new(E_NETWORK, format!("binding endpoint: {e}")))
}

impl Net {
    async fn endpoint(&mut self) -> Result<Endpoint> {
        if self.closed {
            return Err(Error::new(E_INVALID, "store is closed"));
        }
        if let Some(ep) = &self.endpoint {
            return Ok(ep.clone());
        }
        let ep = bind_loopback_endpoint().await?;
        self.endpoint = Some(ep.clone());
        Ok(ep)
    }

    /// Closes the connections, stops serving and closes the endpoint; later
    /// calls fail. Returns what failed on the way.
    pub(crate) async fn close(&mut self) -> Vec<String> {
        let mut msgs = Vec::new();
        self.closed = true;
        for (_, c) in self.conns.drain() {
            c.close(0u32.into(), b"closing");
        }
        if let Some(r) = self.router.take() {
            if let Err(e) = r.shutdown().await {
                msgs.push(format!("router shutdown: {e}"));
            }
        }
        if let Some(ep) = self.endpoint.take() {
            ep.close().await;
        }
        msgs
    }
}

fn loopback_addr(ep: &Endpoint) -> Result<SocketAddr> {
    ep.bound_sockets()
        .into_iter()
        .find(|a| a.ip() == IpAddr::V4(Ipv4Addr::LOCALHOST))
        .ok_or_else(|| Error::new(E_INTERNAL, "endpoint has no 127.0.0.1 socket"))
}

/// The blobs protocol handler, except that shutting the router down leaves
/// the store open: sop_iroh_store_close shuts it down last.
#[derive(Debug, Clone)]
struct Provider(BlobsProtocol);

impl ProtocolHandler for Provider {
    async fn accept(&self, conn: Connection) -> std::result::Result<(), AcceptError> {
        self.0.accept(conn).await
    }
}

/// Parses "<endpoint id hex>@<ip>:<port>"; only loopback addresses are accepted.
pub(crate) fn parse_addr(s: &str) -> Result<EndpointAddr> {
    let (id, sa) = s
        .split_once('@')
        .ok_or_else(|| Error::new(E_INVALID, format!("address {s:?}: want <id>@<ip>:<port>")))?;
    let id: PublicKey = id
        .parse()
        .map_err(|e| Error::new(E_INVALID, format!("address {s:?}: endpoint id: {e}")))?;
    let sa: SocketAddr = sa
        .parse()
        .map_err(|e| Error::new(E_INVALID, format!("address {s:?}: {e}")))?;
    if !sa.ip().is_loopback() {
        return Err(Error::new(
            E_INVALID,
            format!("address {s:?}: only loopback addresses are allowed"),
        ));
    }
    Ok(EndpointAddr::new(id).with_ip_addr(sa))
}

/// Serves the store, starting the router on the first call, and returns
/// the address "<endpoint id>@127.0.0.1:<port>".
pub(crate) async fn serve(s: &Store) -> Result<String> {
    let mut net = s.net.lock().await;
    let ep = net.endpoint().await?;
    if net.router.is_none() {
        let blobs = Provider(BlobsProtocol::new(&s.fs, None));
        let router = Router::builder(ep.clone())
            .accept(iroh_blobs::ALPN, blobs)
            .spawn();
        net.router = Some(router);
    }
    let sa = loopback_addr(&ep)?;
    Ok(format!("{}@{}", ep.id(), sa))
}

/// A connection to the node at addr: a cached one, or a new one from this
/// store's endpoint.
async fn connection(s: &Store, addr: &EndpointAddr) -> Result<Connection> {
    let mut net = s.net.lock().await;
    if let Some(c) = net.conns.get(&addr.id) {
        if c.close_reason().is_none() {
            return Ok(c.clone());
        }
    }
    let ep = net.endpoint().await?;
    let c = ep
        .connect(addr.clone(), iroh_blobs::ALPN)
        .await
        .map_err(|e| Error::new(E_NETWORK, format!("connecting: {e:#}")))?;
    net.conns.insert(addr.id, c.clone());
    Ok(c)
}

/// Runs one get request on the connection to addr and returns the bytes read.
async fn get(s: &Store, addr: &EndpointAddr, req: GetRequest) -> Result<u64> {
    let conn = connection(s, addr).await?;
    match s.fs.remote().execute_get(conn, req).complete().await {
        Ok(stats) => Ok(stats.total_bytes_read()),
        Err(e) => {
            // Do not reuse a connection that failed mid-request.
            let mut net = s.net.lock().await;
            if let Some(c) = net.conns.remove(&addr.id) {
                c.close(0u32.into(), b"get failed");
            }
            Err(map_get_error(e))
        }
    }
}

/// Fetches the chunk groups of hash in groups from addr, as sop_iroh_fetch.
pub(crate) async fn fetch(
    s: &Store,
    addr: EndpointAddr,
    hash: Hash,
    groups: &[(u64, u64)],
) -> Result<u64> {
    let (_, size) = status(&s.fs, hash).await?;
    let ranges = chunk_ranges(groups, size);
    let mut n = get(s, &addr, GetRequest::blob_ranges(hash, ranges.clone())).await?;
    if size.is_none() {
        // The size was unknown, so a range past the end selected the last
        // chunk rather than the last group. Now that the size header has
        // arrived, get what is missing of the groups proper.
        let (_, size) = status(&s.fs, hash).await?;
        let want = chunk_ranges(groups, size);
        if want != ranges {
            let local =
                s.fs.remote()
                    .local_for_request(GetRequest::blob_ranges(hash, want))
                    .await
                    .map_err(|e| Error::new(E_IO, format!("local ranges: {e:#}")))?;
            if !local.is_complete() {
                n += get(s, &addr, local.missing()).await?;
            }
        }
    }
    Ok(n)
}
