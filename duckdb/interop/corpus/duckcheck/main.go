// Command duckcheck seals every Parquet file of a copy of Apache
// parquet-testing byte for byte (writer.SealFile, as sop-pme import does
// first) and asks DuckDB 1.5.6, given only each object's DEK, to read it:
// SOP-PME-1 Section 11.3 says an object is "readable by any conforming
// reader holding only the object's DEK". For each file it prints whether
// the sealer took it (or why not), whether DuckDB reads the object, and
// whether what it reads equals what it reads from the file. Nothing is
// written outside the temporary directory it makes.
//
//	cd duckdb && go run ./interop/corpus/duckcheck /path/to/parquet-testing
//
// (make corpus runs it with run.py.)
package main

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" driver
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/writer"
)

type result struct {
	File     string `json:"file"`
	Sealed   bool   `json:"sealed"`
	Refused  string `json:"refused,omitempty"` // why the sealer did not take it
	FileRead string `json:"file_read"`         // "ok" or DuckDB's error reading the plaintext file
	ObjRead  string `json:"object_read"`       // "ok" or DuckDB's error reading the object with its DEK
	Equal    *bool  `json:"equal,omitempty"`   // the object's rows equal the file's, as DuckDB reads both
	Rows     int    `json:"rows,omitempty"`
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: duckcheck PARQUET-TESTING-DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "duckcheck:", err)
		os.Exit(1)
	}
}

func run(corpus string) error {
	tmp, err := os.MkdirTemp("", "duckcheck")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	st, err := blobs.CreateDir(filepath.Join(tmp, "store"))
	if err != nil {
		return err
	}
	var files []string
	err = filepath.WalkDir(corpus, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(files)
	var sealed, objOK, equal, compared int
	enc := json.NewEncoder(os.Stdout)
	for _, p := range files {
		rel, _ := filepath.Rel(corpus, p)
		r := result{File: rel}
		obj, path, err := seal(st, filepath.Join(tmp, "store"), p)
		if err != nil {
			r.Refused = oneLine(err)
		} else {
			r.Sealed = true
			sealed++
		}
		want, ferr := duckRows(p, "")
		r.FileRead = status(ferr)
		if r.Sealed {
			key := base64.StdEncoding.EncodeToString(obj.DEK.Bytes())
			got, oerr := duckRows(path, ducktest.FooterKeyValue(key))
			r.ObjRead = status(oerr)
			if oerr == nil {
				objOK++
				r.Rows = len(got)
				if ferr == nil {
					eq := slices.Equal(want, got)
					r.Equal = &eq
					compared++
					if eq {
						equal++
					}
				}
			}
			os.Remove(path)
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return enc.Encode(map[string]int{"files": len(files), "sealed": sealed, "duckdb_reads_object": objOK,
		"compared": compared, "equal_to_duckdb_file_read": equal})
}

// seal seals the file at p into st, and returns the object and its file.
func seal(st *blobs.Dir, dir, p string) (writer.Object, string, error) {
	f, err := os.Open(p)
	if err != nil {
		return writer.Object{}, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return writer.Object{}, "", err
	}
	obj, err := writer.SealFile(context.Background(), st, f, fi.Size(), writer.WithAssignFieldIDs())
	if err != nil {
		return writer.Object{}, "", err
	}
	return obj, filepath.Join(dir, obj.StorageID.String()+".data"), nil
}

// duckRows reads every row of a Parquet file with DuckDB, in file order,
// every column as text (DuckDB's Go driver does not scan every type), in a
// fresh database (an INTERNAL error poisons a DuckDB database).
func duckRows(path, encryption string) ([]string, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if encryption != "" {
		encryption = ", encryption_config = " + encryption
	}
	q := "SELECT COLUMNS(* EXCLUDE (file_row_number))::VARCHAR FROM read_parquet(" + ducktest.SQLString(path) + encryption +
		", file_row_number = true) ORDER BY file_row_number"
	_, rows, err := ducktest.Query(db, q)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, row := range rows {
		out[i] = fmt.Sprintf("%#v", row) // a NULL (nil) apart from any text
	}
	return out, nil
}

func status(err error) string {
	if err == nil {
		return "ok"
	}
	return oneLine(err)
}

func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
