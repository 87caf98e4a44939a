package vectors_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"flag"
	"hash/fnv"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/cryptotest"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/internal/testkit/benchdata"
	"github.com/sovm/sop-pme/internal/testkit/hostile"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/internal/testkit/vectors"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/verify"
	"github.com/sovm/sop-pme/writer"
)

var update = flag.Bool("update", false, "rewrite the vectors in "+vectorDir)

// vectorDir is testdata/vectors at the root of the repository.
const vectorDir = "../../../testdata/vectors"

// foreignPrefix starts the names of the vectors that other generators
// write (the DuckDB files come from duckdb/interop).
const foreignPrefix = "duckdb-"

// TestGenerate builds every vector of this generator, checks that this
// implementation does what each one expects, and compares the files with
// testdata/vectors byte for byte: the vectors are reproducible, because
// crypto/rand is made deterministic for each one (testing/cryptotest), and
// the writer is otherwise deterministic. With -update it rewrites them:
//
//	go test ./internal/testkit/vectors -run TestGenerate -update
func TestGenerate(t *testing.T) {
	files := map[string][]byte{}
	for _, c := range generated() {
		t.Run(c.name, func(t *testing.T) {
			cryptotest.SetGlobalRandom(t, seed(c.name))
			v := c.build(t)
			v.Name = c.name
			if err := v.Match(vectors.Run(context.Background(), v)); err != nil {
				t.Fatalf("this implementation does not do what the vector expects:\n%v", err)
			}
			maps.Copy(files, v.Files())
		})
	}
	if t.Failed() {
		return
	}
	if *update {
		writeDir(t, files)
		return
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(vectorDir, name))
		if err != nil {
			t.Errorf("%v (run with -update)", err)
		} else if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the generator makes now (run with -update if that is intended)", name)
		}
	}
	for _, name := range ownFiles(t) {
		if _, ok := files[name]; !ok {
			t.Errorf("%s is no longer generated (run with -update)", name)
		}
	}
}

// ownFiles lists the files of testdata/vectors that this generator owns.
func ownFiles(t *testing.T) []string {
	entries, err := os.ReadDir(vectorDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, foreignPrefix) || n == "README.md" {
			continue
		}
		out = append(out, n)
	}
	return out
}

