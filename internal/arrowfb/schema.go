package arrowfb

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// A Schema is an Arrow schema as an IPC Schema message states it, decoded
// without arrow-go: the fields, each with the type it names.
type Schema struct {
	Fields   []Field
	Metadata arrow.Metadata
}

// A Field is one field of a Schema. Type is the field's Arrow type when it
// is a type the package builds: every primitive, binary, string, decimal,
// date, time, timestamp, duration and interval type, and the lists,
// structs and maps of them (their children as in Children). It is nil for
// the others (unions, run-end encoded, views, a child of those): Kind still
// names them. Dictionary, if not nil, is the field's dictionary encoding,
// whose values are of Type. Metadata is the field's custom metadata, where
// an extension type keeps its name and metadata (ARROW:extension:name,
// ARROW:extension:metadata) over the storage type.
type Field struct {
	Name       string
	Nullable   bool
	Kind       Kind
	Type       arrow.DataType
	Dictionary *arrow.DictionaryType // IndexType and Ordered; ValueType is Type
	Children   []Field
	Metadata   arrow.Metadata
}

// Kind is the tag of a field's type in Schema.fbs (the Type union).
type Kind uint8

// The kinds of Schema.fbs.
const (
	KindNone Kind = iota
	KindNull
	KindInt
	KindFloatingPoint
	KindBinary
	KindUtf8
	KindBool
	KindDecimal
	KindDate
	KindTime
	KindTimestamp
	KindInterval
	KindList
	KindStruct
	KindUnion
	KindFixedSizeBinary
	KindFixedSizeList
	KindMap
	KindDuration
	KindLargeBinary
	KindLargeUtf8
	KindLargeList
	KindRunEndEncoded
	KindBinaryView
	KindUtf8View
	KindListView
	KindLargeListView
)

// MaxStringBytes bounds a decoded string (a name, a time zone, a metadata
// key or value), whatever the buffer holds.
const MaxStringBytes = 1 << 20

// decoder decodes one Schema message. Besides the Walker's bounds, the
// strings it copies add up to at most twice the buffer: a flatbuffer may
// refer to one long string from every field.
type decoder struct {
	*Walker
	copied int
}

// DecodeSchemaEntry decodes the value of an ARROW:schema key-value entry:
// an encapsulated Arrow IPC Schema message (an optional 0xFFFFFFFF
// continuation marker, a 32-bit metadata length, the Message flatbuffer),
// in standard base64, padded or not, as Arrow writers store it in Parquet.
func DecodeSchemaEntry(value []byte) (*Schema, error) {
	raw := make([]byte, base64.RawStdEncoding.DecodedLen(len(value))) // the larger of the two
	n, err := base64.StdEncoding.Decode(raw, value)
	if err != nil {
		if n, err = base64.RawStdEncoding.Decode(raw, value); err != nil {
			return nil, fmt.Errorf("%w: ARROW:schema is not base64: %v", ErrMalformed, err)
		}
	}
	return DecodeSchemaIPC(raw[:n])
}

// DecodeSchemaIPC decodes an encapsulated Arrow IPC Schema message (see
// DecodeSchemaEntry).
func DecodeSchemaIPC(msg []byte) (*Schema, error) {
	if len(msg) >= 4 && binary.LittleEndian.Uint32(msg) == 0xffffffff {
		msg = msg[4:]
	}
	if len(msg) < 4 {
		return nil, fmt.Errorf("%w: an IPC message of %d bytes", ErrMalformed, len(msg))
	}
	n := int64(int32(binary.LittleEndian.Uint32(msg)))
	if n < 4 || n > int64(len(msg)-4) {
		return nil, fmt.Errorf("%w: IPC message metadata of %d bytes in %d", ErrMalformed, n, len(msg)-4)
	}
	return DecodeSchema(msg[4 : 4+n])
}

