//! C ABI over iroh-blobs for the Go package `github.com/sovm/sop-pme/blobs/iroh`.
//!
//! The ABI is declared in `sop_iroh.h` beside this crate; keep the two in step
//! and bump `SOP_IROH_ABI_VERSION` (and the `sop_iroh_abi_vN` symbol) on any
//! change, so that a Go package built against another header fails to link.
//!
//! Rules this file keeps (see the project's notes on linking Rust into Go):
//! - every exported function runs inside `catch_unwind`; a panic becomes
//!   `SOP_IROH_E_PANIC` with its message, never an unwind across `extern "C"`;
//! - one global tokio runtime, entered with `block_on` once per call; no
//!   callbacks into Go (a streaming export is a cursor that Go pulls from);
//! - memory handed to Go is freed only by `sop_iroh_free`;
//! - no signal handlers (no tokio `signal` or `process`);
//! - byte reads are BAO proofs from `export_bao` (validated against the hash),
//!   never `export_ranges`, `reader()` or any other unverified read;
//! - networking is loopback only: the endpoint binds 127.0.0.1, has no relays,
//!   no address lookup (DNS/pkarr/mDNS), no port mapping, and net reports
//!   without HTTPS probes or captive-portal checks.

use std::{
    collections::HashMap,
    ffi::c_char,
    future::Future,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    panic::{catch_unwind, AssertUnwindSafe},
    path::PathBuf,
    pin::Pin,
    sync::{Arc, Mutex, MutexGuard, OnceLock, Weak},
    task::Poll,
    time::Duration,
};

use iroh::{
    endpoint::{presets, Connection, PortmapperConfig},
    protocol::{AcceptError, ProtocolHandler, Router},
    Endpoint, EndpointAddr, NetReportConfig, PublicKey, RelayMode,
};
use iroh_blobs::{
    api::blobs::{AddPathOptions, BlobStatus, EncodedItem, ExportBaoOptions, ImportMode},
    get::{
        fsm::{AtBlobHeaderNextError, DecodeError},
        GetError,
    },
    protocol::{ChunkRanges, ChunkRangesExt, GetRequest},
    store::fs::FsStore,
    BlobFormat, BlobsProtocol, Hash,
};
use n0_future::{Stream, StreamExt};

/// The ABI version; `sop_iroh.h` declares the same number.
pub const SOP_IROH_ABI_VERSION: u32 = 2;

// Result codes; `sop_iroh.h` declares the same values.
const OK: i32 = 0;
const E_INTERNAL: i32 = 1;
const E_INVALID: i32 = 2;
const E_NOT_FOUND: i32 = 3;
const E_CORRUPT: i32 = 4;
const E_HASH_MISMATCH: i32 = 5;
const E_IO: i32 = 6;
const E_NETWORK: i32 = 7;
const E_TIMEOUT: i32 = 8;
const E_PANIC: i32 = 9;

/// BLAKE3 chunks per chunk group: iroh-blobs' IROH_BLOCK_SIZE (16 KiB).
const GROUP_CHUNKS: u64 = 16;
const GROUP_BYTES: u64 = GROUP_CHUNKS * 1024;

/// Capacity, in items, of the channel that iroh-blobs' store actor fills for an
/// export (iroh-blobs' default is 32). Items are a 64-byte parent pair or a
/// leaf of at most one 16 KiB group, so the channel holds at most 2 MiB (about
/// 1 MiB, as leaves and parents alternate), whatever the range's size; it
/// lets the store read and validate ahead while the caller consumes, with
/// fewer cross-thread wake-ups. On a 256 MiB verify through a cursor: 32
/// items ≈ 1.67 GB/s, 128 ≈ 1.81 GB/s, 512 ≈ 1.9 GB/s (and 8 MiB more RSS).
const EXPORT_CHANNEL_ITEMS: usize = 128;

/// Referenced from the Go package's cgo preamble: a library without this
/// symbol (another ABI version) fails to link.
#[no_mangle]
pub extern "C" fn sop_iroh_abi_v2() -> u32 {
    catch_unwind(|| SOP_IROH_ABI_VERSION).unwrap_or(0)
}

#[derive(Clone)]
struct Error {
    code: i32,
    msg: String,
}

