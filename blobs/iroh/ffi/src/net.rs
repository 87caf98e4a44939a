//! Serving and fetching over the blobs protocol. The endpoint binds one
//! address: 127.0.0.1 unless the caller of serve names another, or a fetch
//! from a peer off loopback (or through a relay off loopback) needs the
//! unspecified address. It has no address lookup (no DNS, no mDNS, no pkarr
//! resolver), no port mapping, and no captive-portal checks; it uses a
//! relay only when given one: the one relay URL serve is given, or the one
//! a fetched peer's ticket names (RelayMode::Custom with that URL alone,
//! never n0's public relays), and then probes only that relay. It publishes
//! itself only when serve is given a discovery URL: then to that pkarr
//! relay alone (PkarrPublisher, never n0's DNS servers). Otherwise it
//! reaches only the addresses it is given. An endpoint id alone is resolved
//! to addresses only by resolve, from the pkarr relay its caller names.

use std::{
    collections::{HashMap, HashSet},
    net::{IpAddr, Ipv4Addr, SocketAddr},
    sync::{Arc, RwLock},
};

use iroh::{
    address_lookup::{AddrFilter, PkarrPublisher, PkarrRelayClient},
    dns::{DnsResolver, FallbackMode},
    endpoint::{presets, Connection, PortmapperConfig},
    endpoint_info::EndpointInfo,
    protocol::{AcceptError, ProtocolHandler, Router},
    tls::CaTlsConfig,
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
use url::Url;

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
    /// The pkarr relay the endpoint publishes itself to, if any (fixed when
    /// it is bound).
    discovery: Option<Url>,
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

/// How long serve waits for its discovery record to be readable from the
/// pkarr relay, and how often it looks.
const PUBLISH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
const PUBLISH_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// The DNS resolver of every endpoint and of resolve: the system's
/// nameservers only, never the public resolvers iroh-dns would otherwise
/// fall back to (FallbackMode::Never). It resolves only the host names of
/// the relay and pkarr relay URLs the caller gives.
fn dns_resolver() -> DnsResolver {
    DnsResolver::builder()
        .with_system_defaults()
        .with_fallback_mode(FallbackMode::Never)
        .build()
}

/// Binds an endpoint on bind (one IP transport) with everything that would
/// reach another address on its own turned off, except relay and
/// discovery. With a relay, the endpoint uses that relay alone
/// (RelayMode::Custom) and sends its net reports' HTTPS latency probes to it
/// (without them no home relay is chosen); without one, relays are disabled
/// and no probe is sent. With a discovery URL, the endpoint publishes its
/// id, relay and bound address (AddrFilter::unfiltered: iroh's default
/// publishes only the relay) as a signed pkarr packet to that pkarr relay
/// alone, whenever they change and every 5 minutes (iroh's
/// DEFAULT_REPUBLISH_INTERVAL); it resolves nothing.
async fn bind_endpoint(
    bind: SocketAddr,
    relay: Option<RelayUrl>,
    discovery: Option<Url>,
) -> Result<Endpoint> {
    let (mode, report) = match relay {
        Some(u) => {
            let mut c = NetReportConfig::minimal();
            c.https_probes = true;
            (RelayMode::custom([u]), c)
        }
        None => (RelayMode::Disabled, NetReportConfig::minimal()),
    };
    let mut b = Endpoint::builder(presets::Minimal)
        .relay_mode(mode)
        .clear_address_lookup()
        .dns_resolver(dns_resolver());
    if let Some(u) = discovery {
        b = b.address_lookup(PkarrPublisher::builder(u).addr_filter(AddrFilter::unfiltered()));
    }
    b.clear_ip_transports()
        .bind_addr(bind)
        .map_err(|e| Error::new(E_INTERNAL, format!("endpoint address: {e}")))?
        .portmapper_config(PortmapperConfig::Disabled)
        .net_report_config(report)
        .bind()
        .await
        .map_err(|e| Error::new(E_NETWORK, format!("binding endpoint: {e}")))
}

impl Net {
    /// The store's endpoint, bound to bind (with relay, if any, and
    /// publishing to discovery's pkarr relay, if Some(Some)) by the first
    /// call. A later call that needs another binding (want says whether the
    /// bound one will do) or another relay fails: a store has one endpoint;
    /// so does a later call whose discovery is Some and differs (a fetch
    /// passes None: it does not care whether the endpoint publishes).
    async fn endpoint(
        &mut self,
        bind: SocketAddr,
        relay: Option<&RelayUrl>,
        discovery: Option<Option<&Url>>,
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
            if let Some(d) = discovery {
                if self.discovery.as_ref() != d {
                    return Err(Error::new(
                        E_INVALID,
                        format!(
                            "the store's endpoint is already bound with discovery {}, not {}",
                            url_name(self.discovery.as_ref()),
                            url_name(d)
                        ),
                    ));
                }
            }
            if !want(bound) {
                return Err(Error::new(
                    E_INVALID,
                    format!("the store's endpoint is already bound to {bound}, not to an address that will do ({bind})"),
                ));
            }
            return Ok(ep.clone());
        }
        let discovery = discovery.flatten().cloned();
        let ep = bind_endpoint(bind, relay.cloned(), discovery.clone()).await?;
        self.endpoint = Some(ep.clone());
        self.bound = Some(bind);
        self.relay = relay.cloned();
        self.discovery = discovery;
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

/// A URL, or "none", in a message.
fn url_name(u: Option<&Url>) -> String {
    u.map_or_else(|| "none".to_string(), |u| u.to_string())
}

/// Parses a discovery URL (empty: none): the http(s) URL of a pkarr relay
/// (iroh-dns-server serves one at /pkarr), to which "/<endpoint id in
/// z-base-32>" is appended. It must name a host, and no query, fragment or
/// user info.
pub(crate) fn parse_discovery(s: &str) -> Result<Option<Url>> {
    if s.is_empty() {
        return Ok(None);
    }
    let u: Url = s
        .parse()
        .map_err(|e| Error::new(E_INVALID, format!("discovery URL {s:?}: {e}")))?;
    if !matches!(u.scheme(), "http" | "https")
        || u.host_str().is_none_or(str::is_empty)
        || u.cannot_be_a_base()
        || u.query().is_some()
        || u.fragment().is_some()
        || !u.username().is_empty()
        || u.password().is_some()
    {
        return Err(Error::new(
            E_INVALID,
            format!("discovery URL {s:?}: want http(s)://HOST[:PORT][/PATH]"),
        ));
    }
    Ok(Some(u))
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
        return Err(Error::new(
            E_INVALID,
            format!("relay URL {s:?}: want http(s)://HOST[:PORT]"),
        ));
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
            "address: want <id>@<ip>:<port>, an endpoint ticket or a blob ticket (an endpoint id alone must first be resolved through a discovery URL)",
        ));
    };
    check_addr(addr)
}

