//! The store behind a `SopIrohStore` handle: an iroh-blobs file-system
//! store, its imports, and its shutdown.

use std::{
    collections::{BTreeSet, HashSet},
    ops::Deref,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, OnceLock, Weak},
    time::Duration,
};

use iroh_blobs::{
    api::{
        blobs::{AddPathOptions, AddProgress, BlobStatus, ImportMode},
        TempTag,
    },
    store::{
        fs::{
            options::{InlineOptions, Options},
            FsStore,
        },
        GcConfig, ProtectCb, ProtectOutcome,
    },
    BlobFormat, Hash,
};
use n0_future::StreamExt;

use crate::{
    errors::{Error, Result},
    export::{lock_export, Export},
    net::Net,
    runtime::{block_on, lock, runtime},
    E_HASH_MISMATCH, E_INVALID, E_IO,
};

/// sop_iroh_store_open's flag SOP_IROH_OPEN_DELETE: the store can delete
/// blobs (sop_iroh_delete).
pub(crate) const OPEN_DELETE: u32 = 1;

/// How often iroh-blobs' GC task asks (Gc::before_run) whether a collection
/// was requested: the delay a delete waits for before the collection starts,
/// and again after it ends before it is seen as ended.
const GC_POLL: Duration = Duration::from_millis(20);

/// On-demand garbage collection for a store opened with OPEN_DELETE.
///
/// iroh-blobs 0.104 deletes blobs only through its GC task (Blobs::delete
/// and gc_run_once are private): every GC_POLL the task calls the protect
/// callback, before_run, and then collects (removes every blob that no tag
/// and no temporary tag holds, and not added to the protected set) unless
/// the callback answers Abort. before_run answers Abort unless a delete
/// asked for a collection since the last one, so nothing is collected but
/// when sop_iroh_delete asks; and it protects every blob that is not
/// complete (a fetch resumes from partial blobs, which have no tag), but
/// those being deleted.
pub(crate) struct Gc {
    state: Mutex<GcState>,
    /// The number of the last collection known to have ended.
    ended: tokio::sync::watch::Sender<u64>,
    /// The store, set once it is loaded.
    store: OnceLock<iroh_blobs::api::Store>,
}

#[derive(Default)]
struct GcState {
    /// Collections asked for, and started (each numbered from 1).
    requested: u64,
    started: u64,
    /// Blobs being deleted: not protected even if partial.
    doomed: HashSet<Hash>,
}

impl Gc {
    fn new() -> Arc<Self> {
        Arc::new(Gc {
            state: Mutex::new(GcState::default()),
            ended: tokio::sync::watch::channel(0).0,
            store: OnceLock::new(),
        })
    }

    /// The protect callback: called by the GC task before each collection,
    /// and only after the previous one ended.
    fn callback(gc: Arc<Gc>) -> ProtectCb {
        Arc::new(move |live: &mut HashSet<Hash>| {
            let gc = gc.clone();
            Box::pin(async move {
                // The listing runs in a task of its own: the callback's
                // future must be Sync, which the store's streams are not.
                match tokio::spawn(async move { gc.before_run().await }).await {
                    Ok(Some(protect)) => {
                        live.extend(protect);
                        ProtectOutcome::Continue
                    }
                    _ => ProtectOutcome::Abort,
                }
            })
        })
    }

    /// Marks the previous collection, if any, as ended; then, if one was
    /// asked for, starts it and returns the blobs to protect (the partial
    /// ones not doomed); else None (no collection).
    async fn before_run(&self) -> Option<HashSet<Hash>> {
        let doomed = {
            let mut st = lock(&self.state);
            if st.started > *self.ended.borrow() {
                self.ended.send_replace(st.started);
            }
            if st.requested == st.started {
                return None;
            }
            st.started = st.requested;
            st.doomed.clone()
        };
        match self.partial_blobs(&doomed).await {
            Ok(p) => Some(p),
            Err(_) => {
                // No collection; the waiters see it ended, and find the blobs
                // still there.
                self.ended.send_replace(lock(&self.state).started);
                None
            }
        }
    }

