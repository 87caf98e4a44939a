package reader_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

// fiveColumns is the test table: id int64 (1), x float64 (2), s string (3),
// ts timestamp (4), ok bool (5), with n deterministic rows.
func fiveColumns(t testing.TB, n int) (*arrow.Schema, arrow.RecordBatch) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "x", Type: arrow.PrimitiveTypes.Float64, Metadata: fid(2)},
		{Name: "s", Type: arrow.BinaryTypes.String, Metadata: fid(3)},
		{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Metadata: fid(4)},
		{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true, Metadata: fid(5)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.Float64Builder).Append(float64(i) / 3)
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("row-%016x", rng.Uint64()))
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)*1000))
		if rng.IntN(20) == 0 {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.BooleanBuilder).Append(i%2 == 0)
		}
	}
	return schema, b.NewRecordBatch()
}

// objectLayout decrypts an object's footer to find its regions.
type objectLayout struct {
	size, dataEnd, cryptoEnd int64
	chunks                   [][]pme.Span
	modules                  []pme.Span // every data module, with its prefix
}

func layoutOf(t testing.TB, data []byte, dek pme.DEK) objectLayout {
	t.Helper()
	flen, err := pme.ParseTrailer(data[len(data)-8:])
	if err != nil {
		t.Fatal(err)
	}
	l := objectLayout{size: int64(len(data)), dataEnd: int64(len(data)) - 8 - int64(flen)}
	tail, err := pme.ParseFooterRegion(data[l.dataEnd : len(data)-8])
	if err != nil {
		t.Fatal(err)
	}
	l.cryptoEnd = l.dataEnd + int64(tail.CryptoLen)
	f, err := pme.OpenFooter(dek, tail.FooterBody)
	if err != nil {
		t.Fatal(err)
	}
	if l.chunks, err = f.ColumnChunks(); err != nil {
		t.Fatal(err)
	}
	for off := int64(4); off < l.dataEnd; {
		n := int64(binary.LittleEndian.Uint32(data[off:]))
		l.modules = append(l.modules, pme.Span{Off: off, Len: 4 + n})
		off += 4 + n
	}
	return l
}

// scanColumn reads one column (by field ID) through a Reader and returns the
// rows seen and the error that stopped it, if any.
func scanColumn(ctx context.Context, r *reader.Reader, id int32) (rows int64, err error) {
	rr, err := r.Scan(ctx, reader.WithFields(id))
	if err != nil {
		return 0, err
	}
	defer rr.Release()
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
	}
	return rows, rr.Err()
}

func isVerifyErr(err error) bool {
	return errors.Is(err, verify.ErrVerify) || errors.Is(err, verify.ErrSize)
}

