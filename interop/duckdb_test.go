package interop

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/writer"
)

// object is a published object as the test found it in the store.
type object struct {
	writer.Object
	path string // the store's file, which DuckDB reads
	data []byte // the store's bytes
}

// writeObject writes recs as one object into st and checks what every object
// must satisfy: the store holds exactly obj.Size bytes, whose BLAKE3 root is
// obj.StorageID, and obj.Size == padme.Target(obj.UnpaddedSize) (Section
// 11.8); and reader.Check reports it conformant.
func writeObject(t *testing.T, st *store, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...writer.Option) object {
	t.Helper()
	w, err := writer.New(context.Background(), st, schema, opts...)
	if err != nil {
		t.Fatalf("writer.New: %v", err)
	}
	for _, rec := range recs {
		if err := w.Write(rec); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		t.Fatalf("Close: %v", err)
	}
	path := st.path(obj.StorageID)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the stored object: %v", err)
	}
	target, err := padme.Target(obj.UnpaddedSize)
	if err != nil {
		t.Fatalf("padme.Target(%d): %v", obj.UnpaddedSize, err)
	}
	if uint64(len(data)) != obj.Size || obj.Size != target {
		t.Fatalf("file size %d, obj.Size %d, padme.Target(obj.UnpaddedSize = %d) = %d: all three must be equal",
			len(data), obj.Size, obj.UnpaddedSize, target)
	}
	if id := storageid.Sum(data); id != obj.StorageID {
		t.Fatalf("stored bytes hash to %v, obj.StorageID is %v", id, obj.StorageID)
	}
	checkConformant(t, st, obj)
	return object{Object: obj, path: path, data: data}
}

// openDB opens a fresh in-memory DuckDB database. Every negative case gets
// its own: an INTERNAL error poisons a DuckDB database for later queries.
func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatalf("opening DuckDB: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// sqlString quotes s as a SQL string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// keyBase64 returns the object's DEK in base64: the 32-byte binary key
// cannot travel raw in a SQL string literal.
func keyBase64(obj object) string { return base64Std(obj.DEK.Bytes()) }

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// footerKeyValue is the encryption_config that gives DuckDB the key itself,
// from its base64 form. DuckDB casts footer_key_value to BLOB and uses those
// bytes as the AES key as they are: unlike PRAGMA add_parquet_key it does not
// base64-decode a string (a base64 string gives "Invalid AES key length for
// GCM"; see TestDuckDBKeys), so the SQL decodes it with from_base64.
func footerKeyValue(key string) string {
	return "{footer_key_value: from_base64(" + sqlString(key) + ")}"
}

// readAll reads every column of schema from the Parquet file at path with
// DuckDB's read_parquet and the given encryption_config, in file row order.
func readAll(db *sql.DB, path, encryptionConfig string, schema *arrow.Schema) ([][]any, error) {
	cols := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = `"` + f.Name + `"`
	}
	q := fmt.Sprintf("SELECT %s FROM read_parquet(%s, encryption_config = %s, file_row_number = true) ORDER BY file_row_number",
		strings.Join(cols, ", "), sqlString(path), encryptionConfig)
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		row := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// checkDuckDB reads obj with DuckDB, given only its DEK, and checks that
// every value equals what recs hold.
func checkDuckDB(t *testing.T, obj object, rec arrow.RecordBatch) {
	t.Helper()
	got, err := readAll(openDB(t), obj.path, footerKeyValue(keyBase64(obj)), rec.Schema())
	if err != nil {
		t.Fatalf("DuckDB read_parquet: %s", duckError(err))
	}
	compareRows(t, rec, got)
}
