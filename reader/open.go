package reader

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// Open opens the object src holds under id. It verifies the object's last
// group (proving its size), reads the footer region through verified
// ranges, resolves the DEK by id with keys, and decrypts and parses the
// footer. It reads nothing else: not even the leading "PARE", which Check
// tests, so that a projection fetches only the footer and its chunks.
func Open(ctx context.Context, src verify.Source, id storageid.ID, keys KeyResolver, opts ...Option) (*Reader, error) {
	cfg := config{alloc: memory.DefaultAllocator}
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if src == nil || keys == nil {
		return nil, fmt.Errorf("%w: nil source or key resolver", ErrOption)
	}
	stats := new(counters)
	src = countingSource{src, stats}
	vr, err := verify.NewReader(ctx, src, id, cfg.verify...)
	if err != nil {
		return nil, fmt.Errorf("reader: opening %s: %w", id, err)
	}
	size := vr.Size()
	if size < minObjectSize {
		return nil, fmt.Errorf("%w: object of %d bytes", ErrFormat, size)
	}
	trailer := make([]byte, pme.TrailerSize)
	if _, err := vr.ReadAtContext(ctx, trailer, size-pme.TrailerSize); err != nil {
		return nil, fmt.Errorf("reader: reading %s: %w", id, err)
	}
	stats.verified.Add(pme.TrailerSize)
	flen, err := pme.ParseTrailer(trailer)
	if err != nil {
		return nil, err
	}
	dataEnd := size - pme.TrailerSize - int64(flen)
	maxFooter := cfg.maxFooter
	if maxFooter == 0 {
		maxFooter = pme.MaxFooterRegion(size)
	}
	if int64(flen) > maxFooter || dataEnd < 4 {
		return nil, fmt.Errorf("%w: footer region of %d bytes in an object of %d", ErrFormat, flen, size)
	}
	region := make([]byte, flen)
	if _, err := vr.ReadAtContext(ctx, region, dataEnd); err != nil {
		return nil, fmt.Errorf("reader: reading %s: %w", id, err)
	}
	stats.verified.Add(int64(flen))
	tail, err := pme.ParseFooterRegion(region)
	if err != nil {
		return nil, err
	}
	dek, err := keys.ResolveDEK(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reader: resolving the key of %s: %w", id, err)
	}
	footer, err := pme.OpenFooter(dek, tail.FooterBody)
	if err != nil {
		return nil, err
	}
	stats.modules.Add(1)
	r := &Reader{id: id, vr: vr, src: src, dek: dek, alloc: cfg.alloc, stats: stats}
	r.dictCols = sync.OnceValue(r.dictionaryColumns)
	if err := r.load(footer, dataEnd); err != nil {
		return nil, err
	}
	return r, nil
}

// load checks the footer's column chunks against the data region and builds
// what Scan needs.
func (r *Reader) load(footer *pme.Footer, dataEnd int64) error {
	rgs, err := footer.ColumnChunks()
	if err != nil {
		return err
	}
	r.grid = rgs
	for i, rg := range rgs {
		for j, c := range rg {
			if c.Off < 4 || c.End() > dataEnd {
				return fmt.Errorf("%w: row group %d column %d at [%d, %d) is outside the data region [4, %d)", ErrFormat, i, j, c.Off, c.End(), dataEnd)
			}
			r.chunks = append(r.chunks, c)
		}
	}
	slices.SortFunc(r.chunks, func(a, b pme.Span) int { return int(min(max(a.Off-b.Off, -1), 1)) })
	for i := 1; i < len(r.chunks); i++ {
		if r.chunks[i].Off < r.chunks[i-1].End() {
			return fmt.Errorf("%w: column chunks overlap at %d", ErrFormat, r.chunks[i].Off)
		}
	}
	r.nrg = len(rgs)
	if r.fields, err = footer.Fields(); err != nil {
		return err
	}
	if err := uniqueIDs(r.fields); err != nil {
		return err
	}
	// Readers must ignore the padding entries (Section 11.8); this one
	// removes them before arrow-go, or a caller, can see them.
	kvs, err := footer.KeyValues()
	if err != nil {
		return err
	}
	r.stored = storedSchema(kvs)
	footer.StripForReading()
	if kvs, err = footer.KeyValues(); err != nil {
		return err
	}
	var keys, values []string
	for _, kv := range kvs {
		if kv.Key == "ARROW:schema" {
			continue
		}
		keys, values = append(keys, kv.Key), append(values, string(kv.Value))
	}
	r.kv = arrow.NewMetadata(keys, values)
	// arrow-go builds its own view of the footer and derives the Arrow
	// schema from the Parquet schema alone: StripForReading removed the
	// stored ARROW:schema. A panic there is a malformed footer.
	return catch(pme.ErrFormat, func() error {
		if r.meta, err = metadata.NewFileMetaData(footer.Append(nil), nil); err != nil {
			return fmt.Errorf("%w: footer: %v", pme.ErrFormat, err)
		}
		if err := r.loadChunkInfo(); err != nil {
			return err
		}
		pf, _, err := r.open(context.Background(), nil)
		if err != nil {
			return err
		}
		_, fields, err := r.fileReader(pf, pqarrow.ArrowReadProperties{}, r.alloc)
		if err != nil {
			return fmt.Errorf("%w: schema: %v", pme.ErrFormat, err)
		}
		r.schema = arrow.NewSchema(fields, &r.kv)
		return nil
	})
}

