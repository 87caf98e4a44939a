package catalog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/sovm/sop-pme/internal/arrowfb"
	"github.com/sovm/sop-pme/storageid"
)

// recordV1 is the first byte of every record this version writes.
const recordV1 = 1

// Bounds of what a record may hold, beyond the ring's own (16 MiB).
const (
	maxName     = 1 << 10 // a table name, in bytes
	maxChange   = 4 << 10 // a version's change note, in bytes
	maxVersions = 1 << 16
	keySize     = 16 // a table key
)

// Record key prefixes.
const (
	prefixTable  = 't'
	prefixObject = 'o'
)

type tableKey [keySize]byte

func headerKey(k tableKey) []byte { return append([]byte{prefixTable}, k[:]...) }

func objectKey(id storageid.ID) []byte { return append([]byte{prefixObject}, id[:]...) }

// header is a table's header record: the table without its objects.
type header struct {
	key tableKey
	t   *Table
	seq uint64 // the sequence number of the next object appended
}

// object is an object's record.
type object struct {
	Object
	table tableKey
	seq   uint64
}

// encodeSchema serializes s (its fields; schema metadata is dropped) as an
// encapsulated Arrow IPC Schema message.
func encodeSchema(s *arrow.Schema) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(arrow.NewSchema(s.Fields(), nil)))
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("catalog: serializing a schema: %w", err)
	}
	b := buf.Bytes()
	if len(b) < 8 || binary.LittleEndian.Uint32(b) != 0xFFFFFFFF {
		return nil, fmt.Errorf("catalog: serializing a schema: no schema message")
	}
	n := int(int32(binary.LittleEndian.Uint32(b[4:])))
	if n < 4 || n > len(b)-8 {
		return nil, fmt.Errorf("catalog: serializing a schema: a message of %d bytes", n)
	}
	return bytes.Clone(b[:8+n]), nil
}

// decodeSchema decodes what encodeSchema wrote with the bounded decoder of
// arrowfb, and checks that every field carries a unique field ID no larger
// than high.
func decodeSchema(b []byte, high int32) (*arrow.Schema, error) {
	if len(b) < 8 || int(int32(binary.LittleEndian.Uint32(b[4:]))) != len(b)-8 {
		return nil, fmt.Errorf("%w: a schema message of %d bytes", ErrRecord, len(b))
	}
	s, err := arrowfb.DecodeSchemaIPC(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	fs, err := fbFields(s.Fields)
	if err != nil {
		return nil, err
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("%w: a schema without fields", ErrRecord)
	}
	if m, ok := allIDs(fs); !ok || m > high {
		return nil, fmt.Errorf("%w: a schema whose field IDs are missing, repeated or above the high water %d", ErrRecord, high)
	}
	return arrow.NewSchema(fs, nil), nil
}

func fbFields(in []arrowfb.Field) ([]arrow.Field, error) {
	out := make([]arrow.Field, len(in))
	for i, f := range in {
		if f.Type == nil || f.Dictionary != nil {
			return nil, fmt.Errorf("%w: field %q of kind %d", ErrRecord, f.Name, f.Kind)
		}
		if _, err := fbFields(f.Children); err != nil {
			return nil, err
		}
		out[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable, Metadata: f.Metadata}
	}
	return out, nil
}

func appendTime(b []byte, t time.Time) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(t.UnixNano()))
}

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// encodeHeader encodes a header record.
func encodeHeader(h *header) ([]byte, error) {
	b := []byte{recordV1}
	b = appendBytes(b, []byte(h.t.Name))
	b = appendTime(b, h.t.Created)
	b = binary.AppendUvarint(b, uint64(h.t.HighWater))
	b = binary.AppendUvarint(b, h.seq)
	b = binary.AppendUvarint(b, uint64(len(h.t.Versions)))
	for _, v := range h.t.Versions {
		s, err := encodeSchema(v.Schema)
		if err != nil {
			return nil, err
		}
		b = appendTime(b, v.Created)
		b = appendBytes(b, []byte(v.Change))
		b = appendBytes(b, s)
	}
	return b, nil
}

// parser reads a record strictly: a sticky error, every length bounded by
// the bytes left.
type parser struct {
	b   []byte
	err error
}

func (p *parser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: "+format, append([]any{ErrRecord}, args...)...)
	}
}

func (p *parser) uvarint(max uint64, what string) uint64 {
	if p.err != nil {
		return 0
	}
	v, n := binary.Uvarint(p.b)
	if n <= 0 || (n > 1 && p.b[n-1] == 0) {
		// A uvarint is written in its shortest form only, so that a
		// record has one encoding.
		p.fail("%s: a bad uvarint", what)
		return 0
	}
	if v > max {
		p.fail("%s: %d is above %d", what, v, max)
		return 0
	}
	p.b = p.b[n:]
	return v
}

