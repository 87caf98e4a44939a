package interop

import (
	"bytes"
	"context"
	"database/sql"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/testtables"
	"github.com/sovm/sop-pme/reader"
)

// describe returns the DuckDB type of each column DuckDB reads from the
// Parquet file at path (encryptionConfig "" for a plaintext file).
func describe(t *testing.T, db *sql.DB, path, encryptionConfig string) map[string]string {
	t.Helper()
	from := "read_parquet(" + ducktest.SQLString(path) + ")"
	if encryptionConfig != "" {
		from = "read_parquet(" + ducktest.SQLString(path) + ", encryption_config = " + encryptionConfig + ")"
	}
	out := map[string]string{}
	for _, row := range ducktest.MustQuery(t, db, "DESCRIBE SELECT * FROM "+from) {
		out[row[0].(string)] = row[1].(string)
	}
	return out
}

// TestDuckDBTypesKept (issue 14, section 9): DuckDB reads the INT96,
// legacy TIMESTAMP_MICROS, GEOMETRY and GEOGRAPHY columns of a file, of the
// object it is sealed into (with the DEK), and of the Parquet file the
// reader's rows are written back to (what export does) in the same types:
// TIMESTAMP, not TIMESTAMP WITH TIME ZONE; GEOMETRY, not BLOB.
func TestDuckDBTypesKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	files := map[string][]byte{
		"timestamps": testtables.Timestamps([]parquet.Int96{
			testtables.Int96(testtables.Int96Epoch+19_000, 0),
			testtables.Int96(testtables.Int96Epoch+2_932_896, 0), // 9999-12-31
		}),
		"geospatial": testtables.Geospatial(),
	}
	for name, b := range files {
		t.Run(name, func(t *testing.T) {
			db := ducktest.OpenDuckDB(t)
			in := filepath.Join(dir, name+".parquet")
			if err := os.WriteFile(in, b, 0o600); err != nil {
				t.Fatal(err)
			}
			want := describe(t, db, in, "")
			st := ducktest.NewStore(t)
			obj, err := sealPath(t, st, in)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(t, db, obj.path, ducktest.FooterKeyValue(keyBase64(obj))); !maps.Equal(got, want) {
				t.Errorf("the sealed object: %v, the file: %v", got, want)
			}
			r, err := reader.Open(ctx, st, obj.StorageID, ducktest.Keys{obj.StorageID: obj.DEK})
			if err != nil {
				t.Fatal(err)
			}
			rr, err := r.Scan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer rr.Release()
			var buf bytes.Buffer
			w, err := pqarrow.NewFileWriter(rr.Schema(), &buf, nil, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema(), pqarrow.WithAllocator(memory.DefaultAllocator)))
			if err != nil {
				t.Fatal(err)
			}
			for rr.Next() {
				if err := w.Write(rr.RecordBatch()); err != nil {
					t.Fatal(err)
				}
			}
			if err := rr.Err(); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, name+".out.parquet")
			if err := os.WriteFile(out, buf.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			if got := describe(t, db, out, ""); !maps.Equal(got, want) {
				t.Errorf("written back from the reader: %v, the file: %v", got, want)
			}
			t.Logf("DuckDB reads %v", want)
		})
	}
}
