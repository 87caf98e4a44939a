package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// ErrConflict reports records to import (ImportTable) that contradict the
// catalog: a table of the same name that is another table, the same table
// under another name or with schema versions that diverge from those held,
// or an object that another table holds. Nothing was changed.
var ErrConflict = errors.New("catalog: the records conflict with the catalog")

// A Record is one record of the catalog's space of the ring (see the
// package documentation), its key and its plaintext value: what
// ExportTable gives and Import takes, to hand a table to another
// catalog (a grant to another node, which has its own ring key).
type Record struct {
	Key, Value []byte
}

// ExportTable returns the table name with its objects, and its records as
// the catalog holds them: its header record first, then its objects'
// records in the order of their keys. They are the plaintext of
// encrypted catalog metadata (Sections 11.4, 11.8): the table's name,
// schemas, row counts and exact sizes. The caller hands them only to whom
// may read them.
func (c *Catalog) ExportTable(ctx context.Context, name string) (*Table, []Record, error) {
	var (
		out  *Table
		recs []Record
	)
	err := c.rs.View(ctx, func(tx *keyring.RecordTx) error {
		recs = recs[:0]
		h, err := findHeader(tx, name)
		if err != nil {
			return err
		}
		ts, err := withObjects(tx, []*header{h})
		if err != nil {
			return err
		}
		out = ts[0]
		v, err := tx.Get(headerKey(h.key))
		if err != nil {
			return err
		}
		recs = append(recs, Record{headerKey(h.key), v})
		objs := make([]Record, 0, len(out.Objects))
		for _, o := range out.Objects {
			v, err := tx.Get(objectKey(o.ID))
			if err != nil {
				return err
			}
			objs = append(objs, Record{objectKey(o.ID), v})
		}
		slices.SortFunc(objs, func(a, b Record) int { return bytes.Compare(a.Key, b.Key) })
		recs = append(recs, objs...)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("catalog: export table %q: %w", name, err)
	}
	return out, recs, nil
}

// parseExport checks the records of one table as ExportTable gives them:
// one header record, then object records of that table, in strictly
// increasing key order, each parsed as strictly as the catalog parses its
// own (ErrRecord).
func parseExport(recs []Record) (*header, []*object, error) {
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("%w: no table header record", ErrRecord)
	}
	hk := recs[0].Key
	if len(hk) != 1+keySize || hk[0] != prefixTable {
		return nil, nil, fmt.Errorf("%w: the first record is not a table header", ErrRecord)
	}
	h, err := decodeHeader(tableKey(hk[1:]), recs[0].Value)
	if err != nil {
		return nil, nil, err
	}
	objs := make([]*object, 0, len(recs)-1)
	for i, r := range recs[1:] {
		if len(r.Key) != 1+storageid.Size || r.Key[0] != prefixObject {
			return nil, nil, fmt.Errorf("%w: record %d of table %q is not an object record", ErrRecord, i+1, h.t.Name)
		}
		if i > 0 && bytes.Compare(recs[i].Key, r.Key) >= 0 {
			return nil, nil, fmt.Errorf("%w: the object records of table %q are not in strictly increasing order", ErrRecord, h.t.Name)
		}
		o, err := decodeObject(r.Value)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case !bytes.Equal(r.Key[1:], o.ID[:]):
			return nil, nil, fmt.Errorf("%w: object record of %s under the key of another", ErrRecord, o.ID)
		case o.table != h.key:
			return nil, nil, fmt.Errorf("%w: object %s of another table than %q", ErrRecord, o.ID, h.t.Name)
		case o.Version > len(h.t.Versions):
			return nil, nil, fmt.Errorf("%w: object %s of version %d in table %q of %d", ErrRecord, o.ID, o.Version, h.t.Name, len(h.t.Versions))
		case o.seq >= h.seq:
			return nil, nil, fmt.Errorf("%w: object %s of sequence %d in table %q whose next is %d", ErrRecord, o.ID, o.seq, h.t.Name, h.seq)
		}
		objs = append(objs, o)
	}
	return h, objs, nil
}

// sameVersion reports whether two schema versions are the same.
func sameVersion(a, b Version) (bool, error) {
	if !a.Created.Equal(b.Created) || a.Change != b.Change {
		return false, nil
	}
	sa, err := encodeSchema(a.Schema)
	if err != nil {
		return false, err
	}
	sb, err := encodeSchema(b.Schema)
	if err != nil {
		return false, err
	}
	return bytes.Equal(sa, sb), nil
}

// TableOf checks the records of one table as ExportTable gives them, as
// strictly as the catalog reads its own (ErrRecord), and returns the table
// they hold with its objects (in the order of their keys), without
// touching any catalog.
func TableOf(recs []Record) (*Table, error) {
	h, objs, err := parseExport(recs)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	t := *h.t
	t.Objects = make([]Object, len(objs))
	for i, o := range objs {
		t.Objects[i] = o.Object
	}
	return &t, nil
}

