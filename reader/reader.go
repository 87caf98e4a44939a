// Package reader reads SOP-PME-1 objects back as Arrow records, through byte
// ranges verified against the object's storage_id. It implements the read
// side of SOP-PME-1 Sections 11.5–11.8 and the integrity layer of Section
// 11.10.
//
// A Reader is opened by storage_id. It proves the object's size from its
// verified last bytes (Section 11.8), reads and verifies the footer region,
// asks a KeyResolver for the object's DEK by storage_id (never by the
// key_ref, Section 11.5), and decrypts the footer. A Scan then fetches, for
// each row group it reads, the column chunks it projects, each one verified
// against storage_id before it is decrypted and decoded. No other path to
// the object's bytes exists: the package obtains them only from a
// verify.Reader (Section 11.10), and exports none.
//
// A projection verifies the footer and the chunks it reads, not the object.
// Only Verify, which checks every byte, makes an object count as verified.
//
// Nothing here answers from footer metadata: the package offers no
// statistics, and row counts only as FooterRowCount's planning hint, which
// every Scan checks against the pages of the row groups it reads; counts
// come from the rows a Scan materialises (Section 11.10).
//
// # A hostile producer
//
// Producer authenticity is a separate layer (Section 11.10): a reader that
// holds an object's DEK must survive any object whose bytes verify against
// its storage_id and whose modules open under that DEK, whatever plaintext
// the producer put in them. The reader holds to this:
//
//   - The Arrow schema is derived from the Parquet schema and its field
//     IDs, and refined by the ARROW:schema footer entry (an Arrow IPC
//     message) only where the refinement is consistent with the Parquet
//     types (package internal/pqtypes): a time zone other than UTC, large
//     strings, binaries and lists, durations, dictionaries, decimal256,
//     date64, extension types. arrow-go's IPC reader never sees the entry:
//     it allocates the lengths the message states (one changed byte of an
//     832-byte object asked for 32 GiB, a fatal error), and pqarrow applies
//     the stored types over the inferred ones without checking them. The
//     entry is decoded by internal/arrowfb, within bounds (its fields at
//     most one per 4 bytes, its strings at most twice its size), and
//     ignored, with no error, when it is malformed or does not match the
//     Parquet schema; it is never shown by Metadata. INT96 columns and
//     timestamps of legacy converted types read without a time zone, as
//     DuckDB reads them, INT96 at microseconds (or in the unit
//     ARROW:schema gives: pyarrow's nanoseconds), a value beyond that unit
//     failing the scan (ErrDecode); GEOMETRY and GEOGRAPHY columns as a
//     GeoArrow extension type over their bytes. The schema's metadata is the
//     footer's key-value metadata. DuckDB writes no ARROW:schema.
//   - The footer is decoded into a compact form with at most one value per
//     two bytes beyond the first 64 Ki, and its schema's paths, schema
//     elements and key-value entries are bounded by its size (package pme),
//     before arrow-go decodes the footer again; the column chunks, row counts
//     and column counts are checked before arrow-go reads a page.
//   - Every page header is checked against the footer in the plaintext view
//     before arrow-go decodes the page (ErrFormat): whole pages, a known page
//     type with its type-specific header, sizes that match the modules, and
//     counts that agree, so that every column yields the row group's rows.
//   - A scan's decoder allocates through a budget (WithMemoryLimit): what an
//     object decodes to is bounded by what the scan reads, not by what the
//     pages claim (ErrMemoryLimit).
//   - A scan decodes at most WithMaxValues values (by default 2^30, or 4,096
//     per byte of the object), refusing a row group that would pass the
//     limit before decoding it (ErrValueLimit), and checks its context
//     before every batch: a page of one RLE run claims 2^31−1 rows in a few
//     bytes, as a constant column's page legitimately does.
//   - Two fields with one field ID make Open fail (ErrField).
//   - arrow-go decodes in the goroutine that calls the record reader's Next
//     or, for a scan of several row groups at once (WithParallelism, by
//     default GOMAXPROCS), in the scan's own workers, one record reader per
//     row group; either turns any panic of the decoder into an error
//     (ErrDecode), and no goroutine arrow-go starts decodes. The row groups
//     in flight share the scan's one memory limit. Every error of a scan is
//     typed.
//
// Under these rules the hostile objects of internal/testkit/hostile open, scan and
// check within 64 MiB + 16 × (footer bytes + the largest column chunk) of
// Go heap, plus 64 KiB for each leaf column whose decoder the default memory
// limit makes room for (at most DefaultMaxColumns), as a test measures.
package reader

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/sovm/sop-pme/internal/arrowfb"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// A KeyResolver finds the DEK of an object by its storage_id. In SOP the path
// is storage_id → ObjectManifest + current AccessRecord → DEK (Section 11.5);
// the key_ref inside the object is never used to find a key. Package keyring
// implements one over DEKs wrapped under a key-encryption key.
//
// A resolver that has no key for id returns an error wrapping ErrNoKey.
type KeyResolver interface {
	ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error)
}

