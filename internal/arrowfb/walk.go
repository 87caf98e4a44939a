// Package arrowfb walks Arrow IPC flatbuffers (Schema.fbs, Message.fbs,
// File.fbs) within bounds, for input that a hostile producer controls.
//
// arrow-go decodes IPC flatbuffers without verifying them and sizes some
// slices by the vector lengths they declare (the fields of a schema, the
// children of a field, key-value metadata): a length of 2^32 in a small
// input is an allocation the runtime cannot make, a fatal error that no
// recover catches. Fields can also refer to themselves. A Walker reads a
// flatbuffer so that every offset and vector stays inside the buffer,
// nesting is bounded (MaxDepth) and so are the tables visited; CheckMessage
// and CheckFooter run it over what arrow-go would read before arrow-go
// reads it (the import of Arrow IPC files and streams), and DecodeSchema
// decodes a schema on its own, never handing the bytes to arrow-go (the
// ARROW:schema entry of a SOP-PME-1 object's footer, SOP-PME-1 Section
// 11.10: a reader survives whatever plaintext a producer holding the DEK
// wrote).
//
// Every error matches ErrMalformed.
package arrowfb

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed is matched by every error of the package: the flatbuffer
// breaks a bound or refers outside itself.
var ErrMalformed = errors.New("malformed Arrow IPC flatbuffer")

// MaxDepth bounds the nesting of fields in an Arrow IPC schema.
const MaxDepth = 256

// A Walker reads the tables of one flatbuffer. It counts the fields it
// visits, and refuses more than the buffer can hold (one per 4 bytes), so
// that a flatbuffer whose fields refer to each other cannot make it loop.
type Walker struct {
	buf   []byte
	nodes int
}

// NewWalker returns a Walker over buf.
func NewWalker(buf []byte) *Walker { return &Walker{buf: buf} }

// U32 returns the little-endian uint32 at pos.
func (w *Walker) U32(pos int) (int, error) {
	if pos < 0 || pos > len(w.buf)-4 {
		return 0, fmt.Errorf("%w: offset %d out of the %d-byte flatbuffer", ErrMalformed, pos, len(w.buf))
	}
	return int(binary.LittleEndian.Uint32(w.buf[pos:])), nil
}

// Field returns the position of field slot of the table at tab, or 0 if it
// is absent.
func (w *Walker) Field(tab, slot int) (int, error) {
	so, err := w.U32(tab)
	if err != nil {
		return 0, err
	}
	vt := tab - int(int32(uint32(so)))
	if vt < 0 || vt > len(w.buf)-4 {
		return 0, fmt.Errorf("%w: vtable at %d out of the flatbuffer", ErrMalformed, vt)
	}
	vtLen := int(binary.LittleEndian.Uint16(w.buf[vt:]))
	at := vt + 4 + 2*slot
	if 4+2*slot+2 > vtLen {
		return 0, nil
	}
	if at > len(w.buf)-2 {
		return 0, fmt.Errorf("%w: vtable at %d out of the flatbuffer", ErrMalformed, vt)
	}
	off := int(binary.LittleEndian.Uint16(w.buf[at:]))
	if off == 0 {
		return 0, nil
	}
	return tab + off, nil
}