impl Error {
    fn new(code: i32, msg: impl Into<String>) -> Self {
        Error {
            code,
            msg: msg.into(),
        }
    }
}

type Result<T> = std::result::Result<T, Error>;

/// Writes msg into the caller's buffer, truncated on a UTF-8 boundary and
/// NUL-terminated.
unsafe fn write_msg(buf: *mut c_char, cap: usize, msg: &str) {
    if buf.is_null() || cap == 0 {
        return;
    }
    let mut n = msg.len().min(cap - 1);
    while !msg.is_char_boundary(n) {
        n -= 1;
    }
    std::ptr::copy_nonoverlapping(msg.as_ptr(), buf as *mut u8, n);
    *buf.add(n) = 0;
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// Runs f, catching panics, and reports its result as a code plus message.
unsafe fn guard(err: *mut c_char, err_cap: usize, f: impl FnOnce() -> Result<()>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            write_msg(err, err_cap, "");
            OK
        }
        Ok(Err(e)) => {
            write_msg(err, err_cap, &e.msg);
            e.code
        }
        Err(p) => {
            write_msg(
                err,
                err_cap,
                &format!("panic in sop_iroh: {}", panic_message(&*p)),
            );
            E_PANIC
        }
    }
}

fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("sop-iroh")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| Error::new(E_INTERNAL, format!("starting tokio runtime: {e}")))
}

fn block_on<F: std::future::Future>(f: F) -> Result<F::Output> {
    Ok(runtime()?.block_on(f))
}

/// Like block_on, with a time limit unless timeout_ms is 0.
fn block_on_timeout<T>(
    timeout_ms: u64,
    f: impl std::future::Future<Output = Result<T>>,
) -> Result<T> {
    block_on(async move {
        if timeout_ms == 0 {
            return f.await;
        }
        match tokio::time::timeout(Duration::from_millis(timeout_ms), f).await {
            Ok(r) => r,
            Err(_) => Err(Error::new(
                E_TIMEOUT,
                format!("timed out after {timeout_ms} ms"),
            )),
        }
    })?
}

unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Error::new(E_INVALID, "null pointer with non-zero length"));
    }
    Ok(std::slice::from_raw_parts(ptr, len))
}

unsafe fn string(ptr: *const u8, len: usize, what: &str) -> Result<String> {
    let b = bytes(ptr, len)?;
    String::from_utf8(b.to_vec()).map_err(|_| Error::new(E_INVALID, format!("{what} is not UTF-8")))
}

unsafe fn hash_arg(ptr: *const u8) -> Result<Hash> {
    if ptr.is_null() {
        return Err(Error::new(E_INVALID, "null hash"));
    }
    let mut h = [0u8; 32];
    std::ptr::copy_nonoverlapping(ptr, h.as_mut_ptr(), 32);
    Ok(Hash::from_bytes(h))
}

/// Reads n (offset, length) byte-range pairs and returns the half-open ranges
/// of 16 KiB chunk-group indexes that they intersect.
unsafe fn group_ranges(ranges: *const u64, n: usize) -> Result<Vec<(u64, u64)>> {
    if n == 0 {
        return Err(Error::new(E_INVALID, "no ranges"));
    }
    if ranges.is_null() {
        return Err(Error::new(E_INVALID, "null ranges"));
    }
    let pairs = std::slice::from_raw_parts(ranges, 2 * n);
    let mut out = Vec::with_capacity(n);
    for p in pairs.chunks_exact(2) {
        let (off, len) = (p[0], p[1]);
        if len == 0 {
            return Err(Error::new(E_INVALID, "empty range"));
        }
        let end = off.saturating_add(len);
        out.push((off / GROUP_BYTES, end.div_ceil(GROUP_BYTES)));
    }
    Ok(out)
}