func writeDir(t *testing.T, files map[string][]byte) {
	if err := os.MkdirAll(vectorDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range ownFiles(t) {
		if _, ok := files[name]; !ok {
			os.Remove(filepath.Join(vectorDir, name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(vectorDir, name), files[name], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %d files to %s", len(files), vectorDir)
}

func seed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// gcase is one generated vector.
type gcase struct {
	name  string
	build func(t *testing.T) *vectors.Vector
}

// object is an object the writer made, as the store holds it.
type object struct {
	writer.Object
	data, outboard []byte
	rec            arrow.RecordBatch
}

func write(t *testing.T, rec arrow.RecordBatch, opts ...writer.Option) object {
	t.Helper()
	st := memstore.New()
	w, err := writer.New(context.Background(), st, rec.Schema(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return object{Object: obj, data: st.Bytes(obj.StorageID), outboard: st.OutboardOf(obj.StorageID), rec: rec}
}

func rowsOf(t *testing.T, rec arrow.RecordBatch) []byte {
	t.Helper()
	b, err := vectors.RowsJSON(nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// valid returns the vector of an intact object read whole.
func (o object) valid(t *testing.T, rule, comment string) *vectors.Vector {
	return &vectors.Vector{
		ID: o.StorageID, DEK: o.DEK.Bytes(), Object: o.data, Outboard: o.outboard,
		Rows: rowsOf(t, o.rec), Rule: rule, Comment: comment,
	}
}

// damaged returns the vector of the object's storage_id with the store
// holding data and outboard instead of the object's own.
func (o object) damaged(data, outboard []byte, read, ver error, rule, comment string) *vectors.Vector {
	return &vectors.Vector{
		ID: o.StorageID, DEK: o.DEK.Bytes(), Object: data, Outboard: outboard,
		Read: vectors.Outcome{Err: read}, Verify: vectors.Outcome{Err: ver},
		Check: vectors.CheckOutcome{Fails: []string{reader.ReqStorageID.String()}},
		Rule:  rule, Comment: comment,
	}
}

// project returns the columns of rec with these top-level indices.
func project(rec arrow.RecordBatch, cols ...int) arrow.RecordBatch {
	var fields []arrow.Field
	var arrs []arrow.Array
	for _, c := range cols {
		fields = append(fields, rec.Schema().Field(c))
		arrs = append(arrs, rec.Column(c))
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, rec.NumRows())
}

// layout is where an object's regions lie.
type layout struct {
	dataEnd int64
	chunks  [][]pme.Span
	modules []pme.Span // every data module, length prefix included
}

func layoutOf(t *testing.T, o object) layout {
	t.Helper()
	d := o.data
	flen, err := pme.ParseTrailer(d[len(d)-pme.TrailerSize:])
	if err != nil {
		t.Fatal(err)
	}
	l := layout{dataEnd: int64(len(d)) - pme.TrailerSize - int64(flen)}
	tail, err := pme.ParseFooterRegion(d[l.dataEnd : len(d)-pme.TrailerSize])
	if err != nil {
		t.Fatal(err)
	}
	f, err := pme.OpenFooter(o.DEK, tail.FooterBody)
	if err != nil {
		t.Fatal(err)
	}
	if l.chunks, err = f.ColumnChunks(); err != nil {
		t.Fatal(err)
	}
	for off := int64(4); off < l.dataEnd; {
		n := int64(binary.LittleEndian.Uint32(d[off:]))
		l.modules = append(l.modules, pme.Span{Off: off, Len: pme.LenSize + n})
		off += pme.LenSize + n
	}
	return l
}

// modulesIn returns the modules of chunk c.
func (l layout) modulesIn(c pme.Span) []pme.Span {
	var out []pme.Span
	for _, m := range l.modules {
		if m.Off >= c.Off && m.End() <= c.End() {
			out = append(out, m)
		}
	}
	return out
}

func flip(b []byte, at int64) []byte {
	b = bytes.Clone(b)
	b[at] ^= 0x40
	return b
}

const (
	ruleValid     = "11.2-11.8: a conformant object reads back exactly; field IDs, encrypted footer, empty AAD, key_ref, Padmé"
	ruleVerify    = "11.10: no byte is used or released before it is verified against storage_id"
	ruleUnbound   = "11.3, 11.10: an empty-AAD module is bound to its position only by storage_id"
	ruleSize      = "11.8, 11.10: the length comes from the verified last bytes, never on trust"
	ruleNotObject = "11.10: a range-verified read establishes the integrity of the ranges it read, not of the object"
	ruleKey       = "11.5: the DEK is found by storage_id; a wrong DEK fails authentication"
)

func generated() []gcase {
	allTypes := func(t *testing.T, rows int, opts ...writer.Option) object {
		rec := testtables.Record(testtables.AllTypes(), rows, 11)
		t.Cleanup(rec.Release)
		return write(t, rec, opts...)
	}
	// base is the object the damage cases start from: three row groups of
	// the benchmark table, uncompressed, so that its chunks span several
	// 16 KiB groups.
	base := func(t *testing.T) object {
		rec := benchdata.Record(3000, 5)
		t.Cleanup(rec.Release)
		return write(t, rec, writer.WithCodec(writer.Uncompressed), writer.WithDictionary(false), writer.WithRowGroupRows(1000))
	}
	valid := func(codec writer.Codec, extra ...writer.Option) func(t *testing.T) *vectors.Vector {
		return func(t *testing.T) *vectors.Vector {
			o := allTypes(t, 150, append([]writer.Option{writer.WithCodec(codec), writer.WithRowGroupRows(64)}, extra...)...)
			return o.valid(t, ruleValid, "every type the suite covers, 150 rows in row groups of 64, "+codec.String())
		}
	}
	cases := []gcase{
		{"valid-alltypes-zstd", valid(writer.Zstd)},
		{"valid-alltypes-snappy", valid(writer.Snappy)},
		{"valid-alltypes-uncompressed", valid(writer.Uncompressed)},
		{"valid-alltypes-nodict", valid(writer.Zstd, writer.WithDictionary(false))},
		{"valid-alltypes-v2", valid(writer.Uncompressed, writer.WithDataPageVersion(writer.DataPageV2))},
		{"valid-multipage", func(t *testing.T) *vectors.Vector {
			o := allTypes(t, 300, writer.WithDataPageSize(512))
			return o.valid(t, ruleValid, "300 rows of every type with 512-byte data pages: several pages per column chunk")
		}},
		{"valid-projection", func(t *testing.T) *vectors.Vector {
			o := allTypes(t, 150, writer.WithRowGroupRows(50))
			v := o.valid(t, ruleValid, "a projection to i64 (field 4), s (15) and the struct st (30), by field ID")
			v.Fields = []int32{4, 15, 30}
			proj := project(o.rec, 3, 14, 25)
			defer proj.Release()
			v.Rows = rowsOf(t, proj)
			return v
		}},
		{"valid-nested-projection", func(t *testing.T) *vectors.Vector {
			o := allTypes(t, 100)
			v := o.valid(t, ruleValid, "a projection to the map m (field 33), by field ID")
			v.Fields = []int32{33}
			proj := project(o.rec, 26)
			defer proj.Release()
			v.Rows = rowsOf(t, proj)
			return v
		}},
		{"damaged-page", func(t *testing.T) *vectors.Vector {
			o := base(t)
			l := layoutOf(t, o)
			m := l.modulesIn(l.chunks[1][1])[1] // a page body of x in row group 1
			return o.damaged(flip(o.data, m.Off+m.Len/2), o.outboard, verify.ErrVerify, verify.ErrVerify, ruleVerify,
				"one byte of a data page changed in storage")
		}},
		{"damaged-page-unread", func(t *testing.T) *vectors.Vector {
			o := base(t)
			l := layoutOf(t, o)
			c := l.chunks[1][2] // s in row group 1
			v := o.damaged(flip(o.data, c.Off+c.Len/2), o.outboard, nil, verify.ErrVerify, ruleNotObject,
				"a byte of column s changed in storage; a projection to id (field 1) never reads it and succeeds; full verification fails")
			v.Fields = []int32{1}
			proj := project(o.rec, 0)
			defer proj.Release()
			v.Rows = rowsOf(t, proj)
			return v
		}},
		{"damaged-magic", func(t *testing.T) *vectors.Vector {
			o := base(t)
			return o.damaged(flip(o.data, 1), o.outboard, verify.ErrVerify, verify.ErrVerify, ruleVerify,
				`the leading "PARE" changed in storage: it shares a group with the first column chunk`)
		}},
		{"damaged-footer", func(t *testing.T) *vectors.Vector {
			o := base(t)
			return o.damaged(flip(o.data, int64(len(o.data))-pme.TrailerSize-40), o.outboard, verify.ErrVerify, verify.ErrVerify, ruleVerify,
				"a byte of the footer module changed in storage")
		}},
		{"damaged-key-ref", func(t *testing.T) *vectors.Vector {
			o := base(t)
			l := layoutOf(t, o)
			// FileCryptoMetaData starts the footer region; its key_ref
			// ends at byte 22 of it.
			return o.damaged(flip(o.data, l.dataEnd+10), o.outboard, verify.ErrVerify, verify.ErrVerify, "11.5, 11.10: key_ref is plaintext and outside every tag; only storage_id covers it",
				"a byte of the key_ref in FileCryptoMetaData changed in storage")
		}},
		{"damaged-trailer", func(t *testing.T) *vectors.Vector {
			o := base(t)
			return o.damaged(flip(o.data, int64(len(o.data))-6), o.outboard, verify.ErrVerify, verify.ErrVerify, ruleSize,
				"the footer length in the trailer changed in storage")
		}},
		{"swapped-pages", func(t *testing.T) *vectors.Vector {
			o := base(t)
			l := layoutOf(t, o)
			a, b := l.modulesIn(l.chunks[0][0])[1], l.modulesIn(l.chunks[2][0])[1] // page bodies of id
			if a.Len != b.Len {
				t.Fatalf("page modules of %d and %d bytes", a.Len, b.Len)
			}
			d := bytes.Clone(o.data)
			copy(d[a.Off:a.End()], o.data[b.Off:b.End()])
			copy(d[b.Off:b.End()], o.data[a.Off:a.End()])
			return o.damaged(d, o.outboard, verify.ErrVerify, verify.ErrVerify, ruleUnbound,
				"two page modules of column id (row groups 0 and 2) swapped in storage: both still open under the DEK")
		}},
		{"transplanted-page", func(t *testing.T) *vectors.Vector {
			o := base(t)
			l := layoutOf(t, o)
			m := l.modulesIn(l.chunks[1][0])[1]
			plain, err := o.DEK.Open(nil, o.data[m.Off+pme.LenSize:m.End()])
			if err != nil {
				t.Fatal(err)
			}
			sealed, err := o.DEK.Seal(nil, plain)
			if err != nil {
				t.Fatal(err)
			}
			d := bytes.Clone(o.data)
			copy(d[m.Off+pme.LenSize:], sealed)
			return o.damaged(d, o.outboard, verify.ErrVerify, verify.ErrVerify, ruleUnbound,
				"a page module replaced by the same plaintext sealed again under the same DEK, as another object sharing the DEK holds it")
		}},
		{"truncated", func(t *testing.T) *vectors.Vector {
			o := base(t)
			return o.damaged(o.data[:len(o.data)-100], o.outboard, verify.ErrVerify, verify.ErrVerify, ruleSize,
				"the last 100 bytes cut off in storage")
		}},
		{"appended", func(t *testing.T) *vectors.Vector {
			o := base(t)
			return o.damaged(append(bytes.Clone(o.data), 0, 0, 0), o.outboard, verify.ErrVerify, verify.ErrVerify, ruleSize,
				"three zero bytes appended in storage")
		}},
		{"damaged-outboard", func(t *testing.T) *vectors.Vector {
			o := base(t)
			return o.damaged(o.data, flip(o.outboard, 100), verify.ErrVerify, verify.ErrVerify, ruleVerify,
				"one byte of the outboard (the parent hashes) changed in storage; the object's bytes are intact")
		}},
		{"wrong-dek", func(t *testing.T) *vectors.Vector {
			o := allTypes(t, 20)
			v := o.valid(t, ruleKey, "an intact object and the DEK of another object")
			v.DEK = pme.NewDEK().Bytes()
			v.Rows = nil
			v.Read = vectors.Outcome{Err: pme.ErrAuth}
			v.Check = vectors.CheckOutcome{Fails: []string{reader.ReqModules.String(), reader.ReqRows.String()}}
			return v
		}},
		{"no-dek", func(t *testing.T) *vectors.Vector {
			o := allTypes(t, 20)
			v := o.valid(t, ruleKey, "an intact object whose DEK the resolver does not have")
			v.DEK = nil
			v.Rows = nil
			v.Read = vectors.Outcome{Err: reader.ErrNoKey}
			v.Check = vectors.CheckOutcome{Err: reader.ErrNoKey}
			return v
		}},
	}
	// Objects a producer holding the DEK crafted: every module opens under
	// the DEK and the bytes verify against the storage_id, but what they
	// carry is hostile (internal/testkit/hostile). The reader fails with a typed
	// error, or reads them (its hostile part is one the reader ignores or
	// bounds); the expected rows of the latter are what this reader
	// returns, pinned.
	for _, hc := range hostile.Cases() {
		cases = append(cases, gcase{"hostile-" + hc.Name, func(t *testing.T) *vectors.Vector {
			dek := pme.NewDEK()
			data, err := hc.Build(dek)
			if err != nil {
				t.Fatal(err)
			}
			id, ob := memstore.Outboard(data)
			v := &vectors.Vector{ID: id, DEK: dek.Bytes(), Object: data, Outboard: ob,
				Read: vectors.Outcome{Err: hc.Want}, Rule: "11.10 (a malicious producer holds the DEK): " + hc.Rule,
				Comment: "crafted by internal/testkit/hostile, case " + hc.Name}
			for _, r := range hc.Check {
				v.Check.Fails = append(v.Check.Fails, r.String())
			}
			if hc.Want != nil {
				// Check and the reader agree.
				v.Check.Fails = append(v.Check.Fails, reader.ReqRows.String())
			}
			if hc.Want == nil {
				rows, err := vectors.ReadAll(context.Background(), v)
				if err != nil {
					t.Fatalf("the reader does not read %s: %v", hc.Name, err)
				}
				v.Rows = rows
			}
			return v
		}})
	}
	return cases
}
