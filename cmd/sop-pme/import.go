package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/cmd/sop-pme/internal/formats"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/writer"
	"github.com/spf13/cobra"
)

// Defaults of import's row groups. The writer holds at most n+1 row groups
// at once with n encoders (--parallel, every core by default): the one
// being gathered, and those being encoded and sealed. So import's memory is
// about n+1 times the row-group size, plus the input reader's batch,
// whatever the input's size.
const (
	importRowGroupBytes = 64 << 20
	importRowGroupRows  = writer.DefaultRowGroupRows
)

// importMemoryLimit is the soft memory limit of an import with row groups
// of rgBytes and n encoders: what the writer holds at most (the row group
// being gathered, and the n being encoded and sealed), and 64 MiB for the
// encoded plaintext, the input reader, the codecs and the runtime. The
// garbage collector works harder near it, so that garbage does not double
// the resident set, which must stay within (n+1) × rgBytes + 128 MiB (the
// README's bound, which TestImportRSS measures).
func importMemoryLimit(rgBytes int64, n int) int64 { return int64(n+1)*rgBytes + 64<<20 }

// defaultParallel is import's --parallel by default: every core, as the
// writer's own default (writer.WithParallelism). Re-encoding is CPU-bound,
// and with one encoder it ran at a fraction of the writer's speed.
func defaultParallel() int { return runtime.GOMAXPROCS(0) }

type importResult struct {
	StorageID    string `json:"storage_id"`
	Size         uint64 `json:"size"`
	UnpaddedSize uint64 `json:"unpadded_size"`
	Rows         int64  `json:"rows"`
	RowGroups    int    `json:"row_groups"`
	KeyRef       string `json:"key_ref"`
	// Table and Version, under --table: the table the object went into,
	// and the version of its schema the object was written at.
	Table   string `json:"table,omitempty"`
	Version int    `json:"version,omitempty"`
	// File is the input, under --table (- for stdin).
	File string `json:"file,omitempty"`
	// Path is how the object was made: "sealed" (the input's pages,
	// byte for byte: writer.SealFile) or "reencoded" (its rows, encoded
	// again: writer.WriteRecords), and ReencodeReason why not sealed.
	Path           string `json:"path"`
	ReencodeReason string `json:"reencode_reason,omitempty"`
	// RewrittenPages counts, on the sealed path, the pages rewritten:
	// compressed V2 pages as V1 ones (DuckDB cannot read them in an
	// encrypted file), and pages of the deprecated LZ4 codec as LZ4_RAW
	// ones (DuckDB and arrow-go cannot read it): decompressed and
	// compressed again, nothing decoded.
	RewrittenPages int64 `json:"rewritten_pages,omitempty"`
}

// The import paths.
const (
	pathSealed    = "sealed"
	pathReencoded = "reencoded"
)

// An importer is one run of import: its flags, what validate makes of
// them, and run, which writes the object and its DEK.
type importer struct {
	a        *app
	cmd      *cobra.Command
	store    storeFlag
	ks       keySource
	format   string
	assign   bool
	asJSON   bool
	rgRows   int64
	rgBytes  int64
	codec    string
	parallel int
	reencode bool
	table    string // --table: the objects go into this table
	evolve   bool   // --evolve: a new column of the input joins the table

	// Set by validate.
	f   formats.Format
	c   writer.Codec
	dir string
}