func (p *parser) bytes(max int, what string) []byte {
	n := p.uvarint(uint64(max), what)
	if p.err != nil {
		return nil
	}
	if n > uint64(len(p.b)) {
		p.fail("%s: %d bytes of %d left", what, n, len(p.b))
		return nil
	}
	s := p.b[:n]
	p.b = p.b[n:]
	return s
}

func (p *parser) fixed(n int, what string) []byte {
	if p.err != nil {
		return nil
	}
	if len(p.b) < n {
		p.fail("%s: %d bytes of %d left", what, n, len(p.b))
		return nil
	}
	s := p.b[:n]
	p.b = p.b[n:]
	return s
}

func (p *parser) time(what string) time.Time {
	b := p.fixed(8, what)
	if b == nil {
		return time.Time{}
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC()
}

func (p *parser) end() error {
	if p.err == nil && len(p.b) != 0 {
		p.fail("%d trailing bytes", len(p.b))
	}
	return p.err
}

// decodeHeader decodes a header record. The smallest version takes 8 bytes
// of time, 1 of change length, 1 of schema length, so the versions slice
// grows with the bytes read, never with a stated count.
func decodeHeader(k tableKey, b []byte) (*header, error) {
	p := &parser{b: b}
	if v := p.fixed(1, "format"); v != nil && v[0] != recordV1 {
		p.fail("format %d", v[0])
	}
	name := p.bytes(maxName, "name")
	if p.err == nil && len(name) == 0 {
		p.fail("an empty name")
	}
	t := &Table{Name: string(name)}
	t.Created = p.time("created")
	t.HighWater = int32(p.uvarint(math.MaxInt32, "high water"))
	seq := p.uvarint(math.MaxInt64, "sequence")
	n := p.uvarint(maxVersions, "versions")
	if p.err == nil && (n == 0 || n > uint64(len(p.b)/10)) {
		p.fail("%d versions in %d bytes", n, len(p.b))
	}
	for i := uint64(0); p.err == nil && i < n; i++ {
		v := Version{ID: int(i) + 1}
		v.Created = p.time("version created")
		v.Change = string(p.bytes(maxChange, "change"))
		raw := p.bytes(len(p.b), "schema")
		if p.err != nil {
			break
		}
		s, err := decodeSchema(raw, t.HighWater)
		if err != nil {
			return nil, fmt.Errorf("table record, version %d: %w", v.ID, err)
		}
		v.Schema = s
		t.Versions = append(t.Versions, v)
	}
	if err := p.end(); err != nil {
		return nil, fmt.Errorf("table record: %w", err)
	}
	return &header{key: k, t: t, seq: seq}, nil
}

// encodeObject encodes an object record.
func encodeObject(o *object) []byte {
	b := []byte{recordV1}
	b = append(b, o.ID[:]...)
	b = append(b, o.table[:]...)
	b = binary.AppendUvarint(b, uint64(o.Version))
	b = binary.AppendUvarint(b, o.seq)
	b = binary.AppendUvarint(b, uint64(o.Rows))
	b = binary.AppendUvarint(b, uint64(o.UnpaddedSize))
	b = binary.AppendUvarint(b, uint64(o.Size))
	return appendTime(b, o.Appended)
}

// decodeObject decodes an object record.
func decodeObject(b []byte) (*object, error) {
	p := &parser{b: b}
	if v := p.fixed(1, "format"); v != nil && v[0] != recordV1 {
		p.fail("format %d", v[0])
	}
	o := &object{}
	copy(o.ID[:], p.fixed(storageid.Size, "storage_id"))
	copy(o.table[:], p.fixed(keySize, "table"))
	o.Version = int(p.uvarint(maxVersions, "version"))
	o.seq = p.uvarint(math.MaxInt64, "sequence")
	o.Rows = int64(p.uvarint(math.MaxInt64, "rows"))
	o.UnpaddedSize = int64(p.uvarint(math.MaxInt64, "unpadded size"))
	o.Size = int64(p.uvarint(math.MaxInt64, "size"))
	o.Appended = p.time("appended")
	if p.err == nil && (o.Version == 0 || o.UnpaddedSize > o.Size) {
		p.fail("version %d, unpadded size %d of %d", o.Version, o.UnpaddedSize, o.Size)
	}
	if err := p.end(); err != nil {
		return nil, fmt.Errorf("object record: %w", err)
	}
	return o, nil
}
