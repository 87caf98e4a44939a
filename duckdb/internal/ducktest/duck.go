package ducktest

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/writer"
)

// OpenDuckDB opens a fresh in-memory DuckDB database, closed when t ends:
// DuckDB itself, without sop_scan and without the lock-down of sopsql.Open.
func OpenDuckDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatalf("opening DuckDB: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// OpenWriter is OpenDuckDB for a database that writes encrypted Parquet:
// DuckDB 1.5.x needs SET force_mbedtls_unsafe for that (or its httpfs
// extension).
func OpenWriter(t testing.TB) *sql.DB {
	t.Helper()
	db := OpenDuckDB(t)
	Exec(t, db, "SET force_mbedtls_unsafe = 'true'")
	return db
}

// Exec runs statements on db, and fails t with DuckDB's message if one
// fails.
func Exec(t testing.TB, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s\n%s", q, ErrorText(err))
		}
	}
}

// Query runs q on db and returns the names of its columns and its rows,
// every value as duckdb-go scans it (nil for NULL).
func Query(db *sql.DB, q string) ([]string, [][]any, error) {
	rows, err := db.Query(q)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	var out [][]any
	for rows.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		out = append(out, row)
	}
	return cols, out, rows.Err()
}

// MustQuery is Query for queries that must succeed; it returns the rows.
func MustQuery(t testing.TB, db *sql.DB, q string) [][]any {
	t.Helper()
	_, rows, err := Query(db, q)
	if err != nil {
		t.Fatalf("%s\n%s", q, ErrorText(err))
	}
	return rows
}

// ErrorText returns DuckDB's message without the SQL excerpt and stack
// trace it appends.
func ErrorText(err error) string {
	s := err.Error()
	for _, cut := range []string{"\nStack Trace:", "\nLINE 1:"} {
		s, _, _ = strings.Cut(s, cut)
	}
	return strings.TrimSpace(s)
}

// SQLString quotes s as a SQL string literal.
func SQLString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// FooterKeyValue is the encryption_config that gives DuckDB a key itself,
// from its base64 form. DuckDB casts footer_key_value to BLOB and uses those
// bytes as the AES key as they are: unlike PRAGMA add_parquet_key it does
// not base64-decode a string (a base64 string gives "Invalid AES key length
// for GCM"), so the SQL decodes it with from_base64; a binary key cannot
// travel raw in a SQL string literal.
func FooterKeyValue(keyBase64 string) string {
	return "{footer_key_value: from_base64(" + SQLString(keyBase64) + ")}"
}

// CopyEncrypted has DuckDB (a database from OpenWriter) COPY the rows of
// query to an encrypted Parquet file in a temporary directory of t's, with
// the encryption_config config and the further COPY options opts (may be
// empty), and returns the file's path.
func CopyEncrypted(t testing.TB, db *sql.DB, query, config, opts string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "duckdb.parquet")
	copyOpts := "ENCRYPTION_CONFIG " + config
	if opts != "" {
		copyOpts += ", " + opts
	}
	Exec(t, db, "COPY ("+query+") TO "+SQLString(path)+" ("+copyOpts+")")
	return path
}

// FieldIDs returns the COPY option FIELD_IDS that gives DuckDB the Parquet
// field IDs fields carry, nested ones included, followed by the entries
// more ("name: id").
func FieldIDs(fields []arrow.Field, more ...string) string {
	parts := make([]string, 0, len(fields)+len(more))
	for _, f := range fields {
		parts = append(parts, f.Name+": "+fieldID(f))
	}
	return "FIELD_IDS {" + strings.Join(append(parts, more...), ", ") + "}"
}

func fieldID(f arrow.Field) string {
	id, _ := f.Metadata.GetValue(writer.FieldIDKey)
	switch dt := f.Type.(type) {
	case *arrow.MapType:
		return fmt.Sprintf("{__duckdb_field_id: %s, key: %s, value: %s}", id, fieldID(dt.KeyField()), fieldID(dt.ItemField()))
	case *arrow.ListType:
		return fmt.Sprintf("{__duckdb_field_id: %s, element: %s}", id, fieldID(dt.ElemField()))
	case *arrow.StructType:
		parts := []string{"__duckdb_field_id: " + id}
		for _, c := range dt.Fields() {
			parts = append(parts, c.Name+": "+fieldID(c))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return id
}

// Columns returns the named fields of the type coverage table
// (testtables.AllTypes), in that order.
func Columns(names ...string) []arrow.Field {
	schema := testtables.AllTypes()
	out := make([]arrow.Field, len(names))
	for i, n := range names {
		idx := schema.FieldIndices(n)
		if len(idx) != 1 {
			panic("ducktest: no column " + n)
		}
		out[i] = schema.Field(idx[0])
	}
	return out
}

// FlatColumns returns the names of the flat columns of the type coverage
// table that DuckDB writes as it reads them.
func FlatColumns() []string {
	return []string{"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64",
		"dec9", "dec18", "dec38", "b", "s", "bin", "d", "ts_ms", "ts_us", "ts_ns", "tstz_ms", "tstz_us", "tstz_ns"}
}

// NestedColumns returns the names of the nested columns of the type
// coverage table, after i64.
func NestedColumns() []string { return []string{"i64", "l_i64", "l_s", "st", "m"} }
