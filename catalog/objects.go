package catalog

import (
	"context"
	"fmt"
	"time"

	"github.com/sovm/sop-pme/keyring"
	"github.com/sovm/sop-pme/storageid"
)

// Append records objs as appended to the plan's table, in this order,
// under the plan's version (an Object's Version is 0 or that version; an
// Appended time left zero is now). An object already in the table is
// recorded again in place; one held by another table is ErrObject.
// When Append returns nil the records are on disk.
func (c *Catalog) Append(ctx context.Context, plan *Plan, objs ...Object) error {
	if plan == nil {
		return fmt.Errorf("%w: no plan", ErrSchema)
	}
	for _, o := range objs {
		if o.Version != 0 && o.Version != plan.Version {
			return fmt.Errorf("%w: object %s of version %d in a plan of version %d", ErrObject, o.ID, o.Version, plan.Version)
		}
		if o.Rows < 0 || o.UnpaddedSize < 0 || o.Size < o.UnpaddedSize {
			return fmt.Errorf("%w: object %s: rows %d, unpadded size %d, size %d", ErrObject, o.ID, o.Rows, o.UnpaddedSize, o.Size)
		}
	}
	now := time.Now().UTC()
	err := c.rs.Update(ctx, func(tx *keyring.RecordTx) error {
		h, err := findHeader(tx, plan.Table)
		if err != nil {
			return err
		}
		if plan.Version < 1 || plan.Version > len(h.t.Versions) {
			return fmt.Errorf("%w: a plan of version %d for a table of %d", ErrSchema, plan.Version, len(h.t.Versions))
		}
		seq := h.seq
		for _, o := range objs {
			old, err := getObject(tx, o.ID)
			if err != nil {
				return err
			}
			if old != nil && old.table != h.key {
				return fmt.Errorf("%w: object %s is in another table", ErrObject, o.ID)
			}
			rec := &object{Object: o, table: h.key, seq: seq}
			rec.Version = plan.Version
			if rec.Appended.IsZero() {
				rec.Appended = now
			}
			if old != nil {
				rec.seq = old.seq
			} else {
				seq++
			}
			if err := tx.Put(objectKey(o.ID), encodeObject(rec)); err != nil {
				return err
			}
		}
		if seq == h.seq {
			return nil
		}
		h.seq = seq
		return writeHeader(tx, h)
	})
	if err != nil {
		return fmt.Errorf("catalog: append to table %q: %w", plan.Table, err)
	}
	return nil
}

// RemoveObjects forgets the objects ids of table (the caller deletes their
// DEKs and the objects). An id the table does not hold is skipped; one
// another table holds is ErrObject, and nothing is removed. The records
// removed are shredded (keyring.RecordTx.Delete).
func (c *Catalog) RemoveObjects(ctx context.Context, table string, ids ...storageid.ID) error {
	err := c.rs.Update(ctx, func(tx *keyring.RecordTx) error {
		h, err := findHeader(tx, table)
		if err != nil {
			return err
		}
		for _, id := range ids {
			o, err := getObject(tx, id)
			if err != nil {
				return err
			}
			if o == nil {
				continue
			}
			if o.table != h.key {
				return fmt.Errorf("%w: object %s is in another table", ErrObject, id)
			}
			if err := tx.Delete(objectKey(id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("catalog: remove objects of table %q: %w", table, err)
	}
	return nil
}

// Drop removes the table and its objects' records from the catalog and
// returns what it held: the caller deletes the DEKs and the objects. The
// records are shredded. Its field IDs die with it.
func (c *Catalog) Drop(ctx context.Context, table string) (*Table, error) {
	var out *Table
	err := c.rs.Update(ctx, func(tx *keyring.RecordTx) error {
		h, err := findHeader(tx, table)
		if err != nil {
			return err
		}
		ts, err := withObjects(tx, []*header{h})
		if err != nil {
			return err
		}
		out = ts[0]
		for _, o := range out.Objects {
			if err := tx.Delete(objectKey(o.ID)); err != nil {
				return err
			}
		}
		return tx.Delete(headerKey(h.key))
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: drop table %q: %w", table, err)
	}
	return out, nil
}
