package seal

import (
	"errors"
	"fmt"
	"github.com/sovm/sop-pme/pme"
	"io"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/sovm/sop-pme/internal/pagebound/codecbound"
	"github.com/sovm/sop-pme/internal/pagebound/pagecheck"
	"github.com/sovm/sop-pme/internal/thrift"
)

// sealChunk seals the pages of the column chunk c of r, a header module and
// a body module each, one page in memory at a time.
func (s *Sealer) sealChunk(r io.ReaderAt, c pme.Span, md *thrift.Struct, lv levels, check pagecheck.Chunk) (*chunkMap, error) {
	codec, err := md.I32(cmdCodec)
	if err != nil {
		return nil, fmt.Errorf("%w: codec: %w", ErrPlaintextParquet, err)
	}
	// The deprecated LZ4 codec, which neither DuckDB nor arrow-go reads,
	// is rewritten as LZ4_RAW (see transcode.go).
	outCodec, transcode := codec, codec == codecLZ4
	if transcode {
		outCodec = codecLZ4Raw
	} else if _, ok := sealableCodecs[codec]; !ok {
		return nil, fmt.Errorf("%w: codec %s", ErrCodec, codecName(codec))
	}
	m := &chunkMap{plain: c, obj: pme.Span{Off: s.pos}, pages: make(map[int64]int64), codec: outCodec}
	// The reader's page checks, on the pages as they are sealed.
	check.Codec = compress.Compression(outCodec)
	pages := pagecheck.New(check, pagecheck.DefaultLimit(c.Len))
	for off := c.Off; off < c.End(); {
		hdr, n, err := s.pageHeader(r, off, c.End())
		if err != nil {
			return nil, err
		}
		csize, err1 := hdr.I32(phCompressedSize)
		usize, err2 := hdr.I32(phUncompressedSize)
		if err1 != nil || err2 != nil || csize < 0 || usize < 0 || int64(csize) > c.End()-off-int64(n) {
			return nil, fmt.Errorf("%w: page header at %d: bad sizes", ErrPlaintextParquet, off)
		}
		if csize > pme.MaxPageSize || usize > pme.MaxPageSize {
			return nil, fmt.Errorf("%w: page at %d of %d bytes (%d uncompressed); readers decode at most %d", pme.ErrTooLarge, off, csize, usize, pme.MaxPageSize)
		}
		if err := checkEncoding(hdr, lv); err != nil {
			return nil, fmt.Errorf("page at %d: %w", off, err)
		}
		v2 := false // a compressed V2 page, which is rewritten
		if t, _ := hdr.I32(phType); t == pageDataV2 && codec != codecUncompressed {
			v2 = true // DataPageHeaderV2.is_compressed defaults to true
			if h, err := hdr.Struct(phDataPageV2); err == nil {
				if b, err := h.Bool(dph2IsCompressed); err == nil {
					v2 = b
				}
			}
		}
		if cap(s.body) < int(csize) {
			s.body = make([]byte, csize)
		}
		body := s.body[:csize]
		if _, err := r.ReadAt(body, off+int64(n)); err != nil {
			return nil, fmt.Errorf("pme: reading page at %d: %w", off, err)
		}
		header, plainSize, pageRewritten := s.hdr[:n], usize, false
		switch t, _ := hdr.I32(phType); {
		case v2:
			h, b, u, err := s.rewriteV2(hdr, body, codec, outCodec, lv)
			clear(body)
			if err != nil {
				return nil, fmt.Errorf("page at %d: %w", off, err)
			}
			header, body, plainSize, pageRewritten = h, b, u, true
			m.rewritten = true
			s.rewritten++
		case transcode && t != pageDataV2:
			h, b, err := s.transcodeLZ4(hdr, body, usize)
			clear(body)
			if err != nil {
				return nil, fmt.Errorf("page at %d: %w", off, err)
			}
			header, body, pageRewritten = h, b, true
			s.rewritten++
		case t != pageDataV2:
			// (An uncompressed V2 page has nothing to decompress.)
			if err := codecbound.Check(codec, body, int(usize)); err != nil {
				clear(body)
				return nil, fmt.Errorf("%w: page at %d: %w", ErrUnboundedPage, off, err)
			}
		}
		if err := pages.Page(header, body); err != nil {
			clear(body)
			return nil, pageCheckError(err)
		}
		m.pages[off] = s.pos
		if s.onFile != nil {
			if m.kept == nil {
				m.kept = make(map[int64]int64)
				m.keepStart = max(s.file.size, int64(len(magicPAR1)))
			}
			m.kept[off] = s.keepPage(off, int64(n)+int64(csize), header, body, pageRewritten)
			m.keepEnd = s.file.size
		}
		if s.sealed, err = s.dek.Seal(s.sealed[:0], header); err != nil {
			return nil, fmt.Errorf("sealing page header at %d: %w", off, err)
		}
		if s.sealed, err = s.dek.Seal(s.sealed, body); err != nil {
			return nil, fmt.Errorf("sealing page at %d: %w", off, err)
		}
		clear(body)
		if err := s.emit(s.sealed); err != nil {
			return nil, err
		}
		m.uncompressed += int64(len(header)+pme.Overhead) + int64(plainSize)
		off += int64(n) + int64(csize)
	}
	if err := pages.Done(); err != nil {
		return nil, pageCheckError(err)
	}
	m.obj.Len = s.pos - m.obj.Off
	return m, nil
}

