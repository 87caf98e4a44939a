package testtables

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Plain returns a dictionary array of strings or binaries as the plain
// array of its values (nulls where it has them), and any other array as
// it is, retained: for comparing what a decoder returns as dictionaries
// with what another returns plain. The caller releases the result.
func Plain(a arrow.Array) (arrow.Array, error) {
	d, ok := a.(*array.Dictionary)
	if !ok {
		a.Retain()
		return a, nil
	}
	b := array.NewBuilder(memory.DefaultAllocator, d.Dictionary().DataType())
	defer b.Release()
	for i := range d.Len() {
		if d.IsNull(i) {
			b.AppendNull()
			continue
		}
		switch v := d.Dictionary().(type) {
		case *array.String:
			b.(*array.StringBuilder).Append(v.Value(d.GetValueIndex(i)))
		case *array.Binary:
			b.(*array.BinaryBuilder).Append(v.Value(d.GetValueIndex(i)))
		default:
			return nil, fmt.Errorf("testtables: a dictionary of %s", v.DataType())
		}
	}
	return b.NewArray(), nil
}
