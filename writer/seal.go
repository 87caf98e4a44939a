package writer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/pme"
)

// WithAssignFieldIDs makes SealFile give every field of the file's schema
// that lacks a Parquet field ID one, by the rule of AssignFieldIDs (see
// SealFile). Without it, SealFile refuses such a file with ErrFieldID. It
// applies to SealFile only: New refuses it (a Writer's schema carries its
// IDs; number them with AssignFieldIDs).
func WithAssignFieldIDs() Option {
	return func(cfg *config) error {
		cfg.assignIDs = true
		return nil
	}
}

// WithFieldIDsFrom makes SealFile give the fields of the file the field IDs
// of schema, whatever IDs the file has: a table's catalog numbers the
// columns of every object it takes (Section 11.2). The fields are matched
// by name at every depth (a list's element and a map's key and value by
// their place), against the Arrow schema pqarrow reads from the file's
// Parquet schema; their types are not compared. A field of the file that
// schema lacks, or that has no positive ID there, fails SealFile with
// ErrFieldID before anything is staged. It applies to SealFile only (New
// refuses it), and not with WithAssignFieldIDs.
func WithFieldIDsFrom(schema *arrow.Schema) Option {
	return func(cfg *config) error {
		if schema == nil {
			return fmt.Errorf("%w: WithFieldIDsFrom(nil)", ErrOption)
		}
		cfg.idsFrom = schema
		return nil
	}
}

// SealFile turns the plaintext Parquet file r, of size bytes, into a new
// SOP-PME-1 object in store, byte for byte: no page is decoded or encoded.
// Every page header and page body of the file's column chunks becomes an
// AES-GCM module under a fresh DEK (the Sealer of internal/seal); then the footer is
// remapped and sealed, the key_ref written, the object padded to its Padmé
// size and imported, by the same typed steps as a Writer's (Section 11.12,
// steps 2 to 5). The Object it returns has a Writer's guarantees: a fresh
// DEK and key_ref, Size = Padmé(UnpaddedSize) exactly, and on any error
// nothing published and the staged bytes discarded.
//
// The file's row groups, pages, codecs, encodings, statistics and
// key-value metadata are kept, but for the pages the Sealer rewrites as
// DuckDB reads them (compressed V2 pages as V1 ones, LZ4 pages as LZ4_RAW
// ones; see internal/seal); page indexes and bloom filters are dropped
// and their offsets cleared, as SOP-PME-1 objects (and DuckDB's encrypted
// files) have none. Options: WithMetadata (entries appended
// after the file's own), WithProgress (called after each row group sealed
// and once after publishing; BytesIn counts the plaintext column chunks
// sealed, then the whole file), WithAssignFieldIDs, and WithParallelism:
// how many row groups the decode check below decodes at once, while the
// next ones are sealed (default runtime.GOMAXPROCS(0)). The options of
// encoding (codec, row groups, pages, dictionary) describe a layout
// SealFile does not make: one that changes a default is refused with
// ErrOption.
//
// # Field IDs
//
// Every field needs a Parquet field ID (Section 11.2). The file's are
// read as pqarrow reads them into an Arrow schema, where a field_id of -1,
// or none, is missing. A file with a missing ID is refused with ErrFieldID
// naming the fields, unless WithAssignFieldIDs is given: then the missing
// IDs are exactly those AssignFieldIDs gives that Arrow schema, each
// written into the SchemaElement the field comes from. Invalid or
// duplicate IDs are refused with ErrFieldID either way. A field without a
// schema element of its own (the element of a legacy one-level list, a
// repeated field outside a LIST group) cannot carry an ID: with
// WithAssignFieldIDs such a file is refused with ErrNotSealable.
//
// # What is refused
//
// Input that is not a plaintext Parquet file the sealer takes (no PAR1 at
// both ends, an encrypted file, a malformed footer or page header, a column
// chunk in another file) fails with an error matching
// ErrPlaintextParquet. A sound file SealFile cannot seal as it is (see
// ErrNotSealable: a codec other than UNCOMPRESSED, SNAPPY, GZIP, BROTLI,
// ZSTD, LZ4_RAW or LZ4, an encoding DuckDB cannot read (ErrEncoding),
// a page over pme.MaxPageSize) fails with an error
// matching ErrNotSealable and the cause, with a *ColumnError naming the
// column where one column is the cause; WriteRecords can re-encode it.
// Such a refusal may come after part of the file was sealed: the pending
// import is then aborted.
//
// Before it publishes the object, SealFile decodes every row group as the
// reader will (see decodecheck.go), n at once (WithParallelism); a row
// group that does not decode fails it with ErrPlaintextParquet.
//
// SealFile holds one page of the file in memory at a time (and the sealed
// modules of a few pages on their way to the store), plus the footer, and
// for the decode check n decoding batches and the pages it rewrote in n
// row groups. It reads r with ReadAt only, concurrently, and never writes
// plaintext anywhere.
func SealFile(ctx context.Context, store blobs.Store, r io.ReaderAt, size int64, opts ...Option) (Object, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return Object{}, err
		}
	}
	if err := sealOptions(cfg); err != nil {
		return Object{}, err
	}
	if cfg.idsFrom != nil && cfg.assignIDs {
		return Object{}, fmt.Errorf("%w: WithFieldIDsFrom and WithAssignFieldIDs", ErrOption)
	}
	if store == nil || r == nil || ctx == nil {
		return Object{}, fmt.Errorf("%w: nil store, file or context", ErrOption)
	}
	alive := ctx.Err
	if err := alive(); err != nil {
		return Object{}, err
	}
	// Step 1 was the file's producer's; the field IDs are settled here,
	// before anything is staged.
	plain, err := seal.ReadPlainFooter(r, size)
	if err != nil {
		return Object{}, err
	}
	ids, err := parquetFieldIDs(plain, cfg.assignIDs, cfg.idsFrom)
	if err != nil {
		return Object{}, err
	}

	pending, err := store.Create(ctx)
	if err != nil {
		return Object{}, fmt.Errorf("writer: staging object: %w", err)
	}
	out := newSink(pending)
	dek := pme.NewDEK()
	obj, err := sealInto(ctx, out, pending, dek, r, size, ids, cfg, alive)
	if err != nil {
		out.close()
		pending.Abort()
		return Object{}, err
	}
	return obj, nil
}

