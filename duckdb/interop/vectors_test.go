package interop

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/internal/testkit/memstore"
	"github.com/sovm/sop-pme/internal/testkit/vectors"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
)

var update = flag.Bool("update", false, "rewrite the duckdb-* vectors in "+vectorDir)

// vectorDir is testdata/vectors at the root of the repository.
const vectorDir = "../../testdata/vectors"

// duckVector is one DuckDB-written file of the test vectors.
type duckVector struct {
	name     string
	cols     []string
	keyLen   int
	opts     string
	fieldIDs bool
	comment  string
}

var duckVectors = []duckVector{
	{name: "flat", cols: ducktest.FlatColumns(), keyLen: 32, fieldIDs: true, comment: "every flat type, FIELD_IDS, a 32-byte key"},
	{name: "nested", cols: ducktest.NestedColumns(), keyLen: 32, fieldIDs: true, comment: "lists, a struct and a map, FIELD_IDS"},
	{name: "row-groups", cols: []string{"i64", "s", "l_i64"}, keyLen: 32, opts: "ROW_GROUP_SIZE 2048", fieldIDs: true, comment: "three row groups"},
	{name: "no-field-ids", cols: ducktest.FlatColumns(), keyLen: 32, comment: "no FIELD_IDS: no field IDs in the schema"},
	{name: "key-16", cols: []string{"i32", "s", "tstz_us"}, keyLen: 16, fieldIDs: true, comment: "a 16-byte key (AES-128)"},
	{name: "key-24", cols: []string{"i32", "s", "tstz_us"}, keyLen: 24, fieldIDs: true, comment: "a 24-byte key (AES-192)"},
	{name: "gzip", cols: []string{"i64", "f64", "s", "dec18"}, keyLen: 32, opts: "COMPRESSION gzip", fieldIDs: true, comment: "gzip"},
	{name: "brotli", cols: []string{"i64", "f64", "s", "dec18"}, keyLen: 32, opts: "COMPRESSION brotli", fieldIDs: true, comment: "brotli"},
	{name: "lz4", cols: []string{"i64", "f64", "s", "dec18"}, keyLen: 32, opts: "COMPRESSION lz4", fieldIDs: true, comment: "lz4 (LZ4_RAW)"},
	{name: "uncompressed", cols: []string{"i64", "f64", "s", "dec18"}, keyLen: 32, opts: "COMPRESSION uncompressed", fieldIDs: true, comment: "uncompressed"},
}

// TestDuckDBVectors keeps the duckdb-* test vectors: encrypted Parquet
// files that DuckDB 1.5.6 wrote (empty AAD, as SOP-PME-1 reads; no key_ref,
// no padding, so not SOP-PME-1 objects). With -update it has DuckDB write
// them anew; our reader's rows, compared value by value with DuckDB's own
// read, become the expected rows, and reader.Check's findings (those
// checkDuckDBReport allows) the expected findings. Without -update it
// checks that DuckDB still reads every committed file with its DEK and
// returns, value by value, what our reader returns; reader/vectors_test.go
// checks our reader against the committed rows.
func TestDuckDBVectors(t *testing.T) {
	t.Parallel()
	if *update {
		writeDuckDBVectors(t)
	}
	vs, err := vectors.Load(os.DirFS(filepath.Dir(vectorDir)), filepath.Base(vectorDir))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := range vs {
		v := &vs[i]
		if !strings.HasPrefix(v.Name, "duckdb-") {
			continue
		}
		n++
		t.Run(v.Name, func(t *testing.T) {
			d := newDuckDB(t)
			dek, err := pme.DEKFromBytes(v.DEK)
			if err != nil {
				t.Fatal(err)
			}
			id, data := d.st.Import(t, v.Object, dek), v.Object
			if id != v.ID {
				t.Fatalf("the vector's bytes hash to %v, its storage_id is %v", id, v.ID)
			}
			f := duckFile{id: id, path: d.st.Path(id), data: data, dek: dek, config: d.keyConfig(t, v.DEK)}
			rec := mustScan(t, openReader(t, d.st, id, dek))
			defer rec.Release()
			d.checkAgainstDuckDB(t, f, rec)
			if err := v.Match(vectors.Run(context.Background(), v)); err != nil {
				t.Fatal(err)
			}
		})
	}
	if n != len(duckVectors) {
		t.Errorf("%d duckdb-* vectors, want %d (run with -update)", n, len(duckVectors))
	}
}

func writeDuckDBVectors(t *testing.T) {
	old, _ := filepath.Glob(filepath.Join(vectorDir, "duckdb-*"))
	for _, p := range old {
		os.Remove(p)
	}
	d := newDuck(t, 4200, 31)
	for _, c := range duckVectors {
		fields := ducktest.Columns(c.cols...)
		opts := c.opts
		if c.fieldIDs {
			opts = strings.TrimPrefix(opts+", "+ducktest.FieldIDs(fields), ", ")
		}
		rows := "LIMIT 120"
		if strings.Contains(opts, "ROW_GROUP_SIZE") {
			rows = "" // 4200 rows: three row groups of 2048 rows or fewer
		}
		f := d.write(t, "SELECT "+strings.Join(c.cols, ", ")+" FROM src "+rows, newKey(t, c.keyLen), opts)
		rec := mustScan(t, openReader(t, d.st, f.id, f.dek))
		d.checkAgainstDuckDB(t, f, rec)
		checkDuckDBReport(t, d.st, f, c.fieldIDs)
		text, err := vectors.RowsJSON(nil, rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		id, ob := memstore.Outboard(f.data)
		if id != f.id {
			t.Fatalf("storage_id %v, the store says %v", id, f.id)
		}
		// Without a pad entry there is no unpadded size, so the padded size
		// fails too, whatever the file's size.
		fails := []string{reader.ReqKeyRef.String(), reader.ReqPadEntry.String(), reader.ReqPaddedSize.String()}
		if !c.fieldIDs {
			fails = append(fails, reader.ReqFieldIDs.String())
		}
		v := vectors.Vector{
			Name: "duckdb-" + c.name, ID: f.id, DEK: f.dek.Bytes(), Object: f.data, Outboard: ob, Rows: text,
			Check:   vectors.CheckOutcome{Fails: fails},
			Rule:    "11.3: an encrypted Parquet file as DuckDB 1.5.6 writes it (empty AAD) is readable with its DEK alone; it is not a SOP-PME-1 object",
			Comment: "DuckDB COPY ... (ENCRYPTION_CONFIG ...): " + c.comment,
		}
		if err := v.Match(vectors.Run(context.Background(), &v)); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		for name, b := range v.Files() {
			if err := os.WriteFile(filepath.Join(vectorDir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