/// Turns group ranges into chunk ranges. With the blob's size known, a range
/// wholly at or past the end becomes the last group, and a range straddling
/// the end is clipped to it. (Left to itself, bao-tree maps a range past the
/// end to the last *chunk*, and when the last group is full that chunk comes
/// with parents inside the group, which is not the group-level encoding.)
fn chunk_ranges(groups: &[(u64, u64)], size: Option<u64>) -> ChunkRanges {
    let mut out = ChunkRanges::empty();
    for &(g0, g1) in groups {
        let (g0, g1) = match size {
            Some(size) => {
                let n = size.div_ceil(GROUP_BYTES).max(1);
                if g0 >= n {
                    (n - 1, n)
                } else {
                    (g0, g1.min(n))
                }
            }
            None => (g0, g1),
        };
        out |=
            ChunkRanges::chunks(g0.saturating_mul(GROUP_CHUNKS)..g1.saturating_mul(GROUP_CHUNKS));
    }
    out
}

/// The blob's status in the store, and its size if the store knows it.
async fn status(fs: &FsStore, hash: Hash) -> Result<(BlobStatus, Option<u64>)> {
    let st = fs
        .blobs()
        .status(hash)
        .await
        .map_err(|e| Error::new(E_IO, format!("status: {e}")))?;
    let size = match st {
        BlobStatus::Complete { size } => Some(size),
        BlobStatus::Partial { size } => size,
        BlobStatus::NotFound => None,
    };
    Ok((st, size))
}

/// Hands a byte vector to the caller; freed by sop_iroh_free.
unsafe fn give(v: Vec<u8>, out_ptr: *mut *mut u8, out_len: *mut usize) -> Result<()> {
    if out_ptr.is_null() || out_len.is_null() {
        return Err(Error::new(E_INVALID, "null output pointer"));
    }
    let b = v.into_boxed_slice();
    let len = b.len();
    let p = Box::into_raw(b) as *mut u8;
    *out_ptr = p;
    *out_len = len;
    Ok(())
}

/// An open store: an iroh-blobs FsStore, and the endpoint once the store
/// serves or fetches.
pub struct SopIrohStore {
    fs: FsStore,
    net: tokio::sync::Mutex<Net>,
    /// The store's streaming exports, so that closing the store can cancel
    /// those still open. A cursor does not refer to the store: it owns its
    /// stream, and outlives the store if need be.
    exports: Mutex<Vec<Weak<Mutex<Export>>>>,
}

#[derive(Default)]
struct Net {
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
fn parse_addr(s: &str) -> Result<EndpointAddr> {
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

unsafe fn store_ref<'a>(s: *const SopIrohStore) -> Result<&'a SopIrohStore> {
    s.as_ref()
        .ok_or_else(|| Error::new(E_INVALID, "null store"))
}

fn map_encode_error(e: &bao_tree::io::EncodeError) -> Error {
    use bao_tree::io::EncodeError as E;
    match e {
        E::ParentHashMismatch(_) | E::LeafHashMismatch(_) | E::SizeMismatch => {
            Error::new(E_CORRUPT, format!("blob data failed verification: {e}"))
        }
        E::Io(io) if io.kind() == std::io::ErrorKind::NotFound => {
            Error::new(E_NOT_FOUND, format!("blob not found: {io}"))
        }
        E::Io(io) if io.kind() == std::io::ErrorKind::InvalidData => {
            Error::new(E_CORRUPT, format!("blob data failed verification: {io}"))
        }
        _ => Error::new(E_IO, format!("export_bao: {e}")),
    }
}

/// Locks m, and recovers it if a panic (caught and reported) poisoned it.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| {
        m.clear_poison();
        e.into_inner()
    })
}

/// Locks an export; one that a panic interrupted has failed.
fn lock_export(m: &Mutex<Export>) -> MutexGuard<'_, Export> {
    m.lock().unwrap_or_else(|e| {
        m.clear_poison();
        let mut g = e.into_inner();
        g.finish(Err(Error::new(
            E_INTERNAL,
            "the export failed after a panic",
        )));
        g
    })
}

type ItemStream = Pin<Box<dyn Stream<Item = EncodedItem> + Send>>;

/// An export_bao in progress, read as bytes of the encoding: the stream of
/// iroh-blobs' items, the unread bytes of the current item, and how the
/// stream ended once it has.
struct Export {
    stream: Option<ItemStream>,
    pending: bytes::Bytes,
    /// Some(Ok) once the stream has ended cleanly, Some(Err) once it failed
    /// or was cancelled; sticky.
    end: Option<Result<()>>,
}

