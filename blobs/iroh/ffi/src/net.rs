//! Serving and fetching over the blobs protocol. The endpoint binds one
//! address: 127.0.0.1 unless the caller of serve names another, or a fetch
//! from a peer off loopback (or through a relay off loopback) needs the
//! unspecified address. It has no address lookup (DNS/pkarr/mDNS), no port
//! mapping, and no captive-portal checks; it uses a relay only when given
//! one: the one relay URL serve is given, or the one a fetched peer's
//! ticket names (RelayMode::Custom with that URL alone, never n0's public
//! relays), and then probes only that relay. Otherwise it reaches only the
//! addresses it is given.

use std::{
    collections::{HashMap, HashSet},
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::{Arc, RwLock},
};

use iroh::{
    endpoint::{presets, Connection, PortmapperConfig},
    protocol::{AcceptError, ProtocolHandler, Router},
    Endpoint, EndpointAddr, NetReportConfig, PublicKey, RelayMode, RelayUrl,
};
use iroh_blobs::{
    protocol::GetRequest,
    provider::events::{
        AbortReason, EventMask, EventSender, ObserveMode, ProviderMessage, RequestMode,
    },
    ticket::BlobTicket,
    BlobsProtocol, Hash,
};
use iroh_tickets::{endpoint::EndpointTicket, Ticket};

use crate::{
    errors::{map_get_error, Error, Result},
    export::chunk_ranges,
    store::{status, Store},
    E_INTERNAL, E_INVALID, E_IO, E_NETWORK, E_NOT_FOUND, E_REMOTE,
};

/// A store's network side: its endpoint, bound by the first serve or
/// fetch, the router that serves, and the connections that fetches reuse.
#[derive(Default)]
pub(crate) struct Net {
    endpoint: Option<Endpoint>,
    bound: Option<SocketAddr>,
    /// The one relay the endpoint uses, if any (fixed when it is bound).
    relay: Option<RelayUrl>,
    router: Option<Router>,
    /// The blobs served, if the router serves only some (allow_events).
    allow: Option<Allow>,
    conns: HashMap<PublicKey, Connection>,
    closed: bool,
}

/// The allow-list of a router serving only some blobs, shared with the
/// task that answers its requests: a change applies to the next request.
type Allow = Arc<RwLock<HashSet<Hash>>>;

/// The default binding: 127.0.0.1, an ephemeral port.
const LOOPBACK: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0);

/// How long serve waits for the endpoint to connect to its relay.
const RELAY_ONLINE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// Binds an endpoint on bind (one IP transport) with everything that would
/// reach another address on its own turned off, except relay: with one, the
/// endpoint uses that relay alone (RelayMode::Custom) and sends its net
/// reports' HTTPS latency probes to it (without them no home relay is
/// chosen); without one, relays are disabled and no probe is sent.
async fn bind_endpoint(bind: SocketAddr, relay: Option<RelayUrl>) -> Result<Endpoint> {
    let (mode, report) = match relay {
        Some(u) => {
            let mut c = NetReportConfig::minimal();
            c.https_probes = true;
            (RelayMode::custom([u]), c)
        }
        None => (RelayMode::Disabled, NetReportConfig::minimal()),
    };
    Endpoint::builder(presets::Minimal)
        .relay_mode(mode)
        .clear_address_lookup()
        .clear_ip_transports()
        .bind_addr(bind)
        .map_err(|e| Error::new(E_INTERNAL, format!("endpoint address: {e}")))?
        .portmapper_config(PortmapperConfig::Disabled)
        .net_report_config(report)
        .bind()
        .await
        .map_err(|e| Error::new(E_NETWORK, format!("binding endpoint: {e}")))
}

impl Net {
    /// The store's endpoint, bound to bind (with relay, if any) by the first
    /// call. A later call that needs another binding (want says whether the
    /// bound one will do) or another relay fails: a store has one endpoint.
    async fn endpoint(
        &mut self,
        bind: SocketAddr,
        relay: Option<&RelayUrl>,
        want: impl Fn(SocketAddr) -> bool,
    ) -> Result<Endpoint> {
        if self.closed {
            return Err(Error::new(E_INVALID, "store is closed"));
        }
        if let (Some(ep), Some(bound)) = (&self.endpoint, self.bound) {
            if self.relay.as_ref() != relay {
                return Err(Error::new(
                    E_INVALID,
                    format!(
                        "the store's endpoint is already bound with relay {}, not {}",
                        relay_name(self.relay.as_ref()),
                        relay_name(relay)
                    ),
                ));
            }
            if !want(bound) {
                return Err(Error::new(
                    E_INVALID,
                    format!("the store's endpoint is already bound to {bound}, not to an address that will do ({bind})"),
                ));
            }
            return Ok(ep.clone());
        }
        let ep = bind_endpoint(bind, relay.cloned()).await?;
        self.endpoint = Some(ep.clone());
        self.bound = Some(bind);
        self.relay = relay.cloned();
        Ok(ep)
    }

