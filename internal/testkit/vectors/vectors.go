// Package vectors reads the SOP-PME-1 test vectors kept in testdata/vectors
// at the root of the repository, and (in its tests) generates them.
//
// A vector is what untrusted storage holds for one storage_id, the key a
// reader is given, and what a conforming reader must do with them: return
// these rows, or fail with this error, for this rule of SOP-PME-1 (Section
// 11). Valid objects, DuckDB-written files, objects damaged by storage and
// objects crafted by a producer who holds the DEK sit side by side, so that
// the reader's tests, the conformance check's tests, the fuzz targets' seeds
// and another implementation all run the same cases. The format is
// described in testdata/vectors/README.md; each vector NAME is three or four
// files:
//
//	NAME.expect       the header: storage_id, DEK, expectations (text)
//	NAME.pme          the bytes the store holds for storage_id
//	NAME.obao4        the outboard the store holds (pre-order, 16 KiB groups)
//	NAME.rows.ndjson  the rows a full read returns (when it returns rows)
//
// The DEKs in vectors are test keys, published with them.
package vectors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
)

// A Vector is one test vector.
type Vector struct {
	Name string
	// ID is the storage_id the reader is asked to open, as a trusted catalog
	// gives it.
	ID storageid.ID
	// DEK is the key the resolver returns for ID, or nil when it has none.
	DEK []byte
	// Object and Outboard are what the store holds for ID.
	Object, Outboard []byte
	// Fields, if not empty, projects the read to these field IDs.
	Fields []int32
	// Read is what Open followed by a full Scan does: return Rows (Err
	// nil), or fail with an error matching Err.
	Read Outcome
	// Rows are the rows of a successful read, in the text form of
	// RowsJSON.
	Rows []byte
	// Verify is the outcome of verifying the whole object against ID.
	Verify Outcome
	// Check is the outcome of the conformance check: the requirements it
	// reports failed (none: conformant), or the error that stops it.
	Check CheckOutcome
	// Rule is the SOP-PME-1 rule the vector exercises.
	Rule string
	// Comment says how the vector was made.
	Comment string
}

// An Outcome is success (Err == nil) or an error that a result must match
// with errors.Is.
type Outcome struct {
	Err error
}

// A CheckOutcome is the result of reader.Check: the names of the
// requirements the report fails (reader.Requirement.String), in the order
// Check tests them, or the error that stops the check.
type CheckOutcome struct {
	Fails []string
	Err   error
}

// The file name suffixes of a vector's files.
const (
	ExpectExt   = ".expect"
	ObjectExt   = ".pme"
	OutboardExt = ".obao4"
	RowsExt     = ".rows.ndjson"
)

// ErrFormat reports a malformed vector file.
var ErrFormat = errors.New("vectors: malformed vector")

// sentinels names the errors a vector may expect. Names are the Go
// identifiers; another implementation maps them to its own errors.
var sentinels = []struct {
	name string
	err  error
}{
	{"verify.ErrVerify", verify.ErrVerify},
	{"verify.ErrSize", verify.ErrSize},
	{"pme.ErrAuth", pme.ErrAuth},
	{"pme.ErrFormat", pme.ErrFormat},
	{"pme.ErrModule", pme.ErrModule},
	{"pme.ErrTooLarge", pme.ErrTooLarge},
	{"pme.ErrUnsupported", pme.ErrUnsupported},
	{"pme.ErrPlaintextFooter", pme.ErrPlaintextFooter},
	{"reader.ErrNoKey", reader.ErrNoKey},
	{"reader.ErrFormat", reader.ErrFormat},
	{"reader.ErrDecode", reader.ErrDecode},
	{"reader.ErrMemoryLimit", reader.ErrMemoryLimit},
	{"reader.ErrValueLimit", reader.ErrValueLimit},
	{"reader.ErrField", reader.ErrField},
	{"blobs.ErrNotFound", blobs.ErrNotFound},
}

// Sentinel returns the error named name, such as "verify.ErrVerify".
func Sentinel(name string) (error, bool) {
	for _, s := range sentinels {
		if s.name == name {
			return s.err, true
		}
	}
	return nil, false
}

