//! The store behind a `SopIrohStore` handle: an iroh-blobs file-system
//! store, its imports, and its shutdown.

use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex, Weak},
};

use iroh_blobs::{
    api::{
        blobs::{AddPathOptions, AddProgress, BlobStatus, ImportMode},
        TempTag,
    },
    store::fs::FsStore,
    BlobFormat, Hash,
};

use crate::{
    errors::{Error, Result},
    export::{lock_export, Export},
    net::Net,
    runtime::{block_on, lock, runtime},
    E_HASH_MISMATCH, E_INVALID, E_IO,
};

/// An open store: an iroh-blobs FsStore, and the endpoint once the store
/// serves or fetches.
pub(crate) struct Store {
    pub(crate) fs: FsStore,
    pub(crate) net: tokio::sync::Mutex<Net>,
    /// The store's streaming exports, so that closing the store can cancel
    /// those still open. A cursor does not refer to the store: it owns its
    /// stream, and outlives the store if need be.
    exports: Mutex<Vec<Weak<Mutex<Export>>>>,
}

impl Store {
    /// Opens (creating if needed) the FsStore in dir, an absolute path.
    pub(crate) fn open(dir: &Path) -> Result<Self> {
        let fs = block_on(FsStore::load(dir))?
            .map_err(|e| Error::new(E_IO, format!("opening store {}: {e:#}", dir.display())))?;
        Ok(Store {
            fs,
            net: tokio::sync::Mutex::new(Net::default()),
            exports: Mutex::new(Vec::new()),
        })
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
