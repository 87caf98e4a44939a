//! C ABI over iroh-blobs for the Go package `github.com/sovm/sop-pme/blobs/iroh`.
//!
//! The ABI is declared in `sop_iroh.h` beside this crate; keep the two in step
//! and bump `SOP_IROH_ABI_VERSION` (and the `sop_iroh_abi_vN` symbol) on any
//! change, so that a Go package built against another header fails to link.
//! This file holds the whole ABI (the version, the result codes, the handle
//! types and every exported function), and the modules the rest: `args`,
//! `errors`, `runtime`, `store`, `export` and `net`.
//!
//! Rules the crate keeps, so that a Rust static library is safe to link into a
//! Go program (cgo):
//! - every exported function runs inside `catch_unwind`; a panic becomes
//!   `SOP_IROH_E_PANIC` with its message, never an unwind across `extern "C"`,
//!   which would abort the Go process;
//! - one global tokio runtime, entered with `block_on` once per call; no
//!   callbacks into Go (a streaming export is a cursor that Go pulls from), so
//!   no Rust thread ever runs Go code;
//! - memory handed to Go is freed only by `sop_iroh_free`, by the allocator
//!   that made it;
//! - no signal handlers (no tokio `signal` or `process`), which would take
//!   signals from the Go runtime;
//! - byte reads are BAO proofs from `export_bao` (validated against the hash),
//!   never `export_ranges`, `reader()` or any other unverified read;
//! - networking reaches only the addresses it is given: the endpoint binds
//!   127.0.0.1 unless sop_iroh_serve names another address (or a fetch from
//!   a peer off loopback needs the unspecified one), has no address lookup
//!   (DNS/pkarr/mDNS), no port mapping, no captive-portal checks, and no
//!   relay unless given one (sop_iroh_serve's relay URL, or the relay a
//!   fetched peer's ticket names): then that one relay alone, never n0's
//!   public relays, which alone its HTTPS latency probes reach; it publishes
//!   itself only to the pkarr relay sop_iroh_serve's discovery URL names,
//!   and an endpoint id is resolved only by sop_iroh_resolve, from the
//!   pkarr relay its caller names (never n0's DNS, never mDNS).

mod args;
mod errors;
mod export;
mod net;
mod runtime;
mod store;

use std::{
    ffi::c_char,
    panic::{catch_unwind, AssertUnwindSafe},
    path::PathBuf,
    sync::{Arc, Mutex},
};

use args::{bytes, give, group_ranges, hash_arg, import_args, out_arg, store_ref, string};
use errors::{guard, Error};
use export::{export_bao, lock_export, verified_size, Export, EXPORT_CHANNEL_ITEMS};
use iroh_blobs::Hash;
use runtime::{block_on, block_on_timeout, runtime};
use store::Store;

/// The ABI version; `sop_iroh.h` declares the same number.
pub const SOP_IROH_ABI_VERSION: u32 = 6;

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
const E_REMOTE: i32 = 10;

/// An open store (sop_iroh_store_open): an iroh-blobs FsStore, and the
/// endpoint once the store serves or fetches.
pub struct SopIrohStore(Store);

/// A streaming export (sop_iroh_export_open): the export, shared with the
/// store's list of open exports so that closing the store can cancel it.
pub struct SopIrohExport(Arc<Mutex<Export>>);

/// Referenced from the Go package's cgo preamble: a library without this
/// symbol (another ABI version) fails to link.
#[no_mangle]
pub extern "C" fn sop_iroh_abi_v6() -> u32 {
    catch_unwind(|| SOP_IROH_ABI_VERSION).unwrap_or(0)
}

/// Opens (creating if needed) an iroh-blobs file-system store in the
/// directory dir (dir_len bytes of UTF-8, absolute path). flags is 0 or
/// SOP_IROH_OPEN_DELETE (1): the store can delete blobs (sop_iroh_delete),
/// keeps every blob's data and outboard in files (none inline in its
/// database), and runs iroh-blobs' garbage collection when a delete asks,
/// which removes every complete blob that no tag holds (partial ones are
/// kept). Other bits fail with SOP_IROH_E_INVALID.
///
/// # Safety
/// Pointers must be valid for the given lengths; out_store must be writable.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_store_open(
    dir: *const u8,
    dir_len: usize,
    flags: u32,
    out_store: *mut *mut SopIrohStore,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        out_arg(out_store)?;
        let dir = PathBuf::from(string(dir, dir_len, "directory")?);
        if !dir.is_absolute() {
            return Err(Error::new(E_INVALID, "store directory must be absolute"));
        }
        let s = Box::new(SopIrohStore(Store::open(&dir, flags)?));
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
        Box::from_raw(store).0.close()
    })
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
        let hash = s.import_bytes(data, tag, expect)?;
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
        let hash = s.import_path(path, tag, expect)?;
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
        out_arg(out_cursor)?;
        let e = block_on(Export::open(&s.fs, hash, &ranges, EXPORT_CHANNEL_ITEMS))??;
        let shared = Arc::new(Mutex::new(e));
        s.track_export(&shared);
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
        out_arg(out_n)?;
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
        out_arg(out_size)?;
        *out_size = block_on(verified_size(&s.fs, hash))??;
        Ok(())
    })
}