// Imported says what Import added.
type Imported struct {
	// Tables are the names of the tables imported, in the order given.
	Tables []string
	// Objects is how many object records were added (not already held).
	Objects int
	// DEKs is how many DEKs were added (not already held).
	DEKs int
}

// Import adds to the catalog, in one transaction of the ring file, the
// records of tables exported by ExportTable from another catalog, and
// adds deks to the ring (keyring.RecordTx.AddDEKs: a DEK held is never
// replaced): all of it, or nothing.
//
// The records are checked first, as strictly as the catalog reads its own
// (ErrRecord). A table is the same table if it has the same table key (16
// random bytes, made when the table was created), whatever its records
// hold: the same table again merges, its objects not held added and those
// held kept, and its schema versions, one list a prefix of the other,
// taken as the longer (field IDs are never reused, Section 11.2, so the
// high water is the larger of the two). Importing the same records again
// changes nothing. A table of the same name that is another table, the
// same table under another name or with diverging versions, or an object
// another table holds, is ErrConflict; a different DEK held for a
// storage_id is keyring.ErrConflict; either way nothing is changed.
func (c *Catalog) Import(ctx context.Context, tables [][]Record, deks []keyring.Entry) (Imported, error) {
	type parsed struct {
		h    *header
		objs []*object
		recs []Record
	}
	ins := make([]parsed, len(tables))
	var out Imported
	for i, recs := range tables {
		h, objs, err := parseExport(recs)
		if err != nil {
			return Imported{}, fmt.Errorf("catalog: import: %w", err)
		}
		for _, p := range ins[:i] {
			if p.h.key == h.key || p.h.t.Name == h.t.Name {
				return Imported{}, fmt.Errorf("catalog: import: %w: table %q given twice", ErrRecord, h.t.Name)
			}
		}
		ins[i] = parsed{h, objs, recs}
		out.Tables = append(out.Tables, h.t.Name)
	}
	err := c.rs.Update(ctx, func(tx *keyring.RecordTx) error {
		out.Objects, out.DEKs = 0, 0
		for _, in := range ins {
			n, err := importTable(tx, in.h, in.objs, in.recs)
			if err != nil {
				return fmt.Errorf("table %q: %w", in.h.t.Name, err)
			}
			out.Objects += n
		}
		if len(deks) == 0 {
			return nil
		}
		n, err := tx.AddDEKs(deks)
		out.DEKs = n
		return err
	})
	if err != nil {
		return Imported{}, fmt.Errorf("catalog: import: %w", err)
	}
	return out, nil
}

// importTable imports one table's checked records in tx, and returns how
// many object records it added.
func importTable(tx *keyring.RecordTx, in *header, objs []*object, recs []Record) (int, error) {
	hs, err := readHeaders(tx)
	if err != nil {
		return 0, err
	}
	name := in.t.Name
	var held *header
	for _, h := range hs {
		switch {
		case h.key == in.key && h.t.Name != name:
			return 0, fmt.Errorf("%w: the table is held under the name %q", ErrConflict, h.t.Name)
		case h.key == in.key:
			held = h
		case h.t.Name == name:
			return 0, fmt.Errorf("%w: a table named %q is held, and it is another table", ErrConflict, name)
		}
	}
	if held == nil {
		if err := tx.Put(recs[0].Key, recs[0].Value); err != nil {
			return 0, err
		}
	} else if err := mergeHeader(tx, held, in); err != nil {
		return 0, err
	}
	added := 0
	for i, o := range objs {
		old, err := getObject(tx, o.ID)
		if err != nil {
			return 0, err
		}
		if old != nil {
			if old.table != in.key {
				return 0, fmt.Errorf("%w: object %s is in another table", ErrConflict, o.ID)
			}
			continue
		}
		if err := tx.Put(recs[i+1].Key, recs[i+1].Value); err != nil {
			return 0, err
		}
		added++
	}
	return added, nil
}

// mergeHeader merges the header in of a table into the one held of the
// same table, writing it only if it changes.
func mergeHeader(tx *keyring.RecordTx, held, in *header) error {
	n := min(len(held.t.Versions), len(in.t.Versions))
	for i := range n {
		same, err := sameVersion(held.t.Versions[i], in.t.Versions[i])
		if err != nil {
			return err
		}
		if !same {
			return fmt.Errorf("%w: table %q: schema version %d differs from the one held", ErrConflict, in.t.Name, i+1)
		}
	}
	out := held
	if len(in.t.Versions) > len(held.t.Versions) {
		out = in
	}
	seq, high := max(held.seq, in.seq), max(held.t.HighWater, in.t.HighWater)
	if out == held && seq == held.seq && high == held.t.HighWater {
		return nil
	}
	out.seq, out.t.HighWater = seq, high
	return writeHeader(tx, out)
}
