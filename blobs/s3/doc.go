// Package s3 is a blob store of SOP-PME-1 on S3-compatible object storage:
// it imports objects and assigns their storage_id (SOP-PME-1 Section 11.7),
// and serves their bytes only as BAO slices that package verify checks
// against that storage_id (Section 11.10). It is a module of its own, so
// that the library does not depend on the AWS SDK.
//
// A [Store] keeps, under a key prefix of one bucket, for each object
//
//	<prefix>/<storage_id in hex>.data   its exact bytes
//	<prefix>/<storage_id in hex>.obao4  its pre-order BAO outboard
//
// the same two files, byte for byte, as blobs.Dir keeps in a directory.
// The keys carry nothing but the storage_id.
//
// [Store] implements blobs.Store and verify.Source: no method returns object
// bytes except inside a slice for verify to check, and nothing read from
// the server is trusted. A server, or anyone who can write to the bucket,
// that returns other bytes, other outboards, a truncated object, or one
// object's bytes under another's name, makes every read of an affected
// range fail with an error matching verify.ErrVerify; no unverified byte
// reaches a caller.
//
// # What the server learns
//
// Only ciphertext is ever written by this library (the writer imports
// finished SOP-PME-1 objects, Section 11.1). The server learns each
// object's storage_id, its size (already padded by Padmé, Section 11.8),
// when it was written and deleted, and which byte ranges are read and
// when: the access pattern of queries (which row groups and column chunks
// a scan touches) is visible to it, as it is to any store. It never
// learns a key, a key_ref's meaning, a column name or a value.
//
// # Credentials
//
// [Open] takes a store URL of gocloud.dev's s3blob form and the usual AWS
// credential chain (environment, shared config and credentials files, SSO,
// instance roles), or [WithCredentials]. Credentials never appear in an
// error of this package; the SDK logs nothing unless asked.
package s3
