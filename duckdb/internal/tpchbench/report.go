package main

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A cell is the measurements of one engine, query and thread count.
type cell struct {
	wall, cpu, query []float64 // seconds, one a counted round
	maxRSS           int64     // the largest peak RSS seen, warm-up included, bytes
}

type cellKey struct {
	engine, query string
	threads       int
}

type report struct {
	w       io.Writer
	cfg     *config
	queries []query
	cells   map[cellKey]*cell
	ref     map[string]answer // by query: DuckDB's on the Parquet files, the first thread count, the warm-up round
	wrong   []string          // answers that differ from ref
}

func (r *report) printf(format string, args ...any) { fmt.Fprintf(r.w, format, args...) }

func (r *report) header() {
	c := r.cfg
	target := "make tpch"
	if c.parts != "" {
		target = "make tpch-tables"
	}
	r.printf("# TPC-H sf %s: %s (bench/tpch/tpch.mk, duckdb/internal/tpchbench)\n", c.sf, target)
	r.printf("# commit %s, %s\n", c.commit, time.Now().UTC().Format(time.RFC3339))
	r.printf("# machine %s, load average %s at the start\n", machine(), loadavg())
	r.printf("# data %s\n", c.data)
	if c.parts != "" {
		r.printf("# split data %s\n", c.parts)
	}
	r.printf("# %d counted rounds after one warm-up, threads %v; each measurement a process of its own, wall time from start to exit\n",
		c.rounds, c.threads)
	if c.parts != "" {
		r.printf("# engines: %s = DuckDB 1.5.6 read_parquet([...]) on the split Parquet files; %s = sop-pme sql over the table lineitem of an object a split file (import --table lineitem FILE...); %s = sop-pme sql over the table lineitem of one object (the unsplit lineitem.parquet, import --table), each in a store and keyring of its own; sop-pme at GOMAXPROCS = threads\n",
			enginePlain, engineTable, engineOne)
	} else {
		r.printf("# engines: %s = DuckDB 1.5.6 read_parquet on the Parquet files; %s = DuckDB 1.5.6 read_parquet on the objects' files with their DEKs (unverified, a baseline only); %s = sop-pme sql --view (sop_scan, verified), GOMAXPROCS = threads\n",
			enginePlain, engineEnc, engineSop)
	}
	r.printf("\n")
}

// run runs the warm-up round and the counted rounds, printing one line a
// measurement, and compares every answer with the reference: DuckDB's on
// the Parquet files at the first thread count in the warm-up round.
func (r *report) run(ids map[string]string) error {
	r.cells = map[cellKey]*cell{}
	r.ref = map[string]answer{}
	ref := r.ref
	engines := r.cfg.engines()
	r.printf("\n# round threads query engine wall_s cpu_s duckdb_query_s peak_rss_MiB answer\n")
	for round := 0; round <= r.cfg.rounds; round++ {
		for _, t := range r.cfg.threads {
			for _, q := range r.queries {
				order := slices.Clone(engines)
				k := round % len(order)
				order = append(order[k:], order[:k]...)
				if round == 0 {
					order = engines // the reference first
				}
				for _, e := range order {
					m, qs, ans, err := r.cfg.runOne(q, e, t, ids, round == 0 && (e == enginePlain || e == engineEnc))
					if err != nil {
						return err
					}
					want, ok := ref[q.name]
					if !ok {
						ref[q.name], want = ans, ans
					}
					verdict := "ok"
					if d := diff(ans, want); d != "" {
						verdict = "WRONG: " + d
						r.wrong = append(r.wrong, fmt.Sprintf("round %d t%d %s %s: %s", round, t, q.name, e, d))
					}
					label := fmt.Sprint(round)
					if round == 0 {
						label = "warm-up"
					}
					r.printf("%-7s %d %-4s %-12s %8.3f %8.3f %8.3f %6d %s\n", label, t, q.name, e, m.wall, m.cpu, qs, m.maxRSS>>20, verdict)
					key := cellKey{e, q.name, t}
					cl := r.cells[key]
					if cl == nil {
						cl = &cell{}
						r.cells[key] = cl
					}
					cl.maxRSS = max(cl.maxRSS, m.maxRSS) // the warm-up's too
					if round > 0 {
						cl.wall = append(cl.wall, m.wall)
						cl.cpu = append(cl.cpu, m.cpu)
						cl.query = append(cl.query, qs)
					}
				}
			}
		}
	}
	return nil
}

