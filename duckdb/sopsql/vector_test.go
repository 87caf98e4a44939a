package sopsql

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/decimal"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
)

// TestRawChunkFields pins the unexported fields of duckdb-go's DataChunk
// that rawChunk reads: a duckdb-go that renames or retypes them fails
// here, before any query does.
func TestRawChunkFields(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[duckdb.DataChunk]()
	c, ok := typ.FieldByName(chunkField)
	if !ok || c.Type.Kind() != reflect.Struct {
		t.Fatalf("duckdb.DataChunk.%s: %v", chunkField, c.Type)
	}
	p, ok := c.Type.FieldByName(chunkPtrField)
	if !ok || p.Type != reflect.TypeFor[unsafe.Pointer]() {
		t.Fatalf("duckdb.DataChunk.%s.%s: %v", chunkField, chunkPtrField, p.Type)
	}
	proj, ok := typ.FieldByName(projectionField)
	if !ok || proj.Type != reflect.TypeFor[[]int]() {
		t.Fatalf("duckdb.DataChunk.%s: %v", projectionField, proj.Type)
	}
	var zero duckdb.DataChunk
	if _, err := rawChunk(&zero); err == nil {
		t.Error("rawChunk of a chunk without a C chunk: no error")
	}
}

// TestVendoredHeader: the duckdb.h the string loop is compiled against is
// the linked library's version.
func TestVendoredHeader(t *testing.T) {
	t.Parallel()
	lib, header := linkedVersion()
	want := fmt.Sprintf("v%d.%d.%d", header/10000, header/100%100, header%100)
	if lib != want {
		t.Fatalf("linked DuckDB %s, vendored duckdb.h %s: copy the header of the bindings in use into include/", lib, want)
	}
}

// pairSource is a table function that writes each column of arrs twice:
// through the bulk writer (column 2k) and value by value (2k+1), in chunks
// of random sizes, so that the writers meet every bit offset.
type pairSource struct {
	cols []column
	arrs []arrow.Array
	rows int
	next int
	r    *rand.Rand
	ws   writeState
	bulk int // columns with a bulk writer
}

func (p *pairSource) ColumnInfos() []duckdb.ColumnInfo {
	var infos []duckdb.ColumnInfo
	for k, c := range p.cols {
		infos = append(infos, duckdb.ColumnInfo{Name: fmt.Sprintf("b%d", k), T: c.info}, duckdb.ColumnInfo{Name: fmt.Sprintf("v%d", k), T: c.info})
	}
	return infos
}

func (p *pairSource) Cardinality() *duckdb.CardinalityInfo { return nil }
func (p *pairSource) Init()                                {}

func (p *pairSource) FillChunk(ch duckdb.DataChunk) error {
	if p.next >= p.rows {
		return ch.SetSize(0)
	}
	n := min(p.rows-p.next, 1+p.r.IntN(duckdb.GetDataChunkCapacity()))
	raw, err := rawChunk(&ch)
	if err != nil {
		return err
	}
	projected := func(col int) bool { return raw.proj == nil || raw.proj[col] >= 0 }
	for k, c := range p.cols {
		if projected(2 * k) {
			if err := c.put(&p.ws, ch, raw, 2*k, p.arrs[k], p.next, n); err != nil {
				return fmt.Errorf("bulk %s: %w", c.name, err)
			}
		}
		if projected(2*k + 1) {
			if err := c.fill(ch, 2*k+1, p.arrs[k], p.next, n); err != nil {
				return fmt.Errorf("value %s: %w", c.name, err)
			}
		}
	}
	p.next += n
	return ch.SetSize(n)
}

// registerPairs registers pairs() over arrs on a plain DuckDB database.
func registerPairs(t *testing.T, fields []arrow.Field, arrs []arrow.Array, seed uint64) (*pairSource, func(string) [][]any) {
	t.Helper()
	db := openNative(t, 1)
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	shape := &pairSource{rows: arrs[0].Len()}
	for i, f := range fields {
		cols, err := columns(arrow.NewSchema([]arrow.Field{f}, nil))
		if err != nil {
			continue // a type sop_scan refuses at bind
		}
		if cols[0].write != nil {
			shape.bulk++
		}
		shape.cols = append(shape.cols, cols[0])
		shape.arrs = append(shape.arrs, arrs[i])
	}
	fn := duckdb.ChunkTableFunction{BindArguments: func(map[string]any, ...any) (duckdb.ChunkTableSource, error) {
		p := *shape
		p.r = rand.New(rand.NewPCG(seed, 7))
		return &p, nil
	}}
	if err := duckdb.RegisterTableUDF(conn, "pairs", fn); err != nil {
		t.Fatal(err)
	}
	conn.Close() // the database has one connection
	// Table functions live in the system catalog: every connection sees them.
	return shape, func(q string) [][]any { return ducktest.MustQuery(t, db, q) }
}