/// The checks of parse_addr, on an address however it was learnt (a
/// ticket, or a discovery record): at most one relay, http(s); at least one
/// IP address or a relay; no IP address that cannot be dialled.
fn check_addr(addr: EndpointAddr) -> Result<EndpointAddr> {
    let ips: Vec<SocketAddr> = addr.ip_addrs().copied().collect();
    let relays: Vec<RelayUrl> = addr.relay_urls().cloned().collect();
    if relays.len() > 1 {
        return Err(Error::new(E_INVALID, "address: names more than one relay"));
    }
    for r in &relays {
        parse_relay(r.as_str())?;
    }
    if ips.is_empty() && relays.is_empty() {
        return Err(Error::new(
            E_INVALID,
            "address: names no IP address and no relay",
        ));
    }
    for sa in &ips {
        if sa.ip().is_unspecified() || sa.ip().is_multicast() || sa.port() == 0 {
            return Err(Error::new(
                E_INVALID,
                format!("address: {sa} cannot be dialled"),
            ));
        }
    }
    Ok(EndpointAddr::new(addr.id).with_addrs(
        ips.into_iter()
            .map(iroh::TransportAddr::Ip)
            .chain(relays.into_iter().map(iroh::TransportAddr::Relay)),
    ))
}

/// The endpoint id (hex) of a peer's address, in any form parse_addr
/// takes, or of an endpoint id alone.
pub(crate) fn endpoint_id(s: &str) -> Result<String> {
    if let Ok(id) = s.trim().parse::<PublicKey>() {
        return Ok(id.to_string());
    }
    Ok(parse_addr(s)?.id.to_string())
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
    let sa: SocketAddr = s.parse().map_err(|e| {
        Error::new(
            E_INVALID,
            format!("bind address {s:?}: {e} (want <ip>:<port>)"),
        )
    })?;
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
        let verdict = |ok: bool| {
            if ok {
                Ok(())
            } else {
                Err(AbortReason::Permission)
            }
        };
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
/// to the relay (E_NETWORK if not within RELAY_ONLINE_TIMEOUT). With a
/// discovery URL, the endpoint publishes itself to that pkarr relay
/// (bind_endpoint), and the first serve returns only once the relay gives
/// back a record naming that address (and relay): E_NETWORK if not within
/// PUBLISH_TIMEOUT (a later call, which only replaces the allow-list, does
/// not ask the pkarr relay again).
/// With allow, only those blobs are served (allow_events). A later call
/// replaces the allow-list, at once; whether the router serves every blob
/// or only those allowed is fixed by the first call (a later call that
/// asks for the other fails with E_INVALID).
pub(crate) async fn serve(
    s: &Store,
    bind: SocketAddr,
    relay: Option<RelayUrl>,
    discovery: Option<Url>,
    allow: Option<HashSet<Hash>>,
) -> Result<String> {
    let mut net = s.net.lock().await;
    let ep = net
        .endpoint(bind, relay.as_ref(), Some(discovery.as_ref()), |b| {
            b.ip() == bind.ip() && (bind.port() == 0 || b.port() == bind.port())
        })
        .await?;
    let first = net.router.is_none();
    if !first {
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
    let mut addr = EndpointAddr::new(ep.id()).with_ip_addr(sa);
    if let Some(u) = &relay {
        if tokio::time::timeout(RELAY_ONLINE_TIMEOUT, ep.online())
            .await
            .is_err()
        {
            return Err(Error::new(
                E_NETWORK,
                format!("no connection to the relay {u} within {RELAY_ONLINE_TIMEOUT:?}"),
            ));
        }
        addr = addr.with_relay_url(u.clone());
    }
    if let (true, Some(u)) = (first, &discovery) {
        await_published(&ep, u, &addr).await?;
    }
    match relay {
        None => Ok(format!("{}@{}", ep.id(), sa)),
        Some(_) => Ok(EndpointTicket::new(addr).encode_string()),
    }
}

/// Waits until the pkarr relay at url gives back the endpoint's signed
/// record naming every address of want, looking every PUBLISH_POLL;
/// E_NETWORK (with the last failure) if not within PUBLISH_TIMEOUT.
async fn await_published(ep: &Endpoint, url: &Url, want: &EndpointAddr) -> Result<()> {
    let dns = ep
        .dns_resolver()
        .map_err(|e| Error::new(E_INVALID, format!("endpoint: {e}")))?
        .clone();
    let client = PkarrRelayClient::new(url.clone(), ep.tls_config().clone(), dns);
    let deadline = tokio::time::Instant::now() + PUBLISH_TIMEOUT;
    loop {
        let last = match client.resolve(ep.id()).await {
            Ok(p) => match EndpointInfo::from_pkarr_signed_packet(&p) {
                Ok(info) => {
                    let got = info.into_endpoint_addr();
                    if want.addrs.iter().all(|a| got.addrs.contains(a)) {
                        return Ok(());
                    }
                    format!("its record names {:?}", got.addrs)
                }
                Err(e) => format!("its record: {e}"),
            },
            Err(e) => format!("{e:#}"),
        };
        if tokio::time::Instant::now() + PUBLISH_POLL > deadline {
            return Err(Error::new(
                E_NETWORK,
                format!("discovery: the pkarr relay {url} did not give back this node's record within {PUBLISH_TIMEOUT:?}: {last}"),
            ));
        }
        tokio::time::sleep(PUBLISH_POLL).await;
    }
}

/// Resolves the endpoint id id (hex, as serve prints it)
/// through the pkarr relay at url: one HTTP GET of <url>/<id in z-base-32>,
/// whose answer must be a packet signed by id's key (iroh checks the
/// signature), and returns the endpoint ticket of the addresses it names
/// (checked as a ticket's are: at most one relay, at least one address
/// that can be dialled). The relay operator can withhold or replay an old
/// record, not forge one; and a connection to these addresses still proves
/// the peer holds id's key (QUIC/TLS with raw public keys), and every byte
/// fetched is still verified against its hash. A relay that cannot be
/// reached, or has no record of id, is E_NETWORK (iroh's error does not
/// tell the two apart); a record naming no address, E_NOT_FOUND.
pub(crate) async fn resolve(id: &str, url: Url) -> Result<String> {
    let id: PublicKey = id
        .trim()
        .parse()
        .map_err(|e| Error::new(E_INVALID, format!("endpoint id {id:?}: {e}")))?;
    let tls = CaTlsConfig::default()
        .client_config(iroh::tls::default_provider())
        .map_err(|e| Error::new(E_INTERNAL, format!("TLS configuration: {e}")))?;
    let client = PkarrRelayClient::new(url.clone(), tls, dns_resolver());
    let packet = client
        .resolve(id)
        .await
        .map_err(|e| Error::new(E_NETWORK, format!("discovery: looking up {id} at {url} (no record of it there, or the pkarr relay could not be reached): {e:#}")))?;
    let info = EndpointInfo::from_pkarr_signed_packet(&packet).map_err(|e| {
        Error::new(
            E_NETWORK,
            format!("discovery: the record of {id} at {url}: {e}"),
        )
    })?;
    let addrs = info.into_endpoint_addr().addrs;
    if addrs.is_empty() {
        return Err(Error::new(
            E_NOT_FOUND,
            format!("discovery: the record of {id} at {url} names no address"),
        ));
    }
    let addr = check_addr(EndpointAddr::new(id).with_addrs(addrs)).map_err(|e| {
        Error::new(
            e.code,
            format!("discovery: the record of {id} at {url}: {}", e.msg),
        )
    })?;
    Ok(EndpointTicket::new(addr).encode_string())
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
        .endpoint(bind, relay.as_ref(), None, |b| {
            bind.ip().is_loopback() || !b.ip().is_loopback()
        })
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
    let id = conn.stable_id();
    match s.fs.remote().execute_get(conn, req).complete().await {
        Ok(stats) => Ok(stats.total_bytes_read()),
        Err(e) => {
            // Do not reuse a connection that failed mid-request; but do not
            // close it either: other gets on it (other objects, fetched
            // concurrently) would fail with this one, reported against an
            // object the peer serves well. It closes once the last get
            // using it drops it.
            let mut net = s.net.lock().await;
            if net.conns.get(&addr.id).is_some_and(|c| c.stable_id() == id) {
                net.conns.remove(&addr.id);
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