func (a *app) importCmd() *cobra.Command {
	im := &importer{a: a}
	cmd := &cobra.Command{
		Use:   "import FILE|- | import --table NAME FILE...",
		Short: "Write a table (Parquet, Arrow IPC, CSV, NDJSON) into a new object",
		Long: `Import reads a table and writes it into one new SOP-PME-1 object in the store,
and its DEK, wrapped, into the keyring. It prints the object's storage_id,
size, unpadded size, rows and row groups.

The input is Parquet, an Arrow IPC file or stream, CSV (with a header row) or
NDJSON (one object per line), told by its first bytes or its name (--format
otherwise); - is stdin. Import streams: its memory is bounded by about n+1
row groups (--row-group-bytes, --parallel n) and 128 MiB, not by the input:
320 MiB with the defaults on two cores. Row groups are encoded on every core
by default (--parallel); --parallel 1 bounds memory to about two row groups.
A Parquet file piped to stdin is copied to a private temporary file (0600,
in a directory of its own under $TMPDIR, never beside the store, and
unnamed as soon as it is created, so that no exit leaves it behind), then
sealed as the same file given by path; an Arrow IPC file on stdin needs
random access, and is read into memory. CSV and NDJSON column types come from the first 10,000 rows; a
CSV record or NDJSON line longer than 8 MiB is refused. Arrow view types
(string_view, binary_view, list_view: pyarrow 26, Polars) are imported as
string, binary and list. A Parquet file with an INT96 timestamp beyond the
microsecond range (the unit the reader and DuckDB read INT96 in) is refused.
The object must be one the reader returns with its defaults: a schema at
most 64 levels deep and 4,096 leaf columns wide, rows that decode within a
read's memory limit (rows that compress far better than that go into
smaller row groups).

Every column of an object needs a positive Parquet field ID (SOP-PME-1 11.2).
Those of a Parquet or Arrow input are kept; an ID of 0, which DuckDB's
FIELD_IDS 'auto' gives the first column, counts as missing. Without
--assign-field-ids a field without one is an error naming it; with it, the
missing IDs are assigned by the rule
of writer.AssignFieldIDs: numbered from one more than the largest existing ID,
top-level fields first in order, then their children, deterministically.

A plaintext Parquet file is sealed byte for byte when it can be: its pages,
row groups, codecs and encodings are kept, each page becomes an encrypted
module, and nothing is encoded (page indexes and bloom filters are dropped).
Before the object is published, each row group is decoded once as the
reader will decode it, to check it, n at once (--parallel) while the next
ones are sealed: sealing runs at the speed of that decoding on every core,
in about n column chunks (each check holds one chunk at a time) and n
decoding batches of memory. Compressed DATA_PAGE_V2 pages, which DuckDB cannot read in an
encrypted file, are rewritten as V1 pages, and pages of the deprecated LZ4
codec, which DuckDB and arrow-go cannot read, as LZ4_RAW pages: decompressed
and compressed again, nothing decoded. The rows are encoded again instead when the file cannot be sealed as
it is (a codec DuckDB or arrow-go cannot read, such as LZO; an encoding
DuckDB cannot read; pages or row groups beyond the format's limits), when --codec,
--row-group-rows or --row-group-bytes ask for another layout, and with
--reencode. A refusal found midway discards what was sealed before the rows
are encoded. The summary line and --json say which path was taken, and why.

On any failure nothing is left behind: no object, no temporary file, no key.
The store is created if there is none (a directory; an s3:// bucket must
exist), and the KEK and keyring too (said on stderr), once the object is
written.

--table NAME writes each FILE (- for stdin) as an object of the table NAME,
created by the first import into it. The table's catalog, on the trusted side
in the keyring, gives the input's columns their field IDs (a column is known
by its name there; the input's own IDs are not used, and --assign-field-ids
is not needed): each object is sealed or re-encoded with the table's IDs,
its DEK put into the keyring, then the object appended to the table, in that
order (if the append fails, the DEK is forgotten and the object deleted). An
input whose columns do not fit the table's schema (a column the table lacks,
or one of another type that is not a promotion) is refused naming the column;
--evolve adds its new columns to the table and widens what can be widened.
The files are imported one after another, and an import stops at the first
failure: the files before it stay in the table. Under --json, --table prints
an array, one result per file.

` + tablesHelp + `

` + keysHelp,
		Example: `  sop-pme import --store ./store orders.parquet
  duckdb -c "COPY (SELECT ...) TO '/dev/stdout' (FORMAT csv)" | sop-pme import -s ./store --format csv --assign-field-ids -
  sop-pme import -s ./store --table orders orders-2026-*.csv`,
		Args: func(cmd *cobra.Command, args []string) error {
			if im.table != "" {
				if len(args) == 0 {
					return usagef("import --table takes one or more input files (or - for stdin) (see sop-pme import -h)")
				}
				return nil
			}
			return exactArgs(1, "one input file (or - for stdin); several with --table")(cmd, args)
		},
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			if err := im.validate(); err != nil {
				return err
			}
			if im.table != "" || cmd.Flags().Changed("table") {
				return im.runTable(cmd.Context(), args)
			}
			if im.evolve {
				return usagef("--evolve goes with --table")
			}
			return im.run(cmd.Context(), args[0])
		}),
	}
	im.cmd = cmd
	addStoreFlag(cmd, &im.store)
	addKeyFlags(cmd, &im.ks)
	fl := cmd.Flags()
	fl.StringVar(&im.format, "format", "", "input `format`: "+formatList(formats.All)+" (default: from the first bytes or the name)")
	fl.BoolVar(&im.assign, "assign-field-ids", false, "assign the Parquet field IDs the input lacks (see above)")
	fl.BoolVar(&im.asJSON, "json", false, "print the result as JSON")
	fl.Int64Var(&im.rgRows, "row-group-rows", importRowGroupRows, "most `rows` in a row group")
	fl.Int64Var(&im.rgBytes, "row-group-bytes", importRowGroupBytes, "most `bytes` of Arrow buffers in a row group; memory is about twice this")
	fl.StringVar(&im.codec, "codec", "zstd", "page `codec`: zstd, snappy or none")
	fl.IntVar(&im.parallel, "parallel", defaultParallel(), "row groups `n` encoded (re-encoding) or decoded for the check (sealing) at once; memory is about n+1 row groups + 128 MiB")
	fl.BoolVar(&im.reencode, "reencode", false, "encode a Parquet input's rows again rather than seal its pages byte for byte")
	fl.StringVar(&im.table, "table", "", "write each FILE as an object of the table `name` (see Tables below)")
	fl.BoolVar(&im.evolve, "evolve", false, "with --table: add an input's new columns to the table's schema")
	return cmd
}

