package catalog_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/catalog"
	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// TestNamesNotInFile: the ring file holds no table name, column name,
// or change note in the clear (Sections 11.4, 11.8), before or after a
// Rekey, and the catalog reads the same after it.
func TestNamesNotInFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	secrets := []string{"payroll_table_secret", "salary_column_secret", "bonus_column_secret", "renamed_column_secret"}
	p := mustPlan(t, e.cat, secrets[0], schema(
		fld(secrets[1], arrow.PrimitiveTypes.Int64, true, 0),
		fld("st", arrow.StructOf(fld(secrets[2], arrow.PrimitiveTypes.Int32, true, 0)), true, 0),
	))
	if err := e.cat.Append(ctx, p, obj("x", 123456)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cat.RenameColumn(ctx, secrets[0], secrets[1], secrets[3]); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		raw, err := os.ReadFile(e.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if bytes.Contains(raw, []byte(s)) {
				t.Errorf("%s: the ring file holds %q", when, s)
			}
		}
		if bytes.Contains(raw, []byte("PARQUET:field_id")) {
			t.Errorf("%s: the ring file holds schema metadata in the clear", when)
		}
	}
	check("after create")
	before, err := e.cat.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	k2 := keyring.NewKEK()
	if err := e.ring.Rekey(ctx, k2); err != nil {
		t.Fatal(err)
	}
	check("after Rekey")
	r2, err := keyring.Open(ctx, e.path, k2)
	if err != nil {
		t.Fatal(err)
	}
	after, err := catalog.New(r2).Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 1 || len(before) != 1 {
		t.Fatalf("%d tables before, %d after", len(before), len(after))
	}
	b, a := before[0], after[0]
	if a.Name != b.Name || a.HighWater != b.HighWater || len(a.Versions) != len(b.Versions) ||
		len(a.Objects) != 1 || a.Objects[0] != b.Objects[0] || !a.Current().Schema.Equal(b.Current().Schema) {
		t.Fatalf("after Rekey: %+v\nbefore: %+v", a, b)
	}
	if a.Objects[0].UnpaddedSize != 1234560 {
		t.Fatalf("unpadded size %d", a.Objects[0].UnpaddedSize)
	}
	// The old master no longer opens it.
	if _, err := keyring.Open(ctx, e.path, e.kek); err == nil {
		t.Fatal("the old KEK opens the ring after Rekey")
	}
}

const childEnv = "SOP_PME_CATALOG_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

// childMain plans (adding a column of its own with WithEvolve, so reserving
// a fresh ID) and appends one object, n times, into table "t". It prints
// "id COLUMN ID" for each reserved ID and "ack STORAGE_ID" for each
// object Append acknowledged.
func childMain() int {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	raw, _ := hex.DecodeString(os.Getenv("SOP_PME_KEK"))
	kek, err := keyring.KEKFromBytes(raw)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	r, err := keyring.Open(ctx, os.Getenv("SOP_PME_RING"), kek)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	c := catalog.New(r)
	n, _ := strconv.Atoi(os.Getenv("SOP_PME_N"))
	prefix := os.Getenv("SOP_PME_PREFIX")
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for i := range n {
		col := fmt.Sprintf("%s_%d", prefix, i)
		p, err := c.Plan(ctx, "t", arrow.NewSchema([]arrow.Field{
			{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
			{Name: col, Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		}, nil), catalog.WithEvolve())
		if err != nil {
			fmt.Fprintln(os.Stderr, "plan:", err)
			return 1
		}
		id, _ := p.Schema.Field(1).Metadata.GetValue("PARQUET:field_id")
		fmt.Fprintf(out, "id %s %s\n", col, id)
		o := obj(col, int64(i+1))
		if err := c.Append(ctx, p, o); err != nil {
			fmt.Fprintln(os.Stderr, "append:", err)
			return 1
		}
		fmt.Fprintf(out, "ack %s\n", o.ID)
	}
	return 0
}

// TestConcurrentProcesses: children plan and append into one table while
// this process adds columns: every acknowledged object is there exactly
// once, and no two columns got one field ID.
func TestConcurrentProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	mustPlan(t, e.cat, "t", schema(fld("a", arrow.PrimitiveTypes.Int64, true, 0)))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const children, n = 3, 8
	var mu sync.Mutex
	reserved := map[string]int{} // column → ID
	acked := map[storageid.ID]bool{}
	var wg sync.WaitGroup
	for i := range children {
		cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", "SOP_PME_RING="+e.path,
			"SOP_PME_KEK="+hex.EncodeToString(e.kek.Bytes()), "SOP_PME_N="+strconv.Itoa(n),
			fmt.Sprintf("SOP_PME_PREFIX=child%d", i))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := cmd.Wait(); err != nil {
				t.Errorf("child %d: %v\n%s", i, err, stderr.String())
			}
			mu.Lock()
			defer mu.Unlock()
			for line := range strings.Lines(stdout.String()) {
				f := strings.Fields(line)
				switch {
				case len(f) == 3 && f[0] == "id":
					id, _ := strconv.Atoi(f[2])
					reserved[f[1]] = id
				case len(f) == 2 && f[0] == "ack":
					id, err := storageid.Parse(f[1])
					if err != nil {
						t.Errorf("child %d printed %q", i, line)
					}
					acked[id] = true
				}
			}
		})
	}
	for i := range 5 {
		col := fmt.Sprint("parent_", i)
		v, err := e.cat.AddColumn(ctx, "t", col, arrow.PrimitiveTypes.Float64)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		reserved[col] = ids(t, v.Schema)[col]
		mu.Unlock()
	}
	wg.Wait()
	if len(acked) != children*n || len(reserved) != children*n+5 {
		t.Fatalf("%d objects acknowledged, %d IDs reserved", len(acked), len(reserved))
	}
	tb := mustTable(t, e.cat, "t")
	seen := map[storageid.ID]int{}
	for _, o := range tb.Objects {
		seen[o.ID]++
	}
	for id := range acked {
		if seen[id] != 1 {
			t.Errorf("acknowledged object %s found %d times", id, seen[id])
		}
	}
	if len(tb.Objects) != len(acked) {
		t.Errorf("%d objects in the table, %d acknowledged", len(tb.Objects), len(acked))
	}
	final := ids(t, tb.Current().Schema)
	byID := map[int]string{}
	for col, id := range reserved {
		if other, dup := byID[id]; dup {
			t.Errorf("columns %s and %s share ID %d", col, other, id)
		}
		byID[id] = col
		if final[col] != id {
			t.Errorf("column %s reserved ID %d, holds %d", col, id, final[col])
		}
	}
	if int(tb.HighWater) != 1+len(reserved) {
		t.Errorf("high water %d, %d IDs assigned", tb.HighWater, 1+len(reserved))
	}
}
