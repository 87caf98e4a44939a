package catalog

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// Space is the name of the keyring.Records space the catalog keeps its
// records in.
const Space = "catalog"

// A Catalog is the catalog of tables kept in a ring file (see the package
// documentation). It is safe for concurrent use, from any number of
// goroutines and processes.
type Catalog struct {
	rs *keyring.Records
}

// New returns the catalog kept in ring's file. The ring's master must open
// its ring key: the catalog is encrypted under it (Sections 11.4, 11.8).
// A ring opened keyring.WithReadOnly gives a catalog that reads only.
func New(ring *keyring.Ring) *Catalog {
	return &Catalog{rs: ring.Records(Space)}
}

// A Table is a table as the catalog holds it: a sequence of immutable
// SOP-PME-1 objects whose schema evolves by field ID (Section 11.2). A
// Table returned by the catalog is a copy that the caller owns.
type Table struct {
	Name    string
	Created time.Time
	// Versions are the schema versions, Versions[i].ID == i+1; the last is
	// current. An object written under any of them reads under the
	// current one by field ID.
	Versions []Version
	// HighWater is the largest field ID this table ever assigned. It
	// never decreases, so an ID is never reused after a drop (Section
	// 11.2).
	HighWater int32
	// Objects are the table's objects in the order they were appended.
	Objects []Object
}

// A Version is one version of a table's schema. Every field of Schema,
// nested ones included, carries its field ID in its metadata under
// writer.FieldIDKey ("PARQUET:field_id"). Change says what made it.
type Version struct {
	ID      int
	Schema  *arrow.Schema
	Created time.Time
	Change  string
}

// An Object is one SOP-PME-1 object of a table: its storage_id, the
// schema version it was written under, its rows, and its sizes. Size is
// the object's padded size, which storage sees; UnpaddedSize is the exact
// size before padding, which SOP-PME-1 keeps as encrypted catalog
// metadata (Section 11.8).
type Object struct {
	ID           storageid.ID
	Version      int
	Rows         int64
	UnpaddedSize int64
	Size         int64
	Appended     time.Time
}

// Current returns the table's current schema version.
func (t *Table) Current() Version { return t.Versions[len(t.Versions)-1] }

// Version returns the schema version id, or ErrSchema (wrapped) if the
// table has none of that number.
func (t *Table) Version(id int) (Version, error) {
	if id < 1 || id > len(t.Versions) {
		return Version{}, fmt.Errorf("catalog: table %q has no version %d: %w", t.Name, id, ErrSchema)
	}
	return t.Versions[id-1], nil
}

// readHeaders reads every table header.
func readHeaders(tx *keyring.RecordTx) ([]*header, error) {
	var out []*header
	err := tx.ForEachPrefix([]byte{prefixTable}, func(k, v []byte) error {
		if len(k) != 1+keySize {
			return fmt.Errorf("%w: a table key of %d bytes", ErrRecord, len(k))
		}
		h, err := decodeHeader(tableKey(k[1:]), v)
		if err != nil {
			return err
		}
		out = append(out, h)
		return nil
	})
	return out, err
}

