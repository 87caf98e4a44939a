package flatdec

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
)

// A Decoder reads the values of one column chunk, in order, as arrays of
// the lengths asked for. It is not safe for concurrent use.
//
// Its memory: the arrays' buffers and the chunk's dictionary come from
// the allocator given to New (and go back to it when released); a scratch
// buffer of one decompressed page (at most limit bytes) and two of one
// batch's levels and indices come from the Go heap.
type Decoder struct {
	c     Column
	mem   memory.Allocator
	limit int
	w     int  // the byte width of a fixed-width value, or 0
	wide  bool // values read as decimal128 (16 bytes each): INT32, INT64 or FIXED_LEN_BYTE_ARRAY
	be    bool // FIXED_LEN_BYTE_ARRAY: big-endian values of w bytes
	dict  bool // the arrays are dictionary arrays
	bools bool // BOOLEAN: values one bit each (arrow's and PLAIN's)

	bytesPer int64 // BYTE_ARRAY: the bytes a value of the last batch took, rounded up

	pages []page // the pages not yet read
	left  int64  // the values not yet read
	seen  bool   // a data page was read

	// The chunk's dictionary, once its page is read.
	hasDict   bool
	dictN     int
	dictFixed []byte         // fixed-width values (in dictBuf, or the chunk)
	dictBuf   pageBuffer     // the dictionary page decompressed
	dictVals  *memory.Buffer // BYTE_ARRAY data
	dictOffs  *memory.Buffer // BYTE_ARRAY: dictN+1 int32 offsets into dictVals
	dictArr   arrow.ArrayData

	// The current data page.
	pageLeft int        // its values not yet read
	defs     hybrid     // its definition levels (MaxDef 1)
	enc      int32      // its values' encoding
	vals     []byte     // PLAIN: the values not yet read
	bitOff   int        // PLAIN booleans: the bit of vals[0] to read next
	idx      hybrid     // dictionary-encoded: the indices
	pageBuf  pageBuffer // decompressed pages
	levels   []uint32
	indices  []uint32

	// Skip's buffers for a batch's validity bitmap and values (or
	// offsets), in place of an array's.
	skipBits, skipVals []byte
}

// New returns a Decoder of chunk, the plaintext of a chunk of column c,
// having read its page headers: its error is Check's. Its arrays' buffers
// come from mem; limit bounds, in bytes, a page's decompressed size and
// dictionary.
func New(c Column, chunk []byte, mem memory.Allocator, limit int) (*Decoder, error) {
	ps, err := pages(c, chunk)
	if err != nil {
		return nil, err
	}
	return &Decoder{c: c, mem: mem, limit: limit, w: width(c), wide: c.Type.ID() == arrow.DECIMAL128, be: c.Physical == parquet.Types.FixedLenByteArray,
		dict: dictOut(c), bools: c.Physical == parquet.Types.Boolean, pages: ps, left: c.Values}, nil
}

// Left returns the values not yet read.
func (d *Decoder) Left() int64 { return d.left }

// Release frees the dictionary (which the dictionary arrays Read returned
// hold until they are released themselves). The arrays Read returned stay
// valid.
func (d *Decoder) Release() {
	if d.dictArr != nil {
		d.dictArr.Release()
		d.dictArr = nil
	}
	for _, b := range []**memory.Buffer{&d.dictVals, &d.dictOffs} {
		if *b != nil {
			(*b).Release()
			*b = nil
		}
	}
	d.pages = nil
	d.pageBuf.release()
	d.dictBuf.release()
	d.dictFixed, d.levels, d.indices = nil, nil, nil
	d.skipBits, d.skipVals = nil, nil
}

// UnclearedAllocator is an allocator that can hand out a buffer without
// clearing it first (a reused one holds what it held): the decoder
// overwrites every byte of the buffers it asks it for, up to the size it
// asked.
type UnclearedAllocator interface {
	memory.Allocator
	// AllocateUncleared returns a buffer of at least n bytes, of any
	// contents, which Free takes back whole.
	AllocateUncleared(n int) []byte
}

