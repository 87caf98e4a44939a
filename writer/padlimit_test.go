package writer

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/keyref"
	"github.com/sovm/sop-pme/pme"
)

// TestPadBeyondThriftBinary: from 256 GiB, Padmé may ask for a pad of more
// than 2^31−1 bytes, which a Thrift binary cannot hold. Step 4 must refuse
// it with ErrPadding, without allocating the pad, where it used to pass the
// pad on to Seal, which panicked ("thrift: length beyond int32"). The
// object's data length is faked: the footer is a real one.
func TestPadBeyondThriftBinary(t *testing.T) {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{FieldIDKey}, []string{"1"})}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(1)
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := memstore.New()
	w, err := New(ctx, st, schema)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	obj, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data := st.Bytes(obj.StorageID)
	flen, _ := pme.ParseTrailer(data[len(data)-pme.TrailerSize:])
	tail, err := pme.ParseFooterRegion(data[len(data)-pme.TrailerSize-int(flen) : len(data)-pme.TrailerSize])
	if err != nil {
		t.Fatal(err)
	}
	plain, err := obj.DEK.Open(nil, tail.FooterBody)
	if err != nil {
		t.Fatal(err)
	}
	footer, err := seal.DecodeFooter(plain)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := pme.AppendFileCryptoMetaData(nil, obj.KeyRef[:])
	if err != nil {
		t.Fatal(err)
	}
	module := make([]byte, pme.LenSize+len(tail.FooterBody))
	// An unpadded length of 2^38 + 2^30 + 1 bytes has the Padmé target
	// 2^38 + 2^32: a pad of about 3 GiB, below what a module holds, above
	// what a Thrift binary holds.
	const unpadded = 1<<38 + 1<<30 + 1
	k := keyed{
		encrypted: encrypted{dek: obj.DEK, footer: footer, footerModule: module,
			dataLen: unpadded - int64(len(cm)+len(module)+pme.TrailerSize)},
		ref: keyref.Ref(obj.KeyRef), cryptoMeta: cm,
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = k.pad()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrPadding) || !errors.Is(err, seal.ErrPadding) {
		t.Fatalf("pad: %v, want ErrPadding", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("pad allocated %d bytes before refusing", n)
	}
}

// TestCheckReadableRegion: the writer refuses a footer region larger than
// the reader takes (pme.MaxFooterRegion of the object's size), and takes
// one of exactly that size. The sizes are faked: the footer is a real one.
func TestCheckReadableRegion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: arrow.NewMetadata([]string{FieldIDKey}, []string{"1"})}}, nil)
	st := memstore.New()
	w, err := New(ctx, st, schema)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := w.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data := st.Bytes(obj.StorageID)
	flen, _ := pme.ParseTrailer(data[len(data)-pme.TrailerSize:])
	tail, err := pme.ParseFooterRegion(data[len(data)-pme.TrailerSize-int(flen) : len(data)-pme.TrailerSize])
	if err != nil {
		t.Fatal(err)
	}
	plain, err := obj.DEK.Open(nil, tail.FooterBody)
	if err != nil {
		t.Fatal(err)
	}
	footer, err := seal.DecodeFooter(plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []uint64{1 << 20, 1 << 33} {
		limit := int(pme.MaxFooterRegion(int64(size)))
		if err := checkReadable(footer, limit, size); err != nil {
			t.Errorf("a region of %d bytes in %d: %v", limit, size, err)
		}
		if err := checkReadable(footer, limit+1, size); !errors.Is(err, ErrReaderLimit) {
			t.Errorf("a region of %d bytes in %d: %v, want ErrReaderLimit", limit+1, size, err)
		}
	}
}