// withNulls returns arr with a validity bitmap that also nulls about
// 3 rows in 4 (a null struct then has valid Arrow children, a null list
// elements under it).
func withNulls(arr arrow.Array, r *rand.Rand) arrow.Array {
	d := arr.Data()
	if arr.DataType().ID() == arrow.NULL {
		arr.Retain()
		return arr
	}
	n := d.Len()
	bits := make([]byte, (d.Offset()+n+7)/8)
	for i := range n {
		if arr.IsValid(i) && r.IntN(4) == 0 {
			bitutil.SetBit(bits, d.Offset()+i)
		}
	}
	bufs := append([]*memory.Buffer{memory.NewBufferBytes(bits)}, d.Buffers()[1:]...)
	var nd arrow.ArrayData
	if d.DataType().ID() == arrow.DICTIONARY {
		nd = array.NewDataWithDictionary(d.DataType(), n, bufs, array.UnknownNullCount, d.Offset(), d.Dictionary().(*array.Data))
	} else {
		nd = array.NewData(d.DataType(), n, bufs, d.Children(), array.UnknownNullCount, d.Offset())
	}
	defer nd.Release()
	return array.MakeFromData(nd)
}

// TestBulkMatchesValuePath writes every type sop_scan maps through the
// bulk writers and value by value (the path the equivalence tests check
// against read_parquet), from arrays sliced at offsets that are no
// multiple of 8, in chunks of random sizes, as they are and with three
// rows in four nulled, and compares the two in DuckDB, value by value.
func TestBulkMatchesValuePath(t *testing.T) {
	t.Parallel()
	const rows = 6000
	schemas := map[string]*arrow.Schema{"all": testtables.AllTypes(), "arrow": testtables.ArrowTypes(), "extra": testtables.ExtraTypes(), "narrow": nil}
	for name, schema := range schemas {
		for _, nulls := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/nulls=%v", name, nulls), func(t *testing.T) {
				t.Parallel()
				var rec arrow.RecordBatch
				if schema == nil {
					rec = narrowDecimals(rows + 64)
				} else {
					rec = testtables.Record(schema, rows+64, 3)
				}
				defer rec.Release()
				r := rand.New(rand.NewPCG(11, uint64(len(name))))
				arrs := make([]arrow.Array, rec.NumCols())
				for i, col := range rec.Columns() {
					s := 1 + r.IntN(63) // a bit offset that is no multiple of 8, mostly
					arrs[i] = array.NewSlice(col, int64(s), int64(s+rows))
					if nulls {
						a := withNulls(arrs[i], r)
						arrs[i].Release()
						arrs[i] = a
					}
					defer arrs[i].Release()
				}
				p, query := registerPairs(t, rec.Schema().Fields(), arrs, 5)
				if p.bulk != len(p.cols) {
					for _, c := range p.cols {
						if c.write == nil {
							t.Errorf("column %q (%s) has no bulk writer", c.name, c.dt)
						}
					}
				}
				if got := query("SELECT count(*) FROM pairs()"); got[0][0] != int64(rows) {
					t.Fatalf("count(*) = %v, want %d", got[0][0], rows)
				}
				for k, c := range p.cols {
					differ := fmt.Sprintf("b%d IS DISTINCT FROM v%d", k, k)
					got := query(fmt.Sprintf("SELECT count(*) FILTER (WHERE %s), count(b%d), count(v%d) FROM pairs()", differ, k, k))
					if got[0][0] != int64(0) {
						ex := query(fmt.Sprintf("SELECT b%d::VARCHAR, v%d::VARCHAR FROM pairs() WHERE %s LIMIT 3", k, k, differ))
						t.Errorf("column %q (%s): %v of %d rows differ, e.g. %v", c.name, c.dt, got[0][0], rows, ex)
					}
					nonNull := int64(p.arrs[k].Len() - p.arrs[k].NullN())
					if c.dt.ID() == arrow.NULL {
						nonNull = 0
					}
					if got[0][1] != nonNull && c.dt.ID() != arrow.DICTIONARY {
						t.Errorf("column %q: %v non-null values, the array has %d", c.name, got[0][1], nonNull)
					}
				}
			})
		}
	}
}

