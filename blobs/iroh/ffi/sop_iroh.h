/*
 * sop_iroh.h: the C ABI of the sop_iroh static library (blobs/iroh/ffi), a
 * thin binding over iroh-blobs for the Go package
 * github.com/sovm/sop-pme/blobs/iroh.
 *
 * Hand-written; it must match src/lib.rs. Any change to a signature or a code
 * bumps SOP_IROH_ABI_VERSION and renames sop_iroh_abi_vN on both sides, so a
 * Go package built against another version fails to link. The Go test
 * TestHeaderMatchesRust checks that the two declare the same functions with
 * the same number of parameters.
 *
 * Conventions:
 * - Every function except sop_iroh_free, sop_iroh_export_close and
 *   sop_iroh_abi_v6 returns SOP_IROH_OK (0) or an error code, and writes a
 *   NUL-terminated UTF-8 message (empty on success) into err[0..err_cap).
 * - Strings are passed as (pointer, length), UTF-8, not NUL-terminated.
 * - Hashes are 32 bytes (the BLAKE3 root hash iroh-blobs assigns).
 * - Byte ranges are n (offset, length) pairs of uint64_t; each is rounded out
 *   to whole 16 KiB chunk groups, and one at or past the end of the blob
 *   selects its last group.
 * - Memory returned through (out_ptr, out_len) is owned by the caller and
 *   freed with sop_iroh_free(ptr, len).
 * - A store handle may be used from several threads at once, except that
 *   sop_iroh_store_close must not run concurrently with any other call on it.
 *   Calls on an export cursor may run concurrently with sop_iroh_store_close
 *   and with calls on other cursors; calls on one cursor are serialized, and
 *   sop_iroh_export_close must not run concurrently with another call on the
 *   same cursor.
 * - Panics in the library are caught and reported as SOP_IROH_E_PANIC.
 */
#ifndef SOP_IROH_H
#define SOP_IROH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SOP_IROH_ABI_VERSION 6

#define SOP_IROH_OK 0
#define SOP_IROH_E_INTERNAL 1      /* a bug or an unexpected state */
#define SOP_IROH_E_INVALID 2       /* bad argument, or store closed */
#define SOP_IROH_E_NOT_FOUND 3     /* the blob (or range) is not held */
#define SOP_IROH_E_CORRUPT 4       /* data failed verification against the hash */
#define SOP_IROH_E_HASH_MISMATCH 5 /* import hash differs from the expected one */
#define SOP_IROH_E_IO 6            /* local store or file error */
#define SOP_IROH_E_NETWORK 7       /* connection or transfer failure */
#define SOP_IROH_E_TIMEOUT 8       /* the call's time limit passed */
#define SOP_IROH_E_PANIC 9         /* a panic was caught */
#define SOP_IROH_E_REMOTE 10       /* the remote failed to read the blob it serves:
                                    * its copy does not verify, or its store failed */

/* Flags of sop_iroh_store_open. */
#define SOP_IROH_OPEN_DELETE 1u /* the store can delete blobs (sop_iroh_delete) */

typedef struct SopIrohStore SopIrohStore;
typedef struct SopIrohExport SopIrohExport; /* a streaming export's cursor */

/* Link-time version check: returns SOP_IROH_ABI_VERSION. Version 2 added the
 * streaming export (sop_iroh_export_open/read/close) and made
 * sop_iroh_store_close cancel open exports. Version 3 gave sop_iroh_serve a
 * binding address and an allow-list, added sop_iroh_ticket and
 * SOP_IROH_E_REMOTE, made sop_iroh_fetch take tickets
 * and peers off loopback, and fetch only the groups the store lacks. Version
 * 4 gave sop_iroh_store_open its flags (SOP_IROH_OPEN_DELETE), added
 * sop_iroh_tagged and sop_iroh_delete, and made a later sop_iroh_serve
 * replace the allow-list. Version 5 gave sop_iroh_serve a relay URL, and
 * made sop_iroh_fetch use the relay a ticket names. Version 6 gave
 * sop_iroh_serve a discovery URL (a pkarr relay it publishes itself to) and
 * added sop_iroh_resolve and sop_iroh_endpoint_id. */
uint32_t sop_iroh_abi_v6(void);

/* Opens or creates an iroh-blobs FsStore in the absolute directory dir.
 * flags is 0 or SOP_IROH_OPEN_DELETE: the store can then delete blobs
 * (sop_iroh_delete), keeps every blob's data and outboard in files of their
 * own (none inline in its database, whose freed pages would keep the bytes),
 * and runs iroh-blobs' garbage collection when a delete asks for it, which
 * removes every complete blob no tag holds; partial blobs (a fetch resumes
 * from them) are kept. Unknown bits: SOP_IROH_E_INVALID. */
int32_t sop_iroh_store_open(const uint8_t *dir, size_t dir_len, uint32_t flags,
                            SopIrohStore **out_store, char *err, size_t err_cap);