// TestTamper damages one region of a ≥ 1 MiB object at a time, as untrusted
// storage could, and checks Section 11.10: every read touching the damage
// fails with a verification error before any plaintext of it is released;
// reads elsewhere still succeed and never make the object count as verified;
// full verification always fails.
func TestTamper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const rows, rgRows = 40000, 10000
	schema, rec := fiveColumns(t, rows)
	defer rec.Release()
	orig := newMemStore()
	w, _ := writer.New(ctx, orig, schema, writer.WithRowGroupRows(rgRows), writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false))
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	obj, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	good := orig.bytes(obj.StorageID)
	if len(good) < 1<<20 {
		t.Fatalf("object of %d bytes, want ≥ 1 MiB", len(good))
	}
	l := layoutOf(t, good, obj.DEK)
	k := keys{obj.StorageID: obj.DEK}

	type tamper struct {
		name   string
		mutate func([]byte) []byte
		region []pme.Span // the damaged bytes; reads touching them must fail
	}
	flip := func(off int64) func([]byte) []byte {
		return func(b []byte) []byte { b[off] ^= 0x40; return b }
	}
	var cases []tamper
	one := func(off, n int64) []pme.Span { return []pme.Span{{Off: off, Len: n}} }
	cases = append(cases, tamper{"first group", flip(10), one(10, 1)})
	for i, rg := range l.chunks {
		for j, c := range rg {
			off := c.Off + c.Len/2
			cases = append(cases, tamper{fmt.Sprintf("row group %d column %d", i, j), flip(off), one(off, 1)})
		}
	}
	footerMid := l.cryptoEnd + (l.size-8-l.cryptoEnd)/2
	cases = append(cases,
		tamper{"FileCryptoMetaData", flip(l.dataEnd + 2), one(l.dataEnd+2, 1)},
		tamper{"footer module", flip(footerMid), one(footerMid, 1)},
		tamper{"trailer length", flip(l.size - 7), one(l.size-7, 1)},
		tamper{"last byte", flip(l.size - 1), one(l.size-1, 1)},
	)
	// Swap two modules of equal length (page headers of two row groups):
	// every tag still verifies, only content addressing sees it.
	a, b := sameLengthModules(t, l)
	cases = append(cases, tamper{"swap two modules", func(d []byte) []byte {
		tmp := bytes.Clone(d[a.Off:a.End()])
		copy(d[a.Off:], d[b.Off:b.End()])
		copy(d[b.Off:], tmp)
		return d
	}, []pme.Span{a, b}})
	// Transplant: the same plaintext sealed again under the same DEK, as
	// another object sharing the DEK would hold it. It opens fine.
	cases = append(cases, tamper{"transplant a module sealed under the same DEK", func(d []byte) []byte {
		plain, err := obj.DEK.Open(nil, d[b.Off+4:b.End()])
		if err != nil {
			t.Fatal(err)
		}
		other, _ := obj.DEK.Seal(nil, plain)
		copy(d[b.Off:], other)
		return d
	}, []pme.Span{b}})
	cases = append(cases,
		tamper{"truncate", func(d []byte) []byte { return d[:len(d)-100] }, one(l.size-100, 100)},
		// Appending changes which group is last: the old last group and the
		// new one are damaged.
		tamper{"append", func(d []byte) []byte { return append(d, 0, 0, 0) }, one(l.size-1, 4)},
	)

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newMemStore()
			st.putAs(obj.StorageID, tc.mutate(bytes.Clone(good)), orig.outboard(obj.StorageID))
			r, err := reader.Open(ctx, st, obj.StorageID, k)
			// Open reads the last group and the footer region.
			if touches(tc.region, pme.Span{Off: l.size - 1, Len: 1}, pme.Span{Off: l.dataEnd, Len: l.size - l.dataEnd}) {
				if !isVerifyErr(err) {
					t.Fatalf("Open = %v, want a verification error", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			for col := range 5 {
				var spans []pme.Span
				for _, rg := range l.chunks {
					spans = append(spans, rg[col])
				}
				touched := touches(tc.region, spans...)
				got, err := scanColumn(ctx, r, int32(col+1))
				if touched {
					if !isVerifyErr(err) {
						t.Errorf("column %d touches the damage: %d rows, err %v, want a verification error", col+1, got, err)
					}
					if got >= rows {
						t.Errorf("column %d: all %d rows released despite the damage", col+1, got)
					}
				} else if err != nil || got != rows {
					t.Errorf("column %d does not touch the damage: %d rows, err %v", col+1, got, err)
				}
			}
			if r.Verified() {
				t.Error("projections made the object count as verified")
			}
			if err := r.Verify(ctx); !isVerifyErr(err) || r.Verified() {
				t.Errorf("Verify = %v, verified %v", err, r.Verified())
			}
		})
	}

	t.Run("corrupt outboard", func(t *testing.T) {
		// With 1 MiB < size ≤ 2 MiB the root splits at 1 MiB, its left
		// child at 512 KiB. The pre-order outboard holds the root's pair,
		// the left child's pair, then the 31 pairs of the subtree over
		// [0, 512 KiB), then the pair of the subtree over [512 KiB, 1 MiB):
		// damage that, and the proofs of ranges there fail, others not.
		if l.size <= 1<<20 || l.size > 2<<20 {
			t.Fatalf("object of %d bytes; this case needs 1 MiB < size ≤ 2 MiB", l.size)
		}
		ob := bytes.Clone(orig.outboard(obj.StorageID))
		ob[(2+31)*64] ^= 1
		damaged := []pme.Span{{Off: 512 << 10, Len: 512 << 10}}
		st := newMemStore()
		st.putAs(obj.StorageID, bytes.Clone(good), ob)
		if err := verify.Verify(ctx, st, obj.StorageID); !isVerifyErr(err) {
			t.Fatalf("Verify = %v", err)
		}
		r, err := reader.Open(ctx, st, obj.StorageID, k)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		for col := range 5 {
			var spans []pme.Span
			for _, rg := range l.chunks {
				spans = append(spans, rg[col])
			}
			got, err := scanColumn(ctx, r, int32(col+1))
			if touches(damaged, spans...) != isVerifyErr(err) || (err == nil && got != rows) {
				t.Errorf("column %d: %d rows, err %v", col+1, got, err)
			}
		}
	})

	t.Run("wrong DEK", func(t *testing.T) {
		st := newMemStore()
		st.putAs(obj.StorageID, bytes.Clone(good), orig.outboard(obj.StorageID))
		if _, err := reader.Open(ctx, st, obj.StorageID, keys{obj.StorageID: pme.NewDEK()}); !errors.Is(err, pme.ErrAuth) {
			t.Fatalf("Open with a wrong DEK = %v, want pme.ErrAuth", err)
		}
	})
	t.Run("unknown storage_id", func(t *testing.T) {
		other := storageid.Sum([]byte("not stored"))
		if _, err := reader.Open(ctx, orig, other, k); !errors.Is(err, errNotFound()) {
			t.Fatalf("Open(unknown) = %v", err)
		}
	})
	t.Run("wrong storage_id", func(t *testing.T) {
		// Another object's bytes stored under this id: nothing verifies.
		st := newMemStore()
		other := orig.bytes(obj.StorageID)[:len(good)-1]
		st.putAs(obj.StorageID, bytes.Clone(other), nil)
		if _, err := reader.Open(ctx, st, obj.StorageID, k); !isVerifyErr(err) {
			t.Fatalf("Open = %v", err)
		}
	})
	t.Run("no key", func(t *testing.T) {
		if _, err := reader.Open(ctx, orig, obj.StorageID, keys{}); !errors.Is(err, reader.ErrNoKey) {
			t.Fatalf("Open without a key = %v", err)
		}
	})
}