// loadChunkInfo records, for each column chunk, what its pages must agree
// with (see checkPages).
func (r *Reader) loadChunkInfo() error {
	sch := r.meta.Schema
	r.numLeaves = sch.NumColumns()
	r.info = make(map[int64]chunkInfo, len(r.chunks))
	for i, spans := range r.grid {
		rg := r.meta.RowGroup(i)
		if rg.NumColumns() != sch.NumColumns() || rg.NumRows() < 0 {
			return fmt.Errorf("%w: row group %d has %d column chunks and %d rows; the schema has %d columns", ErrFormat, i, rg.NumColumns(), rg.NumRows(), sch.NumColumns())
		}
		for j, c := range spans {
			cc, err := rg.ColumnChunk(j)
			if err != nil {
				return fmt.Errorf("%w: row group %d column %d: %v", ErrFormat, i, j, err)
			}
			if cc.NumValues() < 0 {
				return fmt.Errorf("%w: row group %d column %d: num_values %d", ErrFormat, i, j, cc.NumValues())
			}
			r.info[c.Off] = chunkInfo{
				rowGroup: i, column: j,
				rows: rg.NumRows(), values: cc.NumValues(),
				codec:    cc.Compression(),
				repeated: sch.Column(j).MaxRepetitionLevel() > 0,
				maxDef:   sch.Column(j).MaxDefinitionLevel(),
				maxRep:   sch.Column(j).MaxRepetitionLevel(),
				physical: sch.Column(j).PhysicalType(),
				typeLen:  sch.Column(j).TypeLength(),
			}
		}
	}
	return nil
}

// streamBuffer is the size of arrow-go's buffered stream of a column chunk:
// room for page headers (arrow-go peeks 16 KiB for one, and grows a smaller
// buffer to that). Pages larger than it go straight to arrow-go's page
// buffer; a larger stream buffer only costs each chunk an allocation the
// runtime clears (64 KiB cost a table of 10,000-row objects 48 KiB per
// column chunk read).
const streamBuffer = 16 << 10

// open returns an arrow-go file reader over a plaintext view of the object,
// and the view. A scan passes its budget, which arrow-go then allocates
// through.
func (r *Reader) open(ctx context.Context, b *budget) (*file.Reader, *plainView, error) {
	var mem memory.Allocator = r.alloc
	if b != nil {
		mem = b
	}
	return r.openWith(ctx, b, mem)
}

// openWith is open with arrow-go allocating through mem: a parallel scan's
// workers size their page checks by b and allocate through the scan's
// shared accounting.
func (r *Reader) openWith(ctx context.Context, b *budget, mem memory.Allocator) (*file.Reader, *plainView, error) {
	view := &plainView{ctx: ctx, vr: r.vr, dek: r.dek, stats: r.stats, chunks: r.chunks, size: r.vr.Size(), ctPool: &ctPool, ptPool: &ptPool,
		info: r.info, budget: b, plainLen: make(map[int64]int64)}
	props := parquet.NewReaderProperties(mem)
	// A buffered stream per column chunk, of streamBuffer bytes, which
	// arrow-go allocates (and the runtime zeroes) for each chunk: a chunk's
	// pages go from the view's plaintext straight into arrow-go's page
	// buffer, which it reuses, and it meets the end of the plaintext as
	// io.EOF (see plainView). A buffer as large as the chunk cost a full
	// scan a tenth of its time in zeroing and copying.
	props.BufferedStreamEnabled = true
	props.BufferSize = streamBuffer
	// Pages up to the size the writer allows (and DuckDB writes: it closes
	// pages at 100 MiB), whatever arrow-go's defaults.
	props.MaxCompressedPageSize = pme.MaxPageSize
	props.MaxUncompressedPageSize = pme.MaxPageSize
	pf, err := file.NewParquetReader(view, file.WithMetadata(r.meta), file.WithReadProps(props))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", pme.ErrFormat, err)
	}
	return pf, view, nil
}
