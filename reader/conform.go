package reader

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/sovm/sop-pme/keyref"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// A Requirement is one property a conformant SOP-PME-1 object has.
type Requirement int

// The requirements Check tests, in the order it tests them.
const (
	// ReqStorageID: the BLAKE3 root of the whole object equals its
	// storage_id (Sections 11.7, 11.10).
	ReqStorageID Requirement = iota + 1
	// ReqMagic: "PARE" at both ends: encrypted-footer mode (Section 11.4).
	ReqMagic
	// ReqAlgorithm: FileCryptoMetaData names AES_GCM_V1 with no AAD fields
	// (Section 11.3).
	ReqAlgorithm
	// ReqKeyRef: key_metadata holds a 16-byte key_ref that looks random:
	// not all zero, not all printable ASCII (Section 11.5 forbids semantic
	// key metadata; see keyref.Ref.NotRandom).
	ReqKeyRef
	// ReqModules: the footer and every data module open under the DEK with
	// the empty AAD, and the data modules tile the data region, with every
	// column chunk starting at a module (Sections 11.2, 11.3).
	ReqModules
	// ReqPadEntry: exactly one footer entry whose key starts with
	// sovm:sop-pad-v1; the key is valid and its value is zero bytes
	// (Section 11.8).
	ReqPadEntry
	// ReqPaddedSize: the object's size is Padmé of its unpadded size
	// (Section 11.8).
	ReqPaddedSize
	// ReqFieldIDs: every column of the schema carries a positive field ID,
	// unique in the schema (Section 11.2).
	ReqFieldIDs
	// ReqRows: the object reads, whole, with the reader's defaults: Open and
	// a full Scan return every row, without an error (a standards-compliant
	// Parquet file, Section 11.8; see checkRows).
	ReqRows
)

var reqNames = map[Requirement]string{
	ReqStorageID: "storage_id", ReqMagic: "magic", ReqAlgorithm: "algorithm", ReqKeyRef: "key_ref",
	ReqModules: "modules", ReqPadEntry: "pad entry", ReqPaddedSize: "padded size", ReqFieldIDs: "field IDs",
	ReqRows: "rows",
}

// String returns the requirement's short name, such as "key_ref".
func (r Requirement) String() string {
	if s, ok := reqNames[r]; ok {
		return s
	}
	return fmt.Sprintf("Requirement(%d)", int(r))
}

// A Finding is a requirement an object fails, and why.
type Finding struct {
	Requirement Requirement
	Detail      string
}

// String returns "requirement: detail".
func (f Finding) String() string { return f.Requirement.String() + ": " + f.Detail }

// A Report is the result of Check.
type Report struct {
	ID   storageid.ID
	Size int64
	// UnpaddedSize is the size the object would have with an empty padding
	// entry, or -1 if it has no single valid padding entry.
	UnpaddedSize int64
	// KeyRef is the object's key_ref, if it has one (it authenticates
	// nothing; Section 11.5).
	KeyRef keyref.Ref
	// Checked lists the requirements that were tested; Findings those that
	// failed. A requirement not tested (because an earlier failure makes it
	// meaningless) is in neither.
	Checked  []Requirement
	Findings []Finding
}

// Conformant reports whether every requirement was tested and none failed.
func (r *Report) Conformant() bool {
	return len(r.Findings) == 0 && len(r.Checked) == len(reqNames)
}

// Failed reports whether the object fails req.
func (r *Report) Failed(req Requirement) bool {
	for _, f := range r.Findings {
		if f.Requirement == req {
			return true
		}
	}
	return false
}

// String returns a summary: conformant, or one line per finding.
func (r *Report) String() string {
	if r.Conformant() {
		return fmt.Sprintf("%s: conformant SOP-PME-1 object (%d bytes)", r.ID, r.Size)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: not a conformant SOP-PME-1 object", r.ID)
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "\n  - %s", f)
	}
	return b.String()
}

func (r *Report) pass(req Requirement) { r.Checked = append(r.Checked, req) }

func (r *Report) fail(req Requirement, format string, args ...any) {
	r.Checked = append(r.Checked, req)
	r.Findings = append(r.Findings, Finding{req, fmt.Sprintf(format, args...)})
}

func (r *Report) check(req Requirement, ok bool, format string, args ...any) {
	if ok {
		r.pass(req)
	} else {
		r.fail(req, format, args...)
	}
}