// SentinelName returns the name of err if it is one of the sentinels a
// vector may expect (compared with ==, not errors.Is).
func SentinelName(err error) (string, bool) {
	for _, s := range sentinels {
		if s.err == err {
			return s.name, true
		}
	}
	return "", false
}

// Load reads every vector in dir of fsys, in name order.
func Load(fsys fs.FS, dir string) ([]Vector, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*"+ExpectExt))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: no *%s files in %s", ErrFormat, ExpectExt, dir)
	}
	slices.Sort(names)
	out := make([]Vector, 0, len(names))
	for _, n := range names {
		v, err := load(fsys, strings.TrimSuffix(n, ExpectExt))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func load(fsys fs.FS, base string) (Vector, error) {
	v := Vector{Name: path.Base(base)}
	hdr, err := fs.ReadFile(fsys, base+ExpectExt)
	if err != nil {
		return v, err
	}
	if err := v.parseHeader(hdr); err != nil {
		return v, fmt.Errorf("%s%s: %w", base, ExpectExt, err)
	}
	if v.Object, err = fs.ReadFile(fsys, base+ObjectExt); err != nil {
		return v, err
	}
	if v.Outboard, err = fs.ReadFile(fsys, base+OutboardExt); err != nil {
		return v, err
	}
	rows, err := fs.ReadFile(fsys, base+RowsExt)
	switch {
	case v.Read.Err == nil && err != nil:
		return v, fmt.Errorf("%w: %s: a read that returns rows needs %s: %v", ErrFormat, v.Name, RowsExt, err)
	case v.Read.Err != nil && err == nil:
		return v, fmt.Errorf("%w: %s: a failing read has no %s", ErrFormat, v.Name, RowsExt)
	}
	v.Rows = rows
	return v, nil
}

// keys are the header keys, in the order Marshal writes them; the ones
// marked required must appear.
var keys = []struct {
	name     string
	required bool
}{
	{"storage_id", true}, {"dek", true}, {"fields", false}, {"read", true},
	{"verify", true}, {"check", true}, {"rule", true}, {"comment", false},
}

// parseHeader parses the .expect file strictly: every line is "key: value"
// with a known key, each key at most once, the required ones present.
func (v *Vector) parseHeader(b []byte) error {
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		k, val, ok := strings.Cut(line, ": ")
		if !ok || val == "" || strings.TrimSpace(val) != val {
			return fmt.Errorf("%w: line %q is not \"key: value\"", ErrFormat, line)
		}
		if !slices.ContainsFunc(keys, func(e struct {
			name     string
			required bool
		}) bool {
			return e.name == k
		}) {
			return fmt.Errorf("%w: unknown key %q", ErrFormat, k)
		}
		if seen[k] {
			return fmt.Errorf("%w: key %q twice", ErrFormat, k)
		}
		seen[k] = true
		if err := v.set(k, val); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrFormat, k, err)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, e := range keys {
		if e.required && !seen[e.name] {
			return fmt.Errorf("%w: no %q", ErrFormat, e.name)
		}
	}
	return nil
}

func (v *Vector) set(k, val string) error {
	var err error
	switch k {
	case "storage_id":
		if v.ID, err = storageid.Parse(val); err == nil && v.ID.String() != val {
			err = errors.New("not 64 lowercase hex digits")
		}
	case "dek":
		if val != "none" {
			v.DEK, err = base64.StdEncoding.Strict().DecodeString(val)
		}
	case "fields":
		for _, s := range strings.Split(val, ",") {
			id, perr := strconv.ParseInt(s, 10, 32)
			if perr != nil {
				return perr
			}
			v.Fields = append(v.Fields, int32(id))
		}
	case "read":
		v.Read, err = parseOutcome(val, "rows")
	case "verify":
		v.Verify, err = parseOutcome(val, "ok")
	case "check":
		if val == "conformant" {
			return nil
		}
		if rest, ok := strings.CutPrefix(val, "fails "); ok {
			v.Check.Fails = strings.Split(rest, ", ")
			return nil
		}
		var o Outcome
		o, err = parseOutcome(val, "")
		v.Check.Err = o.Err
	case "rule":
		v.Rule = val
	case "comment":
		v.Comment = val
	}
	return err
}

