// Package keyring resolves the DEK of an object by its storage_id from DEKs
// wrapped and kept outside the objects, as SOP-PME-1 Section 11.6 asks: "SOP
// SHOULD keep the wrapped DEK outside the encrypted Parquet file", so that
// the key-encryption key can be rotated and every DEK rewrapped without
// touching an object's bytes.
//
// # Two levels
//
// A master key (a KEK in memory, or a KMS through the Master interface)
// wraps one random 32-byte ring key; the ring key wraps the DEKs, as Apache
// Iceberg wraps its table keys. Rotating the master (Ring.Rotate) rewrites the
// one wrapped ring key. A full re-key (Ring.Rekey) makes a new ring key and
// rewraps every DEK in one transaction.
//
// Each DEK is wrapped with AES-256-GCM under the ring key, with a fresh
// random nonce, and with the object's storage_id in the associated data: a
// wrapped DEK moved to another storage_id does not unwrap. That binding
// matters because AES-GCM is not key-committing (one ciphertext can be valid
// under two keys), so key resolution must follow storage_id → DEK, never
// anything the object says about itself (Section 11.5).
//
// # The ring file
//
// A ring is one bbolt file (go.etcd.io/bbolt: a B+tree with ACID
// transactions and a file lock). A Put writes one key in one transaction, so
// its cost does not grow with the number of keys held, and a DEK acknowledged
// by Put is on disk (fdatasync) and is never lost to another Ring or another
// process writing the same file: every change is a read-modify-write inside
// one transaction under the file's exclusive lock, never a rewrite from a
// stale in-memory copy.
//
// A Ring does not keep the file open. bbolt holds its lock (flock(2): an
// exclusive lock for a writer, a shared one for a reader) for as long as a
// database is open, and the lock conflicts even between two opens in one
// process, so a Ring that kept the file open would block every other Ring
// and process. Each operation therefore opens the file, takes the lock, runs
// one transaction and closes it: writes (Put, PutBatch, Add, Delete, Rotate,
// Rekey, ImportV1) under the exclusive lock, reads (ResolveDEK, Len) under a
// shared lock, so readers run side by side. A Ring orders its own operations
// the same way, so it never waits on itself. A lock held elsewhere is waited
// for, with a short back-off, until the context is done or the lock timeout
// (WithLockTimeout, 10 s by default) has passed; then the operation fails
// with ErrBusy and changes nothing.
//
// The master is never called inside a write transaction when it can be
// avoided: a Ring caches the unwrapped ring key under its wrapped bytes, and
// a write that finds another wrapped ring key in its transaction (another
// process re-keyed the ring) gives the transaction up, unwraps the new ring
// key outside it and starts again. A DEK is always wrapped under the ring key
// current in the transaction that writes it.
//
// # Records
//
// Besides DEKs, a ring keeps small records of metadata in named spaces
// (Ring.Records), such as the table catalog that Sections 11.4 and 11.8
// keep away from untrusted storage. Each record is sealed under the ring
// key like a DEK, with its space and key as associated data; Rekey rewraps
// records with the DEKs in one transaction, Rotate leaves them as they
// are, and a record deleted or replaced is shredded like a deleted DEK.
//
// # Shredding
//
// Deleting a DEK must destroy it, and re-keying after a KEK leak must leave
// nothing the leaked KEK opens. bbolt never clears a page it frees, so
// after every transaction that removes or replaces a wrapped key (Delete,
// Rekey, Rotate, a Put over a held storage_id) the Ring overwrites with
// zeros, in place and under the same exclusive lock, every page of the
// file that the committed tree does not use, then syncs it. When such an
// operation returns nil, the file holds no copy of what it removed: not the
// wrapped DEK of a deleted storage_id, which bbolt could write back with no
// key, nor a transaction rolled back to (the older meta page no longer leads
// to a readable tree), nor the old wrapped ring key or any DEK wrapped under
// the old ring key, which the retired KEK would open. The file is never
// replaced, so every process keeps locking the same file.
//
// A crash between the commit and the end of the overwrite loses nothing
// and leaves a valid file; the old bytes stay in free pages until the next
// Delete, Rekey, Rotate or Scrub, each of which zeroes every free page.
// Ring.Scrub does it alone, for a ring an earlier version wrote.
//
// What the Ring cannot reach: copies of the file made before (backups,
// snapshots, replicas, a version-1 JSON ring left after ImportV1), the
// blocks an SSD remaps when it levels wear, and the old blocks a
// copy-on-write or log-structured file system (btrfs, ZFS, APFS, F2FS, a
// reflinked copy) keeps after an overwrite. A copy of the file made before
// a Rekey still opens under the retired KEK: destroy the old KEK and its
// copies too, and with a KMS, destroy (not just disable) the old KMS key
// version: that is the real end of a master key.
//
// # Rotation seen from another process
//
// A Ring opened before another process rotated or re-keyed the ring under a
// new master no longer opens the ring key with its own master. WithReload
// lets it find the new one (ReloadKEKFiles reads KEK files again: the one a
// rotation writes first, then the one it renames over), so that a
// long-lived service survives a rotation without a restart.
//
// # Creation, read-only use and migration
//
// Open never creates a ring unless given WithCreate; a missing file is
// ErrNoRing. WithReadOnly opens for resolution only: the file is opened
// read-only and nothing is ever written. A version-1 ring (the JSON file
// "sop-pme-keyring-v1" of earlier releases, every DEK wrapped directly under
// the KEK) is not opened as a ring (ErrLegacyFormat); Ring.ImportV1 copies
// its DEKs into a ring, and leaves the JSON file as it was.
//
// # Untrusted bytes
//
// The file is parsed as hostile input: its bbolt meta and freelist pages are
// checked (sizes, page numbers, counts) before bbolt maps them, every value
// is bounded before it is copied, a panic or memory fault inside bbolt is
// turned into ErrFile, and every wrapped key is authenticated. A crafted file
// can still make an operation fail; it cannot make a wrong DEK resolve.
//
// # Key files
//
// CreateKEKFile, LoadKEKFile and LoadOrCreateKEKFile keep a KEK in a file of
// its own: created exclusively, mode 0600, synced with its directory, and
// refused when its mode lets the group or others read it. The KEK never
// belongs in the store directory, which is the untrusted side.
package keyring