impl Export {
    /// Starts export_bao of the chunk groups of hash in groups (clipped to
    /// the blob as chunk_ranges does) with a channel of cap items, and
    /// reads its first item, the size, so that a missing blob or a failure
    /// to start is reported here.
    async fn open(fs: &FsStore, hash: Hash, groups: &[(u64, u64)], cap: usize) -> Result<Self> {
        let (st, size) = status(fs, hash).await?;
        if matches!(st, BlobStatus::NotFound) {
            return Err(Error::new(E_NOT_FOUND, format!("blob {hash} not found")));
        }
        let ranges = chunk_ranges(groups, size);
        let stream: ItemStream = Box::pin(
            fs.blobs()
                .export_bao_with_opts(ExportBaoOptions { hash, ranges }, cap)
                .stream(),
        );
        let mut e = Export {
            stream: Some(stream),
            pending: bytes::Bytes::new(),
            end: None,
        };
        let first = e.stream.as_mut().unwrap().next().await;
        match first {
            Some(EncodedItem::Size(size)) => {
                e.pending = bytes::Bytes::copy_from_slice(&size.to_le_bytes());
                Ok(e)
            }
            Some(EncodedItem::Error(err)) => Err(map_encode_error(&err)),
            Some(EncodedItem::Done) | None => {
                Err(Error::new(E_NOT_FOUND, format!("blob {hash}: no data")))
            }
            Some(EncodedItem::Parent(_) | EncodedItem::Leaf(_)) => {
                Err(Error::new(E_INTERNAL, "export_bao began without the size"))
            }
        }
    }

    /// Takes the next item of the stream (None: the stream has ended).
    fn take(&mut self, item: Option<EncodedItem>) {
        match item {
            Some(EncodedItem::Parent(p)) => {
                let mut b = Vec::with_capacity(64);
                b.extend_from_slice(p.pair.0.as_bytes());
                b.extend_from_slice(p.pair.1.as_bytes());
                self.pending = b.into();
            }
            Some(EncodedItem::Leaf(leaf)) => self.pending = leaf.data,
            Some(EncodedItem::Done) | None => self.finish(Ok(())),
            Some(EncodedItem::Error(e)) => self.finish(Err(map_encode_error(&e))),
            Some(EncodedItem::Size(_)) => self.finish(Err(Error::new(
                E_INTERNAL,
                "export_bao sent the size twice",
            ))),
        }
    }

    /// Ends the export: drops the stream, which stops the store's export
    /// task at its next item.
    fn finish(&mut self, end: Result<()>) {
        self.stream = None;
        if end.is_err() {
            self.pending = bytes::Bytes::new();
        }
        self.end = Some(end);
    }

    /// Cancels the export unless it has already delivered all its bytes.
    fn cancel(&mut self, why: Error) {
        if !(matches!(self.end, Some(Ok(()))) && self.pending.is_empty()) {
            self.finish(Err(why));
        }
    }

    /// Copies the next bytes of the encoding into buf and returns how many:
    /// 0 only at the end. It waits for the first byte, then takes what the
    /// stream has ready without waiting. An error that follows bytes copied
    /// in this call is returned by the next call, and by every later one.
    async fn fill(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut n = 0;
        loop {
            if !self.pending.is_empty() {
                let k = self.pending.len().min(buf.len() - n);
                buf[n..n + k].copy_from_slice(&self.pending[..k]);
                let _ = self.pending.split_to(k);
                n += k;
                if n == buf.len() {
                    return Ok(n);
                }
            }
            match &self.end {
                Some(Ok(())) => return Ok(n),
                Some(Err(e)) if n == 0 => return Err(e.clone()),
                Some(Err(_)) => return Ok(n),
                None => {}
            }
            let stream = self
                .stream
                .as_mut()
                .expect("an unfinished export has its stream");
            let item = if n == 0 {
                stream.next().await
            } else {
                // Only what is ready: the caller has bytes to work on.
                let mut next = stream.next();
                match std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut next).poll(cx))).await {
                    Poll::Ready(item) => item,
                    Poll::Pending => return Ok(n),
                }
            };
            self.take(item);
        }
    }

    /// Reads the rest of the encoding into one vector.
    async fn read_to_end(mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            out.extend_from_slice(&self.pending);
            self.pending = bytes::Bytes::new();
            match self.end.take() {
                Some(r) => return r.map(|()| out),
                None => {
                    let item = self.stream.as_mut().unwrap().next().await;
                    self.take(item);
                }
            }
        }
    }
}