// buffer returns a buffer of n bytes from the allocator, whose bytes the
// caller overwrites, every one.
func (d *Decoder) buffer(n int) *memory.Buffer {
	if u, ok := d.mem.(UnclearedAllocator); ok {
		raw := u.AllocateUncleared(n)
		if len(raw) >= n {
			b := memory.NewBufferWithAllocator(raw, d.mem)
			b.ResizeNoShrink(n) // its length; Release frees raw whole
			return b
		}
		d.mem.Free(raw)
	}
	b := memory.NewResizableBuffer(d.mem)
	b.Resize(n)
	return b
}

// output is an array being read.
type output struct {
	n      int
	valid  *memory.Buffer // nil for a column without nulls
	bitmap []byte
	nulls  int
	values *memory.Buffer // fixed-width values, indices, or offsets
	vb     []byte
	data   *memory.Buffer // BYTE_ARRAY bytes
	dlen   int
	skip   bool // Skip's: no data buffer, dlen counts the bytes, and what cannot fail (spread, widen) is not done
}

func (o *output) release() {
	for _, b := range []*memory.Buffer{o.valid, o.values, o.data} {
		if b != nil {
			b.Release()
		}
	}
}

// Read returns the next n values (n > 0) as an array of the column's type,
// which the caller releases.
func (d *Decoder) Read(n int) (arr arrow.ArrayData, err error) {
	if n <= 0 || int64(n) > d.left {
		return nil, fmt.Errorf("%w: %d values asked, %d left in the chunk", ErrFormat, n, d.left)
	}
	var o output
	// o's buffers go back unless finish hands them to the array: on an
	// error, and on a panic of the allocator too (a scan's budget panics
	// when it is over its limit or told to yield; reader recovers it).
	handed := false
	defer func() {
		if !handed {
			o.release()
		}
	}()
	o.n = n
	if d.c.MaxDef > 0 {
		o.valid = d.buffer((n + 7) / 8)
		o.bitmap = o.valid.Bytes()
		clear(o.bitmap)
	}
	switch {
	case d.bools:
		o.values = d.buffer((n + 7) / 8)
		clear(o.values.Bytes()) // bits are set, not written
	case d.dict:
		o.values = d.buffer(4 * n)
	case d.wide:
		o.values = d.buffer(16 * n)
	case d.w > 0:
		o.values = d.buffer(d.w * n)
	default:
		o.values = d.buffer(4 * (n + 1))
		o.data = memory.NewResizableBuffer(d.mem)
		// Room for what the last batch took a value, and an eighth more,
		// so that a batch's strings are one buffer, not a buffer grown
		// (and left in the scan's pool) once a doubling.
		if d.bytesPer > 0 {
			want := min(d.bytesPer*int64(n)+d.bytesPer*int64(n)/8, math.MaxInt32)
			o.data.Reserve(int(want))
		}
	}
	o.vb = o.values.Bytes()
	if err := d.fill(&o); err != nil {
		return nil, err
	}
	handed = true
	return d.finish(&o)
}

// Skip reads the next n values (n > 0) as Read does, every page decoded
// and every check made, and fails exactly where Read would, but makes no
// array of them: a batch's bitmap and values go to buffers the decoder
// keeps for the next batch, and a string's bytes are not copied. It
// returns the bytes Read's array of those values would hold (its
// buffers, the strings' bytes counted as they would be copied), for the
// caller to hold to the limit Read's allocator would (a validity bitmap
// counted even where Read's array, having no null, would have none):
// package writer checks so that the reader will decode a chunk.
func (d *Decoder) Skip(n int) (int64, error) {
	if n <= 0 || int64(n) > d.left {
		return 0, fmt.Errorf("%w: %d values asked, %d left in the chunk", ErrFormat, n, d.left)
	}
	o := output{n: n, skip: true}
	var bytes int64
	if d.c.MaxDef > 0 {
		o.bitmap = scratchBytes(&d.skipBits, (n+7)/8)
		clear(o.bitmap)
		bytes += int64(len(o.bitmap))
	}
	switch {
	case d.bools:
		o.vb = scratchBytes(&d.skipVals, (n+7)/8)
		clear(o.vb)
	case d.dict:
		o.vb = scratchBytes(&d.skipVals, 4*n)
	case d.wide:
		o.vb = scratchBytes(&d.skipVals, 16*n)
	case d.w > 0:
		o.vb = scratchBytes(&d.skipVals, d.w*n)
	default:
		o.vb = scratchBytes(&d.skipVals, 4*(n+1))
	}
	bytes += int64(len(o.vb))
	if err := d.fill(&o); err != nil {
		return 0, err
	}
	return bytes + int64(o.dlen), nil
}