import (
	"errors"
	"fmt"

	"github.com/sovm/sop-pme/reader"
)

// Errors returned (wrapped) by this package.
var (
	// ErrWrongKEK reports a KEK that does not open the ring: it is not the
	// one the ring key (or a version-1 ring) was wrapped under.
	ErrWrongKEK = errors.New("keyring: wrong key-encryption key")
	// ErrMaster reports a master key that does not open the ring key. It
	// wraps the master's own error (ErrWrongKEK for a KEK, the KMS's error
	// for a KMS).
	ErrMaster = errors.New("keyring: the master key does not open the ring key")
	// ErrUnwrap reports a wrapped DEK that does not open under the ring key
	// for its storage_id: it was altered, or moved from another storage_id.
	ErrUnwrap = errors.New("keyring: wrapped DEK does not open for this storage_id")
	// ErrFile reports a ring file that is not a valid keyring.
	ErrFile = errors.New("keyring: malformed keyring file")
	// ErrLegacyFormat reports a version-1 (JSON) ring file where a ring was
	// expected. Ring.ImportV1 migrates it.
	ErrLegacyFormat = errors.New("keyring: a version-1 (JSON) keyring: import it with ImportV1")
	// ErrNoRing reports a ring file that does not exist (Open without
	// WithCreate). It comes joined with fs.ErrNotExist.
	ErrNoRing = errors.New("keyring: no keyring file")
	// ErrReadOnly reports a change asked of a ring opened WithReadOnly.
	ErrReadOnly = errors.New("keyring: opened read-only")
	// ErrBusy reports a ring file whose lock was not obtained within the
	// lock timeout, or a ring re-keyed concurrently too many times in a row.
	// Nothing was changed.
	ErrBusy = errors.New("keyring: the keyring file is busy")
	// ErrScrub reports a Delete, Rekey, Rotate or replacing Put that
	// committed, but whose freed pages, which may still hold the removed
	// wrapped keys, were not all overwritten (an I/O error). The change
	// holds; Scrub, or the next Delete, Rekey or Rotate, finishes it.
	ErrScrub = errors.New("keyring: the change committed, but the pages it freed were not overwritten")
	// ErrConflict reports an import or Add that would replace a DEK the ring holds
	// for the same storage_id by a different one. Nothing was changed.
	ErrConflict = errors.New("keyring: a different DEK is already held for this storage_id")
	// ErrKEK reports a KEK of the wrong size, the zero KEK, or no master.
	ErrKEK = errors.New("keyring: a KEK is 32 bytes")
	// ErrKEKFile reports a KEK file that is not exactly a KEK (a regular
	// file of KEKSize bytes), or whose mode lets the group or others read it.
	ErrKEKFile = errors.New("keyring: bad KEK file")
	// ErrNoMarshal reports an attempt to serialise a KEK as text.
	ErrNoMarshal = errors.New("keyring: a KEK is never serialised as text")
	// ErrNotFound reports a storage_id with no DEK in the ring. It wraps
	// reader.ErrNoKey, so errors.Is(err, reader.ErrNoKey) holds too.
	ErrNotFound = fmt.Errorf("keyring: %w", reader.ErrNoKey)
)