/// Exports the BAO encoding of ranges of hash, verified against the hash:
/// the 8-byte little-endian size, then pre-order parent pairs and leaves.
async fn export_bao(fs: &FsStore, hash: Hash, groups: &[(u64, u64)]) -> Result<Vec<u8>> {
    Export::open(fs, hash, groups, EXPORT_CHANNEL_ITEMS)
        .await?
        .read_to_end()
        .await
}

fn map_get_error(e: GetError) -> Error {
    match &e {
        GetError::AtBlobHeaderNext {
            source: AtBlobHeaderNextError::NotFound { .. },
            ..
        } => Error::new(E_NOT_FOUND, format!("remote does not have the blob: {e}")),
        GetError::Decode {
            source: DecodeError::ParentHashMismatch { .. } | DecodeError::LeafHashMismatch { .. },
            ..
        } => Error::new(
            E_CORRUPT,
            format!("remote sent data that failed verification: {e}"),
        ),
        GetError::LocalFailure { .. } => Error::new(E_IO, format!("get: {e:#}")),
        _ => Error::new(E_NETWORK, format!("get: {e:#}")),
    }
}

/// Opens (creating if needed) an iroh-blobs file-system store in the
/// directory dir (dir_len bytes of UTF-8, absolute path).
///
/// # Safety
/// Pointers must be valid for the given lengths; out_store must be writable.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_store_open(
    dir: *const u8,
    dir_len: usize,
    out_store: *mut *mut SopIrohStore,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        if out_store.is_null() {
            return Err(Error::new(E_INVALID, "null output pointer"));
        }
        let dir = PathBuf::from(string(dir, dir_len, "directory")?);
        if !dir.is_absolute() {
            return Err(Error::new(E_INVALID, "store directory must be absolute"));
        }
        let fs = block_on(FsStore::load(&dir))?
            .map_err(|e| Error::new(E_IO, format!("opening store {}: {e:#}", dir.display())))?;
        let s = Box::new(SopIrohStore {
            fs,
            net: tokio::sync::Mutex::new(Net::default()),
            exports: Mutex::new(Vec::new()),
        });
        *out_store = Box::into_raw(s);
        Ok(())
    })
}

/// Cancels the store's open streaming exports (their next
/// sop_iroh_export_read fails with SOP_IROH_E_INVALID; they must still be
/// closed with sop_iroh_export_close), stops serving, closes the endpoint,
/// shuts the store down cleanly and frees the handle. The handle is invalid
/// afterwards, even on error.
///
/// # Safety
/// store must come from sop_iroh_store_open and not be used concurrently or
/// afterwards. Calls on its cursors may run concurrently.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_store_close(
    store: *mut SopIrohStore,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        if store.is_null() {
            return Err(Error::new(E_INVALID, "null store"));
        }
        let s = Box::from_raw(store);
        // Cancel the open exports first: dropping their streams ends the
        // store's export tasks, which the shutdown below would otherwise
        // wait for while they wait for a reader.
        let open: Vec<_> = lock(&s.exports)
            .drain(..)
            .filter_map(|w| w.upgrade())
            .collect();
        {
            let _rt = runtime()?.enter();
            for c in open {
                lock_export(&c).cancel(Error::new(E_INVALID, "store closed"));
            }
        }
        block_on(async move {
            let mut msgs = Vec::new();
            {
                let mut net = s.net.lock().await;
                net.closed = true;
                for (_, c) in net.conns.drain() {
                    c.close(0u32.into(), b"closing");
                }
                if let Some(r) = net.router.take() {
                    if let Err(e) = r.shutdown().await {
                        msgs.push(format!("router shutdown: {e}"));
                    }
                }
                if let Some(ep) = net.endpoint.take() {
                    ep.close().await;
                }
            }
            if let Err(e) = s.fs.shutdown().await {
                msgs.push(format!("store shutdown: {e}"));
            }
            drop(s);
            if msgs.is_empty() {
                Ok(())
            } else {
                Err(Error::new(E_IO, msgs.join("; ")))
            }
        })?
    })
}