// scratchBytes returns s with length n, grown if need be (n is at most a
// batch's values).
func scratchBytes(s *[]byte, n int) []byte {
	if cap(*s) < n {
		*s = make([]byte, n)
	}
	return (*s)[:n]
}

// fill reads the next o.n values into o.
func (d *Decoder) fill(o *output) error {
	n := o.n
	if d.w == 0 && !d.dict && !d.bools {
		binary.LittleEndian.PutUint32(o.vb, 0)
	}
	for at := 0; at < n; {
		if d.pageLeft == 0 {
			if err := d.nextPage(); err != nil {
				return err
			}
			continue
		}
		k := min(n-at, d.pageLeft)
		if err := d.run(o, at, k); err != nil {
			return err
		}
		at += k
		d.pageLeft -= k
		d.left -= int64(k)
	}
	return nil
}

// finish makes the array of o.
func (d *Decoder) finish(o *output) (arrow.ArrayData, error) {
	if o.valid != nil && o.nulls == 0 {
		o.valid.Release()
		o.valid = nil
	}
	var out arrow.ArrayData
	switch {
	case d.bools:
		out = array.NewData(d.c.Type, o.n, []*memory.Buffer{o.valid, o.values}, nil, o.nulls, 0)
	case d.dict:
		out = array.NewDataWithDictionary(d.c.Type, o.n, []*memory.Buffer{o.valid, o.values}, o.nulls, 0, d.dictArr.(*array.Data))
	case d.w > 0:
		out = array.NewData(d.c.Type, o.n, []*memory.Buffer{o.valid, o.values}, nil, o.nulls, 0)
	default:
		o.data.ResizeNoShrink(o.dlen)
		d.bytesPer = (int64(o.dlen) + int64(o.n) - 1) / int64(o.n)
		out = array.NewData(d.c.Type, o.n, []*memory.Buffer{o.valid, o.values, o.data}, nil, o.nulls, 0)
	}
	o.release() // the array holds them
	return out, nil
}

// scratch returns s with length n, grown if need be (n is at most a batch).
func scratch(s *[]uint32, n int) []uint32 {
	if cap(*s) < n {
		*s = make([]uint32, n)
	}
	return (*s)[:n]
}

// run reads the next k values, of the current page, into o at at.
func (d *Decoder) run(o *output, at, k int) error {
	m := k // the values present
	var levels []uint32
	if d.c.MaxDef > 0 {
		if d.defs.ones(k) {
			bitutil.SetBitsTo(o.bitmap, int64(at), int64(k), true)
		} else {
			levels = scratch(&d.levels, k)
			if err := d.defs.read(levels); err != nil {
				return err
			}
			m = 0
			for i, l := range levels {
				if l > 1 {
					return fmt.Errorf("%w: definition level %d above 1", ErrFormat, l)
				}
				j := at + i
				o.bitmap[j>>3] |= byte(l) << (j & 7)
				m += int(l)
			}
			o.nulls += k - m
			if m == k {
				levels = nil
			}
		}
	}
	switch {
	case d.bools:
		return d.booleans(o, at, k, m, levels)
	case d.dict:
		dst := u32(o.vb[4*at : 4*(at+k)])
		if err := d.indicesInto(dst[:m]); err != nil {
			return err
		}
		if levels != nil && !o.skip {
			spread(dst, m, levels)
		}
	case d.wide:
		// The stored values at the start of the batch's slots, then
		// widened in place (widen).
		dst := o.vb[16*at : 16*(at+k)]
		if err := d.fixed(dst[:d.w*m], m); err != nil {
			return err
		}
		switch { // widen cannot fail: Skip has nothing to check
		case o.skip:
		case d.be:
			widenBE(dst, d.w, m, levels)
		default:
			widen(dst, d.w, m, levels)
		}
	case d.w == 4:
		dst := o.vb[4*at : 4*(at+k)]
		if err := d.fixed(dst[:4*m], m); err != nil {
			return err
		}
		if levels != nil && !o.skip {
			spread(u32(dst), m, levels)
		}
	case d.w == 8:
		dst := o.vb[8*at : 8*(at+k)]
		if err := d.fixed(dst[:8*m], m); err != nil {
			return err
		}
		if levels != nil && !o.skip {
			spread(u64(dst), m, levels)
		}
	default:
		return d.byteArrays(o, at, k, m, levels)
	}
	return nil
}