// Check reports, requirement by requirement, whether the object src holds
// under id is a conformant SOP-PME-1 object. It first verifies every byte
// against id; then it reads the object only through verified ranges, and
// opens every module with the DEK keys resolves for id. Last it reads every
// row as Open and Scan do with their defaults (ReqRows), so that an object
// Check calls conformant is one the reader reads.
//
// Failing requirements are Findings in the Report, not errors: the error is
// for what stops the check itself (an unknown object, a missing key, a
// cancelled ctx).
func Check(ctx context.Context, src verify.Source, id storageid.ID, keys KeyResolver) (*Report, error) {
	rep := &Report{ID: id, Size: -1, UnpaddedSize: -1}
	if err := verify.Verify(ctx, src, id); err != nil {
		if errors.Is(err, verify.ErrVerify) || errors.Is(err, verify.ErrSize) {
			rep.fail(ReqStorageID, "%v", err)
			return rep, nil
		}
		return nil, err
	}
	rep.pass(ReqStorageID)
	vr, err := verify.NewReader(ctx, src, id)
	if err != nil {
		return nil, err
	}
	size := vr.Size()
	rep.Size = size
	read := func(off, n int64) ([]byte, error) {
		b := make([]byte, n)
		_, err := vr.ReadAtContext(ctx, b, off)
		return b, err
	}
	if size < minObjectSize {
		rep.fail(ReqMagic, "object of %d bytes is too small for a PME file", size)
		return rep, nil
	}
	head, err := read(0, 4)
	if err != nil {
		return nil, err
	}
	trailer, err := read(size-pme.TrailerSize, pme.TrailerSize)
	if err != nil {
		return nil, err
	}
	rep.check(ReqMagic, string(head) == "PARE" && string(trailer[4:]) == "PARE", "magic %q ... %q, want PARE at both ends", head, trailer[4:])
	if rep.Failed(ReqMagic) {
		return rep, nil
	}
	flen := int64(binary.LittleEndian.Uint32(trailer))
	dataEnd := size - pme.TrailerSize - flen
	if dataEnd < 4 {
		rep.fail(ReqModules, "footer length %d exceeds the object", flen)
		return rep, nil
	}
	region, err := read(dataEnd, flen)
	if err != nil {
		return nil, err
	}
	cm, n, err := pme.ParseFileCryptoMetaData(region)
	if err != nil {
		rep.fail(ReqAlgorithm, "%v", err)
		return rep, nil
	}
	rep.pass(ReqAlgorithm)
	if len(cm.KeyMetadata) == keyref.Size {
		rep.KeyRef = keyref.Ref(cm.KeyMetadata)
		if why := rep.KeyRef.NotRandom(); why != "" {
			rep.fail(ReqKeyRef, "key_metadata is not random (semantic): %s", why)
		} else {
			rep.pass(ReqKeyRef)
		}
	} else if cm.KeyMetadata == nil {
		rep.fail(ReqKeyRef, "no key_metadata")
	} else {
		rep.fail(ReqKeyRef, "key_metadata of %d bytes, want %d", len(cm.KeyMetadata), keyref.Size)
	}
	dek, err := keys.ResolveDEK(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("reader: resolving the key of %s: %w", id, err)
	}
	body, rest, err := pme.SplitModule(region[n:])
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d bytes follow the footer module", len(rest))
	}
	var footer *pme.Footer
	if err == nil {
		footer, err = pme.OpenFooter(dek, body)
	}
	if err != nil {
		rep.fail(ReqModules, "footer: %v", err)
		// The reader refuses it too; Check says so.
		if err := checkRows(ctx, rep, src, id, keys); err != nil {
			return nil, err
		}
		return rep, nil
	}
	if err := checkModules(ctx, vr, dek, footer, dataEnd); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.fail(ReqModules, "%v", err)
	} else {
		rep.pass(ReqModules)
	}
	checkPadding(rep, footer)
	checkFieldIDs(rep, footer)
	if err := checkRows(ctx, rep, src, id, keys); err != nil {
		return nil, err
	}
	return rep, nil
}

