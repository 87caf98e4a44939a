package seal

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/sovm/sop-pme/pme"
	"io"
	"strings"

	"github.com/sovm/sop-pme/internal/thrift"
	"github.com/sovm/sop-pme/padme"
)

// The compression codecs (parquet.thrift CompressionCodec) a Sealer seals
// as they are: those DuckDB 1.5.6 and arrow-go both decompress. (LZ4 is
// rewritten as LZ4_RAW.)
var sealableCodecs = map[int32]string{0: "UNCOMPRESSED", 1: "SNAPPY", 2: "GZIP", 4: "BROTLI", 6: "ZSTD", 7: "LZ4_RAW"}

// chunkMap records where the pages of one sealed column chunk went.
type chunkMap struct {
	plain        pme.Span
	obj          pme.Span
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
// at most pme.MaxPageSize). It is not safe for concurrent use; its errors are
// sticky.
type Sealer struct {
	dek       pme.DEK
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
	onFile    func(*RowGroupFile) error // see OnRowGroupFile
	file      RowGroupFile              // the row group file being made, for onFile
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
func NewSealer(out io.Writer, dek pme.DEK) *Sealer {
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
		return s.emit([]byte(magicPARE))
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
	if len(s.rgs)+len(rgs) > pme.MaxRowGroups {
		return s.fail(fmt.Errorf("%w: more than %d row groups", pme.ErrTooLarge, pme.MaxRowGroups))
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
		if err := s.keepRowGroup(r, rg, index, kept, rows); err != nil {
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