/// Checks the arguments both imports share: the tag, the optional expected
/// hash, and the output pointer.
unsafe fn import_args<'a>(
    tag: *const u8,
    tag_len: usize,
    expect_hash: *const u8,
    out_hash: *mut u8,
) -> Result<(&'a [u8], Option<Hash>)> {
    let tag = bytes(tag, tag_len)?;
    let expect = if expect_hash.is_null() {
        None
    } else {
        Some(hash_arg(expect_hash)?)
    };
    if out_hash.is_null() {
        return Err(Error::new(E_INVALID, "null output pointer"));
    }
    Ok((tag, expect))
}

async fn import_finish(
    fs: &FsStore,
    tt: iroh_blobs::api::TempTag,
    tag: &[u8],
    expect: Option<Hash>,
) -> Result<Hash> {
    let hash = tt.hash();
    if let Some(want) = expect {
        if want != hash {
            return Err(Error::new(
                E_HASH_MISMATCH,
                format!("iroh-blobs hash {hash} differs from expected {want}"),
            ));
        }
    }
    if !tag.is_empty() {
        fs.tags()
            .set(tag, tt.hash_and_format())
            .await
            .map_err(|e| Error::new(E_IO, format!("setting tag: {e}")))?;
    }
    drop(tt);
    Ok(hash)
}

/// Imports len bytes at data as a raw blob under the named tag (tag_len
/// bytes; none if 0) and writes its 32-byte hash to out_hash. If expect_hash
/// is not null and the hash differs from it, no tag is set and the call fails
/// with SOP_IROH_E_HASH_MISMATCH.
///
/// # Safety
/// Pointers must be valid for the given lengths; out_hash for 32 bytes.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_import_bytes(
    store: *const SopIrohStore,
    data: *const u8,
    len: usize,
    tag: *const u8,
    tag_len: usize,
    expect_hash: *const u8,
    out_hash: *mut u8,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let s = store_ref(store)?;
        let data = bytes::Bytes::copy_from_slice(bytes(data, len)?);
        let (tag, expect) = import_args(tag, tag_len, expect_hash, out_hash)?;
        let hash = block_on(async {
            let tt =
                s.fs.blobs()
                    .add_bytes(data)
                    .temp_tag()
                    .await
                    .map_err(|e| Error::new(E_IO, format!("importing bytes: {e}")))?;
            import_finish(&s.fs, tt, tag, expect).await
        })??;
        std::ptr::copy_nonoverlapping(hash.as_bytes().as_ptr(), out_hash, 32);
        Ok(())
    })
}

/// Imports the file at path (absolute, UTF-8) by copying it into the store,
/// under the named tag, and writes its hash to out_hash; expect_hash as for
/// sop_iroh_import_bytes.
///
/// # Safety
/// Pointers must be valid for the given lengths; out_hash for 32 bytes.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_import_path(
    store: *const SopIrohStore,
    path: *const u8,
    path_len: usize,
    tag: *const u8,
    tag_len: usize,
    expect_hash: *const u8,
    out_hash: *mut u8,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let s = store_ref(store)?;
        let path = PathBuf::from(string(path, path_len, "path")?);
        if !path.is_absolute() {
            return Err(Error::new(E_INVALID, "import path must be absolute"));
        }
        let (tag, expect) = import_args(tag, tag_len, expect_hash, out_hash)?;
        let hash = block_on(async {
            let tt =
                s.fs.blobs()
                    .add_path_with_opts(AddPathOptions {
                        path: path.clone(),
                        format: BlobFormat::Raw,
                        mode: ImportMode::Copy,
                    })
                    .temp_tag()
                    .await
                    .map_err(|e| Error::new(E_IO, format!("importing {}: {e}", path.display())))?;
            import_finish(&s.fs, tt, tag, expect).await
        })??;
        std::ptr::copy_nonoverlapping(hash.as_bytes().as_ptr(), out_hash, 32);
        Ok(())
    })
}