// checkModules opens every module of the data region [4, dataEnd) in order
// and checks that the footer's column chunks start at modules and tile the
// region.
func checkModules(ctx context.Context, vr *verify.Reader, dek pme.DEK, footer *pme.Footer, dataEnd int64) error {
	chunks, err := footer.ColumnChunks()
	if err != nil {
		return err
	}
	starts := map[int64]bool{}
	var buf, plain []byte
	prefix := make([]byte, pme.LenSize)
	for off := int64(4); off < dataEnd; {
		if err := ctx.Err(); err != nil {
			return err
		}
		if off+pme.LenSize > dataEnd {
			return fmt.Errorf("%d stray bytes at the end of the data region", dataEnd-off)
		}
		if _, err := vr.ReadAtContext(ctx, prefix, off); err != nil {
			return err
		}
		m := int64(binary.LittleEndian.Uint32(prefix))
		if m < pme.NonceSize+pme.TagSize || off+pme.LenSize+m > dataEnd {
			return fmt.Errorf("module at %d: length %d does not fit the data region", off, m)
		}
		if int64(cap(buf)) < m {
			buf = make([]byte, m)
		}
		buf = buf[:m]
		if _, err := vr.ReadAtContext(ctx, buf, off+pme.LenSize); err != nil {
			return err
		}
		if plain, err = dek.Open(plain[:0], buf); err != nil {
			return fmt.Errorf("module at %d: %w", off, err)
		}
		starts[off] = true
		off += pme.LenSize + m
	}
	next := int64(4)
	for i, rg := range chunks {
		for j, c := range rg {
			if c.Off != next || !starts[c.Off] {
				return fmt.Errorf("row group %d column %d starts at %d; the previous chunk ends at %d", i, j, c.Off, next)
			}
			next = c.End()
		}
	}
	if next != dataEnd {
		return fmt.Errorf("column chunks end at %d, the data region at %d", next, dataEnd)
	}
	return nil
}

func checkPadding(rep *Report, footer *pme.Footer) {
	kvs, err := footer.KeyValues()
	if err != nil {
		rep.fail(ReqPadEntry, "%v", err)
		return
	}
	var pads []pme.KeyValue
	for _, kv := range kvs {
		if padme.IsReserved(kv.Key) {
			pads = append(pads, kv)
		}
	}
	switch {
	case len(pads) == 0:
		rep.fail(ReqPadEntry, "no %s entry in the footer", padme.PadKey)
	case len(pads) > 1:
		rep.fail(ReqPadEntry, "%d %s entries in the footer, want one", len(pads), padme.PadKey)
	case !padme.ValidKey(pads[0].Key):
		rep.fail(ReqPadEntry, "key %q is not %s followed by dashes", pads[0].Key, padme.PadKey)
	case pads[0].Value == nil:
		rep.fail(ReqPadEntry, "the entry has no value field")
	case bytes.ContainsFunc(pads[0].Value, func(r rune) bool { return r != 0 }):
		rep.fail(ReqPadEntry, "the padding value is not all zero bytes")
	default:
		rep.pass(ReqPadEntry)
		p := padme.Pad{ValueLen: uint64(len(pads[0].Value)), KeyTail: len(pads[0].Key) - len(padme.PadKey)}
		rep.UnpaddedSize = rep.Size - int64(p.Growth())
	}
	if rep.UnpaddedSize < 0 {
		rep.fail(ReqPaddedSize, "no unpadded size without a valid padding entry; size %d", rep.Size)
		return
	}
	target, err := padme.Target(uint64(rep.UnpaddedSize))
	rep.check(ReqPaddedSize, err == nil && target == uint64(rep.Size), "size %d, Padmé(%d) = %d", rep.Size, rep.UnpaddedSize, target)
}

func checkFieldIDs(rep *Report, footer *pme.Footer) {
	fields, err := footer.Fields()
	if err != nil {
		rep.fail(ReqFieldIDs, "%v", err)
		return
	}
	seen := map[int32]string{}
	var missing, invalid, dups []string
	for _, f := range fields {
		if !f.HasID {
			missing = append(missing, f.Path)
			continue
		}
		if f.ID <= 0 {
			invalid = append(invalid, fmt.Sprintf("%s has %d", f.Path, f.ID))
		}
		if other, ok := seen[f.ID]; ok {
			dups = append(dups, fmt.Sprintf("%s and %s share %d", other, f.Path, f.ID))
		}
		seen[f.ID] = f.Path
	}
	switch {
	case len(missing) > 0:
		rep.fail(ReqFieldIDs, "no field ID on %s", strings.Join(missing, ", "))
	case len(invalid) > 0:
		rep.fail(ReqFieldIDs, "field IDs are positive: %s", strings.Join(invalid, ", "))
	case len(dups) > 0:
		rep.fail(ReqFieldIDs, "%s", strings.Join(dups, "; "))
	default:
		rep.pass(ReqFieldIDs)
	}
}