// validate checks the flags before anything is opened or read: the input
// format, the codec and the store's path.
func (im *importer) validate() error {
	if im.format != "" {
		f, err := formats.Parse(im.format)
		if err != nil {
			return usagef("--format %q: one of %s", im.format, formatList(formats.All))
		}
		im.f = f
	}
	c, err := parseCodec(im.codec)
	if err != nil {
		return err
	}
	im.c = c
	im.dir, err = im.store.path()
	return err
}

// run imports the table at path (stdin for "-") into a new object of the
// store, and its DEK into the keyring. The keys come first: a wrong KEK
// fails before any work; a missing KEK or keyring is created only once the
// object is written. On any failure nothing is left behind.
func (im *importer) run(ctx context.Context, path string) error {
	a, dir := im.a, im.dir
	if err := im.ks.checkApart(dir); err != nil {
		return err
	}
	k, err := im.ks.openRing(ctx, dir, ringWrite, a.stderr)
	var ce *cmdError
	if errors.As(err, &ce) && ce.code == exitNotFound {
		k, err = nil, nil
	}
	if err != nil {
		return err
	}
	defer k.Close()

	name := path
	total := int64(-1)
	if path == "-" {
		name = "stdin"
	} else if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		total = st.Size()
	}
	m := a.newMeter("import", total)
	src, err := im.source(ctx, path, name, m.add)
	if err != nil {
		m.abort()
		return err
	}
	defer src.close()
	in, rr, err := im.open(ctx, src, name, m)
	if err != nil {
		m.abort()
		return err
	}
	defer in.Close()

	if os.Getenv("GOMEMLIMIT") == "" {
		// A soft limit: the garbage collector works harder as the
		// heap nears it, so that garbage does not double the
		// resident set (GOGC=100 lets the heap grow to twice what
		// is live). It never fails an allocation.
		debug.SetMemoryLimit(importMemoryLimit(im.rgBytes, im.parallel))
	}
	st, undo, err := im.store.create(ctx)
	if err != nil {
		m.abort()
		return err
	}
	w, err := im.write(ctx, st, in.Format, rr, src, m, nil)
	if err != nil {
		m.abort()
		undo()
		return about(name, err)
	}
	obj := w.obj
	if k == nil {
		if k, err = im.ks.openRing(ctx, dir, ringCreate, a.stderr); err != nil {
			m.abort()
			st.Delete(ctx, obj.StorageID)
			return err
		}
		defer k.Close()
	}
	if err := k.ring.Put(ctx, obj.StorageID, obj.DEK); err != nil {
		m.abort()
		// An object without its DEK is unreadable: remove it.
		st.Delete(ctx, obj.StorageID)
		return about(k.ring.Path(), err)
	}
	res := im.finish(m, w, name)
	if im.asJSON {
		return printJSON(a.stdout, res)
	}
	im.print(res)
	return nil
}

// finish ends the meter of an import with its summary line, and returns
// its result.
func (im *importer) finish(m *meter, w imported, name string) importResult {
	obj, prog := w.obj, w.prog
	if w.how == pathSealed {
		m.done("sealed %d %s of %s byte for byte%s (%s in, %s object)", prog.Rows, plural(int(prog.Rows), "row", "rows"), name, rewritten(prog.RewrittenPages), mb(m.n.Load()), mb(int64(obj.Size)))
	} else {
		m.done("imported %d %s from %s, re-encoded: %s (%s in, %s object)", prog.Rows, plural(int(prog.Rows), "row", "rows"), name, w.why, mb(m.n.Load()), mb(int64(obj.Size)))
	}
	return importResult{
		StorageID: obj.StorageID.String(), Size: obj.Size, UnpaddedSize: obj.UnpaddedSize,
		Rows: prog.Rows, RowGroups: prog.RowGroups, KeyRef: obj.KeyRef.String(),
		Path: w.how, ReencodeReason: w.why, RewrittenPages: prog.RewrittenPages,
	}
}

