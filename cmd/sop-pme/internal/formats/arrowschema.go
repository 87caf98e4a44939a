package formats

import (
	"encoding/base64"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/sovm/sop-pme/internal/arrowfb"
)

// neutralizeArrowSchema replaces the ARROW:schema entry of pf, which
// pqarrow decodes with arrow-go's IPC reader (it allocates the lengths the
// message states: a fatal error, not a panic, for a length of gigabytes),
// by a schema of no fields, which pqarrow ignores, if the entry fails
// arrowfb's bounds. The file then reads in its Parquet types.
func neutralizeArrowSchema(pf *file.Reader) {
	v := pf.MetaData().KeyValueMetadata().FindValue("ARROW:schema")
	if v == nil || arrowfb.CheckSchemaEntry([]byte(*v)) == nil {
		return
	}
	*v = base64.StdEncoding.EncodeToString(flight.SerializeSchema(arrow.NewSchema(nil, nil), memory.DefaultAllocator))
}