/* Cancels the store's open export cursors (their next sop_iroh_export_read
 * fails with SOP_IROH_E_INVALID; each must still be freed with
 * sop_iroh_export_close), stops serving, closes the endpoint, shuts the store
 * down and frees the handle (invalid afterwards, even on error). */
int32_t sop_iroh_store_close(SopIrohStore *store, char *err, size_t err_cap);

/* Imports data[0..len) as a raw blob under the named tag (none if tag_len is
 * 0). If expect_hash is not NULL and differs from the blob's hash, no tag is
 * set and SOP_IROH_E_HASH_MISMATCH is returned. Writes the hash to
 * out_hash[0..32). */
int32_t sop_iroh_import_bytes(const SopIrohStore *store, const uint8_t *data,
                              size_t len, const uint8_t *tag, size_t tag_len,
                              const uint8_t *expect_hash, uint8_t *out_hash,
                              char *err, size_t err_cap);

/* As sop_iroh_import_bytes, copying the file at the absolute path into the
 * store. */
int32_t sop_iroh_import_path(const SopIrohStore *store, const uint8_t *path,
                             size_t path_len, const uint8_t *tag, size_t tag_len,
                             const uint8_t *expect_hash, uint8_t *out_hash,
                             char *err, size_t err_cap);

/* Exports, with iroh-blobs' export_bao (validated against the hash), the BAO
 * encoding of the chunk groups that intersect the ranges: the blob size as
 * 8 bytes little-endian, then parent pairs (64 bytes) and group data in
 * pre-order. */
int32_t sop_iroh_export_bao(const SopIrohStore *store, const uint8_t *hash,
                            const uint64_t *ranges, size_t n_ranges,
                            uint8_t **out_ptr, size_t *out_len, char *err,
                            size_t err_cap);

/* The same encoding as sop_iroh_export_bao (export_bao, the same ranges and
 * clipping), streamed through a cursor, with memory bounded whatever the
 * ranges' size: the store reads and validates at most 128 items (parent
 * pairs or groups, about 1 MiB) ahead of the reader. A missing blob is
 * reported here (SOP_IROH_E_NOT_FOUND); data failing validation by the read
 * that reaches it. On success, *out_cursor is freed with
 * sop_iroh_export_close. */
int32_t sop_iroh_export_open(const SopIrohStore *store, const uint8_t *hash,
                             const uint64_t *ranges, size_t n_ranges,
                             SopIrohExport **out_cursor, char *err,
                             size_t err_cap);

/* Copies the next bytes of the encoding into buf[0..cap), cap > 0, and
 * writes their number to *out_n: at least 1, or 0 at the end of the
 * encoding. Waits for the first byte, then copies what is ready without
 * waiting. A failure (SOP_IROH_E_CORRUPT: data failed validation;
 * SOP_IROH_E_INVALID: the store was closed) is returned, with *out_n = 0, by
 * the first call after the last good byte and by every later call: the
 * encoding never just ends short. */
int32_t sop_iroh_export_read(SopIrohExport *cursor, uint8_t *buf, size_t cap,
                             size_t *out_n, char *err, size_t err_cap);

/* Stops the cursor's export if still running and frees the cursor (invalid
 * afterwards). Valid at any point, also after sop_iroh_store_close. NULL is
 * ignored. */
void sop_iroh_export_close(SopIrohExport *cursor);

/* Writes the blob's size, proven by verifying its last chunk. */
int32_t sop_iroh_verified_size(const SopIrohStore *store, const uint8_t *hash,
                               uint64_t *out_size, char *err, size_t err_cap);

/* Serves the store over the blobs protocol on an endpoint bound to bind,
 * "<ip>:<port>" (bind_len bytes; empty: 127.0.0.1 and an ephemeral port;
 * an unspecified or multicast IP is refused), with no address lookup and no
 * port mapping, and with no relay unless relay (relay_len bytes, an
 * http(s) URL; empty: none) names one: then through that relay alone
 * (never n0's public relays). If discovery (discovery_len bytes, the
 * http(s) URL of a pkarr relay, e.g. iroh-dns-server's .../pkarr; empty:
 * none) names one, the endpoint publishes its id, relay and bound address
 * there as a signed pkarr packet (iroh's PkarrPublisher with that URL
 * alone; on change and every 5 minutes), and the call returns only once the
 * pkarr relay gives that record back (else SOP_IROH_E_NETWORK, within
 * 20 s); a later call naming another discovery URL fails with
 * SOP_IROH_E_INVALID. Returns the address
 * "<endpoint id hex>@<ip>:<port>", or with a relay, once the endpoint is
 * connected to it (else SOP_IROH_E_NETWORK), the endpoint ticket naming the
 * relay and that address. With only_allowed non-zero, only the n_allow
 * blobs whose 32-byte hashes are at allow (allow[0..32*n_allow)) are served:
 * a get or observe request for another, or for the children of a hash
 * sequence, is refused with iroh-blobs' permission error, and get-many and
 * push requests are refused; with only_allowed 0, every blob of the store is.
 * A later call with the same binding returns the same address and replaces
 * the allow-list, for the next request; it cannot switch between serving
 * every blob and only those allowed (SOP_IROH_E_INVALID). The store's
 * endpoint is bound once (by the first serve or fetch). */
