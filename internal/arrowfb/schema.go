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