// DefaultMaxFooterSize is the least default limit on the footer region
// (FileCryptoMetaData plus the footer module), in bytes. Padding lives in the
// footer (Section 11.8): Padmé pads an object by less than 1/32 of its size
// from 32 KiB on, so the default limit is the larger of this and 1/16 of
// the object's proven size (pme.MaxFooterRegion, which the writer holds to).
const DefaultMaxFooterSize = pme.DefaultMaxFooterRegion

// minObjectSize is "PARE", the smallest FileCryptoMetaData (5 bytes), an
// empty footer module (32 bytes) and the trailer.
const minObjectSize = 4 + 5 + pme.Overhead + pme.TrailerSize

// A Reader reads one SOP-PME-1 object. It is safe for concurrent use; each
// Scan reads independently.
type Reader struct {
	id        storageid.ID
	vr        *verify.Reader
	src       verify.Source
	dek       pme.DEK
	meta      *metadata.FileMetaData // the decrypted footer, padding entries removed
	schema    *arrow.Schema
	stored    *arrowfb.Schema // the footer's ARROW:schema, decoded, or nil
	kv        arrow.Metadata
	fields    []pme.Field
	chunks    []pme.Span   // every column chunk, sorted by offset
	grid      [][]pme.Span // the column chunks by row group and leaf column
	info      map[int64]chunkInfo
	numLeaves int
	nrg       int
	alloc     memory.Allocator
	verified  atomic.Bool
	stats     *counters
	dictCols  func() []bool // readdict.go: the columns dictionary-encoded throughout
}

// ID returns the object's storage_id.
func (r *Reader) ID() storageid.ID { return r.id }

// Size returns the object's size in bytes, as proven from its last group.
func (r *Reader) Size() int64 { return r.vr.Size() }

// Schema returns the object's Arrow schema, derived from its Parquet schema
// and refined by its ARROW:schema entry where that is consistent (see the
// package doc). Every field carries its Parquet field ID in the
// field metadata under "PARQUET:field_id". The schema's metadata is the
// footer's key-value metadata, without the entries reserved for padding and
// without ARROW:schema.
func (r *Reader) Schema() *arrow.Schema { return r.schema }

// Metadata returns the footer's key-value metadata, such as the entries
// written with writer.WithMetadata, without the stored Arrow schema and
// without the entries reserved for padding, which readers never show
// (Section 11.8).
func (r *Reader) Metadata() arrow.Metadata { return r.kv }

// NumRowGroups returns the number of row groups, for WithRowGroups. It is
// the structure of the object, not an answer about its data.
func (r *Reader) NumRowGroups() int { return r.nrg }

// Verified reports whether Verify has succeeded on this Reader. Reads and
// projections never make it true (Section 11.10).
func (r *Reader) Verified() bool { return r.verified.Load() }

// Verify checks every byte of the object against its storage_id (Section
// 11.10): the only operation after which the object counts as verified.
func (r *Reader) Verify(ctx context.Context) error {
	if err := verify.Verify(ctx, r.src, r.id, verify.WithExpectedSize(r.vr.Size())); err != nil {
		return err
	}
	r.stats.verified.Add(r.vr.Size())
	r.verified.Store(true)
	return nil
}

// The buffers of column chunks, shared by every Reader's scans, so that the
// objects of a table reuse one another's instead of each allocating (and
// clearing) its own. ctPool holds ciphertext only; ptPool holds plaintext
// buffers, which are cleared before they return to it.
var ctPool, ptPool sync.Pool // of *[]byte
