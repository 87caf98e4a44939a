// Package iroh is a blob store over iroh-blobs, the content-addressed blob
// layer of iroh, for SOP-PME-1 objects: it imports objects into an iroh-blobs
// file-system store, where their iroh-blobs hash is their storage_id
// (SOP-PME-1 Section 11.7), and hands out BAO proofs for byte ranges, from the
// local store or fetched from another iroh node, for package verify to check
// (Section 11.10).
//
// The package is a thin cgo binding to a small Rust static library
// (blobs/iroh/ffi) and is built only with the build tag iroh, after the
// library has been built with `make iroh-lib` (blobs/iroh/iroh.mk). Without
// the tag the package holds only its error values, and the rest of the module
// builds and tests without Rust.
//
// # Verified reads
//
// As Section 11.10 asks of a transport binding, these are the reads this
// binding uses, and all of them authenticate the bytes against the hash:
//
//   - [Store.Slice] is iroh-blobs' export_bao, which validates data and
//     outboard against the hash as it encodes (a corrupted store file makes it
//     fail), and returns a BAO slice that the caller verifies again with
//     package verify. Ranges over 1 MiB are streamed from the library through
//     a cursor as they are read, so memory does not grow with the range:
//     verify.Verify of a multi-GiB object holds a few MiB;
//   - [Remote.Slice] first fetches the range with the blobs get protocol,
//     which verifies every chunk group as it arrives, then proceeds as
//     [Store.Slice];
//   - [Store.Size] proves the size by verifying the last chunk.
//
// The binding never uses iroh-blobs' non-verifying reads (export_ranges,
// the BlobReader, export to a path), and exposes no way to read bare bytes.
//
// # Deleting
//
// A store opened [WithDelete] can delete objects ([Store.Delete]), as a
// serving node must when an object leaves the store it serves: the blobs
// stop being served at once, and iroh-blobs' garbage collection (its only
// public way to delete, and run here only when Delete asks) removes their
// data and outboard files. Such a store keeps no blob bytes inline in its
// database, so no freed database page holds them. Stores that cache
// fetched blobs are opened without it: their partial blobs have no tag,
// and garbage collection would take them (it protects partial blobs all
// the same).
//
// # Network
//
// Serving and fetching use one iroh endpoint a store, bound to 127.0.0.1
// unless [Store.ServeOn] names another address (or a fetch from a peer off
// loopback needs the unspecified one), with no address lookup (no DNS,
// pkarr or mDNS), no port mapping and no captive-portal check, and with
// relays disabled and no net-report probes unless a relay is given: the
// endpoint reaches only the addresses it is given, and by default nothing
// leaves the loopback interface. Peers are addressed explicitly, as
// "<endpoint id>@<ip>:<port>" or by an iroh endpoint or blob ticket
// ([Ticket]). A relay is used only when the caller names one: the one URL
// of [Store.ServeVia], or the one relay a fetched peer's endpoint ticket
// names (a blob ticket's relays are ignored)
// (iroh's RelayMode::Custom with that URL alone, never n0's public relays;
// the endpoint's net-report HTTPS probes then go to that relay only).
// Discovery is off unless asked for, and then only through one pkarr relay
// the caller names: [ServeOptions].Discovery makes a serving endpoint
// publish its id, relay and bound address there as a signed pkarr packet
// (iroh's PkarrPublisher with that URL alone, never n0's DNS servers), and
// [Resolve] looks an endpoint id up at a pkarr relay its caller names,
// once, returning a ticket; Fetch itself never looks anything up. mDNS is
// not offered: it would announce the node to every host on the local
// network. Host names in relay and pkarr relay URLs are resolved with the
// system's nameservers only (no public fallback resolvers).
package iroh
