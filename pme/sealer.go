package pme

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/padme"
)

// ErrCompressedV2 reported a compressed DATA_PAGE_V2 page, which a Sealer
// refused: DuckDB 1.5.6 reads the levels and the values of such a page in an
// encrypted file as two modules, a layout no PME writer produces (see the
// DuckDB notes).
//
// Deprecated: a Sealer no longer returns it. It rewrites such a page as
// the DATA_PAGE (V1) that holds the same levels and values, decompressing
// and compressing again its values only (see Sealer.RewrittenPages).
var ErrCompressedV2 = errors.New("pme: compressed DATA_PAGE_V2 pages are not readable by DuckDB in encrypted files")

// ErrUnboundedPage reports a compressed page whose own bytes do not bound
// its decompression by its uncompressed_page_size: a zstd frame that states
// a larger content size, or that states none and whose blocks may decode
// to more (a streaming compressor's output can); a snappy page whose
// decoded length is not its size. The reader refuses such pages, since the
// decompressors allocate what those bytes say (see the reader's page
// checks), so a Sealer refuses them rather than make an object no
// SOP-PME-1 reader of this library opens.
var ErrUnboundedPage = errors.New("pme: compressed page whose bytes do not bound its decompressed size")

// ErrPlaintextParquet reports input to a Sealer that is not a plaintext
// Parquet file it can seal: no "PAR1" at both ends, an encrypted file, a
// column chunk in another file, or a footer it cannot decode.
var ErrPlaintextParquet = errors.New("pme: not a plaintext Parquet file this sealer takes")

// ErrCodec reports a column chunk compressed with a codec that the readers
// of SOP-PME-1 objects cannot be relied on to decompress: DuckDB 1.5.6 and
// this library's reader (arrow-go) both read UNCOMPRESSED, SNAPPY, GZIP,
// BROTLI, ZSTD and LZ4_RAW, and a Sealer takes those, and the deprecated
// LZ4 codec (Hadoop framing), which it rewrites as LZ4_RAW (neither reads
// it). LZO is read by neither, nor is a codec parquet.thrift does not name.
var ErrCodec = errors.New("pme: compression codec not readable by every SOP-PME-1 reader")

// A ColumnError is a Sealer's refusal of one column chunk: RowGroup is the
// index of its row group in the file AddFile was given, Column names the
// column (its dotted path_in_schema), and Err, which it wraps, says why
// (ErrCodec, ErrUnboundedPage, ErrPlaintextParquet, ErrTooLarge, ...).
type ColumnError struct {
	RowGroup int
	Column   string
	Err      error
}

// Error returns "row group N: column PATH: " and Err's text.
func (e *ColumnError) Error() string {
	return fmt.Sprintf("row group %d: column %s: %v", e.RowGroup, e.Column, e.Err)
}

// Unwrap returns Err, for errors.Is and errors.As.
func (e *ColumnError) Unwrap() error { return e.Err }

// The compression codecs (parquet.thrift CompressionCodec) a Sealer seals
// as they are: those DuckDB 1.5.6 and arrow-go both decompress. (LZ4 is
// rewritten as LZ4_RAW.)
var sealableCodecs = map[int32]string{0: "UNCOMPRESSED", 1: "SNAPPY", 2: "GZIP", 4: "BROTLI", 6: "ZSTD", 7: "LZ4_RAW"}

// More field IDs of parquet.thrift that a Sealer reads.
const (
	fmdVersion = 1
	fmdNumRows = 3

	cmdPathInSchema = 3
	cmdCodec        = 4

	phType           = 1
	phDataPageV2     = 8
	dph2IsCompressed = 7

	pageDataV2 = 3

	codecUncompressed = 0

	rgNumRows = 3
)

// A Span is a byte range [Off, Off+Len) of a file.
type Span struct {
	Off, Len int64
}

// End returns Off + Len.
func (s Span) End() int64 { return s.Off + s.Len }

