//! Errors: what a call reports, how a panic becomes a result code, and how
//! iroh-blobs' errors map to the codes of `sop_iroh.h`.

use std::{
    ffi::c_char,
    panic::{catch_unwind, AssertUnwindSafe},
};

use iroh_blobs::get::{
    fsm::{AtBlobHeaderNextError, DecodeError},
    GetError,
};

use crate::{E_CORRUPT, E_IO, E_NETWORK, E_NOT_FOUND, E_PANIC, E_REMOTE, OK};

/// A failure: one of the result codes of `sop_iroh.h`, and a message for the
/// caller.
#[derive(Clone)]
pub(crate) struct Error {
    pub(crate) code: i32,
    pub(crate) msg: String,
}

impl Error {
    pub(crate) fn new(code: i32, msg: impl Into<String>) -> Self {
        Error {
            code,
            msg: msg.into(),
        }
    }
}

pub(crate) type Result<T> = std::result::Result<T, Error>;

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
pub(crate) unsafe fn guard(
    err: *mut c_char,
    err_cap: usize,
    f: impl FnOnce() -> Result<()>,
) -> i32 {
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

/// The code of a failed export_bao: data that fails validation against the
/// hash is SOP_IROH_E_CORRUPT.
pub(crate) fn map_encode_error(e: &bao_tree::io::EncodeError) -> Error {
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

/// The code of a failed get request: data from the remote that fails
/// verification is SOP_IROH_E_CORRUPT, a failing connection
/// SOP_IROH_E_NETWORK.
pub(crate) fn map_get_error(e: GetError) -> Error {
    // iroh-blobs' provider resets the stream with ERR_INTERNAL when its own
    // export of the blob fails: its copy failed verification against the
    // hash (it validates all it sends), or its store could not be read.
    if e.iroh_error_code() == Some(iroh_blobs::protocol::ERR_PERMISSION) {
        return Error::new(
            E_NOT_FOUND,
            format!("the remote node refuses to serve the blob (not on its allow-list): {e}"),
        );
    }
    if e.iroh_error_code() == Some(iroh_blobs::protocol::ERR_INTERNAL) {
        return Error::new(
            E_REMOTE,
            format!("the remote node failed to read the blob it serves (its copy does not verify against the hash, or its store failed): {e}"),
        );
    }
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