    /// The blobs of the store that are not complete, but those of doomed.
    async fn partial_blobs(&self, doomed: &HashSet<Hash>) -> Result<HashSet<Hash>> {
        let fs = self
            .store
            .get()
            .ok_or_else(|| Error::new(E_IO, "store not loaded"))?;
        let io = |e: &dyn std::fmt::Display| Error::new(E_IO, format!("listing blobs: {e}"));
        let mut list = fs.blobs().list().stream().await.map_err(|e| io(&e))?;
        let mut all = Vec::new();
        while let Some(h) = list.next().await {
            all.push(h.map_err(|e| io(&e))?);
        }
        let mut partial = HashSet::new();
        for h in all {
            if doomed.contains(&h) {
                continue;
            }
            let st = fs.blobs().status(h).await.map_err(|e| io(&e))?;
            if !matches!(st, BlobStatus::Complete { .. }) {
                partial.insert(h);
            }
        }
        Ok(partial)
    }

    /// Asks for a collection that does not spare doomed, and waits until it
    /// ended (the caller bounds the wait: sop_iroh_delete's timeout).
    async fn collect(&self, doomed: &[Hash]) -> Result<()> {
        let mut ended = self.ended.subscribe();
        let want = {
            let mut st = lock(&self.state);
            st.doomed.extend(doomed.iter().copied());
            st.requested += 1;
            st.requested
        };
        // Undoom on every exit, also when the wait is dropped by a timeout.
        let _undoom = Undoom(self, doomed);
        ended
            .wait_for(|n| *n >= want)
            .await
            .map(|_| ())
            .map_err(|_| Error::new(E_IO, "garbage collection stopped"))
    }
}

/// Takes blobs off the doomed set when dropped.
struct Undoom<'a>(&'a Gc, &'a [Hash]);

impl Drop for Undoom<'_> {
    fn drop(&mut self) {
        let mut st = lock(&self.0.state);
        for h in self.1 {
            st.doomed.remove(h);
        }
    }
}

/// An open store: an iroh-blobs FsStore, and the endpoint once the store
/// serves or fetches.
pub(crate) struct Store {
    pub(crate) fs: FsStore,
    pub(crate) net: tokio::sync::Mutex<Net>,
    /// The on-demand collection, if the store was opened with OPEN_DELETE.
    gc: Option<Arc<Gc>>,
    /// The store's streaming exports, so that closing the store can cancel
    /// those still open. A cursor does not refer to the store: it owns its
    /// stream, and outlives the store if need be.
    exports: Mutex<Vec<Weak<Mutex<Export>>>>,
}

impl Store {
    /// Opens (creating if needed) the FsStore in dir, an absolute path, with
    /// flags (OPEN_DELETE or 0).
    ///
    /// With OPEN_DELETE, iroh-blobs' GC task runs with Gc's callback, so
    /// that delete can remove blobs, and the store keeps no blob data or
    /// outboard inline in its database (by default iroh-blobs keeps those
    /// of up to 16 KiB there): every blob's bytes are in files of their own,
    /// which a collection removes, where a database page that held them
    /// would keep them after the entry is removed, until the page is
    /// reused. Blobs written inline before (by an open without the flag)
    /// stay inline.
    pub(crate) fn open(dir: &Path, flags: u32) -> Result<Self> {
        if flags & !OPEN_DELETE != 0 {
            return Err(Error::new(
                E_INVALID,
                format!("unknown open flags {flags:#x}"),
            ));
        }
        let gc = (flags & OPEN_DELETE != 0).then(Gc::new);
        let mut opts = Options::new(dir);
        if let Some(gc) = &gc {
            opts.inline = InlineOptions::NO_INLINE;
            opts.gc = Some(GcConfig {
                interval: GC_POLL,
                add_protected: Some(Gc::callback(gc.clone())),
            });
        }
        let fs = block_on(FsStore::load_with_opts(dir.join("blobs.db"), opts))?
            .map_err(|e| Error::new(E_IO, format!("opening store {}: {e:#}", dir.display())))?;
        if let Some(gc) = &gc {
            let _ = gc.store.set(fs.deref().clone());
        }
        Ok(Store {
            fs,
            net: tokio::sync::Mutex::new(Net::default()),
            gc,
            exports: Mutex::new(Vec::new()),
        })
    }

    /// The hashes of the tags whose names start with prefix, each once, in
    /// order.
    pub(crate) async fn tagged(&self, prefix: &[u8]) -> Result<Vec<Hash>> {
        let io = |e: &dyn std::fmt::Display| Error::new(E_IO, format!("listing tags: {e}"));
        let mut tags = self
            .fs
            .tags()
            .list_prefix(prefix)
            .await
            .map_err(|e| io(&e))?;
        let mut out = BTreeSet::new();
        while let Some(t) = tags.next().await {
            out.insert(t.map_err(|e| io(&e))?.hash);
        }
        Ok(out.into_iter().collect())
    }