// DecodeSchema decodes the flatbuffer of an Arrow IPC Message whose header
// is a Schema. It reads no more fields than the buffer holds at 4 bytes
// each, nested at most MaxDepth deep, and copies at most twice the
// buffer's bytes into strings.
func DecodeSchema(buf []byte) (*Schema, error) {
	d := &decoder{Walker: NewWalker(buf)}
	root, err := d.U32(0)
	if err != nil {
		return nil, err
	}
	ht, err := d.scalar(root, 1, 1)
	if err != nil {
		return nil, err
	}
	if ht != headerSchema {
		return nil, fmt.Errorf("%w: a message of header type %d, not a schema", ErrMalformed, ht)
	}
	h, err := d.Ref(root, 2)
	if err != nil {
		return nil, err
	}
	if h == 0 {
		return nil, fmt.Errorf("%w: a schema message without its schema", ErrMalformed)
	}
	if e, err := d.scalar(h, 0, 2); err != nil {
		return nil, err
	} else if e != 0 {
		return nil, fmt.Errorf("%w: a big-endian schema", ErrMalformed)
	}
	s := &Schema{}
	if s.Metadata, err = d.metadata(h, 2); err != nil {
		return nil, err
	}
	if s.Fields, err = d.fields(h, 1, 0); err != nil {
		return nil, err
	}
	return s, nil
}

// scalar returns the little-endian integer of size bytes (1, 2, 4 or 8) in
// field slot of tab, or 0 if it is absent.
func (d *decoder) scalar(tab, slot, size int) (int64, error) {
	p, err := d.Field(tab, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	if p > len(d.buf)-size {
		return 0, fmt.Errorf("%w: a scalar out of the flatbuffer", ErrMalformed)
	}
	b := d.buf[p:]
	switch size {
	case 1:
		return int64(int8(b[0])), nil
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(b))), nil
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(b))), nil
	}
	return int64(binary.LittleEndian.Uint64(b)), nil
}

// scalarOr is scalar with the schema's default for an absent field.
func (d *decoder) scalarOr(tab, slot, size int, def int64) (int64, error) {
	p, err := d.Field(tab, slot)
	if err != nil || p == 0 {
		return def, err
	}
	return d.scalar(tab, slot, size)
}

// str returns the string in field slot of tab ("" if absent).
func (d *decoder) str(tab, slot int) (string, error) {
	start, n, err := d.Vector(tab, slot, 1)
	if err != nil || start == 0 {
		return "", err
	}
	if n > MaxStringBytes {
		return "", fmt.Errorf("%w: a string of %d bytes", ErrMalformed, n)
	}
	if d.copied += n; d.copied > 2*len(d.buf) {
		return "", fmt.Errorf("%w: strings of more than twice the flatbuffer's %d bytes", ErrMalformed, len(d.buf))
	}
	s := string(d.buf[start : start+n])
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: a string that is not UTF-8", ErrMalformed)
	}
	return s, nil
}

// metadata decodes the vector of KeyValue tables (key slot 0, value slot
// 1) in field slot of tab.
func (d *decoder) metadata(tab, slot int) (arrow.Metadata, error) {
	start, n, err := d.Vector(tab, slot, 4)
	if err != nil || n == 0 {
		return arrow.Metadata{}, err
	}
	keys, values := make([]string, 0, n), make([]string, 0, n) // n fits in the buffer
	for i := range n {
		kv, err := d.Elem(start, i)
		if err != nil {
			return arrow.Metadata{}, err
		}
		k, err := d.str(kv, 0)
		if err != nil {
			return arrow.Metadata{}, err
		}
		v, err := d.str(kv, 1)
		if err != nil {
			return arrow.Metadata{}, err
		}
		keys, values = append(keys, k), append(values, v)
	}
	return arrow.NewMetadata(keys, values), nil
}

// fields decodes the vector of Field tables in field slot of tab: name
// (slot 0), nullable (1), type_type (2), type (3), dictionary (4),
// children (5), custom_metadata (6).
func (d *decoder) fields(tab, slot, depth int) ([]Field, error) {
	if depth > MaxDepth {
		return nil, fmt.Errorf("%w: fields nested deeper than %d", ErrMalformed, MaxDepth)
	}
	start, n, err := d.Vector(tab, slot, 4)
	if err != nil || n == 0 {
		return nil, err
	}
	out := make([]Field, 0, min(n, len(d.buf)/4-d.nodes))
	for i := range n {
		if err := d.visit(); err != nil {
			return nil, err
		}
		ft, err := d.Elem(start, i)
		if err != nil {
			return nil, err
		}
		var f Field
		if f.Name, err = d.str(ft, 0); err != nil {
			return nil, err
		}
		nullable, err := d.scalar(ft, 1, 1)
		if err != nil {
			return nil, err
		}
		f.Nullable = nullable != 0
		kind, err := d.scalar(ft, 2, 1)
		if err != nil {
			return nil, err
		}
		f.Kind = Kind(uint8(kind))
		if f.Children, err = d.fields(ft, 5, depth+1); err != nil {
			return nil, err
		}
		if f.Metadata, err = d.metadata(ft, 6); err != nil {
			return nil, err
		}
		typ, err := d.Ref(ft, 3)
		if err != nil {
			return nil, err
		}
		if f.Type, err = d.dataType(f.Kind, typ, f.Children); err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Name, err)
		}
		if f.Dictionary, err = d.dictionary(ft); err != nil {
			return nil, fmt.Errorf("field %q: %w", f.Name, err)
		}
		out = append(out, f)
	}
	return out, nil
}