/// Starts serving the store over the blobs protocol on an endpoint bound to
/// bind ("<ip>:<port>", bind_len bytes; empty: 127.0.0.1 and an ephemeral
/// port; no address lookup, no port mapping) and, if relay (relay_len
/// bytes, an http(s) URL; empty: none) names one, through that relay alone,
/// and returns its address. If discovery (discovery_len bytes, the http(s)
/// URL of a pkarr relay; empty: none) names one, the endpoint publishes its
/// id, relay and bound address to it as a signed pkarr packet (on change
/// and every 5 minutes), and the call returns only once the pkarr relay
/// gives that record back (else SOP_IROH_E_NETWORK, within 20 s). With only_allowed non-zero, only the n_allow blobs whose 32-byte
/// hashes are at allow are served (others are refused with iroh-blobs'
/// permission error); with only_allowed 0, every blob of the store. A later
/// call replaces the allow-list at once; it cannot switch between serving
/// every blob and only those allowed (SOP_IROH_E_INVALID). It returns the address "<endpoint id>@<ip>:<port>" in *out_ptr / *out_len (freed with
/// sop_iroh_free), or with a relay, once connected to it (else
/// SOP_IROH_E_NETWORK), the endpoint ticket naming the relay and that
/// address. Calling it again with the same binding and relay returns the
/// same address.
///
/// # Safety
/// store must be open; bind valid for bind_len bytes; the out pointers must
/// be writable.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_serve(
    store: *const SopIrohStore,
    bind: *const u8,
    bind_len: usize,
    relay: *const u8,
    relay_len: usize,
    discovery: *const u8,
    discovery_len: usize,
    only_allowed: i32,
    allow: *const u8,
    n_allow: usize,
    out_ptr: *mut *mut u8,
    out_len: *mut usize,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let s = store_ref(store)?;
        let bind = net::parse_bind(&string(bind, bind_len, "bind address")?)?;
        let relay = net::parse_relay(&string(relay, relay_len, "relay URL")?)?;
        let discovery = net::parse_discovery(&string(discovery, discovery_len, "discovery URL")?)?;
        let allow = if only_allowed != 0 {
            let n = n_allow
                .checked_mul(32)
                .ok_or_else(|| Error::new(E_INVALID, "allow-list too long"))?;
            let b = bytes(allow, n)?;
            Some(
                b.chunks_exact(32)
                    .map(|h| Hash::from_bytes(h.try_into().expect("32 bytes")))
                    .collect(),
            )
        } else {
            None
        };
        let addr = block_on(net::serve(s, bind, relay, discovery, allow))??;
        give(addr.into_bytes(), out_ptr, out_len)
    })
}

/// Writes the 32-byte hashes of the blobs that the tags whose names start
/// with prefix (prefix_len bytes; all tags if 0) name, each once, in
/// order, to *out_ptr / *out_len (freed with sop_iroh_free).
///
/// # Safety
/// prefix valid for prefix_len bytes; the out pointers must be writable.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_tagged(
    store: *const SopIrohStore,
    prefix: *const u8,
    prefix_len: usize,
    out_ptr: *mut *mut u8,
    out_len: *mut usize,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let s = store_ref(store)?;
        let prefix = bytes(prefix, prefix_len)?;
        let hashes = block_on(s.tagged(prefix))??;
        let mut v = Vec::with_capacity(hashes.len() * 32);
        for h in hashes {
            v.extend_from_slice(h.as_bytes());
        }
        give(v, out_ptr, out_len)
    })
}