// findHeader reads the header of the table name, or ErrNoTable.
func findHeader(tx *keyring.RecordTx, name string) (*header, error) {
	hs, err := readHeaders(tx)
	if err != nil {
		return nil, err
	}
	for _, h := range hs {
		if h.t.Name == name {
			return h, nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNoTable, name)
}

func writeHeader(tx *keyring.RecordTx, h *header) error {
	b, err := encodeHeader(h)
	if err != nil {
		return err
	}
	return tx.Put(headerKey(h.key), b)
}

// readObjects reads every object record, and calls fn for each.
func readObjects(tx *keyring.RecordTx, fn func(o *object) error) error {
	return tx.ForEachPrefix([]byte{prefixObject}, func(k, v []byte) error {
		o, err := decodeObject(v)
		if err != nil {
			return err
		}
		if !bytes.Equal(k[1:], o.ID[:]) {
			return fmt.Errorf("%w: object record of %s under the key of another", ErrRecord, o.ID)
		}
		return fn(o)
	})
}

// withObjects fills the tables' objects, in append order.
func withObjects(tx *keyring.RecordTx, hs []*header) ([]*Table, error) {
	byKey := map[tableKey]*Table{}
	seqs := map[storageid.ID]uint64{}
	for _, h := range hs {
		byKey[h.key] = h.t
	}
	err := readObjects(tx, func(o *object) error {
		t, ok := byKey[o.table]
		if !ok {
			return nil // of another table (or, if none, of one this package did not drop whole)
		}
		if o.Version > len(t.Versions) {
			return fmt.Errorf("%w: object %s of version %d in table %q of %d", ErrRecord, o.ID, o.Version, t.Name, len(t.Versions))
		}
		t.Objects = append(t.Objects, o.Object)
		seqs[o.ID] = o.seq
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]*Table, len(hs))
	for i, h := range hs {
		slices.SortFunc(h.t.Objects, func(a, b Object) int { return cmp.Compare(seqs[a.ID], seqs[b.ID]) })
		out[i] = h.t
	}
	return out, nil
}

// Tables returns every table, sorted by name, with its objects.
func (c *Catalog) Tables(ctx context.Context) ([]*Table, error) {
	var out []*Table
	err := c.rs.View(ctx, func(tx *keyring.RecordTx) error {
		hs, err := readHeaders(tx)
		if err != nil {
			return err
		}
		out, err = withObjects(tx, hs)
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b *Table) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// Table returns the table name with its objects, or ErrNoTable.
func (c *Catalog) Table(ctx context.Context, name string) (*Table, error) {
	var out *Table
	err := c.rs.View(ctx, func(tx *keyring.RecordTx) error {
		h, err := findHeader(tx, name)
		if err != nil {
			return err
		}
		ts, err := withObjects(tx, []*header{h})
		if err != nil {
			return err
		}
		out = ts[0]
		return nil
	})
	return out, err
}

// Owner returns the name of the table that holds the object id; ok is
// false if no table does.
func (c *Catalog) Owner(ctx context.Context, id storageid.ID) (table string, ok bool, err error) {
	err = c.rs.View(ctx, func(tx *keyring.RecordTx) error {
		o, err := getObject(tx, id)
		if err != nil || o == nil {
			return err
		}
		v, err := tx.Get(headerKey(o.table))
		if errors.Is(err, keyring.ErrNoRecord) {
			return fmt.Errorf("%w: object %s of a table that does not exist", ErrRecord, id)
		}
		if err != nil {
			return err
		}
		h, err := decodeHeader(o.table, v)
		if err != nil {
			return err
		}
		table, ok = h.t.Name, true
		return nil
	})
	return table, ok, err
}

// getObject returns the record of object id, nil if there is none.
func getObject(tx *keyring.RecordTx, id storageid.ID) (*object, error) {
	v, err := tx.Get(objectKey(id))
	if errors.Is(err, keyring.ErrNoRecord) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	o, err := decodeObject(v)
	if err != nil {
		return nil, err
	}
	if o.ID != id {
		return nil, fmt.Errorf("%w: object record of %s under the key of %s", ErrRecord, o.ID, id)
	}
	return o, nil
}

// A Plan says how to write an object into a table (see Catalog.Plan).
type Plan struct {
	// Table is the table's name.
	Table string
	// Version is the schema version the object is written under.
	Version int
	// Schema is the input's fields, in the input's order, carrying the
	// table's field IDs: write the object with this schema.
	Schema *arrow.Schema
}

// A PlanOption configures Plan.
type PlanOption func(*planConfig) error

type planConfig struct{ evolve bool }

// WithEvolve lets Plan evolve the table to take the input: add its extra
// columns (nullable, with fresh field IDs), promote the table's columns
// that the input widens, make optional the ones it makes nullable. The
// new version is made in the same transaction as the plan.
func WithEvolve() PlanOption {
	return func(c *planConfig) error { c.evolve = true; return nil }
}

// Plan maps the input schema onto the table name, creating the table if it
// does not exist, and returns the schema to write the object with.
//
// A new table keeps the input's field IDs if it carries valid, unique ones
// at every depth, and else numbers every field fresh in Iceberg's order
// (writer.AssignFieldIDs); its HighWater is the largest ID (Section 11.2).
//
// An existing table maps the input by field ID if every input field
// carries an ID that the current schema holds at the same place, and else
// by name. Each input column must have the table's type or one promotable
// to it (the object keeps its narrower type; readers widen); a column the
// input lacks must be nullable in the table. An extra input column, or an
// input type wider than the table's, is ErrSchema in a *ColumnError
// unless WithEvolve. Fresh IDs come from above HighWater, reserved in the
// plan's transaction, so concurrent imports never share one.
func (c *Catalog) Plan(ctx context.Context, name string, input *arrow.Schema, opts ...PlanOption) (*Plan, error) {
	var cfg planConfig
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, err
		}
	}
	if name == "" || len(name) > maxName {
		return nil, fmt.Errorf("%w: a table name of %d bytes", ErrSchema, len(name))
	}
	if err := checkInput(input); err != nil {
		return nil, fmt.Errorf("catalog: table %q: %w", name, err)
	}
	// Most imports fit the table as it is: a read transaction finds that
	// without a write and its sync. A plan against the version current
	// then stays valid, as versions never change.
	var plan *Plan
	err := c.rs.View(ctx, func(tx *keyring.RecordTx) error {
		h, err := findHeader(tx, name)
		if errors.Is(err, ErrNoTable) {
			return nil
		}
		if err != nil {
			return err
		}
		plan, _, err = planFor(h, input, false)
		if errors.Is(err, ErrSchema) && cfg.evolve {
			plan, err = nil, nil // evolved in the write transaction below
		}
		return err
	})
	if err == nil && plan == nil {
		err = c.rs.Update(ctx, func(tx *keyring.RecordTx) error {
			plan = nil
			h, err := findHeader(tx, name)
			if errors.Is(err, ErrNoTable) {
				h, err = newTable(name, input)
				if err != nil {
					return err
				}
				plan = &Plan{Table: name, Version: 1, Schema: withOwnTypes(h.t.Versions[0].Schema, input)}
				return writeHeader(tx, h)
			}
			if err != nil {
				return err
			}
			var changed bool
			if plan, changed, err = planFor(h, input, cfg.evolve); err != nil || !changed {
				return err
			}
			return writeHeader(tx, h)
		})
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: plan for table %q: %w", name, err)
	}
	return plan, nil
}

// planFor maps input onto the current schema of the table h; with evolve,
// it makes the new version in h (changed).
func planFor(h *header, input *arrow.Schema, evolve bool) (plan *Plan, changed bool, err error) {
	cur := h.t.Current()
	m := &merger{byID: mapsByID(input.Fields(), cur.Schema.Fields()), evolve: evolve, high: h.t.HighWater}
	out, next, err := m.fields(input.Fields(), cur.Schema.Fields(), "")
	if err != nil {
		return nil, false, err
	}
	plan = &Plan{Table: h.t.Name, Version: cur.ID, Schema: arrow.NewSchema(out, nil)}
	if len(m.changes) == 0 {
		return plan, false, nil
	}
	h.t.HighWater = m.high
	plan.Version = addVersion(h.t, next, joinChanges(m.changes)).ID
	return plan, true, nil
}

// withOwnTypes returns the table's schema s with the input's own leaf
// types (dictionaries, which the table holds as value types).
func withOwnTypes(s, input *arrow.Schema) *arrow.Schema {
	fs := slices.Clone(s.Fields())
	for i := range fs {
		fs[i] = withInputTypes(fs[i], input.Field(i))
	}
	return arrow.NewSchema(fs, nil)
}

func joinChanges(cs []string) string {
	s := ""
	for i, c := range cs {
		if i > 0 {
			s += "; "
		}
		s += c
	}
	return truncate(s)
}

func truncate(s string) string {
	if len(s) > maxChange {
		return s[:maxChange-3] + "..."
	}
	return s
}

// newTable makes the header of a new table for input.
func newTable(name string, input *arrow.Schema) (*header, error) {
	var k tableKey
	rand.Read(k[:])
	fs := stripDicts(input.Fields())
	high, ok := allIDs(fs)
	if !ok {
		var err error
		if fs, high, err = numberFresh(fs, 0); err != nil {
			return nil, err
		}
	}
	now := time.Now().UTC()
	t := &Table{Name: name, Created: now, HighWater: high}
	t.Versions = []Version{{ID: 1, Schema: arrow.NewSchema(fs, nil), Created: now, Change: "create"}}
	return &header{key: k, t: t}, nil
}

func stripDicts(fs []arrow.Field) []arrow.Field {
	return mapFields(fs, func(f arrow.Field) arrow.Field { f.Type = plain(f.Type); return f })
}

func addVersion(t *Table, fs []arrow.Field, change string) Version {
	v := Version{ID: len(t.Versions) + 1, Schema: arrow.NewSchema(fs, nil), Created: time.Now().UTC(), Change: change}
	t.Versions = append(t.Versions, v)
	return v
}
