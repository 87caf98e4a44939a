package formats

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	arrowcsv "github.com/apache/arrow-go/v18/arrow/csv"
)

// SampleRows is how many rows of a CSV or NDJSON input decide its column
// types; a later row that does not fit them fails the read, naming the
// row.
const SampleRows = 10_000

// sampleMaxBytes bounds the bytes held to infer types.
const sampleMaxBytes = 64 << 20

// kind is an inferred column type, from the narrowest to the widest scalar.
type kind int

const (
	kNull kind = iota // no value seen yet
	kInt
	kFloat
	kBool
	kDate
	kTimestamp   // without a zone
	kTimestampTZ // with a zone: an instant, stored in UTC
	kString
	kList   // NDJSON only
	kStruct // NDJSON only
)

// join widens a to hold b as well: integers and floats join to float; any
// other two different scalars join to string.
func join(a, b kind) kind {
	switch {
	case a == b || b == kNull:
		return a
	case a == kNull:
		return b
	case (a == kInt && b == kFloat) || (a == kFloat && b == kInt):
		return kFloat
	}
	return kString
}

// scalarKind is the narrowest kind a CSV value parses as.
func scalarKind(v string) kind {
	if v == "" {
		return kNull
	}
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return kInt
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return kFloat
	}
	if v == "true" || v == "false" {
		return kBool
	}
	if _, err := time.Parse(time.DateOnly, v); err == nil {
		return kDate
	}
	if _, zoned, err := arrow.TimestampFromStringInLocation(v, arrow.Microsecond, time.UTC); err == nil {
		if zoned {
			return kTimestampTZ
		}
		return kTimestamp
	}
	return kString
}

func scalarType(k kind) arrow.DataType {
	switch k {
	case kInt:
		return arrow.PrimitiveTypes.Int64
	case kFloat:
		return arrow.PrimitiveTypes.Float64
	case kBool:
		return arrow.FixedWidthTypes.Boolean
	case kDate:
		return arrow.FixedWidthTypes.Date32
	case kTimestamp:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case kTimestampTZ:
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	}
	return arrow.BinaryTypes.String
}

// openCSV reads a CSV file with a header row. The first SampleRows rows
// decide each column's type: int64, float64, bool, date32, timestamp[us]
// (with time zone UTC when the values carry a zone) or string; an empty
// field is null.
func openCSV(r *bufio.Reader, name string, opts InputOptions) (array.RecordReader, error) {
	var sample bytes.Buffer
	cr := csv.NewReader(io.TeeReader(r, &sample))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, ErrRecordTooLong) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: reading the CSV header: %v", ErrFormat, name, err)
	}
	header = append([]string(nil), header...)
	kinds := make([]kind, len(header))
	for n := 0; n < SampleRows && sample.Len() < sampleMaxBytes; n++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if errors.Is(err, ErrRecordTooLong) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrFormat, name, csvError(err))
		}
		for i, v := range rec {
			kinds[i] = join(kinds[i], scalarKind(v))
		}
	}
	fields := make([]arrow.Field, len(header))
	seen := map[string]bool{}
	for i, h := range header {
		if h == "" || seen[h] {
			return nil, fmt.Errorf("%w: %s: column %d has an empty or repeated name %q", ErrFormat, name, i+1, h)
		}
		seen[h] = true
		fields[i] = arrow.Field{Name: h, Type: scalarType(kinds[i]), Nullable: true}
	}
	schema := arrow.NewSchema(fields, nil)
	// Dates are read as strings, and parsed by csvDates.
	read := slices.Clone(fields)
	dates := map[int]bool{}
	for i, f := range fields {
		if f.Type.ID() == arrow.DATE32 {
			read[i].Type, dates[i] = arrow.BinaryTypes.String, true
		}
	}
	// The csv.Reader above buffered ahead of what it returned: everything
	// it read is in sample, and the rest still in r.
	body := io.MultiReader(&sample, r)
	rr := arrowcsv.NewReader(body, arrow.NewSchema(read, nil),
		arrowcsv.WithHeader(true), arrowcsv.WithChunk(opts.BatchRows),
		arrowcsv.WithNullReader(true, ""), arrowcsv.WithAllocator(opts.Alloc))
	recs := &csvRecords{Reader: rr, name: name}
	if len(dates) == 0 {
		return recs, nil
	}
	return &csvDates{RecordReader: recs, schema: schema, cols: dates, mem: opts.Alloc, name: name}, nil
}

// csvRecords names the input in CSV errors.
type csvRecords struct {
	*arrowcsv.Reader
	name string
}

func (c *csvRecords) Err() error {
	if err := c.Reader.Err(); err != nil {
		if errors.Is(err, ErrRecordTooLong) {
			return err
		}
		return fmt.Errorf("%w: %s: %v", ErrFormat, c.name, csvError(err))
	}
	return nil
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
		return fmt.Errorf("line %d has a different number of fields than the header", pe.Line)
	}
	return err
}

// jsonType is the inferred type of an NDJSON value.
type jsonType struct {
	kind   kind
	elem   *jsonType            // kList
	fields map[string]*jsonType // kStruct
	order  []string             // kStruct: field names in order of first appearance
}