// parseOutcome parses success ("rows", "ok") or "error NAME".
func parseOutcome(val, success string) (Outcome, error) {
	if success != "" && val == success {
		return Outcome{}, nil
	}
	name, ok := strings.CutPrefix(val, "error ")
	if !ok {
		return Outcome{}, fmt.Errorf("%q is neither %q nor \"error NAME\"", val, success)
	}
	err, ok := Sentinel(name)
	if !ok {
		return Outcome{}, fmt.Errorf("unknown error %q", name)
	}
	return Outcome{Err: err}, nil
}

func formatOutcome(o Outcome, success string) string {
	if o.Err == nil {
		return success
	}
	name, ok := SentinelName(o.Err)
	if !ok {
		panic("vectors: an outcome with an unnamed error: " + o.Err.Error())
	}
	return "error " + name
}

// MarshalHeader returns the .expect file of v.
func (v *Vector) MarshalHeader() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "storage_id: %s\n", v.ID)
	if v.DEK == nil {
		b.WriteString("dek: none\n")
	} else {
		fmt.Fprintf(&b, "dek: %s\n", base64.StdEncoding.EncodeToString(v.DEK))
	}
	if len(v.Fields) > 0 {
		s := make([]string, len(v.Fields))
		for i, f := range v.Fields {
			s[i] = strconv.Itoa(int(f))
		}
		fmt.Fprintf(&b, "fields: %s\n", strings.Join(s, ","))
	}
	fmt.Fprintf(&b, "read: %s\n", formatOutcome(v.Read, "rows"))
	fmt.Fprintf(&b, "verify: %s\n", formatOutcome(v.Verify, "ok"))
	switch {
	case v.Check.Err != nil:
		fmt.Fprintf(&b, "check: %s\n", formatOutcome(Outcome{v.Check.Err}, ""))
	case len(v.Check.Fails) == 0:
		b.WriteString("check: conformant\n")
	default:
		fmt.Fprintf(&b, "check: fails %s\n", strings.Join(v.Check.Fails, ", "))
	}
	fmt.Fprintf(&b, "rule: %s\n", v.Rule)
	if v.Comment != "" {
		fmt.Fprintf(&b, "comment: %s\n", v.Comment)
	}
	return b.Bytes()
}

// Files returns the vector's files, by name.
func (v *Vector) Files() map[string][]byte {
	m := map[string][]byte{
		v.Name + ExpectExt:   v.MarshalHeader(),
		v.Name + ObjectExt:   v.Object,
		v.Name + OutboardExt: v.Outboard,
	}
	if v.Read.Err == nil {
		m[v.Name+RowsExt] = v.Rows
	}
	return m
}

// Source returns a verify.Source that holds the vector's object and
// outboard under its storage_id, and nothing else.
func (v *Vector) Source() verify.Source { return source{v} }

type source struct{ v *Vector }

func (s source) Slice(ctx context.Context, id storageid.ID, off, n uint64) (io.ReadCloser, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if id != s.v.ID {
		return nil, fmt.Errorf("%w: %s", blobs.ErrNotFound, id)
	}
	r, err := verify.ExtractSlice(bytes.NewReader(s.v.Object), bytes.NewReader(s.v.Outboard), uint64(len(s.v.Object)), off, n)
	if err != nil {
		return nil, err
	}
	return io.NopCloser(r), nil
}

// Keys returns a reader.KeyResolver that knows the vector's DEK for its
// storage_id, or nothing if the vector has none.
func (v *Vector) Keys() reader.KeyResolver { return resolver{v} }

type resolver struct{ v *Vector }

func (r resolver) ResolveDEK(ctx context.Context, id storageid.ID) (pme.DEK, error) {
	if id != r.v.ID || r.v.DEK == nil {
		return pme.DEK{}, fmt.Errorf("%w: %s", reader.ErrNoKey, id)
	}
	return pme.DEKFromBytes(r.v.DEK)
}