// Ref returns the position that the offset field slot of tab refers to, or
// 0 if it is absent.
func (w *Walker) Ref(tab, slot int) (int, error) {
	p, err := w.Field(tab, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	off, err := w.U32(p)
	if err != nil {
		return 0, err
	}
	return p + off, nil
}

// Vector returns the start and length of the vector in field slot of tab,
// whose elements are size bytes, after checking that they fit.
func (w *Walker) Vector(tab, slot, size int) (start, n int, err error) {
	v, err := w.Ref(tab, slot)
	if err != nil || v == 0 {
		return 0, 0, err
	}
	if n, err = w.U32(v); err != nil {
		return 0, 0, err
	}
	start = v + 4
	if n > (len(w.buf)-start)/size {
		return 0, 0, fmt.Errorf("%w: a vector declares %d elements, more than its %d-byte flatbuffer holds", ErrMalformed, n, len(w.buf))
	}
	return start, n, nil
}

// Elem returns the table that element i of a vector of offsets starting at
// start refers to.
func (w *Walker) Elem(start, i int) (int, error) {
	e := start + 4*i
	off, err := w.U32(e)
	if err != nil {
		return 0, err
	}
	return e + off, nil
}

// visit counts a field visited.
func (w *Walker) visit() error {
	if w.nodes++; w.nodes > len(w.buf)/4 {
		return fmt.Errorf("%w: more fields than its %d-byte flatbuffer holds", ErrMalformed, len(w.buf))
	}
	return nil
}

// schema checks the Schema table at tab (fields: slot 1; custom_metadata:
// slot 2; features: slot 3).
func (w *Walker) schema(tab int) error {
	if _, _, err := w.Vector(tab, 2, 4); err != nil {
		return err
	}
	if _, _, err := w.Vector(tab, 3, 8); err != nil {
		return err
	}
	return w.fields(tab, 1, 0)
}

// fields checks the vector of Field tables in slot of tab, and their
// children (slot 5) and custom_metadata (slot 6).
func (w *Walker) fields(tab, slot, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("%w: fields nested deeper than %d", ErrMalformed, MaxDepth)
	}
	start, n, err := w.Vector(tab, slot, 4)
	if err != nil {
		return err
	}
	for i := range n {
		if err := w.visit(); err != nil {
			return err
		}
		f, err := w.Elem(start, i)
		if err != nil {
			return err
		}
		if _, _, err := w.Vector(f, 6, 4); err != nil {
			return err
		}
		if err := w.fields(f, 5, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// Message header types (Message.fbs MessageHeader).
const headerSchema = 1

// CheckMessage checks an Arrow IPC message's flatbuffer, if it is a schema
// (Message: header_type slot 1; header slot 2; custom_metadata slot 4),
// for what arrow-go's decoder allocates.
func CheckMessage(buf []byte) error {
	w := NewWalker(buf)
	root, err := w.U32(0)
	if err != nil {
		return err
	}
	if _, _, err := w.Vector(root, 4, 4); err != nil { // custom_metadata
		return err
	}
	ht, err := w.Field(root, 1)
	if err != nil || ht == 0 || ht >= len(buf) || buf[ht] != headerSchema {
		return err
	}
	h, err := w.Ref(root, 2)
	if err != nil || h == 0 {
		return err
	}
	return w.schema(h)
}

// CheckFooter checks an Arrow IPC file's footer (Footer: schema slot 1;
// dictionaries slot 2 and recordBatches slot 3, vectors of 24-byte
// Blocks; custom_metadata slot 4), for what arrow-go's decoder allocates.
func CheckFooter(buf []byte) error {
	w := NewWalker(buf)
	root, err := w.U32(0)
	if err != nil {
		return err
	}
	for _, slot := range []int{2, 3} {
		if _, _, err := w.Vector(root, slot, 24); err != nil {
			return err
		}
	}
	if _, _, err := w.Vector(root, 4, 4); err != nil { // custom_metadata
		return err
	}
	s, err := w.Ref(root, 1)
	if err != nil || s == 0 {
		return err
	}
	return w.schema(s)
}

// BodyLength returns the bodyLength of an Arrow IPC message (slot 3, a
// long), 0 if absent.
func BodyLength(buf []byte) (int64, error) {
	w := NewWalker(buf)
	root, err := w.U32(0)
	if err != nil {
		return 0, err
	}
	p, err := w.Field(root, 3)
	if err != nil || p == 0 {
		return 0, err
	}
	if p > len(buf)-8 {
		return 0, fmt.Errorf("%w: body length out of the flatbuffer", ErrMalformed)
	}
	return int64(binary.LittleEndian.Uint64(buf[p:])), nil
}
