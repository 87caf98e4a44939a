//! The one tokio runtime that every call enters with `block_on`, and the
//! locks that a caught panic must not leave poisoned.

use std::{
    future::Future,
    sync::{Mutex, MutexGuard, OnceLock},
    time::Duration,
};

use crate::{
    errors::{Error, Result},
    E_INTERNAL, E_TIMEOUT,
};

/// The runtime, started by the first call: two worker threads, named
/// sop-iroh, with time and I/O drivers and no signal handling.
pub(crate) fn runtime() -> Result<&'static tokio::runtime::Runtime> {
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

pub(crate) fn block_on<F: Future>(f: F) -> Result<F::Output> {
    Ok(runtime()?.block_on(f))
}

/// Like block_on, with a time limit unless timeout_ms is 0.
pub(crate) fn block_on_timeout<T>(
    timeout_ms: u64,
    f: impl Future<Output = Result<T>>,
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

/// Locks m, and recovers it if a panic (caught and reported) poisoned it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| {
        m.clear_poison();
        e.into_inner()
    })
}