// booleans reads k BOOLEAN values, m of them present (levels tells which,
// or all if nil), into o's bitmap at at (cleared by Read).
func (d *Decoder) booleans(o *output, at, k, m int, levels []uint32) error {
	vals := scratch(&d.indices, m)
	if d.enc == encPlain {
		// Bit-packed, the first value in the lowest bit of each byte.
		if end := d.bitOff + m; end > 8*len(d.vals) {
			return fmt.Errorf("%w: %d plain booleans past the page's end", ErrFormat, m)
		}
		for i := range vals {
			vals[i] = uint32(d.vals[d.bitOff>>3]>>(d.bitOff&7)) & 1
			d.bitOff++
		}
		d.vals, d.bitOff = d.vals[d.bitOff>>3:], d.bitOff&7
	} else {
		if err := d.idx.read(vals); err != nil {
			return err
		}
		for _, v := range vals {
			if v > 1 {
				return fmt.Errorf("%w: a boolean of value %d", ErrFormat, v)
			}
		}
	}
	bits, j := o.vb, 0
	for i := range k {
		if levels == nil || levels[i] != 0 {
			p := at + i
			bits[p>>3] |= byte(vals[j]) << (p & 7)
			j++
		}
	}
	return nil
}

// spread moves the m values at the start of dst to the slots whose level
// is 1, zeroing the others: backwards, so that no value is overwritten
// before it moves.
func spread[T uint32 | uint64](dst []T, m int, levels []uint32) {
	j := m - 1
	for i := len(levels) - 1; i >= 0; i-- {
		if levels[i] != 0 && j >= 0 {
			dst[i] = dst[j]
			j--
		} else {
			dst[i] = 0
		}
	}
}

// widen makes the m INT32 or INT64 values (of width w) at the start of
// dst decimal128 values (16 bytes each, the low 64 bits first, as Arrow
// stores them), sign-extended, in the slots whose level is 1 (every slot if
// levels is nil), zeroing the others. It goes backwards: slot i's bytes
// start at 16i, past the values j < i still to be moved, which end by w·i.
func widen(dst []byte, w, m int, levels []uint32) {
	k := len(dst) / 16
	j := m - 1
	for i := k - 1; i >= 0; i-- {
		var v int64
		if levels == nil || levels[i] != 0 {
			if j < 0 {
				break // cannot happen: m counts the levels of 1
			}
			if w == 4 {
				v = int64(int32(binary.LittleEndian.Uint32(dst[4*j:])))
			} else {
				v = int64(binary.LittleEndian.Uint64(dst[8*j:]))
			}
			j--
		}
		binary.LittleEndian.PutUint64(dst[16*i:], uint64(v))
		binary.LittleEndian.PutUint64(dst[16*i+8:], uint64(v>>63))
	}
}

