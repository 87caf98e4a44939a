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
// FsStore. The iroh-blobs store is in package blobs/iroh, behind the iroh
// build tag.
//
// Only ciphertext is ever written to a store by this library: the writer
// imports finished SOP-PME-1 objects, whose bytes are PME-encrypted (Section
// 11.1); plaintext never reaches a disk.
package blobs