// chunkMap records where the pages of one sealed column chunk went.
type chunkMap struct {
	plain        Span
	obj          Span
	uncompressed int64           // DuckDB's total_uncompressed_size: header modules + uncompressed pages
	rewritten    bool            // some of its V2 pages were rewritten as V1 ones (see rewriteV2)
	codec        int32           // the codec of its sealed pages (LZ4 becomes LZ4_RAW)
	kept         map[int64]int64 // for onFile: plaintext offset of a page header → its offset in the row group file
	keepStart    int64           // and the chunk's bytes there
	keepEnd      int64
	pages        map[int64]int64 // plaintext offset of a page header → object offset of its module
}

// maxPlainFooter bounds the footer of a plaintext file a Sealer reads, in
// bytes.
const maxPlainFooter = 256 << 20

// A Sealer turns plaintext Parquet files into the data region and footer of
// one SOP-PME-1 object, page by page, without decoding or encoding any page:
// step 2 of the writer pipeline, "PME encryption under the object's DEK"
// (Section 11.12), in the layout DuckDB writes and reads (Section 11.3):
//
//	"PARE" | module | module | ... | FileCryptoMetaData | footer module | u32 LE len | "PARE"
//
// Each file added (AddFile) contributes its row groups, in order, but for
// those without rows, which are left out; the files must share one schema.
// A compressed DATA_PAGE_V2 page, which DuckDB cannot read in an encrypted
// file, is rewritten as the DATA_PAGE (V1) of the same levels and values,
// and a page of the deprecated LZ4 codec, which neither DuckDB nor arrow-go
// reads, as the LZ4_RAW page of the same bytes (see RewrittenPages); every
// other page is sealed byte for byte.
// Every page header and every page body becomes a module of its own, sealed
// under the DEK with a fresh nonce and the empty AAD. Page header bytes are
// sealed unchanged: their compressed_page_size is the plaintext body length,
// which is what DuckDB expects. In the footer Close returns, every offset
// points at the length prefix of a page's header module;
// total_compressed_size counts module bytes; total_uncompressed_size counts
// header modules and uncompressed pages (as DuckDB writes it);
// RowGroup.ordinal numbers the row groups; page indexes, bloom filters and
// column crypto metadata are dropped, and so is anything else in a file that
// no column chunk's pages reference.
//
// The writer encodes row groups into files of their own, in parallel, and
// seals them here in order; the command line seals existing Parquet files
// here directly. A Sealer holds at most one page of plaintext at a time (a
// V2 page it rewrites, twice: uncompressed and compressed again; pages are
// at most MaxPageSize). It is not safe for concurrent use; its errors are
// sticky.
type Sealer struct {
	dek       DEK
	out       io.Writer
	pos       int64 // bytes written to out: the object offset of the next module
	meta      *thrift.Struct
	schema    []byte // the encoded schema of the first file
	rgs       []thrift.Value
	numRows   int64
	hdr       []byte // plaintext page header window
	body      []byte // plaintext page body
	sealed    []byte
	levels    []levels // of the leaf columns, from the first file's schema
	v1, v1c   []byte   // a rewritten V2 page's body, plain and compressed
	v1hdr     []byte   // and its header
	rewritten int64    // V2 pages rewritten as V1 ones
	onRG      func(SealedRowGroup) error
	onFile    func(io.ReaderAt, int64) error // see OnRowGroupFile
	file      rowGroupFile                   // the row group file being made, for onFile
	err       error
}

// SealedRowGroup describes a row group a Sealer has just sealed, for
// progress reports.
type SealedRowGroup struct {
	// Rows is the row group's num_rows, as the file's footer states it.
	Rows int64
	// PlainBytes is the size of its column chunks in the plaintext file;
	// SealedBytes that of their modules in the object.
	PlainBytes, SealedBytes int64
}

// NewSealer returns a Sealer that writes the object's bytes to out, sealing
// under dek. It writes nothing until the first AddFile or Close.
func NewSealer(out io.Writer, dek DEK) *Sealer {
	return &Sealer{dek: dek, out: out}
}

// OnRowGroup makes the Sealer call fn after each row group it seals. An
// error from fn stops the Sealer: AddFile returns it, and it is sticky.
func (s *Sealer) OnRowGroup(fn func(SealedRowGroup) error) { s.onRG = fn }