int32_t sop_iroh_serve(const SopIrohStore *store, const uint8_t *bind,
                       size_t bind_len, const uint8_t *relay, size_t relay_len,
                       const uint8_t *discovery, size_t discovery_len,
                       int32_t only_allowed, const uint8_t *allow,
                       size_t n_allow, uint8_t **out_ptr, size_t *out_len,
                       char *err, size_t err_cap);

/* Writes the 32-byte hashes of the blobs named by the tags whose names start
 * with prefix (all tags if prefix_len is 0), each once, in order, to
 * *out_ptr / *out_len. */
int32_t sop_iroh_tagged(const SopIrohStore *store, const uint8_t *prefix,
                        size_t prefix_len, uint8_t **out_ptr, size_t *out_len,
                        char *err, size_t err_cap);

/* Deletes the blobs whose hashes are at hashes[0..32*n_hashes) from a store
 * opened with SOP_IROH_OPEN_DELETE (else SOP_IROH_E_INVALID): they stop
 * being served at once (removed from the allow-list), every tag naming one
 * is deleted, and a garbage collection runs and is waited for, which
 * removes their data and outboard files (and every other complete blob no
 * tag holds). A blob the store does not hold is no error. Fails with
 * SOP_IROH_E_IO if one is still held afterwards (by a temporary tag), and
 * SOP_IROH_E_TIMEOUT if all this did not end within timeout_ms (0: no
 * limit; the collection still runs). */
int32_t sop_iroh_delete(const SopIrohStore *store, const uint8_t *hashes,
                        size_t n_hashes, uint64_t timeout_ms, char *err,
                        size_t err_cap);

/* Writes the iroh endpoint ticket ("endpoint...") of a peer's address,
 * given in any form sop_iroh_fetch takes. */
int32_t sop_iroh_ticket(const uint8_t *addr, size_t addr_len,
                        uint8_t **out_ptr, size_t *out_len, char *err,
                        size_t err_cap);

/* Writes the endpoint id (64 hex digits) of a peer's address, in any form
 * sop_iroh_fetch takes, or of an endpoint id alone. */
int32_t sop_iroh_endpoint_id(const uint8_t *addr, size_t addr_len,
                             uint8_t **out_ptr, size_t *out_len, char *err,
                             size_t err_cap);

/* Resolves the endpoint id id (id_len bytes; hex, as sop_iroh_endpoint_id
 * writes it) through the pkarr relay at the http(s) URL discovery
 * (required): one HTTP GET of <discovery>/<id in z-base-32>, whose answer
 * must be a packet signed by id's key. Writes the endpoint ticket of the
 * addresses the record names, checked as sop_iroh_fetch checks a ticket's,
 * to *out_ptr / *out_len. The pkarr relay's operator learns which id is
 * looked up, and from which IP address. No relay reached, or no record:
 * SOP_IROH_E_NETWORK; a record naming no address: SOP_IROH_E_NOT_FOUND.
 * timeout_ms bounds the call; 0 means no limit. */
int32_t sop_iroh_resolve(const uint8_t *id, size_t id_len,
                         const uint8_t *discovery, size_t discovery_len,
                         uint64_t timeout_ms, uint8_t **out_ptr,
                         size_t *out_len, char *err, size_t err_cap);

/* Fetches the chunk groups of hash that intersect the ranges, those this
 * store does not hold yet (a node refusing the blob by its allow-list reads
 * as SOP_IROH_E_NOT_FOUND), from the node at addr into this store with the
 * get protocol, verified as it arrives; writes the bytes read from the
 * connection (payload, size header and proof). addr is
 * "<endpoint id hex>@<ip>:<port>", an endpoint ticket (its IP addresses, and
 * its relay URL if it names one: the store's endpoint then uses that relay
 * alone; a ticket naming two relays is refused) or a blob ticket (its IP
 * addresses only: sendme's name n0's public relays by default). The
 * store's endpoint binds 127.0.0.1 for a peer on loopback (and a relay, if
 * any, on loopback), else the unspecified address.
 * timeout_ms bounds the call; 0 means no limit. */
int32_t sop_iroh_fetch(const SopIrohStore *store, const uint8_t *addr,
                       size_t addr_len, const uint8_t *hash,
                       const uint64_t *ranges, size_t n_ranges,
                       uint64_t timeout_ms, uint64_t *out_bytes_read,
                       char *err, size_t err_cap);

/* Frees memory returned by this library. NULL is ignored. */
void sop_iroh_free(uint8_t *ptr, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* SOP_IROH_H */