/// Exports the BAO proof of the 16 KiB chunk groups that intersect the
/// n_ranges byte ranges given as (offset, length) pairs in ranges, using
/// export_bao (validated against the hash). The result, returned in
/// *out_ptr / *out_len and freed with sop_iroh_free, is the 8-byte
/// little-endian size, then parent pairs and group data in pre-order. A range
/// at or past the end selects the last group.
///
/// # Safety
/// hash must point to 32 bytes, ranges to 2*n_ranges u64 values.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_export_bao(
    store: *const SopIrohStore,
    hash: *const u8,
    ranges: *const u64,
    n_ranges: usize,
    out_ptr: *mut *mut u8,
    out_len: *mut usize,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let s = store_ref(store)?;
        let hash = hash_arg(hash)?;
        let ranges = group_ranges(ranges, n_ranges)?;
        let v = block_on(export_bao(&s.fs, hash, &ranges))??;
        give(v, out_ptr, out_len)
    })
}

/// A streaming export (sop_iroh_export_open): the export, shared with the
/// store's list of open exports so that closing the store can cancel it.
pub struct SopIrohExport(Arc<Mutex<Export>>);

/// Starts a streaming export_bao of the 16 KiB chunk groups that intersect
/// the n_ranges (offset, length) byte ranges, with the same clipping as
/// sop_iroh_export_bao, and writes a cursor to *out_cursor; the encoding is
/// then read with sop_iroh_export_read, and the cursor freed with
/// sop_iroh_export_close. A missing blob is reported here; data that fails
/// validation is reported by the read that reaches it. The export holds at
/// most EXPORT_CHANNEL_ITEMS items (about 1 MiB) ahead of the reader,
/// whatever the size of the ranges.
///
/// # Safety
/// hash must point to 32 bytes, ranges to 2*n_ranges u64 values; out_cursor
/// must be writable.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_export_open(
    store: *const SopIrohStore,
    hash: *const u8,
    ranges: *const u64,
    n_ranges: usize,
    out_cursor: *mut *mut SopIrohExport,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let s = store_ref(store)?;
        let hash = hash_arg(hash)?;
        let ranges = group_ranges(ranges, n_ranges)?;
        if out_cursor.is_null() {
            return Err(Error::new(E_INVALID, "null output pointer"));
        }
        let e = block_on(Export::open(&s.fs, hash, &ranges, EXPORT_CHANNEL_ITEMS))??;
        let shared = Arc::new(Mutex::new(e));
        {
            let mut open = lock(&s.exports);
            open.retain(|w| w.strong_count() > 0);
            open.push(Arc::downgrade(&shared));
        }
        *out_cursor = Box::into_raw(Box::new(SopIrohExport(shared)));
        Ok(())
    })
}

/// Copies the next bytes of the cursor's encoding into buf[0..cap) and
/// writes their number to *out_n: at least 1, or 0 at the end of the
/// encoding. It waits for the first byte, then copies what is ready without
/// waiting. A failure (SOP_IROH_E_CORRUPT for data that fails validation,
/// SOP_IROH_E_INVALID once the store is closed) is reported by the first
/// call after the last good byte, and by every later call, with *out_n 0;
/// the stream never just ends short.
///
/// # Safety
/// cursor must come from sop_iroh_export_open and not be closed; buf must be
/// writable for cap bytes; out_n must be writable.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_export_read(
    cursor: *mut SopIrohExport,
    buf: *mut u8,
    cap: usize,
    out_n: *mut usize,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let c = cursor
            .as_ref()
            .ok_or_else(|| Error::new(E_INVALID, "null cursor"))?;
        if out_n.is_null() {
            return Err(Error::new(E_INVALID, "null output pointer"));
        }
        *out_n = 0;
        if buf.is_null() || cap == 0 {
            return Err(Error::new(E_INVALID, "empty read buffer"));
        }
        let buf = std::slice::from_raw_parts_mut(buf, cap);
        let mut e = lock_export(&c.0);
        *out_n = block_on(e.fill(buf))??;
        Ok(())
    })
}