// sealOptions refuses the options of encoding, which SealFile does not
// honour, when they change a default.
func sealOptions(cfg config) error {
	def := defaultConfig()
	var set []string
	for _, o := range []struct {
		name    string
		changed bool
	}{
		{"WithCodec", cfg.codec != def.codec},
		{"WithRowGroupRows", cfg.rowGroupRows != def.rowGroupRows},
		{"WithRowGroupBytes", cfg.rowGroupBytes != def.rowGroupBytes},
		{"WithDataPageSize", cfg.dataPageSize != def.dataPageSize},
		{"WithDataPageVersion", cfg.pageVersion != def.pageVersion},
		{"WithDictionary", cfg.dictionary != def.dictionary},
		{"WithCompressionLevel", cfg.level != def.level},
	} {
		if o.changed {
			set = append(set, o.name)
		}
	}
	if len(set) > 0 {
		return fmt.Errorf("%w: SealFile keeps the file's layout; %s would re-encode it (WriteRecords)", ErrOption, strings.Join(set, ", "))
	}
	return nil
}

// sealInto seals the file into out and runs steps 2 to 5.
func sealInto(ctx context.Context, out *sink, pending blobs.Pending, dek pme.DEK, r io.ReaderAt, size int64, ids map[int]int32, cfg config, alive func() error) (Object, error) {
	sealer := seal.NewSealer(out, dek)
	checks := newDecodeChecks(ctx, cfg.parallelism)
	// Every check ends before SealFile returns, whatever it returns: a
	// check reads r, which is the caller's again once SealFile returns.
	defer checks.wait()
	sealer.OnRowGroupFile(func(f *seal.RowGroupFile) error {
		if err := alive(); err != nil || cfg.noDecodeCheck {
			f.Release()
			return err
		}
		return checks.add(f)
	})
	var prog Progress
	sealer.OnRowGroup(func(g seal.SealedRowGroup) error {
		if err := alive(); err != nil {
			return err
		}
		prog.Rows += g.Rows
		prog.BytesIn += g.PlainBytes
		prog.RowGroups++
		prog.BytesOut = out.n.Load()
		prog.RewrittenPages = sealer.RewrittenPages()
		if cfg.progress != nil {
			cfg.progress(prog)
		}
		return nil
	})
	err := sealer.AddFile(aliveReaderAt{r, alive}, size)
	// A row group that does not decode fails the file before any later
	// refusal of the Sealer, as it would have stopped it there.
	if cerr := checks.wait(); cerr != nil {
		return Object{}, sealError(cerr)
	}
	if err != nil {
		return Object{}, sealError(err)
	}
	footer, err := sealer.Close()
	if err != nil {
		return Object{}, err
	}
	if err := footer.SetFieldIDs(ids); err != nil {
		return Object{}, err
	}
	if err := alive(); err != nil {
		return Object{}, err
	}
	obj, err := newEncoded(footer, sealer.Offset(), dek, cfg.keyValues).finish(ctx, out, pending)
	if err != nil {
		return Object{}, err
	}
	if cfg.progress != nil {
		prog.BytesIn, prog.BytesOut = size, int64(obj.Size)
		cfg.progress(prog)
	}
	return obj, nil
}