// finish prints the medians, their ratios and the answers' verdict, and
// returns an error if an answer differed.
func (r *report) finish() error {
	r.printf("\n# load average %s at the end\n", loadavg())
	if r.cfg.parts != "" {
		r.tableMedians()
	} else {
		r.medians()
	}
	return r.answers()
}

// medians prints make tpch's tables: medians, their ratios, the spread.
func (r *report) medians() {
	r.printf("\n## Medians of %d (wall time of the process, seconds)\n\n", r.cfg.rounds)
	r.printf("| threads | query | DuckDB plaintext | DuckDB on the objects with their DEKs | sop-pme sql | sop / plaintext | sop / DuckDB encrypted | sop-pme peak RSS (largest of every run) |\n")
	r.printf("|---|---|---|---|---|---|---|---|\n")
	for _, t := range r.cfg.threads {
		for _, q := range r.queries {
			p, e, s := r.median(enginePlain, q.name, t), r.median(engineEnc, q.name, t), r.median(engineSop, q.name, t)
			r.printf("| %d | %s | %.3f s | %.3f s | %.3f s | %.2f× | %.2f× | %d MiB |\n",
				t, strings.ToUpper(q.name), p, e, s, s/p, s/e, r.cells[cellKey{engineSop, q.name, t}].maxRSS>>20)
		}
	}
	r.printf("\n## Medians of %d, CPU time of the process (user + system, every thread), seconds\n\n", r.cfg.rounds)
	r.printf("Less moved by other load than wall time, on a shared machine; at 2 threads it is the work done, not the time taken.\n\n")
	r.printf("| threads | query | DuckDB plaintext | DuckDB encrypted | sop-pme sql | sop / plaintext | sop / DuckDB encrypted |\n")
	r.printf("|---|---|---|---|---|---|---|\n")
	for _, t := range r.cfg.threads {
		for _, q := range r.queries {
			p, e, s := r.cpuMedian(enginePlain, q.name, t), r.cpuMedian(engineEnc, q.name, t), r.cpuMedian(engineSop, q.name, t)
			r.printf("| %d | %s | %.3f s | %.3f s | %.3f s | %.2f× | %.2f× |\n", t, strings.ToUpper(q.name), p, e, s, s/p, s/e)
		}
	}
	r.printf("\n## Spread: (max − min) / median of the %d counted rounds; DuckDB's in-process query time (median, seconds)\n\n", r.cfg.rounds)
	r.printf("| threads | query | spread plaintext | spread encrypted | spread sop-pme | DuckDB plaintext query only | DuckDB encrypted query only |\n")
	r.printf("|---|---|---|---|---|---|---|\n")
	for _, t := range r.cfg.threads {
		for _, q := range r.queries {
			r.printf("| %d | %s | %s | %s | %s | %.3f s | %.3f s |\n", t, strings.ToUpper(q.name),
				r.spread(enginePlain, q.name, t), r.spread(engineEnc, q.name, t), r.spread(engineSop, q.name, t),
				median(r.cells[cellKey{enginePlain, q.name, t}].query), median(r.cells[cellKey{engineEnc, q.name, t}].query))
		}
	}
}

