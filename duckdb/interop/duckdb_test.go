package interop

import (
	"database/sql"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
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
func writeObject(t *testing.T, st *ducktest.Store, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...writer.Option) object {
	t.Helper()
	obj := checkStored(t, st, st.Write(t, schema, recs, opts...))
	target, err := padme.Target(obj.UnpaddedSize)
	if err != nil {
		t.Fatalf("padme.Target(%d): %v", obj.UnpaddedSize, err)
	}
	if obj.Size != target {
		t.Fatalf("file size and obj.Size %d, padme.Target(obj.UnpaddedSize = %d) = %d: all three must be equal",
			obj.Size, obj.UnpaddedSize, target)
	}
	if id := storageid.Sum(obj.data); id != obj.StorageID {
		t.Fatalf("stored bytes hash to %v, obj.StorageID is %v", id, obj.StorageID)
	}
	return obj
}

// keyBase64 returns the object's DEK in base64: the 32-byte binary key
// cannot travel raw in a SQL string literal.
func keyBase64(obj object) string { return base64Std(obj.DEK.Bytes()) }

func base64Std(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// readAll reads every column of schema from the Parquet file at path with
// DuckDB's read_parquet and the given encryption_config, in file row order.
func readAll(db *sql.DB, path, encryptionConfig string, schema *arrow.Schema) ([][]any, error) {
	cols := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		cols[i] = `"` + f.Name + `"`
	}
	q := fmt.Sprintf("SELECT %s FROM read_parquet(%s, encryption_config = %s, file_row_number = true) ORDER BY file_row_number",
		strings.Join(cols, ", "), ducktest.SQLString(path), encryptionConfig)
	_, rows, err := ducktest.Query(db, q)
	return rows, err
}

// checkDuckDB reads obj with DuckDB, given only its DEK, and checks that
// every value equals what recs hold.
func checkDuckDB(t *testing.T, obj object, rec arrow.RecordBatch) {
	t.Helper()
	got, err := readAll(ducktest.OpenDuckDB(t), obj.path, ducktest.FooterKeyValue(keyBase64(obj)), rec.Schema())
	if err != nil {
		t.Fatalf("DuckDB read_parquet: %s", ducktest.ErrorText(err))
	}
	compareRows(t, rec, got)
}