/// Stops the cursor's export if it is still running, and frees the cursor.
/// Valid before the end of the export, and after sop_iroh_store_close. Null
/// is ignored.
///
/// # Safety
/// cursor must come from sop_iroh_export_open, be closed once, and not be
/// used concurrently or afterwards.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_export_close(cursor: *mut SopIrohExport) {
    if cursor.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let c = Box::from_raw(cursor);
        // Drop the stream now (store_close may hold the export a moment
        // longer), inside the runtime in case dropping needs it.
        let _rt = runtime().ok().map(|rt| rt.enter());
        lock_export(&c.0).cancel(Error::new(E_INVALID, "export closed"));
        drop(c);
    }));
}

/// Writes the size of blob hash to out_size after verifying its last chunk
/// against the hash (export_bao of the last chunk).
///
/// # Safety
/// hash must point to 32 bytes; out_size must be writable.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_verified_size(
    store: *const SopIrohStore,
    hash: *const u8,
    out_size: *mut u64,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let s = store_ref(store)?;
        let hash = hash_arg(hash)?;
        if out_size.is_null() {
            return Err(Error::new(E_INVALID, "null output pointer"));
        }
        let v = block_on(export_bao(&s.fs, hash, &[(u64::MAX - 1, u64::MAX)]))??;
        if v.len() < 8 {
            return Err(Error::new(E_INTERNAL, "short export"));
        }
        let size = u64::from_le_bytes(v[..8].try_into().unwrap());
        // Only the last group, validated against the hash, proves the size.
        // A store that holds part of a blob may know only the size a remote
        // claimed; then the export holds no group, and the size is refused.
        if v.len() == 8 && size != 0 {
            return Err(Error::new(
                E_NOT_FOUND,
                "the blob's last group is not in the store: its size is not validated",
            ));
        }
        *out_size = size;
        Ok(())
    })
}

/// Starts serving the store over the blobs protocol on an endpoint bound to
/// 127.0.0.1 (ephemeral port; no relays, no address lookup, no port mapping)
/// and returns its address "<endpoint id>@127.0.0.1:<port>" in *out_ptr /
/// *out_len (freed with sop_iroh_free). Calling it again returns the same
/// address.
///
/// # Safety
/// store must be open; the out pointers must be writable.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_serve(
    store: *const SopIrohStore,
    out_ptr: *mut *mut u8,
    out_len: *mut usize,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let s = store_ref(store)?;
        let addr = block_on(async {
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
            Ok::<_, Error>(format!("{}@{}", ep.id(), sa))
        })??;
        give(addr.into_bytes(), out_ptr, out_len)
    })
}

/// A connection to the node at addr: a cached one, or a new one from this
/// store's endpoint.
async fn connection(s: &SopIrohStore, addr: &EndpointAddr) -> Result<Connection> {
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
async fn get(s: &SopIrohStore, addr: &EndpointAddr, req: GetRequest) -> Result<u64> {
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
async fn fetch(
    s: &SopIrohStore,
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

/// Fetches the 16 KiB chunk groups of blob hash that intersect the n_ranges
/// (offset, length) byte ranges from the node at addr (as sop_iroh_serve
/// returns it) into this store with the get protocol, verifying the data as
/// it arrives. Writes the number of bytes read from the connection (payload
/// plus size header and proof) to out_bytes_read. timeout_ms bounds the call
/// (0: no limit).
///
/// # Safety
/// Pointers must be valid for the given lengths.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_fetch(
    store: *const SopIrohStore,
    addr: *const u8,
    addr_len: usize,
    hash: *const u8,
    ranges: *const u64,
    n_ranges: usize,
    timeout_ms: u64,
    out_bytes_read: *mut u64,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let s = store_ref(store)?;
        let addr = parse_addr(&string(addr, addr_len, "address")?)?;
        let hash = hash_arg(hash)?;
        let ranges = group_ranges(ranges, n_ranges)?;
        if out_bytes_read.is_null() {
            return Err(Error::new(E_INVALID, "null output pointer"));
        }
        let n = block_on_timeout(timeout_ms, fetch(s, addr, hash, &ranges))?;
        *out_bytes_read = n;
        Ok(())
    })
}

/// Frees memory returned by this library (sop_iroh_export_bao,
/// sop_iroh_serve). Null is ignored.
///
/// # Safety
/// ptr and len must be exactly as returned, and freed once.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_free(ptr: *mut u8, len: usize) {
    if ptr.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)));
    }));
}