// dictionary decodes a field's DictionaryEncoding (slot 4 of the field):
// indexType (slot 1, an Int table), isOrdered (slot 2).
func (d *decoder) dictionary(ft int) (*arrow.DictionaryType, error) {
	de, err := d.Ref(ft, 4)
	if err != nil || de == 0 {
		return nil, err
	}
	dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32}
	if it, err := d.Ref(de, 1); err != nil {
		return nil, err
	} else if it != 0 {
		t, err := d.intType(it)
		if err != nil {
			return nil, err
		}
		if !arrow.IsInteger(t.ID()) {
			return nil, fmt.Errorf("%w: a dictionary index of type %s", ErrMalformed, t)
		}
		dt.IndexType = t
	}
	ordered, err := d.scalar(de, 2, 1)
	if err != nil {
		return nil, err
	}
	dt.Ordered = ordered != 0
	return dt, nil
}

// intType decodes an Int table: bitWidth (slot 0), is_signed (slot 1).
func (d *decoder) intType(t int) (arrow.DataType, error) {
	width, err := d.scalar(t, 0, 4)
	if err != nil {
		return nil, err
	}
	signed, err := d.scalar(t, 1, 1)
	if err != nil {
		return nil, err
	}
	types := map[int64][2]arrow.DataType{
		8:  {arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Int8},
		16: {arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Int16},
		32: {arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Int32},
		64: {arrow.PrimitiveTypes.Uint64, arrow.PrimitiveTypes.Int64},
	}
	pair, ok := types[width]
	if !ok {
		return nil, fmt.Errorf("%w: an integer of %d bits", ErrMalformed, width)
	}
	if signed != 0 {
		return pair[1], nil
	}
	return pair[0], nil
}

// timeUnit maps Schema.fbs TimeUnit to arrow's.
func timeUnit(u int64) (arrow.TimeUnit, error) {
	switch u {
	case 0:
		return arrow.Second, nil
	case 1:
		return arrow.Millisecond, nil
	case 2:
		return arrow.Microsecond, nil
	case 3:
		return arrow.Nanosecond, nil
	}
	return 0, fmt.Errorf("%w: time unit %d", ErrMalformed, u)
}

