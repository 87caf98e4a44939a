package sopsql

import (
	"errors"
	"slices"
	"testing"
)

// FuzzScanArgs feeds parseScanArgs and the row group list the arguments a
// query can give sop_scan (each one's text and type, or NULL): every
// refusal is ErrArgument, and what is accepted holds to the rules (a
// storage_id string, a batch size from 0, row groups in range and
// distinct). The query's author is untrusted here: nothing may panic.
func FuzzScanArgs(f *testing.F) {
	for _, s := range [][6]string{
		{"ab12", "VARCHAR", "[0, 2]", "INTEGER[]", "7", "INTEGER"},
		{"ab12", "VARCHAR", "[1, 0]", "UTINYINT[2]", "0", "UBIGINT"},
		{"[ab12]", "VARCHAR[]", "[]", `"NULL"[]`, "1.5", "DECIMAL(2,1)"},
		{"x", "VARCHAR", "[0, NULL]", "INTEGER[]", "-1", "BIGINT"},
		{"x", "VARCHAR", "[0, 0]", "INTEGER[]", "99999999999999999999999", "HUGEINT"},
		{"x", "VARCHAR", "[[0]]", "INTEGER[][]", "x", "VARCHAR"},
		{"x", "VARCHAR", "[ 3 ,4]", "BIGINT[]", "", "INTEGER"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], uint8(0))
	}
	f.Add("", "", "", "", "", "", uint8(7))
	f.Fuzz(func(t *testing.T, id, idType, rgs, rgType, batch, batchType string, nulls uint8) {
		args := []any{id, idType, rgs, rgType, batch, batchType}
		for i := range 3 {
			if nulls&(1<<i) != 0 {
				args[2*i] = nil
			}
		}
		p, err := parseScanArgs(args)
		if err != nil {
			if !errors.Is(err, ErrArgument) {
				t.Fatalf("%v: %v, not ErrArgument", args, err)
			}
			return
		}
		if (p.id == nil) != (args[0] == nil) || p.batch < 0 {
			t.Fatalf("%v: accepted as %+v", args, p)
		}
		const n = 100
		list, err := p.rowGroupList(n)
		if err != nil {
			if !errors.Is(err, ErrArgument) {
				t.Fatalf("%v: row groups: %v, not ErrArgument", args, err)
			}
			return
		}
		if len(list) == 0 || len(list) > n {
			t.Fatalf("%v: %d row groups", args, len(list))
		}
		seen := map[int]bool{}
		for _, i := range list {
			if i < 0 || i >= n || seen[i] {
				t.Fatalf("%v: row groups %v", args, list)
			}
			seen[i] = true
		}
		if args[2] == nil && !slices.Equal(list, rowGroupsAll(n)) {
			t.Fatalf("%v: NULL row_groups read %v, want all", args, list)
		}
	})
}

func rowGroupsAll(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}