// widenBE is widen for FIXED_LEN_BYTE_ARRAY decimals of w bytes (1 to
// 16), big-endian two's complement: each becomes a decimal128, the low 64
// bits first, sign-extended. Backwards, as widen: slot i's bytes start at
// 16i, past the values j < i still to be moved, which end by w·i.
func widenBE(dst []byte, w, m int, levels []uint32) {
	k := len(dst) / 16
	j := m - 1
	var be [16]byte
	for i := k - 1; i >= 0; i-- {
		var lo, hi uint64
		if levels == nil || levels[i] != 0 {
			if j < 0 {
				break // cannot happen: m counts the levels of 1
			}
			fill := byte(0)
			if dst[w*j]&0x80 != 0 {
				fill = 0xff
			}
			for b := range 16 - w {
				be[b] = fill
			}
			copy(be[16-w:], dst[w*j:w*j+w])
			hi, lo = binary.BigEndian.Uint64(be[:8]), binary.BigEndian.Uint64(be[8:])
			j--
		}
		binary.LittleEndian.PutUint64(dst[16*i:], lo)
		binary.LittleEndian.PutUint64(dst[16*i+8:], hi)
	}
}

// u32 and u64 view a buffer of little-endian values as native ones (the
// platforms arrow-go runs on are little-endian).
func u32(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

func u64(b []byte) []uint64 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

// indicesInto reads len(dst) dictionary indices into dst, each checked
// against the dictionary.
func (d *Decoder) indicesInto(dst []uint32) error {
	if err := d.idx.read(dst); err != nil {
		return err
	}
	n := uint32(d.dictN)
	for _, v := range dst {
		if v >= n {
			return fmt.Errorf("%w: dictionary index %d of %d", ErrFormat, v, n)
		}
	}
	return nil
}

// fixed reads m fixed-width values into dst (m × the width bytes).
func (d *Decoder) fixed(dst []byte, m int) error {
	if m == 0 {
		return nil
	}
	if d.enc == encPlain {
		if len(d.vals) < len(dst) {
			return fmt.Errorf("%w: %d plain values past the page's end", ErrFormat, m)
		}
		copy(dst, d.vals)
		d.vals = d.vals[len(dst):]
		return nil
	}
	// The indices a few hundred at a time, so that they stay in the
	// first-level cache between their decoding and the gather.
	var buf [gatherRun]uint32
	switch d.w {
	case 4:
		return gather(u32(dst), u32(d.dictFixed), &d.idx, buf[:])
	case 8:
		return gather(u64(dst), u64(d.dictFixed), &d.idx, buf[:])
	}
	return gatherBytes(dst, d.dictFixed, d.w, &d.idx, buf[:])
}

// gatherRun is how many indices gather decodes at a time.
const gatherRun = 512

// gather fills out with the dictionary values of its indices, read from
// h, using buf for them.
func gather[T uint32 | uint64](out, dict []T, h *hybrid, buf []uint32) error {
	for len(out) > 0 {
		idx := buf[:min(len(buf), len(out))]
		if err := h.read(idx); err != nil {
			return err
		}
		o := out[:len(idx)]
		for i, v := range idx {
			if v >= uint32(len(dict)) {
				return fmt.Errorf("%w: dictionary index %d of %d", ErrFormat, v, len(dict))
			}
			o[i] = dict[v]
		}
		out = out[len(idx):]
	}
	return nil
}

// gatherBytes is gather for values of w bytes (FIXED_LEN_BYTE_ARRAY).
func gatherBytes(out, dict []byte, w int, h *hybrid, buf []uint32) error {
	n := uint32(len(dict) / w)
	for len(out) > 0 {
		idx := buf[:min(len(buf), len(out)/w)]
		if err := h.read(idx); err != nil {
			return err
		}
		for i, v := range idx {
			if v >= n {
				return fmt.Errorf("%w: dictionary index %d of %d", ErrFormat, v, n)
			}
			copy(out[i*w:(i+1)*w], dict[int(v)*w:])
		}
		out = out[len(idx)*w:]
	}
	return nil
}

// grow makes room for n more bytes of BYTE_ARRAY data in o.
func (d *Decoder) grow(o *output, n int) error {
	need := o.dlen + n
	if need > math.MaxInt32 {
		return fmt.Errorf("%w: a batch of more than 2 GiB of strings", ErrMemoryLimit)
	}
	if o.skip {
		return nil
	}
	if need > o.data.Cap() {
		o.data.Reserve(min(max(need, 2*o.data.Cap(), 4096), math.MaxInt32))
	}
	return nil
}

// byteArrays reads k BYTE_ARRAY values, m of them present (levels tells
// which, or all if nil), into o at at.
func (d *Decoder) byteArrays(o *output, at, k, m int, levels []uint32) error {
	offs := u32(o.vb[4*at : 4*(at+k+1)])
	if d.enc == encPlain {
		// First the lengths, checked against the page, then the bytes.
		total, b := 0, d.vals
		for range m {
			if len(b) < 4 {
				return fmt.Errorf("%w: a plain BYTE_ARRAY value past the page's end", ErrFormat)
			}
			l := binary.LittleEndian.Uint32(b)
			if uint64(l) > uint64(len(b)-4) {
				return fmt.Errorf("%w: a plain BYTE_ARRAY value of %d bytes past the page's end", ErrFormat, l)
			}
			total += int(l)
			b = b[4+int(l):]
		}
		if err := d.grow(o, total); err != nil {
			return err
		}
		if o.skip {
			d.vals, o.dlen = b, o.dlen+total
			return nil
		}
		data, pos, b := o.data.Buf(), o.dlen, d.vals
		for i := range k {
			if levels == nil || levels[i] != 0 {
				l := int(binary.LittleEndian.Uint32(b))
				copy(data[pos:], b[4:4+l])
				pos += l
				b = b[4+l:]
			}
			offs[i+1] = uint32(pos)
		}
		d.vals, o.dlen = b, pos
		return nil
	}
	idx := scratch(&d.indices, m)
	if err := d.indicesInto(idx); err != nil {
		return err
	}
	doffs := u32(d.dictOffs.Bytes()[:4*(d.dictN+1)])
	total := 0
	for _, v := range idx {
		total += int(doffs[v+1] - doffs[v])
	}
	if err := d.grow(o, total); err != nil {
		return err
	}
	if o.skip {
		o.dlen += total
		return nil
	}
	data, dict, pos, j := o.data.Buf(), d.dictVals.Bytes(), o.dlen, 0
	for i := range k {
		if levels == nil || levels[i] != 0 {
			v := idx[j]
			j++
			pos += copy(data[pos:], dict[doffs[v]:doffs[v+1]])
		}
		offs[i+1] = uint32(pos)
	}
	o.dlen = pos
	return nil
}

// nextPage reads the next page: the dictionary, or a data page whose
// values become the current page's.
func (d *Decoder) nextPage() error {
	if len(d.pages) == 0 {
		return fmt.Errorf("%w: the pages end %d values short of the chunk's", ErrFormat, d.left)
	}
	p := d.pages[0]
	d.pages = d.pages[1:]
	switch p.typ {
	case pageDictionary:
		if d.seen || d.hasDict {
			return fmt.Errorf("%w: a dictionary page that is not the chunk's first", ErrFormat)
		}
		return d.readDictionary(p)
	case pageData, pageDataV2:
		d.seen = true
		if err := checkData(d.c, p, d.hasDict); err != nil {
			return err
		}
		if int64(p.numValues) > d.left {
			return fmt.Errorf("%w: a page of %d values, %d left in the chunk", ErrFormat, p.numValues, d.left)
		}
		return d.dataPage(p)
	}
	return fmt.Errorf("%w: page type %d", ErrUnsupported, p.typ)
}

// dataPage makes data page p the current page.
func (d *Decoder) dataPage(p page) error {
	var b []byte
	var err error
	levels := []byte(nil)
	if p.typ == pageData {
		if b, err = decompress(d.c.Codec, p.body, p.usize, d.limit, &d.pageBuf); err != nil {
			return err
		}
		if d.c.MaxDef > 0 {
			if len(b) < 4 {
				return fmt.Errorf("%w: definition levels past the page's end", ErrFormat)
			}
			l := binary.LittleEndian.Uint32(b)
			if uint64(l) > uint64(len(b)-4) {
				return fmt.Errorf("%w: definition levels of %d bytes past the page's end", ErrFormat, l)
			}
			levels, b = b[4:4+l], b[4+l:]
		}
	} else {
		levels = p.body[p.repLen : p.repLen+p.defLen]
		b = p.body[p.repLen+p.defLen:]
		if p.compressed {
			if b, err = decompress(d.c.Codec, b, p.usize-p.defLen-p.repLen, d.limit, &d.pageBuf); err != nil {
				return err
			}
		} else if len(b) != p.usize-p.defLen-p.repLen {
			return fmt.Errorf("%w: an uncompressed V2 page of %d bytes claims %d", ErrFormat, len(b), p.usize-p.defLen-p.repLen)
		}
	}
	d.defs.init(levels, 1)
	d.enc = p.encoding
	switch {
	case p.encoding == encPlain:
		d.vals, d.bitOff = b, 0
	case p.encoding == encRLE:
		// Boolean values, RLE: a 4-byte length, then the hybrid
		// encoding of bit width 1.
		if len(b) < 4 {
			return fmt.Errorf("%w: RLE values past the page's end", ErrFormat)
		}
		l := binary.LittleEndian.Uint32(b)
		if uint64(l) > uint64(len(b)-4) {
			return fmt.Errorf("%w: RLE values of %d bytes past the page's end", ErrFormat, l)
		}
		d.idx.init(b[4:4+l], 1)
	default:
		switch {
		case len(b) == 0:
			// No index, not even the bit width: a page of nulls (as
			// arrow-go reads it). Reading an index fails.
			d.idx.init(nil, 0)
		case b[0] > 32:
			return fmt.Errorf("%w: dictionary indices wider than 32 bits", ErrFormat)
		default:
			d.idx.init(b[1:], int(b[0]))
		}
	}
	d.pageLeft = p.numValues
	return nil
}

// readDictionary reads dictionary page p.
func (d *Decoder) readDictionary(p page) error {
	if p.encoding != encPlain && p.encoding != encPlainDictionary {
		return fmt.Errorf("%w: dictionary page of encoding %d", ErrUnsupported, p.encoding)
	}
	b, err := decompress(d.c.Codec, p.body, p.usize, d.limit, &d.dictBuf)
	if err != nil {
		return err
	}
	n := p.numValues
	if d.w > 0 {
		if n > len(b)/d.w {
			return fmt.Errorf("%w: a dictionary of %d values in %d bytes", ErrFormat, n, len(b))
		}
		// The values as they are, where they are: in the decompressed
		// page (dictBuf), or the chunk itself if it is aligned for them.
		d.dictFixed = b[:n*d.w]
		if n > 0 && (d.w == 4 || d.w == 8) && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(d.w) != 0 {
			d.dictFixed = append(make([]byte, 0, n*d.w), d.dictFixed...)
		}
	} else {
		if n > len(b)/4 {
			return fmt.Errorf("%w: a dictionary of %d values in %d bytes", ErrFormat, n, len(b))
		}
		total, rest := 0, b
		for range n {
			if len(rest) < 4 {
				return fmt.Errorf("%w: a dictionary value past the page's end", ErrFormat)
			}
			l := binary.LittleEndian.Uint32(rest)
			if uint64(l) > uint64(len(rest)-4) {
				return fmt.Errorf("%w: a dictionary value past the page's end", ErrFormat)
			}
			total += int(l)
			rest = rest[4+int(l):]
		}
		d.dictOffs = d.buffer(4 * (n + 1))
		d.dictVals = d.buffer(max(total, 1))
		offs, data := u32(d.dictOffs.Bytes()), d.dictVals.Bytes()
		pos, rest := 0, b
		offs[0] = 0
		for i := range n {
			l := int(binary.LittleEndian.Uint32(rest))
			copy(data[pos:], rest[4:4+l])
			pos += l
			rest = rest[4+l:]
			offs[i+1] = uint32(pos)
		}
		d.dictVals.ResizeNoShrink(total)
	}
	d.dictN, d.hasDict = n, true
	if d.dict {
		vt := d.c.Type.(*arrow.DictionaryType).ValueType
		d.dictArr = array.NewData(vt, n, []*memory.Buffer{nil, d.dictOffs, d.dictVals}, nil, 0, 0)
	}
	return nil
}
