package formats

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// arrow-go decodes Arrow IPC flatbuffers without verifying them, and sizes
// some slices by the vector lengths they declare (the fields of a schema,
// the children of a field, key-value metadata): a length of 2^32 in a
// small input is an allocation the runtime cannot make, and a fatal error
// no recover catches. Fields can also refer to themselves. So before
// arrow-go sees a schema, checkSchemaFB walks it: every vector must fit in
// the buffer, nesting is bounded, and so is the number of fields visited.

// maxSchemaDepth bounds the nesting of fields in an Arrow IPC schema.
const maxSchemaDepth = 256

var errSchemaFB = errors.New("malformed Arrow IPC schema")

type fbWalk struct {
	buf   []byte
	nodes int // fields visited, bounded by what buf can hold
}

func (w *fbWalk) u32(pos int) (int, error) {
	if pos < 0 || pos > len(w.buf)-4 {
		return 0, fmt.Errorf("%w: offset %d out of the %d-byte flatbuffer", errSchemaFB, pos, len(w.buf))
	}
	return int(binary.LittleEndian.Uint32(w.buf[pos:])), nil
}

// field returns the position of field slot of the table at tab, or 0 if it
// is absent.
func (w *fbWalk) field(tab, slot int) (int, error) {
	so, err := w.u32(tab)
	if err != nil {
		return 0, err
	}
	vt := tab - int(int32(uint32(so)))
	if vt < 0 || vt > len(w.buf)-4 {
		return 0, fmt.Errorf("%w: vtable at %d out of the flatbuffer", errSchemaFB, vt)
	}
	vtLen := int(binary.LittleEndian.Uint16(w.buf[vt:]))
	at := vt + 4 + 2*slot
	if 4+2*slot+2 > vtLen {
		return 0, nil
	}
	if at > len(w.buf)-2 {
		return 0, fmt.Errorf("%w: vtable at %d out of the flatbuffer", errSchemaFB, vt)
	}
	off := int(binary.LittleEndian.Uint16(w.buf[at:]))
	if off == 0 {
		return 0, nil
	}
	return tab + off, nil
}

// ref returns the position that the offset field slot of tab refers to, or
// 0 if it is absent.
func (w *fbWalk) ref(tab, slot int) (int, error) {
	p, err := w.field(tab, slot)
	if err != nil || p == 0 {
		return 0, err
	}
	off, err := w.u32(p)
	if err != nil {
		return 0, err
	}
	return p + off, nil
}

// vector returns the start and length of the vector in field slot of tab,
// whose elements are size bytes, after checking that they fit.
func (w *fbWalk) vector(tab, slot, size int) (start, n int, err error) {
	v, err := w.ref(tab, slot)
	if err != nil || v == 0 {
		return 0, 0, err
	}
	if n, err = w.u32(v); err != nil {
		return 0, 0, err
	}
	start = v + 4
	if n > (len(w.buf)-start)/size {
		return 0, 0, fmt.Errorf("%w: a vector declares %d elements, more than its %d-byte flatbuffer holds", errSchemaFB, n, len(w.buf))
	}
	return start, n, nil
}

// schema checks the Schema table at tab (fields: slot 1; custom_metadata:
// slot 2; features: slot 3).
func (w *fbWalk) schema(tab int) error {
	if _, _, err := w.vector(tab, 2, 4); err != nil {
		return err
	}
	if _, _, err := w.vector(tab, 3, 8); err != nil {
		return err
	}
	return w.fields(tab, 1, 0)
}

