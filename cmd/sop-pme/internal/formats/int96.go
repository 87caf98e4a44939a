package formats

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/internal/pqtypes"
)

// CheckInt96 reads the INT96 columns of the Parquet file at path, if it
// has any, as package reader reads them once the file is sealed (at
// microseconds, as DuckDB does: package pqtypes), and returns an error
// matching ErrFormat and pqtypes.ErrInt96 if a value does not fit: import
// refuses such a file rather than acknowledge an object that no read could
// return. A file without INT96 columns is not read beyond its footer.
func CheckInt96(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	props := parquet.NewReaderProperties(newBoundedAlloc(memory.DefaultAllocator, fi.Size(), 0))
	props.BufferedStreamEnabled = true
	props.BufferSize = 1 << 20
	pf, err := file.NewParquetReader(f, file.WithReadProps(props))
	if err != nil {
		return nil // not a Parquet file this check reads: the sealer decides
	}
	defer pf.Close()
	sc := pf.MetaData().Schema
	var cols []int
	for i := range sc.NumColumns() {
		if sc.Column(i).PhysicalType() == parquet.Types.Int96 {
			cols = append(cols, i)
		}
	}
	if len(cols) == 0 {
		return nil
	}
	return unlessPanic(func() error {
		// The unit the reader reads in: the stored Arrow schema's, if any.
		stored := takeArrowSchema(pf)
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 16}, memory.DefaultAllocator)
		if err != nil {
			return nil
		}
		fields, _ := pqtypes.Apply(sc, fr.Manifest, stored)
		rr, err := fr.GetRecordReader(ctx, cols, nil)
		if err != nil {
			return nil
		}
		r := pqtypes.NewRecordReader(rr, fields)
		defer r.Release()
		for r.Next() {
		}
		if err := r.Err(); errors.Is(err, pqtypes.ErrInt96) {
			return fmt.Errorf("%w: %w (beyond what a reader can return: not imported)", ErrFormat, err)
		}
		return nil
	})
}

// unlessPanic runs f, turning a panic of arrow-go's reader into no error:
// the check concerns INT96 values only, and the sealer judges the rest.
func unlessPanic(f func() error) (err error) {
	defer func() {
		if recover() != nil {
			err = nil
		}
	}()
	return f()
}
