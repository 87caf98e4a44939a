// Package testkit holds, in its subpackages, what only tests and test-vector
// generators use; nothing under it is compiled into the library or the
// sop-pme command, which layout_test.go checks with go list -deps:
//
//   - benchdata: the benchmarks' million-row table;
//   - hostile: objects a producer holding the DEK could craft, each with the
//     rule it breaks (SOP-PME-1 Section 11.10) and the error the reader
//     must return;
//   - memstore: an in-memory verify.Source that can hold damaged bytes
//     under an object's storage_id, as untrusted storage could;
//   - plainedit: edits plaintext Parquet files in ways no writer can be
//     made to;
//   - residue: finds the files under a directory that still hold a piece
//     of some bytes, for tests of deletion;
//   - testtables: tables of every type the writer takes, with edge values
//     and nulls, and Plain, a dictionary array's values as a plain array;
//   - vectors: the SOP-PME-1 test vectors in testdata/vectors, and their
//     generator.
//
// Some of them import pme, writer and reader: the tools to build what a
// test attacks the library with.
package testkit