// sealError marks the Sealer's refusals of a sound file ErrNotSealable.
func sealError(err error) error {
	for _, cause := range []error{ErrCodec, ErrUnboundedPage, pme.ErrTooLarge, ErrEncoding} {
		if errors.Is(err, cause) {
			return fmt.Errorf("%w: %w", ErrNotSealable, err)
		}
	}
	return err
}

// aliveReaderAt reads from r while alive reports no error: a cancelled
// context stops the Sealer at its next read.
type aliveReaderAt struct {
	r     io.ReaderAt
	alive func() error
}

func (a aliveReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := a.alive(); err != nil {
		return 0, err
	}
	return a.r.ReadAt(p, off)
}

// parquetFieldIDs returns the field ID of every schema element of the
// plaintext footer f that carries a field, by index in
// FileMetaData.schema, after the rule of AssignFieldIDs (see SealFile).
//
// The Arrow schema pqarrow reads from the file is what the rule applies
// to, so the Parquet schema is handed to pqarrow twice: as it is, and with
// each element's field_id replaced by the element's index. The second
// Arrow schema has the first's shape, and its IDs say which element each
// Arrow field comes from; that is where the ID the rule gives the field is
// written.
//
// With from (WithFieldIDsFrom), the IDs are from's instead, by name.
func parquetFieldIDs(f *seal.Footer, assign bool, from *arrow.Schema) (map[int]int32, error) {
	// Fields bounds the schema (elements, depth, path bytes) before arrow-go
	// builds anything from it.
	if _, err := f.Fields(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPlaintextParquet, err)
	}
	asIs, err := arrowSchemaOf(f, false)
	if err != nil {
		return nil, err
	}
	traced, err := arrowSchemaOf(f, true)
	if err != nil {
		return nil, err
	}
	var assigned *arrow.Schema
	if from != nil {
		if assigned, err = idsFrom(asIs, from); err != nil {
			return nil, err
		}
	} else {
		if missing := missingFieldIDs(asIs); len(missing) > 0 && !assign {
			return nil, fmt.Errorf("%w: %s %s none (WithAssignFieldIDs numbers them)", ErrFieldID, listPaths(missing), plural(len(missing), "has", "have"))
		}
		if assigned, err = AssignFieldIDs(asIs); err != nil {
			return nil, err
		}
	}
	ids := make(map[int]int32)
	var match func(tr, as arrow.Field, path string) error
	match = func(tr, as arrow.Field, path string) error {
		id, ok, err := fieldID(as, path)
		if err != nil || !ok {
			return fmt.Errorf("writer: internal error: AssignFieldIDs left %s without an ID", path)
		}
		v, traceable := tr.Metadata.GetValue(FieldIDKey)
		elem, perr := strconv.Atoi(v)
		if !traceable || perr != nil || elem <= 0 {
			return fmt.Errorf("%w: %w: %s has no Parquet schema element of its own to carry its ID (a legacy repeated field)", ErrNotSealable, ErrFieldID, path)
		}
		if prev, dup := ids[elem]; dup && prev != int32(id) {
			return fmt.Errorf("%w: %w: schema element %d would carry IDs %d and %d", ErrNotSealable, ErrFieldID, elem, prev, id)
		}
		ids[elem] = int32(id)
		trc, asc := childFields(tr.Type), childFields(as.Type)
		if len(trc) != len(asc) {
			return fmt.Errorf("writer: internal error: %s has %d children traced, %d assigned", path, len(trc), len(asc))
		}
		for i := range trc {
			if err := match(trc[i].field, asc[i].field, path+"."+asc[i].name); err != nil {
				return err
			}
		}
		return nil
	}
	if traced.NumFields() != assigned.NumFields() {
		return nil, fmt.Errorf("writer: internal error: %d fields traced, %d assigned", traced.NumFields(), assigned.NumFields())
	}
	for i, as := range assigned.Fields() {
		if err := match(traced.Field(i), as, as.Name); err != nil {
			return nil, err
		}
	}
	// The reader finds fields by pme.Footer.Fields: every one of them must
	// now have a valid, unique ID.
	if err := f.SetFieldIDs(ids); err != nil {
		return nil, err
	}
	fields, err := f.Fields()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPlaintextParquet, err)
	}
	seen := make(map[int32]string)
	for _, fd := range fields {
		if !fd.HasID || fd.ID < 0 {
			return nil, fmt.Errorf("%w: %w: %s would have no valid ID", ErrNotSealable, ErrFieldID, fd.Path)
		}
		if other, dup := seen[fd.ID]; dup {
			return nil, fmt.Errorf("%w: %w: %s and %s would share %d", ErrNotSealable, ErrFieldID, other, fd.Path, fd.ID)
		}
		seen[fd.ID] = fd.Path
	}
	return ids, nil
}