// TestBulkEdges: empty lists, lists and structs nulled over valid
// children, and the values the bulk path refuses.
func TestBulkEdges(t *testing.T) {
	t.Parallel()
	mem := memory.NewGoAllocator()
	lb := array.NewListBuilder(mem, arrow.PrimitiveTypes.Int64)
	defer lb.Release()
	vb := lb.ValueBuilder().(*array.Int64Builder)
	lb.Append(true) // []
	lb.Append(true)
	vb.AppendValues([]int64{1, 2}, nil) // [1, 2]
	lb.AppendNull()                     // NULL
	lb.Append(true)
	vb.AppendNull() // [NULL]
	list := lb.NewArray()
	defer list.Release()

	sb := array.NewStructBuilder(mem, arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}))
	defer sb.Release()
	for _, v := range []int64{10, 20, 30, 40} {
		sb.Append(true)
		sb.FieldBuilder(0).(*array.Int64Builder).Append(v)
	}
	valid := sb.NewArray()
	defer valid.Release()
	// Rows 1 and 3 null, their Arrow child values (20, 40) valid.
	bits := []byte{0b0101}
	sd := array.NewData(valid.DataType(), 4, []*memory.Buffer{memory.NewBufferBytes(bits)}, valid.Data().Children(), 2, 0)
	defer sd.Release()
	st := array.MakeFromData(sd)
	defer st.Release()

	fields := []arrow.Field{{Name: "l", Type: list.DataType(), Nullable: true}, {Name: "st", Type: st.DataType(), Nullable: true}}
	_, query := registerPairs(t, fields, []arrow.Array{list, st}, 1)
	got := query("SELECT b0::VARCHAR, len(b0), b1::VARCHAR, b1.a FROM pairs()")
	want := [][]any{
		{"[]", int64(0), "{'a': 10}", int64(10)},
		{"[1, 2]", int64(2), nil, nil},
		{nil, nil, "{'a': 30}", int64(30)},
		{"[NULL]", int64(1), nil, nil},
	}
	compareRows(t, "pairs()", want, got)

	// Refused: invalid UTF-8, a decimal beyond its precision.
	strs := array.NewStringBuilder(mem)
	defer strs.Release()
	strs.AppendValues([]string{"ok", "bad\xff"}, nil)
	for _, c := range []struct {
		arr  arrow.Array
		typ  mapping.LogicalType
		want string
	}{
		{strs.NewArray(), mapping.CreateLogicalType(mapping.TypeVarchar), "not UTF-8"},
		{decimals(mem, 4, decimal128.FromI64(9999), decimal128.FromI64(10000)), mapping.CreateDecimalType(4, 0), "more than 4 digits"},
		{decimals(mem, 12, decimal128.FromI64(-999_999_999_999), decimal128.FromI64(-1_000_000_000_000)), mapping.CreateDecimalType(12, 0), "more than 12 digits"},
		{decimals(mem, 30, decimal128.GetScaleMultiplier(30).Sub(decimal128.FromI64(1)).Negate(), decimal128.GetScaleMultiplier(30).Negate()), mapping.CreateDecimalType(30, 0), "more than 30 digits"},
		{narrowArray(&arrow.Decimal64Type{Precision: 15, Scale: 2}, -999_999_999_999_999, 1_000_000_000_000_000), mapping.CreateDecimalType(15, 2), "more than 15 digits"},
		{mapArray(t, "a", "b", "a"), mapType(), "duplicate map key a"},
		{narrowArray(&arrow.Decimal64Type{Precision: 4, Scale: 0}, 9999, -10000), mapping.CreateDecimalType(4, 0), "more than 4 digits"},
		{narrowArray(&arrow.Decimal32Type{Precision: 9, Scale: 0}, 999_999_999, 1_000_000_000), mapping.CreateDecimalType(9, 0), "more than 9 digits"},
	} {
		cols, err := columns(arrow.NewSchema([]arrow.Field{{Name: "c", Type: c.arr.DataType(), Nullable: true}}, nil))
		if err != nil {
			t.Fatal(err)
		}
		var ws writeState
		v := mapping.CreateVector(c.typ, mapping.IdxT(duckdb.GetDataChunkCapacity()))
		err = cols[0].write(&ws, v, c.arr, 0, c.arr.Len())
		if !errors.Is(err, ErrData) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: %v, want ErrData (%s)", c.arr.DataType(), c.arr, err, c.want)
		}
		// The value just inside the bound is written.
		if err := cols[0].write(&ws, v, c.arr, 0, 1); err != nil {
			t.Errorf("%s %v[0]: %v", c.arr.DataType(), c.arr, err)
		}
		c.arr.Release()
		mapping.DestroyVector(&v)
		mapping.DestroyLogicalType(&c.typ)
	}

	// A null's slot may hold any value: one beyond the precision there is
	// not refused (the vector's least and greatest value are out of range,
	// so each value is looked at).
	vals := []int64{-999_999_999_999_999, 1_000_000_000_000_000, 999_999_999_999_999}
	buf := memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(vals))
	validity := memory.NewBufferBytes([]byte{0b101})
	nullSlot := array.MakeFromData(array.NewData(&arrow.Decimal64Type{Precision: 15, Scale: 2}, 3, []*memory.Buffer{validity, buf}, nil, 1, 0))
	defer nullSlot.Release()
	cols, err := columns(arrow.NewSchema([]arrow.Field{{Name: "c", Type: nullSlot.DataType(), Nullable: true}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	typ := mapping.CreateDecimalType(15, 2)
	defer mapping.DestroyLogicalType(&typ)
	v := mapping.CreateVector(typ, mapping.IdxT(duckdb.GetDataChunkCapacity()))
	defer mapping.DestroyVector(&v)
	if err := cols[0].write(&writeState{}, v, nullSlot, 0, 3); err != nil {
		t.Errorf("a null slot beyond the precision: %v", err)
	}
}

// decimals returns a decimal128(p, 0) array of vs.
func decimals(mem memory.Allocator, p int32, vs ...decimal128.Num) arrow.Array {
	b := array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: p, Scale: 0})
	defer b.Release()
	b.AppendValues(vs, nil)
	return b.NewArray()
}