    /// Stops serving hashes at once, if the router serves only some: the
    /// next request for one is refused.
    pub(crate) fn forget(&mut self, hashes: &[Hash]) {
        if let Some(a) = &self.allow {
            let mut a = a.write().unwrap_or_else(|e| e.into_inner());
            for h in hashes {
                a.remove(h);
            }
        }
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

/// A relay, or "none", in a message.
fn relay_name(r: Option<&RelayUrl>) -> String {
    r.map_or_else(|| "none".to_string(), |u| u.to_string())
}

/// Parses serve's relay URL (empty: none). Only http and https URLs with a
/// host are taken.
pub(crate) fn parse_relay(s: &str) -> Result<Option<RelayUrl>> {
    if s.is_empty() {
        return Ok(None);
    }
    let u: RelayUrl = s
        .parse()
        .map_err(|e| Error::new(E_INVALID, format!("relay URL {s:?}: {e}")))?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none_or(str::is_empty) {
        return Err(Error::new(E_INVALID, format!("relay URL {s:?}: want http(s)://HOST[:PORT]")));
    }
    Ok(Some(u))
}

/// The socket the endpoint bound on ip.
fn bound_addr(ep: &Endpoint, ip: IpAddr) -> Result<SocketAddr> {
    ep.bound_sockets()
        .into_iter()
        .find(|a| a.ip() == ip)
        .ok_or_else(|| Error::new(E_INTERNAL, format!("endpoint has no socket on {ip}")))
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

/// Parses a peer's address: "<endpoint id hex>@<ip>:<port>" (as serve
/// returns it), an iroh endpoint ticket ("endpoint…") or an iroh-blobs blob
/// ticket ("blob…", as sendme prints; its hash, format and relay URLs are
/// ignored). An endpoint ticket may name one relay URL (the node serves
/// through that relay: the fetching endpoint then uses it, and only it); an
/// address must name at least one IP address or such a relay. An unspecified or multicast address is refused,
/// and so is a ticket naming more than one relay.
pub(crate) fn parse_addr(s: &str) -> Result<EndpointAddr> {
    let s = s.trim();
    let addr = if let Some((id, sa)) = s.split_once('@') {
        let id: PublicKey = id
            .parse()
            .map_err(|e| Error::new(E_INVALID, format!("address {s:?}: endpoint id: {e}")))?;
        let sa: SocketAddr = sa
            .parse()
            .map_err(|e| Error::new(E_INVALID, format!("address {s:?}: {e}")))?;
        EndpointAddr::new(id).with_ip_addr(sa)
    } else if s.starts_with(EndpointTicket::KIND) {
        EndpointTicket::decode_string(s)
            .map_err(|e| Error::new(E_INVALID, format!("endpoint ticket: {e}")))?
            .endpoint_addr()
            .clone()
    } else if s.starts_with(BlobTicket::KIND) {
        // sendme's tickets name n0's public relays by default: a blob
        // ticket's relays are dropped, so that only a relay a sop-pme
        // serve operator chose (an endpoint ticket's) is ever used.
        let a = BlobTicket::decode_string(s)
            .map_err(|e| Error::new(E_INVALID, format!("blob ticket: {e}")))?
            .addr()
            .clone();
        EndpointAddr::new(a.id).with_addrs(a.ip_addrs().copied().map(iroh::TransportAddr::Ip))
    } else {
        return Err(Error::new(
            E_INVALID,
            "address: want <id>@<ip>:<port>, an endpoint ticket or a blob ticket",
        ));
    };
    let ips: Vec<SocketAddr> = addr.ip_addrs().copied().collect();
    let relays: Vec<RelayUrl> = addr.relay_urls().cloned().collect();
    if relays.len() > 1 {
        return Err(Error::new(E_INVALID, "address: names more than one relay"));
    }
    for r in &relays {
        parse_relay(r.as_str())?;
    }
    if ips.is_empty() && relays.is_empty() {
        return Err(Error::new(E_INVALID, "address: names no IP address and no relay"));
    }
    for sa in &ips {
        if sa.ip().is_unspecified() || sa.ip().is_multicast() || sa.port() == 0 {
            return Err(Error::new(E_INVALID, format!("address: {sa} cannot be dialled")));
        }
    }
    Ok(EndpointAddr::new(addr.id).with_addrs(
        ips.into_iter()
            .map(iroh::TransportAddr::Ip)
            .chain(relays.into_iter().map(iroh::TransportAddr::Relay)),
    ))
}

/// The endpoint ticket ("endpoint…") of a peer's address, in any form
/// parse_addr takes.
pub(crate) fn ticket(s: &str) -> Result<String> {
    Ok(EndpointTicket::new(parse_addr(s)?).encode_string())
}

/// The relay a peer's address names, if any (parse_addr keeps at most one).
fn addr_relay(addr: &EndpointAddr) -> Option<RelayUrl> {
    addr.relay_urls().next().cloned()
}

/// Whether a relay URL's host is a loopback IP or localhost.
fn relay_on_loopback(u: &RelayUrl) -> bool {
    match u.host_str() {
        Some("localhost") => true,
        Some(h) => h
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// The binding a fetch from addr needs: 127.0.0.1 for a peer on loopback
/// (and a relay, if it names one, on loopback), else the unspecified
/// address of the peer's first address family (IPv4 for a relay alone).
fn fetch_bind(addr: &EndpointAddr) -> SocketAddr {
    let mut ips = addr.ip_addrs();
    match ips.find(|a| !a.ip().is_loopback()) {
        None if addr_relay(addr).is_none_or(|u| relay_on_loopback(&u)) => LOOPBACK,
        None => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        Some(a) if a.is_ipv4() => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        Some(_) => SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), 0),
    }
}

/// Parses serve's binding "<ip>:<port>" (port 0: ephemeral); empty means
/// 127.0.0.1:0. The IP must be one a peer can dial: not unspecified, not
/// multicast.
pub(crate) fn parse_bind(s: &str) -> Result<SocketAddr> {
    if s.is_empty() {
        return Ok(LOOPBACK);
    }
    let sa: SocketAddr = s
        .parse()
        .map_err(|e| Error::new(E_INVALID, format!("bind address {s:?}: {e} (want <ip>:<port>)")))?;
    if sa.ip().is_unspecified() || sa.ip().is_multicast() {
        return Err(Error::new(
            E_INVALID,
            format!("bind address {s:?}: name the address peers dial, not an unspecified or multicast one"),
        ));
    }
    Ok(sa)
}

/// The provider's events when only the blobs of allow may be fetched:
/// every get and observe request is put to a task that answers it from the
/// set (a request for a blob not in it, or for the children of a hash
/// sequence, is refused with iroh-blobs' permission error); get-many and
/// push requests are refused outright.
fn allow_events(allow: Allow) -> EventSender {
    let mask = EventMask {
        get: RequestMode::Intercept,
        get_many: RequestMode::Disabled,
        push: RequestMode::Disabled,
        observe: ObserveMode::Intercept,
        ..EventMask::DEFAULT
    };
    let (sender, mut rx) = EventSender::channel(64, mask);
    tokio::spawn(async move {
        let verdict = |ok: bool| if ok { Ok(()) } else { Err(AbortReason::Permission) };
        let allowed = |h: &Hash| allow.read().unwrap_or_else(|e| e.into_inner()).contains(h);
        while let Some(msg) = rx.recv().await {
            match msg {
                ProviderMessage::GetRequestReceived(m) => {
                    let r = &m.inner.request;
                    let ok = allowed(&r.hash) && r.ranges.is_blob();
                    m.tx.send(verdict(ok)).await.ok();
                }
                ProviderMessage::ObserveRequestReceived(m) => {
                    let ok = allowed(&m.inner.request.hash);
                    m.tx.send(verdict(ok)).await.ok();
                }
                _ => {}
            }
        }
    });
    sender
}

/// Serves the store, starting the router on the first call, and returns
/// the address "<endpoint id>@<ip>:<port>" of the endpoint bound to bind,
/// or, with a relay, its endpoint ticket naming the relay and that address
/// (the first form cannot carry a relay), once the endpoint is connected
/// to the relay (E_NETWORK if not within RELAY_ONLINE_TIMEOUT).
/// With allow, only those blobs are served (allow_events). A later call
/// replaces the allow-list, at once; whether the router serves every blob
/// or only those allowed is fixed by the first call (a later call that
/// asks for the other fails with E_INVALID).
pub(crate) async fn serve(
    s: &Store,
    bind: SocketAddr,
    relay: Option<RelayUrl>,
    allow: Option<HashSet<Hash>>,
) -> Result<String> {
    let mut net = s.net.lock().await;
    let ep = net
        .endpoint(bind, relay.as_ref(), |b| b.ip() == bind.ip() && (bind.port() == 0 || b.port() == bind.port()))
        .await?;
    if net.router.is_some() {
        match (&net.allow, allow) {
            (None, None) => {}
            (Some(a), Some(new)) => *a.write().unwrap_or_else(|e| e.into_inner()) = new,
            _ => {
                return Err(Error::new(
                    E_INVALID,
                    "the store already serves, with or without an allow-list: that cannot change",
                ))
            }
        }
    } else {
        let allow = allow.map(|a| Arc::new(RwLock::new(a)));
        net.allow = allow.clone();
        let blobs = Provider(BlobsProtocol::new(&s.fs, allow.map(allow_events)));
        let router = Router::builder(ep.clone())
            .accept(iroh_blobs::ALPN, blobs)
            .spawn();
        net.router = Some(router);
    }
    let sa = bound_addr(&ep, bind.ip())?;
    match relay {
        None => Ok(format!("{}@{}", ep.id(), sa)),
        Some(u) => {
            if tokio::time::timeout(RELAY_ONLINE_TIMEOUT, ep.online()).await.is_err() {
                return Err(Error::new(
                    E_NETWORK,
                    format!("no connection to the relay {u} within {RELAY_ONLINE_TIMEOUT:?}"),
                ));
            }
            let addr = EndpointAddr::new(ep.id()).with_ip_addr(sa).with_relay_url(u);
            Ok(EndpointTicket::new(addr).encode_string())
        }
    }
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
    let bind = fetch_bind(addr);
    let relay = addr_relay(addr);
    let ep = net
        .endpoint(bind, relay.as_ref(), |b| bind.ip().is_loopback() || !b.ip().is_loopback())
        .await?;
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
///
/// The provider ends a request with its internal-error code both when it
/// does not have the blob and when its copy fails verification (or its
/// store fails), so a remote failure (E_REMOTE) is told apart here: if this
/// store already knew the blob's size, proven by a verified last group the
/// peer sent, the peer has the blob and failed to read it (E_REMOTE); if
/// not, it is reported as not found (E_NOT_FOUND).
pub(crate) async fn fetch(
    s: &Store,
    addr: EndpointAddr,
    hash: Hash,
    groups: &[(u64, u64)],
) -> Result<u64> {
    let (_, known) = status(&s.fs, hash).await?;
    match fetch_groups(s, addr, hash, groups).await {
        Err(e) if e.code == E_REMOTE && known.is_none() => Err(Error::new(
            E_NOT_FOUND,
            format!("the remote node does not serve the blob: {}", e.msg),
        )),
        r => r,
    }
}

async fn fetch_groups(
    s: &Store,
    addr: EndpointAddr,
    hash: Hash,
    groups: &[(u64, u64)],
) -> Result<u64> {
    let (_, size) = status(&s.fs, hash).await?;
    let ranges = chunk_ranges(groups, size);
    let mut n = get_missing(s, &addr, GetRequest::blob_ranges(hash, ranges.clone())).await?;
    if size.is_none() {
        // The size was unknown, so a range past the end selected the last
        // chunk rather than the last group. Now that the size header has
        // arrived, get what is missing of the groups proper.
        let (_, size) = status(&s.fs, hash).await?;
        let want = chunk_ranges(groups, size);
        if want != ranges {
            n += get_missing(s, &addr, GetRequest::blob_ranges(hash, want)).await?;
        }
    }
    Ok(n)
}

/// Runs the part of req this store does not hold yet (none if it holds it
/// all) on the connection to addr, and returns the bytes read. A fetch
/// interrupted midway therefore resumes where it stopped: iroh-blobs keeps
/// every group it verified.
async fn get_missing(s: &Store, addr: &EndpointAddr, req: GetRequest) -> Result<u64> {
    let local =
        s.fs.remote()
            .local_for_request(req)
            .await
            .map_err(|e| Error::new(E_IO, format!("local ranges: {e:#}")))?;
    if local.is_complete() {
        return Ok(0);
    }
    get(s, addr, local.missing()).await
}
