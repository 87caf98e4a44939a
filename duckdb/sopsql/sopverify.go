package sopsql

import (
	"context"
	"fmt"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/reader"
)

// This file is the sop_verify table function (see Register).

func (fn *functions) bindVerify(ctx context.Context, _ map[string]any, args ...any) (_ duckdb.RowTableSource, err error) {
	sink := sinkFrom(ctx)
	defer func() { sink.add(err) }()
	if len(args) != 1 {
		return nil, fmt.Errorf("%w: %d arguments", ErrArgument, len(args))
	}
	r, err := fn.open(ctx, args[0])
	if err != nil {
		return nil, err
	}
	// The whole object is checked here, at bind time, so that a failure
	// fails the query before it starts.
	if err := r.Verify(ctx); err != nil {
		return nil, fmt.Errorf("sopsql: verifying %s: %w", r.ID(), err)
	}
	if !r.Verified() {
		return nil, fmt.Errorf("sopsql: internal error: %s not verified after Verify", r.ID())
	}
	return &verifySource{r: r}, nil
}

// verifySource is the one row of sop_verify.
type verifySource struct {
	r    *reader.Reader
	done bool
}

func (v *verifySource) ColumnInfos() []duckdb.ColumnInfo {
	return []duckdb.ColumnInfo{
		{Name: "storage_id", T: typeInfo(duckdb.TYPE_VARCHAR)},
		{Name: "size", T: typeInfo(duckdb.TYPE_BIGINT)},
		{Name: "verified", T: typeInfo(duckdb.TYPE_BOOLEAN)},
	}
}

func (v *verifySource) Cardinality() *duckdb.CardinalityInfo {
	return &duckdb.CardinalityInfo{Cardinality: 1, Exact: true}
}

func (v *verifySource) Init() {}

func (v *verifySource) FillRow(row duckdb.Row) (bool, error) {
	if v.done {
		return false, nil
	}
	v.done = true
	for i, val := range []any{v.r.ID().String(), v.r.Size(), v.r.Verified()} {
		if err := duckdb.SetRowValue(row, i, val); err != nil {
			return false, err
		}
	}
	return true, nil
}