// RewrittenPages returns how many pages the Sealer has rewritten so far:
// compressed DATA_PAGE_V2 pages as DATA_PAGE (V1) ones, and pages of the
// deprecated LZ4 codec as LZ4_RAW ones (see transcode.go): the only pages
// it does not seal byte for byte.
func (s *Sealer) RewrittenPages() int64 { return s.rewritten }

// Offset returns the number of object bytes written so far.
func (s *Sealer) Offset() int64 { return s.pos }

func (s *Sealer) fail(err error) error {
	if s.err == nil {
		s.err = err
	}
	return s.err
}

func (s *Sealer) emit(b []byte) error {
	if _, err := s.out.Write(b); err != nil {
		return s.fail(fmt.Errorf("pme: writing ciphertext: %w", err))
	}
	s.pos += int64(len(b))
	return nil
}

func (s *Sealer) start() error {
	if s.pos == 0 {
		return s.emit(magicPARE[:])
	}
	return nil
}

// AddFile seals the row groups of the plaintext Parquet file r, of size
// bytes, and appends them to the object. The file's schema must equal that
// of the first file added. Its footer's key-value metadata is kept from the
// first file only; a key reserved for padding (Section 11.8) is refused.
func (s *Sealer) AddFile(r io.ReaderAt, size int64) error {
	if s.err != nil {
		return s.err
	}
	meta, err := readFooter(r, size)
	if err != nil {
		return s.fail(err)
	}
	sv := meta.Field(fmdSchema)
	if sv == nil || sv.Type != thrift.TypeList {
		return s.fail(fmt.Errorf("%w: no schema", ErrPlaintextParquet))
	}
	schema := thrift.NewStruct(thrift.Field{ID: fmdSchema, Value: *sv}).Append(nil)
	if s.meta == nil {
		if s.levels, err = leafLevels(sv.List.Items); err != nil {
			return s.fail(err)
		}
		for _, kv := range keyValues(meta) {
			if padme.IsReserved(kv) {
				return s.fail(fmt.Errorf("%w: footer metadata key %q is reserved for padding", ErrPlaintextParquet, kv))
			}
		}
		s.meta, s.schema = meta, schema
	} else if !bytes.Equal(schema, s.schema) {
		return s.fail(fmt.Errorf("%w: the schema differs from the first file's", ErrPlaintextParquet))
	}
	if err := s.start(); err != nil {
		return err
	}
	f := &Footer{meta: meta}
	rgs, err := f.rowGroups()
	if err != nil {
		return s.fail(fmt.Errorf("%w: %w", ErrPlaintextParquet, err))
	}
	if len(s.rgs)+len(rgs) > MaxRowGroups {
		return s.fail(fmt.Errorf("%w: more than %d row groups", ErrTooLarge, MaxRowGroups))
	}
	for i, rg := range rgs {
		n, err := rg.I64(rgNumRows)
		if err != nil || n < 0 {
			return s.fail(fmt.Errorf("%w: row group %d: num_rows", ErrPlaintextParquet, i))
		}
		if n == 0 {
			// A row group without rows has nothing to read (arrow-go writes
			// one, of empty chunks, for an empty table): it is left out.
			continue
		}
		start := s.pos
		plain, err := s.sealRowGroup(r, size, rg, i, n)
		if ce := (*ColumnError)(nil); errors.As(err, &ce) {
			ce.RowGroup = i
			return s.fail(err)
		} else if err != nil {
			return s.fail(fmt.Errorf("row group %d: %w", i, err))
		}
		s.numRows += n
		s.rgs = append(s.rgs, thrift.StructValue(rg))
		if s.onRG != nil {
			if err := s.onRG(SealedRowGroup{Rows: n, PlainBytes: plain, SealedBytes: s.pos - start}); err != nil {
				return s.fail(err)
			}
		}
	}
	return nil
}

func keyValues(meta *thrift.Struct) []string {
	v := meta.Field(fmdKeyValueMetadata)
	if v == nil || v.Type != thrift.TypeList {
		return nil
	}
	var out []string
	for _, it := range v.List.Items {
		if it.Struct != nil {
			if k, err := it.Struct.Binary(kvKey); err == nil {
				out = append(out, string(k))
			}
		}
	}
	return out
}