// dataType builds the type of kind from its table t and the field's
// children, or returns nil for a kind the package does not build.
func (d *decoder) dataType(kind Kind, t int, children []Field) (arrow.DataType, error) {
	needTable := func() error {
		if t == 0 {
			return fmt.Errorf("%w: a type of kind %d without its table", ErrMalformed, kind)
		}
		return nil
	}
	childTypes := func(n int) ([]arrow.Field, bool) {
		if n >= 0 && len(children) != n {
			return nil, false
		}
		out := make([]arrow.Field, len(children))
		for i, c := range children {
			if c.Type == nil {
				return nil, false
			}
			typ := c.Type
			if c.Dictionary != nil {
				typ = &arrow.DictionaryType{IndexType: c.Dictionary.IndexType, ValueType: c.Type, Ordered: c.Dictionary.Ordered}
			}
			out[i] = arrow.Field{Name: c.Name, Type: typ, Nullable: c.Nullable, Metadata: c.Metadata}
		}
		return out, true
	}
	switch kind {
	case KindNull:
		return arrow.Null, nil
	case KindBool:
		return arrow.FixedWidthTypes.Boolean, nil
	case KindBinary:
		return arrow.BinaryTypes.Binary, nil
	case KindUtf8:
		return arrow.BinaryTypes.String, nil
	case KindLargeBinary:
		return arrow.BinaryTypes.LargeBinary, nil
	case KindLargeUtf8:
		return arrow.BinaryTypes.LargeString, nil
	case KindInt:
		if err := needTable(); err != nil {
			return nil, err
		}
		return d.intType(t)
	case KindFloatingPoint:
		if err := needTable(); err != nil {
			return nil, err
		}
		p, err := d.scalar(t, 0, 2)
		if err != nil {
			return nil, err
		}
		switch p {
		case 0:
			return arrow.FixedWidthTypes.Float16, nil
		case 1:
			return arrow.PrimitiveTypes.Float32, nil
		case 2:
			return arrow.PrimitiveTypes.Float64, nil
		}
		return nil, fmt.Errorf("%w: floating point precision %d", ErrMalformed, p)
	case KindDecimal:
		if err := needTable(); err != nil {
			return nil, err
		}
		prec, err := d.scalar(t, 0, 4)
		if err != nil {
			return nil, err
		}
		scale, err := d.scalar(t, 1, 4)
		if err != nil {
			return nil, err
		}
		width, err := d.scalarOr(t, 2, 4, 128)
		if err != nil {
			return nil, err
		}
		maxPrec := map[int64]int64{32: 9, 64: 18, 128: 38, 256: 76}[width]
		if prec < 1 || prec > maxPrec {
			return nil, fmt.Errorf("%w: a decimal of %d bits and precision %d", ErrMalformed, width, prec)
		}
		var dt arrow.DataType
		switch width {
		case 32:
			dt = &arrow.Decimal32Type{Precision: int32(prec), Scale: int32(scale)}
		case 64:
			dt = &arrow.Decimal64Type{Precision: int32(prec), Scale: int32(scale)}
		case 128:
			dt = &arrow.Decimal128Type{Precision: int32(prec), Scale: int32(scale)}
		case 256:
			dt = &arrow.Decimal256Type{Precision: int32(prec), Scale: int32(scale)}
		default:
			return nil, fmt.Errorf("%w: a decimal of %d bits", ErrMalformed, width)
		}
		return dt, nil
	case KindDate:
		if err := needTable(); err != nil {
			return nil, err
		}
		u, err := d.scalarOr(t, 0, 2, 1)
		if err != nil {
			return nil, err
		}
		switch u {
		case 0:
			return arrow.FixedWidthTypes.Date32, nil
		case 1:
			return arrow.FixedWidthTypes.Date64, nil
		}
		return nil, fmt.Errorf("%w: date unit %d", ErrMalformed, u)
	case KindTime:
		if err := needTable(); err != nil {
			return nil, err
		}
		u, err := d.scalarOr(t, 0, 2, 1)
		if err != nil {
			return nil, err
		}
		width, err := d.scalarOr(t, 1, 4, 32)
		if err != nil {
			return nil, err
		}
		unit, err := timeUnit(u)
		if err != nil {
			return nil, err
		}
		switch {
		case width == 32 && (unit == arrow.Second || unit == arrow.Millisecond):
			return &arrow.Time32Type{Unit: unit}, nil
		case width == 64 && (unit == arrow.Microsecond || unit == arrow.Nanosecond):
			return &arrow.Time64Type{Unit: unit}, nil
		}
		return nil, fmt.Errorf("%w: a time of %d bits in unit %s", ErrMalformed, width, unit)
	case KindTimestamp:
		if err := needTable(); err != nil {
			return nil, err
		}
		u, err := d.scalar(t, 0, 2)
		if err != nil {
			return nil, err
		}
		unit, err := timeUnit(u)
		if err != nil {
			return nil, err
		}
		tz, err := d.str(t, 1)
		if err != nil {
			return nil, err
		}
		return &arrow.TimestampType{Unit: unit, TimeZone: tz}, nil
	case KindDuration:
		if err := needTable(); err != nil {
			return nil, err
		}
		u, err := d.scalarOr(t, 0, 2, 1)
		if err != nil {
			return nil, err
		}
		unit, err := timeUnit(u)
		if err != nil {
			return nil, err
		}
		return &arrow.DurationType{Unit: unit}, nil
	case KindInterval:
		if err := needTable(); err != nil {
			return nil, err
		}
		u, err := d.scalar(t, 0, 2)
		if err != nil {
			return nil, err
		}
		switch u {
		case 0:
			return arrow.FixedWidthTypes.MonthInterval, nil
		case 1:
			return arrow.FixedWidthTypes.DayTimeInterval, nil
		case 2:
			return arrow.FixedWidthTypes.MonthDayNanoInterval, nil
		}
		return nil, fmt.Errorf("%w: interval unit %d", ErrMalformed, u)
	case KindFixedSizeBinary:
		if err := needTable(); err != nil {
			return nil, err
		}
		w, err := d.scalar(t, 0, 4)
		if err != nil {
			return nil, err
		}
		if w < 0 {
			return nil, fmt.Errorf("%w: a fixed-size binary of width %d", ErrMalformed, w)
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: int(w)}, nil
	case KindList, KindLargeList:
		fs, ok := childTypes(1)
		if !ok {
			return nil, nil
		}
		if kind == KindLargeList {
			return arrow.LargeListOfField(fs[0]), nil
		}
		return arrow.ListOfField(fs[0]), nil
	case KindFixedSizeList:
		if err := needTable(); err != nil {
			return nil, err
		}
		n, err := d.scalar(t, 0, 4)
		if err != nil {
			return nil, err
		}
		fs, ok := childTypes(1)
		if !ok {
			return nil, nil
		}
		if n < 0 {
			return nil, fmt.Errorf("%w: a fixed-size list of %d", ErrMalformed, n)
		}
		return arrow.FixedSizeListOfField(int32(n), fs[0]), nil
	case KindStruct:
		fs, ok := childTypes(-1)
		if !ok {
			return nil, nil
		}
		return arrow.StructOf(fs...), nil
	case KindMap:
		if err := needTable(); err != nil {
			return nil, err
		}
		sorted, err := d.scalar(t, 0, 1)
		if err != nil {
			return nil, err
		}
		// A map's one child is a struct of a key and a value.
		if len(children) != 1 || children[0].Kind != KindStruct || len(children[0].Children) != 2 {
			return nil, nil
		}
		kv := children[0].Children
		if kv[0].Type == nil || kv[1].Type == nil || kv[0].Dictionary != nil || kv[1].Dictionary != nil {
			return nil, nil
		}
		m := arrow.MapOfFields(
			arrow.Field{Name: kv[0].Name, Type: kv[0].Type, Metadata: kv[0].Metadata},
			arrow.Field{Name: kv[1].Name, Type: kv[1].Type, Nullable: kv[1].Nullable, Metadata: kv[1].Metadata})
		m.KeysSorted = sorted != 0
		return m, nil
	}
	return nil, nil
}