    /// Deletes the blobs hashes: stops serving them (net::forget), deletes
    /// every tag that names one, and runs a collection, which removes their
    /// data and outboard (and those of any other blob no tag holds), then
    /// checks that none is left. A blob the store does not hold is no
    /// error. Fails with E_INVALID unless the store was opened with
    /// OPEN_DELETE.
    pub(crate) async fn delete(&self, hashes: &[Hash]) -> Result<()> {
        let gc = self.gc.as_ref().ok_or_else(|| {
            Error::new(
                E_INVALID,
                "the store was not opened for deleting (SOP_IROH_OPEN_DELETE)",
            )
        })?;
        self.net.lock().await.forget(hashes);
        let want: HashSet<Hash> = hashes.iter().copied().collect();
        let io = |e: &dyn std::fmt::Display| Error::new(E_IO, format!("deleting tags: {e}"));
        let mut names = Vec::new();
        let mut tags = self.fs.tags().list().await.map_err(|e| io(&e))?;
        while let Some(t) = tags.next().await {
            let t = t.map_err(|e| io(&e))?;
            if want.contains(&t.hash) {
                names.push(t.name);
            }
        }
        for n in names {
            self.fs.tags().delete(n).await.map_err(|e| io(&e))?;
        }
        gc.collect(hashes).await?;
        for h in hashes {
            let (st, _) = status(&self.fs, *h).await?;
            if !matches!(st, BlobStatus::NotFound) {
                return Err(Error::new(
                    E_IO,
                    format!("blob {h} is still in the store after garbage collection (held by a temporary tag, or the collection failed)"),
                ));
            }
        }
        Ok(())
    }

    /// Adds an export to those that closing the store cancels.
    pub(crate) fn track_export(&self, e: &Arc<Mutex<Export>>) {
        let mut open = lock(&self.exports);
        open.retain(|w| w.strong_count() > 0);
        open.push(Arc::downgrade(e));
    }

    /// Cancels the open exports, closes the network side, shuts the FsStore
    /// down and drops the store, even on error.
    pub(crate) fn close(self) -> Result<()> {
        // Cancel the open exports first: dropping their streams ends the
        // store's export tasks, which the shutdown below would otherwise
        // wait for while they wait for a reader.
        let open: Vec<_> = lock(&self.exports)
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
            let mut msgs = self.net.lock().await.close().await;
            if let Err(e) = self.fs.shutdown().await {
                msgs.push(format!("store shutdown: {e}"));
            }
            drop(self);
            if msgs.is_empty() {
                Ok(())
            } else {
                Err(Error::new(E_IO, msgs.join("; ")))
            }
        })?
    }

    /// Imports data as a raw blob; see import_finish for tag and expect.
    pub(crate) fn import_bytes(
        &self,
        data: bytes::Bytes,
        tag: &[u8],
        expect: Option<Hash>,
    ) -> Result<Hash> {
        let add = self.fs.blobs().add_bytes(data);
        self.import(add, "importing bytes", tag, expect)
    }

    /// Imports a copy of the file at path; see import_finish for tag and
    /// expect.
    pub(crate) fn import_path(
        &self,
        path: PathBuf,
        tag: &[u8],
        expect: Option<Hash>,
    ) -> Result<Hash> {
        let what = format!("importing {}", path.display());
        let add = self.fs.blobs().add_path_with_opts(AddPathOptions {
            path,
            format: BlobFormat::Raw,
            mode: ImportMode::Copy,
        });
        self.import(add, &what, tag, expect)
    }

    /// Runs an import (add does nothing until awaited) to its end, holding
    /// the blob by a temporary tag, then import_finish; what names the
    /// import in its error.
    fn import(
        &self,
        add: AddProgress<'_>,
        what: &str,
        tag: &[u8],
        expect: Option<Hash>,
    ) -> Result<Hash> {
        block_on(async {
            let tt = add
                .temp_tag()
                .await
                .map_err(|e| Error::new(E_IO, format!("{what}: {e}")))?;
            import_finish(&self.fs, tt, tag, expect).await
        })?
    }
}

/// Ends an import: fails with SOP_IROH_E_HASH_MISMATCH, setting no tag, if
/// the blob's hash is not expect; sets the named tag unless it is empty;
/// then drops the temporary tag that kept the blob meanwhile.
async fn import_finish(
    fs: &FsStore,
    tt: TempTag,
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

/// The blob's status in the store, and its size if the store knows it.
pub(crate) async fn status(fs: &FsStore, hash: Hash) -> Result<(BlobStatus, Option<u64>)> {
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