// arrowSchemaOf returns the Arrow schema pqarrow derives from the footer's
// Parquet schema alone (not from a stored ARROW:schema), the elements
// traced by their index if trace is set (seal.Footer.AppendSchema).
func arrowSchemaOf(f *seal.Footer, trace bool) (s *arrow.Schema, err error) {
	b, err := f.AppendSchema(nil, trace)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPlaintextParquet, err)
	}
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("%w: the Parquet schema has no Arrow form: %v", ErrPlaintextParquet, p)
		}
	}()
	md, err := metadata.NewFileMetaData(b, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: the Parquet schema: %w", ErrPlaintextParquet, err)
	}
	s, err = pqarrow.FromParquet(md.Schema, &pqarrow.ArrowReadProperties{}, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: the Parquet schema has no Arrow form: %w", ErrPlaintextParquet, err)
	}
	return s, nil
}

// missingFieldIDs returns the paths of the fields of s without a field ID
// by the rule of AssignFieldIDs: none, or "-1". The paths name a list's
// element, and a map's key and value, as AssignFieldIDs does.
func missingFieldIDs(s *arrow.Schema) []string {
	var out []string
	var walk func(f arrow.Field, path string)
	walk = func(f arrow.Field, path string) {
		if v, ok := f.Metadata.GetValue(FieldIDKey); !ok || v == "-1" || v == "0" {
			out = append(out, path)
		}
		for _, c := range childFields(f.Type) {
			walk(c.field, path+"."+c.name)
		}
	}
	for _, f := range s.Fields() {
		walk(f, f.Name)
	}
	return out
}

// listPaths lists at most 16 paths, then how many more.
func listPaths(paths []string) string {
	const most = 16
	if len(paths) <= most {
		return strings.Join(paths, ", ")
	}
	return strings.Join(paths[:most], ", ") + fmt.Sprintf(" and %d more", len(paths)-most)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
