package pme_test

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/sovm/sop-pme/pme"
)

type dekInner struct {
	d pme.DEK
}

type DEKHolder struct {
	D      pme.DEK
	d      pme.DEK
	P      *pme.DEK
	p      *pme.DEK
	in     dekInner
	In     dekInner
	list   []pme.DEK
	byName map[string]pme.DEK
	any    any
}

// TestDEKPrinting prints a DEK in every position fmt reaches, exported and
// unexported, where fmt cannot call Format and prints what it finds.
//
// %s and %q are in the list because, for a verb a pointer does not take,
// fmt prints the struct the pointer points to (&{…}): the key sits one
// pointer deeper, where fmt prints an address.
func TestDEKPrinting(t *testing.T) {
	t.Parallel()
	d := pme.NewDEK()
	h := DEKHolder{D: d, d: d, P: &d, p: &d, in: dekInner{d}, In: dekInner{d},
		list: []pme.DEK{d, d}, byName: map[string]pme.DEK{"a": d}, any: d}
	values := map[string]any{
		"value": d, "pointer": &d, "struct": h, "struct pointer": &h,
		"slice": []pme.DEK{d}, "array": [1]pme.DEK{d}, "map": map[string]pme.DEK{"x": d},
		"map key": map[pme.DEK]int{d: 1}, "nested slice": []dekInner{{d}}, "slice of any": []any{d, h},
	}
	key := d.Bytes()
	forms := []string{
		string(key), hex.EncodeToString(key), strings.ToUpper(hex.EncodeToString(key)),
		fmt.Sprint(key), fmt.Sprintf("%v", key[:8])[1:20], fmt.Sprintf("%#v", key)[8:40],
	}
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
			out := fmt.Sprintf(verb, v)
			for _, f := range forms {
				if strings.Contains(out, f) {
					t.Errorf("%s with %s printed the key: %.200s", name, verb, out)
					break
				}
			}
		}
	}
}