// sealRowGroup seals the column chunks of rg from r, in column order, and
// remaps rg to the object's layout. It returns the plaintext size of the
// chunks.
func (s *Sealer) sealRowGroup(r io.ReaderAt, size int64, rg *thrift.Struct, index int, rows int64) (int64, error) {
	cols, err := rg.List(rgColumns)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrPlaintextParquet, err)
	}
	rgStart, rgLen, plain := s.pos, int64(0), int64(0)
	var kept []keptChunk // for onFile
	for j, v := range cols.Items {
		cc := v.Struct
		if cc == nil || cc.Field(ccFilePath) != nil {
			return 0, fmt.Errorf("%w: column %d: missing, or in another file", ErrPlaintextParquet, j)
		}
		if cc.Field(ccCryptoMetadata) != nil || cc.Field(ccEncryptedColumnMD) != nil {
			return 0, fmt.Errorf("%w: column %d is encrypted", ErrPlaintextParquet, j)
		}
		md, err := cc.Struct(ccMetaData)
		if err != nil {
			return 0, fmt.Errorf("%w: column %d: %w", ErrPlaintextParquet, j, err)
		}
		span, dict, err := plainSpan(md)
		if err != nil || span.End() > size-8 {
			return 0, fmt.Errorf("%w: column %d: chunk [%d, %d) outside the file: %v", ErrPlaintextParquet, j, span.Off, span.End(), err)
		}
		if j >= len(s.levels) {
			return 0, fmt.Errorf("%w: column %d of a schema of %d", ErrPlaintextParquet, j, len(s.levels))
		}
		m, err := s.sealChunk(r, span, md, s.levels[j], chunkCheck(md, s.levels[j], index, j, rows))
		if err != nil {
			return 0, &ColumnError{Column: columnPath(md, j), Err: err}
		}
		if m.rewritten {
			noteV1(md)
		}
		md.Set(cmdCodec, thrift.I32(m.codec))
		data, _ := md.I64(cmdDataPageOffset)
		if s.onFile != nil {
			kept = append(kept, keptChunk{start: m.keepStart, end: m.keepEnd, data: m.kept[data], dict: m.kept[dict]})
		}
		newData, ok := m.pages[data]
		if !ok {
			return 0, fmt.Errorf("%w: column %s: data_page_offset is not a page", ErrPlaintextParquet, columnPath(md, j))
		}
		md.Set(cmdDataPageOffset, thrift.I64(newData))
		if dict > 0 {
			newDict, ok := m.pages[dict]
			if !ok {
				return 0, fmt.Errorf("%w: column %s: dictionary_page_offset is not a page", ErrPlaintextParquet, columnPath(md, j))
			}
			md.Set(cmdDictPageOffset, thrift.I64(newDict))
		} else {
			md.Delete(cmdDictPageOffset)
		}
		md.Set(cmdTotalCompressed, thrift.I64(m.obj.Len))
		md.Set(cmdTotalUncompressed, thrift.I64(m.uncompressed))
		dropOutsideChunk(cc, md)
		cc.Set(ccFileOffset, thrift.I64(0))
		rgLen += m.obj.Len
		plain += span.Len
	}
	rg.Set(rgFileOffset, thrift.I64(rgStart))
	rg.Set(rgTotalCompressed, thrift.I64(rgLen))
	rg.Set(rgOrdinal, thrift.I16(int16(len(s.rgs))))
	if s.onFile != nil {
		if err := s.keepRowGroup(r, rg, kept, rows); err != nil {
			return 0, err
		}
	}
	return plain, nil
}

// columnPath names a column chunk for errors: its path_in_schema, or its
// index.
func columnPath(md *thrift.Struct, j int) string {
	if l, err := md.List(cmdPathInSchema); err == nil {
		parts := make([]string, 0, len(l.Items))
		for _, it := range l.Items {
			parts = append(parts, string(it.Bin))
		}
		return strings.Join(parts, ".")
	}
	return fmt.Sprintf("%d", j)
}