// print prints an import's result as text.
func (im *importer) print(res importResult) {
	out := im.a.stdout
	if res.Table != "" {
		fmt.Fprintf(out, "table          %s (schema version %d)\n", res.Table, res.Version)
	}
	fmt.Fprintf(out, "storage_id     %s\n", res.StorageID)
	fmt.Fprintf(out, "size           %d bytes (Padmé target of the unpadded size)\n", res.Size)
	if res.Table != "" {
		fmt.Fprintf(out, "unpadded size  %d bytes (kept in the table's encrypted catalog)\n", res.UnpaddedSize)
	} else {
		fmt.Fprintf(out, "unpadded size  %d bytes (keep it in the encrypted catalog)\n", res.UnpaddedSize)
	}
	fmt.Fprintf(out, "rows           %d\n", res.Rows)
	fmt.Fprintf(out, "row groups     %d\n", res.RowGroups)
	fmt.Fprintf(out, "key_ref        %s (opaque; resolves nothing)\n", res.KeyRef)
	if res.Path == pathSealed {
		fmt.Fprintf(out, "path           sealed (the input's pages, byte for byte%s)\n", rewritten(res.RewrittenPages))
	} else {
		fmt.Fprintf(out, "path           re-encoded (%s)\n", res.ReencodeReason)
	}
}

// open opens the input src (called name in errors), counting its bytes
// on m, and returns it with the reader of its records: with the
// field IDs it lacks assigned, under --assign-field-ids, or else checked.
func (im *importer) open(ctx context.Context, src *importSource, name string, m *meter) (*formats.Input, array.RecordReader, error) {
	opts := formats.InputOptions{Format: im.f, OnRead: m.add}
	var in *formats.Input
	var err error
	if src.file != nil {
		in, err = formats.OpenFile(ctx, src.file, name, opts)
	} else {
		in, err = formats.OpenStream(ctx, src.stream, name, opts)
	}
	if err != nil {
		return nil, nil, about(name, err)
	}
	if im.table != "" {
		// The table's catalog gives the IDs (runTable).
		return in, in, nil
	}
	if missing := missingFieldIDs(in.Schema()); len(missing) > 0 {
		if !im.assign {
			in.Close()
			return nil, nil, &cmdError{exitFailure, fmt.Sprintf("%s: %d %s no Parquet field ID: %s (give --assign-field-ids to number them; SOP-PME-1 11.2)",
				name, len(missing), plural(len(missing), "field has", "fields have"), listNames(missing, 16)), writer.ErrFieldID}
		}
		schema, err := writer.AssignFieldIDs(in.Schema())
		if err != nil {
			in.Close()
			return nil, nil, about(name, err)
		}
		return in, &reschemed{RecordReader: in, schema: schema}, nil
	} else if _, err := writer.AssignFieldIDs(in.Schema()); err != nil {
		in.Close()
		return nil, nil, about(name, err)
	}
	return in, in, nil
}

// imported is what import wrote: the object, the writer's last progress,
// the path taken (pathSealed or pathReencoded) and why it re-encoded.
type imported struct {
	obj      writer.Object
	prog     writer.Progress
	how, why string
}

// write writes the object into st: the Parquet file of src sealed byte
// for byte when it can be, otherwise the records of rr encoded again.
//
// With ids (a table's plan), the object's fields take the field IDs of ids,
// by name.
func (im *importer) write(ctx context.Context, st store, f formats.Format, rr array.RecordReader, src *importSource, m *meter, ids *arrow.Schema) (imported, error) {
	var prog writer.Progress
	var obj writer.Object
	var err error
	how, why := pathSealed, reencodeWhy(im.cmd, f, src.file == nil, im.reencode)
	if why == "" {
		obj, err = sealParquet(ctx, st, src.file, im.assign, ids, im.parallel, m, &prog)
		if errors.Is(err, writer.ErrNotSealable) || errors.Is(err, writer.ErrPlaintextParquet) {
			// What was sealed is discarded (SealFile aborted its
			// import); the rows are encoded again, from the start.
			why, err = notSealableWhy(err), nil
			m.n.Store(0)
			m.start = time.Now()
			if m.bar != nil {
				m.bar.Reset()
			}
		}
	}
	if why != "" && ids != nil {
		schema, err := writer.FieldIDsFrom(rr.Schema(), ids)
		if err != nil {
			return imported{}, err
		}
		rr = &reschemed{RecordReader: rr, schema: schema}
	}
	if why != "" {
		how = pathReencoded
		obj, err = writer.WriteRecords(ctx, st, rr,
			writer.WithRowGroupRows(im.rgRows), writer.WithRowGroupBytes(im.rgBytes),
			writer.WithParallelism(im.parallel), writer.WithCodec(im.c),
			writer.WithProgress(func(p writer.Progress) { prog = p }))
	}
	if err != nil {
		return imported{}, err
	}
	return imported{obj, prog, how, why}, nil
}