func (t *jsonType) add(v any) error {
	switch v := v.(type) {
	case nil:
		return nil
	case json.Number:
		k := kFloat
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			k = kInt
		}
		return t.scalar(k, "a number")
	case bool:
		return t.scalar(kBool, "a boolean")
	case string:
		return t.scalar(kString, "a string")
	case []any:
		if t.kind != kNull && t.kind != kList {
			return fmt.Errorf("an array where other rows have %s", t.describe())
		}
		t.kind = kList
		if t.elem == nil {
			t.elem = &jsonType{}
		}
		for _, e := range v {
			if err := t.elem.add(e); err != nil {
				return fmt.Errorf("element: %w", err)
			}
		}
	case object:
		if t.kind != kNull && t.kind != kStruct {
			return fmt.Errorf("an object where other rows have %s", t.describe())
		}
		t.kind = kStruct
		if t.fields == nil {
			t.fields = map[string]*jsonType{}
		}
		for _, m := range v {
			if t.fields[m.key] == nil {
				t.fields[m.key] = &jsonType{}
				t.order = append(t.order, m.key)
			}
			if err := t.fields[m.key].add(m.value); err != nil {
				return fmt.Errorf("%s: %w", m.key, err)
			}
		}
	}
	return nil
}

// object is a JSON object with its members in order.
type object []member

type member struct {
	key   string
	value any
}

// decodeOrdered decodes one JSON value, keeping the order of object
// members: objects are object, arrays []any, numbers json.Number.
func decodeOrdered(dec *json.Decoder, depth int) (any, error) {
	if depth > 64 {
		return nil, errors.New("nested deeper than 64")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		var obj object
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key := kt.(string)
			if seen[key] {
				return nil, fmt.Errorf("member %q twice", key)
			}
			seen[key] = true
			v, err := decodeOrdered(dec, depth+1)
			if err != nil {
				return nil, err
			}
			obj = append(obj, member{key, v})
		}
		_, err := dec.Token() // '}'
		return obj, err
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec, depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token() // ']'
		return arr, err
	}
	return tok, nil
}

func (t *jsonType) scalar(k kind, what string) error {
	if t.kind == kList || t.kind == kStruct {
		return fmt.Errorf("%s where other rows have %s", what, t.describe())
	}
	if j := join(t.kind, k); j == kString && t.kind != kNull && t.kind != k {
		return fmt.Errorf("%s where other rows have %s", what, t.describe())
	}
	t.kind = join(t.kind, k)
	return nil
}

func (t *jsonType) describe() string {
	return map[kind]string{kNull: "null", kInt: "integers", kFloat: "numbers", kBool: "booleans",
		kString: "strings", kList: "arrays", kStruct: "objects"}[t.kind]
}

func (t *jsonType) arrowType() arrow.DataType {
	switch t.kind {
	case kList:
		return arrow.ListOf(t.elem.arrowType())
	case kStruct:
		fs := make([]arrow.Field, len(t.order))
		for i, n := range t.order {
			fs[i] = arrow.Field{Name: n, Type: t.fields[n].arrowType(), Nullable: true}
		}
		return arrow.StructOf(fs...)
	case kNull:
		return arrow.BinaryTypes.String
	}
	return scalarType(t.kind)
}

// openNDJSON reads one JSON object per line. The first SampleRows lines
// decide the schema: members become columns in the order they first
// appear;
// numbers are int64 when every one seen is an integer, else float64;
// arrays become lists and objects structs. A member that is sometimes a
// number and sometimes a string is refused, naming it.
func openNDJSON(r *bufio.Reader, name string, opts InputOptions) (array.RecordReader, error) {
	var sample bytes.Buffer
	root := &jsonType{kind: kStruct, fields: map[string]*jsonType{}}
	for n := 1; n <= SampleRows && sample.Len() < sampleMaxBytes; n++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, ErrRecordTooLong) {
			return nil, err
		}
		sample.Write(line)
		if len(bytes.TrimSpace(line)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			v, derr := decodeOrdered(dec, 0)
			if derr == nil && dec.More() {
				derr = errors.New("more than one JSON value on the line")
			}
			if derr != nil {
				return nil, fmt.Errorf("%w: %s: line %d: %v", ErrFormat, name, n, derr)
			}
			obj, ok := v.(object)
			if !ok {
				return nil, fmt.Errorf("%w: %s: line %d is not a JSON object", ErrFormat, name, n)
			}
			if aerr := root.add(obj); aerr != nil {
				return nil, fmt.Errorf("%w: %s: line %d: %v", ErrFormat, name, n, aerr)
			}
		}
		if err == io.EOF {
			break
		}
		if errors.Is(err, ErrRecordTooLong) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	if len(root.order) == 0 {
		return nil, fmt.Errorf("%w: %s: no JSON object in the first lines", ErrFormat, name)
	}
	schema := arrow.NewSchema(root.arrowType().(*arrow.StructType).Fields(), nil)
	rr := array.NewJSONReader(io.MultiReader(&sample, r), schema,
		array.WithChunk(opts.BatchRows), array.WithAllocator(opts.Alloc))
	return &jsonRecords{JSONReader: rr, name: name}, nil
}

type jsonRecords struct {
	*array.JSONReader
	name string
}

func (j *jsonRecords) Err() error {
	if err := j.JSONReader.Err(); errors.Is(err, ErrRecordTooLong) {
		return err
	} else if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrFormat, j.name, err)
	}
	return nil
}
