package formats

import (
	"encoding/base64"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/sovm/sop-pme/internal/arrowfb"
)

// takeArrowSchema takes the ARROW:schema entry of pf away from pqarrow and
// returns it decoded by arrowfb (nil if there is none, or it is
// malformed), for pqtypes.Apply: a Parquet input then reads in the types
// package reader reads it in once sealed.
//
// pqarrow would decode the entry with arrow-go's IPC reader, which
// allocates the lengths the message states (a fatal error, not a panic,
// for a length of gigabytes), and apply the stored types over the Parquet
// ones without checking them (it fails on some it wrote itself: an
// arrow.json column). The entry is replaced by a schema of no fields,
// which pqarrow ignores.
func takeArrowSchema(pf *file.Reader) *arrowfb.Schema {
	v := pf.MetaData().KeyValueMetadata().FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	stored, err := arrowfb.DecodeSchemaEntry([]byte(*v))
	if err != nil {
		stored = nil
	}
	*v = base64.StdEncoding.EncodeToString(flight.SerializeSchema(arrow.NewSchema(nil, nil), memory.DefaultAllocator))
	return stored
}
