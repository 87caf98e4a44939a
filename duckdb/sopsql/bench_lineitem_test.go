package sopsql

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sovm/sop-pme/duckdb/internal/ducktest"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// lineitemSQL makes n rows shaped like TPC-H's lineitem as tpchgen-cli
// writes it: decimals as DECIMAL(15,2) (INT64 in Parquet), dates as DATE
// (INT32), flags, modes and comments as strings. The values are
// deterministic, not TPC-H's.
const lineitemSQL = `SELECT i AS l_orderkey,
	(i %% 200000 + 1)::BIGINT AS l_partkey,
	(i %% 7 + 1)::INTEGER AS l_linenumber,
	((i * 7 %% 50) + 1)::DECIMAL(15,2) AS l_quantity,
	((i * 7919 %% 10000000) / 100 + 900)::DECIMAL(15,2) AS l_extendedprice,
	((i * 13 %% 11) / 100)::DECIMAL(15,2) AS l_discount,
	((i * 17 %% 9) / 100)::DECIMAL(15,2) AS l_tax,
	CASE i %% 3 WHEN 0 THEN 'R' WHEN 1 THEN 'A' ELSE 'N' END AS l_returnflag,
	CASE i %% 2 WHEN 0 THEN 'O' ELSE 'F' END AS l_linestatus,
	(DATE '1992-01-02' + (i * 31 %% 2526)::INTEGER) AS l_shipdate,
	(DATE '1992-01-31' + (i * 37 %% 2526)::INTEGER) AS l_commitdate,
	(DATE '1992-01-03' + (i * 41 %% 2526)::INTEGER) AS l_receiptdate,
	['DELIVER IN PERSON', 'COLLECT COD', 'NONE', 'TAKE BACK RETURN'][i %% 4 + 1] AS l_shipinstruct,
	['REG AIR', 'AIR', 'RAIL', 'SHIP', 'TRUCK', 'MAIL', 'FOB'][i %% 7 + 1] AS l_shipmode,
	'comment ' || (i * 104729 %% 1000003)::VARCHAR AS l_comment
	FROM range(%d) t(i)`

var lineitemColumns = []string{"l_orderkey", "l_partkey", "l_linenumber", "l_quantity", "l_extendedprice", "l_discount", "l_tax",
	"l_returnflag", "l_linestatus", "l_shipdate", "l_commitdate", "l_receiptdate", "l_shipinstruct", "l_shipmode", "l_comment"}

// lineitemQueries are TPC-H's Q1 and Q6, and a projection of every column.
var lineitemQueries = []struct{ name, sql string }{
	{"Q1", `SELECT l_returnflag, l_linestatus, sum(l_quantity), sum(l_extendedprice),
		sum(l_extendedprice * (1 - l_discount)), sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)),
		avg(l_quantity), avg(l_extendedprice), avg(l_discount), count(*)
		FROM %s WHERE l_shipdate <= DATE '1998-12-01' - INTERVAL 90 DAY
		GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus`},
	{"Q6", `SELECT sum(l_extendedprice * l_discount) FROM %s
		WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'
		AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24`},
	{"all-columns", `SELECT max(l_orderkey), sum(l_partkey)::VARCHAR, sum(l_linenumber)::VARCHAR, sum(l_quantity), sum(l_extendedprice),
		sum(l_discount), sum(l_tax), max(l_returnflag), min(l_linestatus), max(l_shipdate), min(l_commitdate),
		max(l_receiptdate), max(l_shipinstruct), min(l_shipmode), max(l_comment) FROM %s`},
}

// BenchmarkLineitem compares sop_scan with DuckDB 1.5.6's read_parquet of
// the same rows in plaintext Parquet (both written by DuckDB, snappy, row
// groups of 122,880 rows, field IDs), both at SET threads = 1: TPC-H's Q1
// and Q6 over lineitem-like rows (SOP_PME_LINEITEM_ROWS, default 2^21).
// Run the process with GOMAXPROCS=1 for one thread. Each iteration runs
// both, in alternating order; the answers are compared once, exactly. It
// reports the median ratio sop_scan / plaintext and the median times.
func BenchmarkLineitem(b *testing.B) {
	rows := 1 << 21
	if s := os.Getenv("SOP_PME_LINEITEM_ROWS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			b.Fatalf("SOP_PME_LINEITEM_ROWS=%q", s)
		}
		rows = n
	}
	ids := make([]string, len(lineitemColumns))
	for i, c := range lineitemColumns {
		ids[i] = fmt.Sprintf("%s: %d", c, i+1)
	}
	opts := "FIELD_IDS {" + strings.Join(ids, ", ") + "}"
	query := fmt.Sprintf(lineitemSQL, rows)
	st, id, plain := duckDBObject(b, query, opts)
	plainScan := "read_parquet(" + ducktest.SQLString(plain) + ")"
	db, native := openDB(b, st, st, WithThreads(1)), openNative(b, 1)
	for _, q := range lineitemQueries {
		b.Run(q.name, func(b *testing.B) {
			want := ducktest.MustQuery(b, native, fmt.Sprintf(q.sql, plainScan))
			compareRows(b, q.name, want, ducktest.MustQuery(b, db.SQL(), fmt.Sprintf(q.sql, sopScan(id))))
			var ours, theirs, ratio []float64
			i := 0
			for b.Loop() {
				var so, pl time.Duration
				timeIt := func(sop bool) time.Duration {
					t0 := time.Now()
					var err error
					if sop {
						_, err = queryErr(db.SQL(), fmt.Sprintf(q.sql, sopScan(id)))
					} else {
						_, err = queryErr(native, fmt.Sprintf(q.sql, plainScan))
					}
					if err != nil {
						b.Fatal(err)
					}
					return time.Since(t0)
				}
				if i%2 == 0 {
					so, pl = timeIt(true), timeIt(false)
				} else {
					pl, so = timeIt(false), timeIt(true)
				}
				i++
				ours, theirs = append(ours, float64(so)/1e6), append(theirs, float64(pl)/1e6)
				ratio = append(ratio, float64(so)/float64(pl))
			}
			b.ReportMetric(median(ratio), "ratio-median")
			b.ReportMetric(slices.Min(ratio), "ratio-min")
			b.ReportMetric(slices.Max(ratio), "ratio-max")
			b.ReportMetric(median(ours), "sop-ms")
			b.ReportMetric(median(theirs), "plaintext-ms")
		})
	}
}

// duckDBObject has DuckDB write the rows of query twice with COPY
// options opts: as plaintext Parquet (its path returned) and encrypted
// with a new DEK, imported into a new store as an object (its storage_id
// returned).
func duckDBObject(t testing.TB, query, opts string) (*ducktest.Store, storageid.ID, string) {
	t.Helper()
	w := ducktest.OpenWriter(t)
	defer w.Close()
	plain := filepath.Join(t.TempDir(), "plain.parquet")
	ducktest.Exec(t, w, "COPY ("+query+") TO "+ducktest.SQLString(plain)+" ("+opts+")")
	key := make([]byte, 32)
	rand.Read(key)
	dek, err := pme.DEKFromBytes(key)
	if err != nil {
		t.Fatal(err)
	}
	st := ducktest.NewStore(t)
	id, _ := st.ImportFile(t, ducktest.CopyEncrypted(t, w, query, ducktest.FooterKeyValue(base64.StdEncoding.EncodeToString(key)), opts), dek)
	return st, id, plain
}