// reencodeWhy says why an input is re-encoded without trying to seal it,
// or "" if it is a Parquet file to seal.
func reencodeWhy(cmd *cobra.Command, f formats.Format, stream, reencode bool) string {
	switch {
	case reencode:
		return "--reencode"
	case f != formats.Parquet:
		return string(f) + " input"
	case stream:
		return "Parquet from a stream" // not reached: spooled (see source)
	}
	for _, name := range []string{"codec", "row-group-rows", "row-group-bytes"} {
		if cmd.Flags().Changed(name) {
			return "--" + name + " asks for another layout"
		}
	}
	return ""
}

// notSealableWhy says, in a few words, why SealFile refused a file.
func notSealableWhy(err error) string {
	where := ""
	var ce *writer.ColumnError
	if errors.As(err, &ce) {
		where = fmt.Sprintf("row group %d, column %s: ", ce.RowGroup, ce.Column)
	}
	switch {
	case errors.Is(err, writer.ErrCodec):
		return where + "a codec DuckDB or arrow-go cannot read"
	case errors.Is(err, writer.ErrEncoding):
		return where + "an encoding DuckDB cannot read"
	case errors.Is(err, writer.ErrUnboundedPage):
		return where + "compressed pages whose bytes do not bound their decompressed size, which readers refuse"
	case errors.Is(err, pme.ErrTooLarge):
		return where + "beyond SOP-PME-1's limits on pages and row groups"
	case errors.Is(err, writer.ErrFieldID):
		return "a field without a Parquet schema element of its own to carry its field ID"
	}
	return where + "a layout the sealer does not take"
}

// sealParquet seals the Parquet file f into st, byte for byte, its row
// groups decoded for the check n at once.
func sealParquet(ctx context.Context, st blobs.Store, f *os.File, assign bool, ids *arrow.Schema, n int, m *meter, prog *writer.Progress) (writer.Object, error) {
	fi, err := f.Stat()
	if err != nil {
		return writer.Object{}, err
	}
	// The meter counts the file's bytes as their row groups are sealed
	// (and the whole file once the object is published).
	m.n.Store(0)
	opts := []writer.Option{writer.WithParallelism(n), writer.WithProgress(func(p writer.Progress) {
		m.add(int(p.BytesIn - prog.BytesIn))
		*prog = p
	})}
	if ids != nil {
		opts = append(opts, writer.WithFieldIDsFrom(ids))
	} else if assign {
		opts = append(opts, writer.WithAssignFieldIDs())
	}
	return writer.SealFile(ctx, st, f, fi.Size(), opts...)
}

// rewritten says how many pages sealing rewrote, if any: compressed V2
// pages as V1 ones and deprecated LZ4 pages as LZ4_RAW ones, which DuckDB
// reads.
func rewritten(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(", but for %d %s rewritten as DuckDB reads them (compressed V2 as V1, LZ4 as LZ4_RAW)", n, plural(int(n), "page", "pages"))
}

func parseCodec(s string) (writer.Codec, error) {
	switch s {
	case "zstd":
		return writer.Zstd, nil
	case "snappy":
		return writer.Snappy, nil
	case "none", "uncompressed":
		return writer.Uncompressed, nil
	}
	return 0, usagef("--codec %q: one of zstd, snappy, none", s)
}

func formatList(fs []formats.Format) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// listNames lists at most n names, then how many more.
func listNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:n], ", ") + fmt.Sprintf(" and %d more", len(names)-n)
}

// removeEmptyStore removes a store that an import created and then failed
// to write into: the directory, if it holds nothing but the store's marker
// and lock files.
func removeEmptyStore(dir string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if n != "SOP-BLOB-STORE" && !strings.HasPrefix(n, ".lock") {
			return
		}
	}
	for _, e := range ents {
		os.Remove(dir + string(os.PathSeparator) + e.Name())
	}
	os.Remove(dir)
}