// fields checks the vector of Field tables in slot of tab, and their
// children (slot 5) and custom_metadata (slot 6).
func (w *fbWalk) fields(tab, slot, depth int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("%w: fields nested deeper than %d", errSchemaFB, maxSchemaDepth)
	}
	start, n, err := w.vector(tab, slot, 4)
	if err != nil {
		return err
	}
	for i := range n {
		if w.nodes++; w.nodes > len(w.buf)/4 {
			return fmt.Errorf("%w: more fields than its %d-byte flatbuffer holds", errSchemaFB, len(w.buf))
		}
		e := start + 4*i
		off, err := w.u32(e)
		if err != nil {
			return err
		}
		f := e + off
		if _, _, err := w.vector(f, 6, 4); err != nil {
			return err
		}
		if err := w.fields(f, 5, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// checkMessageFB checks an Arrow IPC message's flatbuffer, if it is a
// schema (Message: header_type slot 1, 1 for Schema; header slot 2).
func checkMessageFB(buf []byte) error {
	w := &fbWalk{buf: buf}
	root, err := w.u32(0)
	if err != nil {
		return err
	}
	if _, _, err := w.vector(root, 4, 4); err != nil { // custom_metadata
		return err
	}
	ht, err := w.field(root, 1)
	if err != nil || ht == 0 || ht >= len(buf) || buf[ht] != 1 {
		return err
	}
	h, err := w.ref(root, 2)
	if err != nil || h == 0 {
		return err
	}
	return w.schema(h)
}

// checkFooterFB checks an Arrow IPC file's footer (Footer: schema slot 1;
// dictionaries slot 2 and recordBatches slot 3, vectors of 24-byte
// Blocks).
func checkFooterFB(buf []byte) error {
	w := &fbWalk{buf: buf}
	root, err := w.u32(0)
	if err != nil {
		return err
	}
	for _, slot := range []int{2, 3} {
		if _, _, err := w.vector(root, slot, 24); err != nil {
			return err
		}
	}
	if _, _, err := w.vector(root, 4, 4); err != nil { // custom_metadata
		return err
	}
	s, err := w.ref(root, 1)
	if err != nil || s == 0 {
		return err
	}
	return w.schema(s)
}

// checkArrowFile checks the footer of the Arrow IPC file ra, of size
// bytes, and the messages of its dictionary blocks, and returns the record
// batch blocks, to check each before it is read. A footer that cannot be
// found is left to arrow-go to refuse.
func checkArrowFile(ra io.ReaderAt, size int64) ([][2]int64, error) {
	footer, err := arrowFooter(ra, size)
	if err != nil || footer == nil {
		return nil, err
	}
	if err := checkFooterFB(footer); err != nil {
		return nil, err
	}
	dicts, batches := footerBlocks(footer)
	for _, b := range dicts {
		if err := checkArrowBlock(ra, size, b[0], int32(b[1])); err != nil {
			return nil, err
		}
	}
	return batches, nil
}

func arrowFooter(ra io.ReaderAt, size int64) ([]byte, error) {
	const magic = "ARROW1"
	if size < 2*int64(len(magic))+4 {
		return nil, nil
	}
	var tail [10]byte
	if _, err := ra.ReadAt(tail[:], size-10); err != nil {
		return nil, err
	}
	if string(tail[4:]) != magic {
		return nil, nil
	}
	n := int64(int32(binary.LittleEndian.Uint32(tail[:4])))
	if n <= 0 || n > size-10 {
		return nil, nil
	}
	buf := make([]byte, n) // no more than the file holds
	if _, err := ra.ReadAt(buf, size-10-n); err != nil {
		return nil, err
	}
	return buf, nil
}

// streamMessages reads the messages of an Arrow IPC stream for arrow-go's
// reader, as its own message reader does, but checks each message's
// flatbuffer first, and reads a body as far as the input goes rather than
// allocating the length it declares.
type streamMessages struct {
	r                    io.Reader
	metaLimit, bodyLimit int64 // of a message's metadata, and of its body
	msg                  *ipc.Message
	refs                 atomic.Int64
}

// newStreamMessages reads the messages of r. A body is read as far as r
// goes, never allocated as declared, so bodyLimit may be as large as an
// input can be.
func newStreamMessages(r io.Reader, metaLimit, bodyLimit int64) *streamMessages {
	m := &streamMessages{r: r, metaLimit: metaLimit, bodyLimit: bodyLimit}
	m.refs.Add(1)
	return m
}

func (m *streamMessages) Retain() { m.refs.Add(1) }
func (m *streamMessages) Release() {
	if m.refs.Add(-1) == 0 && m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
}

// readPart reads n bytes, as far as r goes.
func readPart(r io.Reader, n int64, what string) ([]byte, error) {
	var b bytes.Buffer
	if _, err := io.CopyN(&b, r, n); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("arrow/ipc: could not read message %s: %w", what, err)
	}
	return b.Bytes(), nil
}

func (m *streamMessages) Message() (*ipc.Message, error) {
	if m.msg != nil {
		m.msg.Release()
		m.msg = nil
	}
	var word [4]byte
	if _, err := io.ReadFull(m.r, word[:]); err != nil {
		if err == io.EOF {
			return nil, io.EOF // a stream may end without its end marker
		}
		return nil, fmt.Errorf("arrow/ipc: could not read continuation indicator: %w", err)
	}
	n := int64(int32(binary.LittleEndian.Uint32(word[:])))
	if n == -1 { // continuation marker, then the length
		if _, err := io.ReadFull(m.r, word[:]); err != nil {
			return nil, fmt.Errorf("arrow/ipc: could not read message length: %w", err)
		}
		n = int64(int32(binary.LittleEndian.Uint32(word[:])))
	}
	switch {
	case n == 0:
		return nil, io.EOF
	case n < 4 || n > m.metaLimit:
		return nil, fmt.Errorf("arrow/ipc: invalid message metadata length %d", n)
	}
	meta, err := readPart(m.r, n, "metadata")
	if err != nil {
		return nil, err
	}
	if err := checkMessageFB(meta); err != nil {
		return nil, err
	}
	w := &fbWalk{buf: meta}
	root, _ := w.u32(0)
	bodyLen := int64(0)
	if p, err := w.field(root, 3); err != nil {
		return nil, err
	} else if p != 0 {
		if p > len(meta)-8 {
			return nil, fmt.Errorf("%w: body length out of the flatbuffer", errSchemaFB)
		}
		bodyLen = int64(binary.LittleEndian.Uint64(meta[p:]))
	}
	if bodyLen < 0 || bodyLen > m.bodyLimit {
		return nil, fmt.Errorf("arrow/ipc: invalid message body length %d", bodyLen)
	}
	body, err := readPart(m.r, bodyLen, "body")
	if err != nil {
		return nil, err
	}
	mb, bb := memory.NewBufferBytes(meta), memory.NewBufferBytes(body)
	m.msg = ipc.NewMessage(mb, bb)
	mb.Release()
	bb.Release()
	return m.msg, nil
}

// checkArrowBlock checks the message of an Arrow IPC file block, at offset
// with metaLen bytes of metadata, in ra of size bytes. A block that is not
// in the file is left to arrow-go to refuse.
func checkArrowBlock(ra io.ReaderAt, size, offset int64, metaLen int32) error {
	if offset < 0 || metaLen < 8 || int64(metaLen) > size || offset > size-int64(metaLen) {
		return nil
	}
	buf := make([]byte, metaLen) // no more than the file holds
	if _, err := ra.ReadAt(buf, offset); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(buf) == 0xffffffff {
		buf = buf[8:]
	} else {
		buf = buf[4:]
	}
	return checkMessageFB(buf)
}

// footerBlocks returns the blocks (offset, metadata length) in footer, the
// footer of an Arrow IPC file, dictionaries first; checkFooterFB has
// checked it.
func footerBlocks(footer []byte) (dicts, batches [][2]int64) {
	w := &fbWalk{buf: footer}
	root, _ := w.u32(0)
	get := func(slot int) [][2]int64 {
		start, n, err := w.vector(root, slot, 24)
		if err != nil {
			return nil
		}
		out := make([][2]int64, n) // n fits in the footer
		for i := range out {
			b := footer[start+24*i:]
			out[i] = [2]int64{int64(binary.LittleEndian.Uint64(b)), int64(int32(binary.LittleEndian.Uint32(b[8:])))}
		}
		return out
	}
	return get(2), get(3)
}