// narrowDecimals returns n rows of decimal32 and decimal64 columns (a scan
// WithNarrowDecimals) of every precision class, extremes included.
func narrowDecimals(n int) arrow.RecordBatch {
	types := []arrow.DataType{
		&arrow.Decimal32Type{Precision: 1, Scale: 0}, &arrow.Decimal32Type{Precision: 4, Scale: 1},
		&arrow.Decimal32Type{Precision: 9, Scale: 2}, &arrow.Decimal64Type{Precision: 3, Scale: 3},
		&arrow.Decimal64Type{Precision: 9, Scale: 0}, &arrow.Decimal64Type{Precision: 15, Scale: 2},
		&arrow.Decimal64Type{Precision: 18, Scale: 9},
	}
	fields := make([]arrow.Field, len(types))
	for i, dt := range types {
		fields[i] = arrow.Field{Name: fmt.Sprintf("d%d", i), Type: dt, Nullable: true}
	}
	b := array.NewRecordBuilder(memory.NewGoAllocator(), arrow.NewSchema(fields, nil))
	defer b.Release()
	r := rand.New(rand.NewPCG(1, 2))
	for i, dt := range types {
		limit := int64(pow10(dt.(arrow.DecimalType).GetPrecision()))
		for row := range n {
			v := r.Int64N(2*limit-1) - (limit - 1)
			switch {
			case row%17 == 3:
				b.Field(i).AppendNull()
				continue
			case row%101 == 5:
				v = limit - 1
			case row%101 == 6:
				v = 1 - limit
			}
			switch fb := b.Field(i).(type) {
			case *array.Decimal32Builder:
				fb.Append(decimal.Decimal32(v))
			case *array.Decimal64Builder:
				fb.Append(decimal.Decimal64(v))
			}
		}
	}
	return b.NewRecordBatch()
}

// narrowArray returns a decimal32 or decimal64 array of vs.
func narrowArray(dt arrow.DataType, vs ...int64) arrow.Array {
	b := array.NewBuilder(memory.NewGoAllocator(), dt)
	defer b.Release()
	for _, v := range vs {
		switch b := b.(type) {
		case *array.Decimal32Builder:
			b.Append(decimal.Decimal32(v))
		case *array.Decimal64Builder:
			b.Append(decimal.Decimal64(v))
		}
	}
	return b.NewArray()
}

// mapArray returns a map<string, int64> array whose first map is {a: 1} and
// whose second holds keys, each to 1. (arrow-go makes no map array with a
// null key.)
func mapArray(t *testing.T, keys ...string) arrow.Array {
	t.Helper()
	b := array.NewMapBuilder(memory.NewGoAllocator(), arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64, false)
	defer b.Release()
	kb, ib := b.KeyBuilder().(*array.StringBuilder), b.ItemBuilder().(*array.Int64Builder)
	b.Append(true)
	kb.Append("a")
	ib.Append(1)
	b.Append(true)
	for _, k := range keys {
		kb.Append(k)
		ib.Append(1)
	}
	return b.NewArray()
}

// mapType is DuckDB's MAP(VARCHAR, BIGINT).
func mapType() mapping.LogicalType {
	k, v := mapping.CreateLogicalType(mapping.TypeVarchar), mapping.CreateLogicalType(mapping.TypeBigInt)
	defer mapping.DestroyLogicalType(&k)
	defer mapping.DestroyLogicalType(&v)
	return mapping.CreateMapType(k, v)
}