// CheckSchemaEntry checks the value of an ARROW:schema entry for what
// arrow-go's IPC reader allocates when it decodes it (pqarrow does, for a
// plaintext Parquet file): the message's metadata and body lengths within
// the entry, and its flatbuffer (CheckMessage).
func CheckSchemaEntry(value []byte) error {
	raw := make([]byte, base64.RawStdEncoding.DecodedLen(len(value))) // the larger of the two
	n, err := base64.StdEncoding.Decode(raw, value)
	if err != nil {
		if n, err = base64.RawStdEncoding.Decode(raw, value); err != nil {
			return fmt.Errorf("%w: ARROW:schema is not base64: %v", ErrMalformed, err)
		}
	}
	msg := raw[:n]
	if len(msg) >= 4 && binary.LittleEndian.Uint32(msg) == 0xffffffff {
		msg = msg[4:]
	}
	if len(msg) < 4 {
		return fmt.Errorf("%w: an IPC message of %d bytes", ErrMalformed, len(msg))
	}
	m := int64(int32(binary.LittleEndian.Uint32(msg)))
	if m < 4 || m > int64(len(msg)-4) {
		return fmt.Errorf("%w: IPC message metadata of %d bytes in %d", ErrMalformed, m, len(msg)-4)
	}
	fb := msg[4 : 4+m]
	if err := CheckMessage(fb); err != nil {
		return err
	}
	body, err := BodyLength(fb)
	if err != nil {
		return err
	}
	if body < 0 || body > int64(len(msg))-4-m {
		return fmt.Errorf("%w: an IPC message body of %d bytes in %d", ErrMalformed, body, int64(len(msg))-4-m)
	}
	return nil
}