// chunkCheck returns what the page checks need of the column chunk md of
// column j, of levels lv, in row group rg of rows rows.
func chunkCheck(md *thrift.Struct, lv levels, rg, j int, rows int64) pagecheck.Chunk {
	values, _ := md.I64(cmdNumValues)
	return pagecheck.Chunk{
		RowGroup: rg, Column: j, Rows: rows, Values: values,
		MaxDef: int16(lv.def), MaxRep: int16(lv.rep), Physical: parquet.Type(lv.physical), TypeLen: int(lv.typeLen),
	}
}

// pageCheckError reports a page the reader's checks refuse: a file whose
// pages do not agree with its footer is not one the sealer takes
// (ErrPlaintextParquet); a page whose check needs more memory than a
// reader's default limit is beyond the format's limits (pme.ErrTooLarge), and
// may be encoded again.
func pageCheckError(err error) error {
	if errors.Is(err, pagecheck.ErrMemoryLimit) {
		return fmt.Errorf("%w: %w", pme.ErrTooLarge, err)
	}
	return fmt.Errorf("%w: the reader's page checks: %w", ErrPlaintextParquet, err)
}

// codecName names a parquet.thrift CompressionCodec.
func codecName(c int32) string {
	switch c {
	case 3:
		return "LZO"
	case 5:
		return "LZ4 (deprecated, Hadoop framing)"
	}
	if n, ok := sealableCodecs[c]; ok {
		return n
	}
	return fmt.Sprintf("%d (unknown)", c)
}

// pageHeader reads and decodes the page header at off of r, which must end
// before end, into s.hdr. It reads a small window first and widens it only
// for a large header.
func (s *Sealer) pageHeader(r io.ReaderAt, off, end int64) (*thrift.Struct, int, error) {
	for probe := int64(4 << 10); ; probe *= 4 {
		probe = min(probe, end-off)
		if int64(cap(s.hdr)) < probe {
			s.hdr = make([]byte, probe)
		}
		w := s.hdr[:probe]
		if _, err := r.ReadAt(w, off); err != nil {
			return nil, 0, fmt.Errorf("pme: reading page header at %d: %w", off, err)
		}
		hdr, n, err := thrift.Decode(w, thriftLimits)
		if err == nil {
			// The header aliases s.hdr; the caller reads it before the next
			// call.
			return hdr, n, nil
		}
		if !errors.Is(err, thrift.ErrTruncated) || probe == end-off {
			return nil, 0, fmt.Errorf("%w: page header at %d: %w", ErrPlaintextParquet, off, err)
		}
	}
}
