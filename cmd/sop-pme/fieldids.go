package main

import (
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/sovm/sop-pme/table"
	"github.com/sovm/sop-pme/writer"
)

// missingFieldIDs returns the dotted paths of the fields of schema without
// a Parquet field ID, by the rule of writer.AssignFieldIDs: no
// "PARQUET:field_id", or the "-1" pqarrow reports for a column without one.
// A list's element and a map's key and value are fields too.
func missingFieldIDs(schema *arrow.Schema) []string {
	var out []string
	var walk func(prefix string, f arrow.Field)
	walk = func(prefix string, f arrow.Field) {
		path := f.Name
		if prefix != "" {
			path = prefix + "." + f.Name
		}
		v, ok := f.Metadata.GetValue(writer.FieldIDKey)
		if n, err := strconv.ParseInt(v, 10, 32); !ok || err != nil || n < 1 {
			switch {
			case !ok || v == "-1":
				out = append(out, path)
			case v == "0": // DuckDB's FIELD_IDS 'auto' numbers from 0
				out = append(out, path+" (ID 0)")
			}
		}
		for _, c := range table.Children(f.Type) {
			walk(path, c)
		}
	}
	for _, f := range schema.Fields() {
		walk("", f)
	}
	return out
}

// reschemed gives each record of a reader another schema with the same
// types: the input's schema with field IDs assigned.
type reschemed struct {
	array.RecordReader
	schema *arrow.Schema
	cur    arrow.RecordBatch
}

func (r *reschemed) Schema() *arrow.Schema { return r.schema }

func (r *reschemed) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if !r.RecordReader.Next() {
		return false
	}
	rec := r.RecordReader.RecordBatch()
	r.cur = array.NewRecordBatch(r.schema, rec.Columns(), rec.NumRows())
	return true
}

func (r *reschemed) RecordBatch() arrow.RecordBatch { return r.cur }
func (r *reschemed) Record() arrow.RecordBatch      { return r.cur }

func (r *reschemed) Release() {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}
