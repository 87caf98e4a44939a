package arrowfb_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/sovm/sop-pme/internal/arrowfb"
)

// FuzzDecodeSchema: whatever the bytes, DecodeSchemaEntry, DecodeSchemaIPC,
// CheckSchemaEntry and CheckMessage return (an error matching ErrMalformed, or a schema)
// without panicking, and a schema has no more fields than its bytes hold.
// The seeds (testdata/fuzz/FuzzDecodeSchema) are schemas arrow-go writes:
// every type, nested, with metadata and a dictionary.
func FuzzDecodeSchema(f *testing.F) {
	f.Add(serialize(f, wideSchema()))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, dec := range []func([]byte) (*arrowfb.Schema, error){
			arrowfb.DecodeSchemaIPC,
			func(b []byte) (*arrowfb.Schema, error) {
				return arrowfb.DecodeSchemaEntry([]byte(base64.StdEncoding.EncodeToString(b)))
			},
		} {
			s, err := dec(b)
			if err != nil {
				if !errors.Is(err, arrowfb.ErrMalformed) {
					t.Fatalf("untyped error: %v", err)
				}
				continue
			}
			if n := countFields(s.Fields); n > len(b)/4 {
				t.Fatalf("%d fields from %d bytes", n, len(b))
			}
		}
		if err := arrowfb.CheckSchemaEntry([]byte(base64.StdEncoding.EncodeToString(b))); err != nil && !errors.Is(err, arrowfb.ErrMalformed) {
			t.Fatalf("untyped error: %v", err)
		}
		if len(b) > 8 {
			if err := arrowfb.CheckMessage(b[8:]); err != nil && !errors.Is(err, arrowfb.ErrMalformed) {
				t.Fatalf("untyped error: %v", err)
			}
		}
	})
}

func countFields(fs []arrowfb.Field) int {
	n := len(fs)
	for _, f := range fs {
		n += countFields(f.Children)
	}
	return n
}
