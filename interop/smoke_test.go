package interop

import (
	"context"
	"database/sql"
	"encoding/base64"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	_ "github.com/duckdb/duckdb-go/v2"
	"github.com/sovm/sop-pme/writer"
)

func fid(id int) arrow.Metadata {
	return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})
}

func TestDuckDBSmoke(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "a", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: fid(2)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := 0; i < 1000; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("v" + strconv.Itoa(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	st := &fileStore{dir: t.TempDir()}
	w, err := writer.New(st, schema, writer.WithRowGroupRows(300))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	obj, err := w.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(st.dir, obj.StorageID.String()+".parquet")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("PRAGMA add_parquet_key('k', '" + base64.StdEncoding.EncodeToString(obj.DEK.Bytes()) + "')"); err != nil {
		t.Fatal(err)
	}
	var n, sum int64
	var mx string
	if err := db.QueryRow("SELECT count(*), sum(a), max(s) FROM read_parquet('"+path+"', encryption_config = {footer_key: 'k'})").Scan(&n, &sum, &mx); err != nil {
		t.Fatal(err)
	}
	t.Logf("n=%d sum=%d max=%s", n, sum, mx)
	if n != 1000 || sum != 999*1000/2 {
		t.Fatalf("got n=%d sum=%d", n, sum)
	}
	_ = os.Remove(path)
}
