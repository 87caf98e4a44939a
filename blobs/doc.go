// Package blobs holds the blob stores of SOP-PME-1: where objects are
// imported, and their storage_id assigned (Section 11.7, step 5 of the
// writer's order in Section 11.12), and from which their bytes are later
// served as proofs, never as bare bytes (Section 11.10).
//
// A store implements [Store] for writing and verify.Source for reading: it
// hands out BAO slices, and package verify checks them against the
// storage_id before any byte reaches a caller. No exported function or
// method of this package returns object bytes.
//
// [Dir] is the embedded pure-Go store, a directory laid out like iroh-blobs'
// FsStore. [CreateDir] makes one and [OpenDir] opens one, never creating
// anything; with [ReadOnly] nothing is ever written or removed. Several
// processes may share a directory store, writers, readers and the command
// line alike: file locks keep an import in progress from being removed by
// another process, and keep a commit, a [Dir.Delete] and a sweep of the
// same object from interleaving (see [Dir]). [Dir.List] and [Dir.Delete]
// manage its objects. The iroh-blobs store is in package blobs/iroh, behind
// the iroh build tag; the S3 store, which keeps the same two files per
// object in a bucket, is package blobs/s3, a module of its own
// (github.com/sovm/sop-pme/blobs/s3) so that the library does not depend
// on the AWS SDK.
//
// Only ciphertext is ever written to a store by this library: the writer
// imports finished SOP-PME-1 objects, whose bytes are PME-encrypted (Section
// 11.1); plaintext never reaches a disk.
package blobs