/// Deletes the n_hashes blobs whose 32-byte hashes are at hashes, from a
/// store opened with SOP_IROH_OPEN_DELETE (else SOP_IROH_E_INVALID): they
/// stop being served at once (removed from the allow-list), every tag
/// naming one is deleted, and a garbage collection runs and is waited for,
/// which removes their data and outboard files (and every other complete
/// blob that no tag holds). A blob the store does not hold is no error. It
/// fails with SOP_IROH_E_IO if one is still there afterwards (a temporary
/// tag holds it), and SOP_IROH_E_TIMEOUT if it did not end within
/// timeout_ms (0: no limit); the tags are deleted then, and the collection
/// still runs.
///
/// # Safety
/// hashes must point to 32*n_hashes bytes.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_delete(
    store: *const SopIrohStore,
    hashes: *const u8,
    n_hashes: usize,
    timeout_ms: u64,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let s = store_ref(store)?;
        let n = n_hashes
            .checked_mul(32)
            .ok_or_else(|| Error::new(E_INVALID, "too many hashes"))?;
        let hs: Vec<Hash> = bytes(hashes, n)?
            .chunks_exact(32)
            .map(|h| Hash::from_bytes(h.try_into().expect("32 bytes")))
            .collect();
        block_on_timeout(timeout_ms, s.delete(&hs))
    })
}

/// Writes the iroh endpoint ticket ("endpoint…") of a peer's address, given
/// as sop_iroh_fetch takes it, to *out_ptr / *out_len (freed with
/// sop_iroh_free).
///
/// # Safety
/// addr valid for addr_len bytes; the out pointers must be writable.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_ticket(
    addr: *const u8,
    addr_len: usize,
    out_ptr: *mut *mut u8,
    out_len: *mut usize,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let t = net::ticket(&string(addr, addr_len, "address")?)?;
        give(t.into_bytes(), out_ptr, out_len)
    })
}

/// Writes the endpoint id (64 hex digits) of a peer's address, in any form
/// sop_iroh_fetch takes, or of an endpoint id alone, to *out_ptr / *out_len
/// (freed with sop_iroh_free).
///
/// # Safety
/// addr valid for addr_len bytes; the out pointers must be writable.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_endpoint_id(
    addr: *const u8,
    addr_len: usize,
    out_ptr: *mut *mut u8,
    out_len: *mut usize,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let id = net::endpoint_id(&string(addr, addr_len, "address")?)?;
        give(id.into_bytes(), out_ptr, out_len)
    })
}

/// Resolves the endpoint id id (id_len bytes: hex, as sop_iroh_endpoint_id
/// writes it) through the pkarr relay at discovery
/// (discovery_len bytes, an http(s) URL, required): one HTTP GET of
/// <discovery>/<id in z-base-32>, whose answer must be signed by id's key,
/// and writes the endpoint ticket of the addresses it names (checked as
/// sop_iroh_fetch checks a ticket's) to *out_ptr / *out_len (freed with
/// sop_iroh_free). The pkarr relay's operator learns which id is looked up
/// and from which IP. timeout_ms bounds the call (0: no limit).
///
/// # Safety
/// id and discovery valid for their lengths; the out pointers must be
/// writable.
#[no_mangle]
pub unsafe extern "C" fn sop_iroh_resolve(
    id: *const u8,
    id_len: usize,
    discovery: *const u8,
    discovery_len: usize,
    timeout_ms: u64,
    out_ptr: *mut *mut u8,
    out_len: *mut usize,
    err: *mut c_char,
    err_cap: usize,
) -> i32 {
    guard(err, err_cap, || {
        let id = string(id, id_len, "endpoint id")?;
        let url = net::parse_discovery(&string(discovery, discovery_len, "discovery URL")?)?
            .ok_or_else(|| {
                Error::new(E_INVALID, "resolving an endpoint id needs a discovery URL")
            })?;
        let t = block_on_timeout(timeout_ms, net::resolve(&id, url))?;
        give(t.into_bytes(), out_ptr, out_len)
    })
}

/// Fetches the 16 KiB chunk groups of blob hash that intersect the n_ranges
/// (offset, length) byte ranges, those this store does not hold yet, from
/// the node at addr (as sop_iroh_serve returns it, or an endpoint or blob
/// ticket; an endpoint ticket naming a relay makes this store's endpoint
/// use that relay alone; a blob ticket's relays are ignored) into this store with the get protocol, verifying the data as it
/// arrives. Writes the number of bytes read from the connection (payload
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
        let addr = net::parse_addr(&string(addr, addr_len, "address")?)?;
        let hash = hash_arg(hash)?;
        let ranges = group_ranges(ranges, n_ranges)?;
        out_arg(out_bytes_read)?;
        *out_bytes_read = block_on_timeout(timeout_ms, net::fetch(s, addr, hash, &ranges))?;
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
