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
func (fn *functions) open(ctx context.Context, arg any, opts ...reader.Option) (*reader.Reader, error) {
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
	// The caller's options come last: theirs win.
	return reader.Open(ctx, fn.src, id, fn.keys, append(opts, fn.readerOpts...)...)
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

// scanParams are the arguments of sop_scan, checked.
type scanParams struct {
	id        any     // the storage_id's text, or nil for NULL
	rowGroups *string // the list's text, or nil for every row group
	batch     int64   // 0: the reader's default
}

// parseScanArgs checks the six arguments of the table function sop_scan:
// storage_id a string, row_groups a list of integers, batch_size an
// integer from 0; NULL row_groups and batch_size are the defaults. Every
// error is ErrArgument, and names the argument and its type.
func parseScanArgs(args []any) (scanParams, error) {
	var p scanParams
	a, err := scanArgs(args)
	if err != nil {
		return p, err
	}
	id, rgs, batch := a[0], a[1], a[2]
	if id.text != nil {
		if id.typ != "VARCHAR" {
			return p, fmt.Errorf("%w: storage_id is of type %s, want a string (VARCHAR)", ErrArgument, id.typ)
		}
		p.id = *id.text
	}
	if rgs.text != nil && !integerList.MatchString(rgs.typ) {
		return p, fmt.Errorf("%w: row_groups is of type %s, want a non-empty list of row group indices, such as [0, 2]", ErrArgument, rgs.typ)
	}
	p.rowGroups = rgs.text
	if batch.text != nil {
		if !integerType.MatchString(batch.typ) {
			return p, fmt.Errorf("%w: batch_size is of type %s, want an integer", ErrArgument, batch.typ)
		}
		if p.batch, err = strconv.ParseInt(*batch.text, 10, 64); err != nil || p.batch < 0 {
			return p, fmt.Errorf("%w: batch_size %s: want 0 (the reader's default) or more rows", ErrArgument, *batch.text)
		}
	}
	return p, nil
}

// rowGroupList returns the row groups to read of an object of n.
func (p scanParams) rowGroupList(n int) ([]int, error) {
	if p.rowGroups == nil {
		return rowGroups("", n, false)
	}
	return rowGroups(*p.rowGroups, n, true)
}

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
