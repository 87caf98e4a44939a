package sopsql

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
)

// scanMacro defines sop_scan, with its named arguments, as a table macro
// over the table function of the same name that Register installs in
// DuckDB's system catalog (system.main.sop_scan): a TEMP macro comes first
// in name lookup, so a query's sop_scan is the macro, and every message and
// plan names sop_scan. The macro lives in the connection, not in the
// database, so that it is never written into a database file.
//
// duckdb-go v2.10506.0 fails the bind of a table function when a named
// argument is left out ("unsupported data type: INVALID"; duckdb/duckdb-go
// pull request 130, open) and cannot read a LIST argument: hence the macro.
// It hands the function each argument as text (CAST ... AS VARCHAR, which
// every DuckDB type has) with its type (typeof), so that the function sees
// six VARCHARs whatever the query passed, and checks the types itself with
// ErrArgument: no argument fails in DuckDB's binder on a signature the user
// never wrote.
const scanMacro = `CREATE OR REPLACE TEMP MACRO ` + ScanFunction + `(storage_id, row_groups := NULL, batch_size := NULL) AS TABLE
	SELECT * FROM system.main.` + ScanFunction + `(CAST(storage_id AS VARCHAR), typeof(storage_id),
		CAST(row_groups AS VARCHAR), typeof(row_groups), CAST(batch_size AS VARCHAR), typeof(batch_size))`

// open parses a storage_id argument (nil for NULL) and opens the object.
func (fn *functions) open(ctx context.Context, arg any) (*reader.Reader, error) {
	if arg == nil {
		return nil, fmt.Errorf("%w: storage_id is NULL", ErrArgument)
	}
	s, ok := arg.(string)
	if !ok {
		return nil, fmt.Errorf("%w: storage_id must be a string", ErrArgument)
	}
	id, err := storageid.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: storage_id %q: %w", ErrArgument, s, err)
	}
	return reader.Open(ctx, fn.src, id, fn.keys, fn.readerOpts...)
}

// A scanArg is an argument of sop_scan as the macro passes it: its text
// (CAST AS VARCHAR) and its DuckDB type (typeof).
type scanArg struct {
	name string
	text *string // nil: NULL
	typ  string
}

// scanArgs reads the six arguments of the table function sop_scan.
func scanArgs(args []any) ([3]scanArg, error) {
	out := [3]scanArg{{name: "storage_id"}, {name: "row_groups"}, {name: "batch_size"}}
	if len(args) != 2*len(out) {
		return out, fmt.Errorf("%w: %d arguments", ErrArgument, len(args))
	}
	for i := range out {
		switch v := args[2*i].(type) {
		case nil:
		case string:
			out[i].text = &v
		default:
			return out, fmt.Errorf("%w: %s is a %T", ErrArgument, out[i].name, v)
		}
		out[i].typ, _ = args[2*i+1].(string)
	}
	return out, nil
}

// integerType matches the DuckDB integer types, and integerList lists and
// arrays of them, as typeof names them.
var (
	integerType = regexp.MustCompile(`^U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)$`)
	integerList = regexp.MustCompile(`^U?(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT)\[\d*\]$`)
)

// rowGroups parses the row_groups argument as the macro passes it: a list
// cast to VARCHAR, such as "[0, 2]", or, when given is false, every row
// group.
func rowGroups(arg string, n int, given bool) ([]int, error) {
	if !given {
		rgs := make([]int, n)
		for i := range rgs {
			rgs[i] = i
		}
		return rgs, nil
	}
	list, open := strings.CutPrefix(arg, "[")
	list, closed := strings.CutSuffix(list, "]")
	if !open || !closed || strings.TrimSpace(list) == "" {
		return nil, fmt.Errorf("%w: row_groups %s: want a non-empty list of row group indices", ErrArgument, arg)
	}
	var rgs []int
	for _, v := range strings.Split(list, ",") {
		v = strings.TrimSpace(v)
		i, err := strconv.ParseInt(v, 10, 64)
		if err != nil || i < 0 || i >= int64(n) {
			return nil, fmt.Errorf("%w: row group %s: the object has %d row groups", ErrArgument, v, n)
		}
		if slices.Contains(rgs, int(i)) {
			return nil, fmt.Errorf("%w: row group %d given twice", ErrArgument, i)
		}
		rgs = append(rgs, int(i))
	}
	return rgs, nil
}