// Close returns the object's footer: the first file's FileMetaData with the
// row groups of every file added, sealed and remapped, and their total
// num_rows. The footer is not sealed yet (Footer.Seal). If no file was
// added, Close fails.
func (s *Sealer) Close() (*Footer, error) {
	if s.err != nil {
		return nil, s.err
	}
	if s.meta == nil {
		return nil, s.fail(fmt.Errorf("%w: no file was added", ErrPlaintextParquet))
	}
	s.meta.Set(fmdRowGroups, thrift.ListOf(thrift.TypeStruct, s.rgs...))
	s.meta.Set(fmdNumRows, thrift.I64(s.numRows))
	f := &Footer{meta: s.meta}
	s.err = fmt.Errorf("%w: Sealer closed", ErrLayout)
	return f, nil
}

// AppendKeyValue appends a key-value entry to the footer's metadata. The
// value is always written, even when empty (Section 11.8 relies on that
// for the padding entry).
func (f *Footer) AppendKeyValue(key string, value []byte) {
	kv := thrift.NewStruct(
		thrift.Field{ID: kvKey, Value: thrift.Binary([]byte(key))},
		thrift.Field{ID: kvValue, Value: thrift.Binary(value)},
	)
	v := f.meta.Field(fmdKeyValueMetadata)
	if v == nil || v.Type != thrift.TypeList {
		f.meta.Set(fmdKeyValueMetadata, thrift.ListOf(thrift.TypeStruct, thrift.StructValue(kv)))
		return
	}
	v.List.Items = append(v.List.Items, thrift.StructValue(kv))
}

// schemaElements returns the elements of the tree's FileMetaData.schema.
func (f *Footer) schemaElements() ([]thrift.Value, error) {
	f.edit()
	v := f.meta.Field(fmdSchema)
	if v == nil || v.Type != thrift.TypeList || v.List.Elem != thrift.TypeStruct || len(v.List.Items) == 0 {
		return nil, fmt.Errorf("%w: FileMetaData.schema missing or malformed", ErrFormat)
	}
	return v.List.Items, nil
}

// AppendSchema appends to dst the Thrift compact encoding of a FileMetaData
// that holds the footer's version and schema, no rows and no row groups:
// what a Parquet schema decoder needs, and nothing it would have to trust
// beyond that. If tag is true, schema element i (0 is the root) carries
// field_id i in place of its own, so that the fields a decoder derives from
// the schema can be traced back to the elements they come from. Call Fields
// first: it bounds the schema a decoder is given.
func (f *Footer) AppendSchema(dst []byte, tag bool) ([]byte, error) {
	elems, err := f.schemaElements()
	if err != nil {
		return nil, err
	}
	elems = withoutUnknownLogical(elems)
	version := thrift.I32(1)
	if v := f.meta.Field(fmdVersion); v != nil && v.Type == thrift.TypeI32 {
		version = *v
	}
	if tag {
		tagged := make([]thrift.Value, len(elems))
		for i, e := range elems {
			c := &thrift.Struct{Fields: slices.Clone(e.Struct.Fields)}
			c.Set(seFieldID, thrift.I32(int32(i)))
			tagged[i] = thrift.StructValue(c)
		}
		elems = tagged
	}
	md := thrift.NewStruct(
		thrift.Field{ID: fmdVersion, Value: version},
		thrift.Field{ID: fmdSchema, Value: thrift.ListOf(thrift.TypeStruct, elems...)},
		thrift.Field{ID: fmdNumRows, Value: thrift.I64(0)},
		thrift.Field{ID: fmdRowGroups, Value: thrift.ListOf(thrift.TypeStruct)},
	)
	return md.Append(dst), nil
}

// SetFieldIDs sets the field_id of schema elements (Section 11.2): ids maps
// the index of an element in FileMetaData.schema (0 is the root) to its ID.
// An index outside the schema is refused with ErrFormat, before any
// element is changed.
func (f *Footer) SetFieldIDs(ids map[int]int32) error {
	elems, err := f.schemaElements()
	if err != nil {
		return err
	}
	for i := range ids {
		if i < 0 || i >= len(elems) {
			return fmt.Errorf("%w: no schema element %d of %d", ErrFormat, i, len(elems))
		}
	}
	for i, id := range ids {
		elems[i].Struct.Set(seFieldID, thrift.I32(id))
	}
	return nil
}
