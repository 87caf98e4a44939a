//! The arguments of the C ABI: pointers checked and read into Rust values,
//! and results written through the caller's output pointers. A null pointer
//! where a value is required is SOP_IROH_E_INVALID, never a crash.

use iroh_blobs::Hash;

use crate::{
    errors::{Error, Result},
    export::GROUP_BYTES,
    store::Store,
    SopIrohStore, E_INVALID,
};

/// The len bytes at ptr; ptr may be null only if len is 0.
pub(crate) unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> Result<&'a [u8]> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Error::new(E_INVALID, "null pointer with non-zero length"));
    }
    Ok(std::slice::from_raw_parts(ptr, len))
}

/// The len bytes at ptr as UTF-8, named what in the error.
pub(crate) unsafe fn string(ptr: *const u8, len: usize, what: &str) -> Result<String> {
    let b = bytes(ptr, len)?;
    String::from_utf8(b.to_vec()).map_err(|_| Error::new(E_INVALID, format!("{what} is not UTF-8")))
}

/// The 32-byte hash at ptr.
pub(crate) unsafe fn hash_arg(ptr: *const u8) -> Result<Hash> {
    if ptr.is_null() {
        return Err(Error::new(E_INVALID, "null hash"));
    }
    let mut h = [0u8; 32];
    std::ptr::copy_nonoverlapping(ptr, h.as_mut_ptr(), 32);
    Ok(Hash::from_bytes(h))
}

/// Fails with SOP_IROH_E_INVALID if the output pointer p is null.
pub(crate) fn out_arg<T>(p: *mut T) -> Result<()> {
    if p.is_null() {
        return Err(Error::new(E_INVALID, "null output pointer"));
    }
    Ok(())
}

/// Reads n (offset, length) byte-range pairs and returns the half-open ranges
/// of 16 KiB chunk-group indexes that they intersect.
pub(crate) unsafe fn group_ranges(ranges: *const u64, n: usize) -> Result<Vec<(u64, u64)>> {
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

/// Hands a byte vector to the caller; freed by sop_iroh_free.
pub(crate) unsafe fn give(v: Vec<u8>, out_ptr: *mut *mut u8, out_len: *mut usize) -> Result<()> {
    out_arg(out_ptr)?;
    out_arg(out_len)?;
    let b = v.into_boxed_slice();
    let len = b.len();
    let p = Box::into_raw(b) as *mut u8;
    *out_ptr = p;
    *out_len = len;
    Ok(())
}

/// The store behind a handle from sop_iroh_store_open.
pub(crate) unsafe fn store_ref<'a>(s: *const SopIrohStore) -> Result<&'a Store> {
    s.as_ref()
        .map(|s| &s.0)
        .ok_or_else(|| Error::new(E_INVALID, "null store"))
}

/// Checks the arguments both imports share: the tag, the optional expected
/// hash, and the output pointer.
pub(crate) unsafe fn import_args<'a>(
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
    out_arg(out_hash)?;
    Ok((tag, expect))
}
