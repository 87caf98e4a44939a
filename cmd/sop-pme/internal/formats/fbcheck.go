package formats

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/internal/arrowfb"
)

// arrow-go decodes Arrow IPC flatbuffers without verifying them (see
// package internal/arrowfb): every flatbuffer it reads from an input is
// checked by arrowfb first.

// checkArrowFile checks the footer of the Arrow IPC file ra, of size
// bytes, and the messages of its dictionary blocks, and returns the record
// batch blocks, to check each before it is read. A footer that cannot be
// found is left to arrow-go to refuse.
func checkArrowFile(ra io.ReaderAt, size int64) ([][2]int64, error) {
	footer, err := arrowFooter(ra, size)
	if err != nil || footer == nil {
		return nil, err
	}
	if err := arrowfb.CheckFooter(footer); err != nil {
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
	if err := arrowfb.CheckMessage(meta); err != nil {
		return nil, err
	}
	bodyLen, err := arrowfb.BodyLength(meta)
	if err != nil {
		return nil, err
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
	return arrowfb.CheckMessage(buf)
}

// footerBlocks returns the blocks (offset, metadata length) in footer, the
// footer of an Arrow IPC file, dictionaries first; checkFooterFB has
// checked it.
func footerBlocks(footer []byte) (dicts, batches [][2]int64) {
	w := arrowfb.NewWalker(footer)
	root, _ := w.U32(0)
	get := func(slot int) [][2]int64 {
		start, n, err := w.Vector(root, slot, 24)
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