// touches reports whether reading any of spans touches damage: whether their
// 16 KiB groups (the unit of verification) meet those of a damaged span.
func touches(damage []pme.Span, spans ...pme.Span) bool {
	group := func(s pme.Span) pme.Span {
		off := s.Off / verify.GroupSize * verify.GroupSize
		end := (s.End() + verify.GroupSize - 1) / verify.GroupSize * verify.GroupSize
		return pme.Span{Off: off, Len: end - off}
	}
	for _, d := range damage {
		for _, s := range spans {
			if g, h := group(d), group(s); g.Off < h.End() && h.Off < g.End() {
				return true
			}
		}
	}
	return false
}

// sameLengthModules finds two data modules of equal length in different
// row groups, neither in the first or last group.
func sameLengthModules(t *testing.T, l objectLayout) (pme.Span, pme.Span) {
	byLen := map[int64]pme.Span{}
	for _, m := range l.modules {
		if m.Off < verify.GroupSize || m.End() > l.dataEnd-verify.GroupSize {
			continue
		}
		if prev, ok := byLen[m.Len]; ok && m.Off-prev.End() > verify.GroupSize {
			return prev, m
		}
		if _, ok := byLen[m.Len]; !ok {
			byLen[m.Len] = m
		}
	}
	t.Fatal("no two modules of equal length")
	return pme.Span{}, pme.Span{}
}

// TestNotSOPPME opens objects that are not encrypted-footer PME files: a
// plaintext Parquet file (refused: plaintext footers are forbidden, Section
// 11.4), and bytes too short to be a file.
func TestNotSOPPME(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var plain bytes.Buffer
	schema, rec := fiveColumns(t, 100)
	defer rec.Release()
	fw, err := pqarrow.NewFileWriter(schema, &plain, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(rec)
	fw.Close()
	st := newMemStore()
	id := st.put(plain.Bytes())
	k := keys{id: pme.NewDEK()}
	if _, err := reader.Open(ctx, st, id, k); !errors.Is(err, pme.ErrPlaintextFooter) {
		t.Fatalf("Open(plaintext Parquet) = %v, want pme.ErrPlaintextFooter", err)
	}
	rep, err := reader.Check(ctx, st, id, k)
	if err != nil || rep.Conformant() || !rep.Failed(reader.ReqMagic) {
		t.Fatalf("Check(plaintext Parquet) = %v, %v", rep, err)
	}
	short := st.put([]byte("PARE"))
	if _, err := reader.Open(ctx, st, short, keys{short: pme.NewDEK()}); !errors.Is(err, reader.ErrFormat) {
		t.Fatalf("Open(4 bytes) = %v, want reader.ErrFormat", err)
	}
}