// answers prints the reference answers and the verdict, and returns an
// error if an answer differed.
func (r *report) answers() error {
	r.printf("\n## The answers (DuckDB on the Parquet files, %d threads, warm-up round; CSV)\n", r.cfg.threads[0])
	for _, q := range r.queries {
		a := r.ref[q.name]
		r.printf("\n%s:\n%s\n", q.name, strings.Join(a.header, ","))
		for _, row := range a.rows {
			r.printf("%s\n", strings.Join(row, ","))
		}
	}
	if len(r.wrong) > 0 {
		r.printf("\n## WRONG ANSWERS: %d\n\n%s\n", len(r.wrong), strings.Join(r.wrong, "\n"))
		return fmt.Errorf("%d answers differ from DuckDB's on the Parquet files", len(r.wrong))
	}
	r.printf("\nEvery answer (every engine, thread count and round, warm-up included) equals DuckDB's on the Parquet files, row by row and column by column.\n")
	return nil
}

// tableMedians prints make tpch-tables's tables: the medians of wall and
// CPU time, their ratios, the spread.
func (r *report) tableMedians() {
	n := r.parts()
	for _, kind := range []string{"wall", "cpu"} {
		med := r.median
		if kind == "cpu" {
			med = r.cpuMedian
			r.printf("\n## Medians of %d, CPU time of the process (user + system, every thread), seconds\n\n", r.cfg.rounds)
			r.printf("Less moved by other load than wall time, on a shared machine; at 2 threads it is the work done, not the time taken.\n\n")
		} else {
			r.printf("\n## Medians of %d (wall time of the process, seconds)\n\n", r.cfg.rounds)
		}
		r.printf("| threads | query | DuckDB read_parquet, %d plaintext files | sop-pme sql, table of %d objects | sop-pme sql, table of 1 object | table / plaintext %d files | table / one object |",
			n, n, n)
		sep := "|---|---|---|---|---|---|---|"
		if kind == "wall" {
			r.printf(" peak RSS, %d objects | peak RSS, 1 object |", n)
			sep += "---|---|"
		}
		r.printf("\n%s\n", sep)
		for _, t := range r.cfg.threads {
			for _, q := range r.queries {
				p, s, o := med(enginePlain, q.name, t), med(engineTable, q.name, t), med(engineOne, q.name, t)
				r.printf("| %d | %s | %.3f s | %.3f s | %.3f s | %.2f× | %.2f× |", t, strings.ToUpper(q.name), p, s, o, s/p, s/o)
				if kind == "wall" {
					r.printf(" %d MiB | %d MiB |", r.cells[cellKey{engineTable, q.name, t}].maxRSS>>20, r.cells[cellKey{engineOne, q.name, t}].maxRSS>>20)
				}
				r.printf("\n")
			}
		}
	}
	r.printf("\n## Spread: (max − min) / median of the %d counted rounds; DuckDB's in-process query time (median, seconds)\n\n", r.cfg.rounds)
	r.printf("| threads | query | spread plaintext | spread table of %d | spread table of 1 | DuckDB plaintext query only |\n", n)
	r.printf("|---|---|---|---|---|---|\n")
	for _, t := range r.cfg.threads {
		for _, q := range r.queries {
			r.printf("| %d | %s | %s | %s | %s | %.3f s |\n", t, strings.ToUpper(q.name),
				r.spread(enginePlain, q.name, t), r.spread(engineTable, q.name, t), r.spread(engineOne, q.name, t),
				median(r.cells[cellKey{enginePlain, q.name, t}].query))
		}
	}
}

// parts is the number of split files (0 if they cannot be listed).
func (r *report) parts() int {
	files, _ := partFiles(filepath.Join(r.cfg.parts, "lineitem"))
	return len(files)
}

func (r *report) median(engine, q string, t int) float64 {
	return median(r.cells[cellKey{engine, q, t}].wall)
}

func (r *report) cpuMedian(engine, q string, t int) float64 {
	return median(r.cells[cellKey{engine, q, t}].cpu)
}

func (r *report) spread(engine, q string, t int) string {
	w := r.cells[cellKey{engine, q, t}].wall
	return fmt.Sprintf("%.0f %%", 100*(slices.Max(w)-slices.Min(w))/median(w))
}

// median of xs (not empty).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
