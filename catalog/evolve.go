package catalog

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/sovm/sop-pme/keyring"
)

// evolve runs one schema change on the current version of table: fn
// returns the new top-level fields and the change's note.
func (c *Catalog) evolve(ctx context.Context, table, what string, fn func(t *Table) ([]arrow.Field, string, error)) (Version, error) {
	var v Version
	err := c.rs.Update(ctx, func(tx *keyring.RecordTx) error {
		h, err := findHeader(tx, table)
		if err != nil {
			return err
		}
		fs, change, err := fn(h.t)
		if err != nil {
			return err
		}
		v = addVersion(h.t, fs, truncate(change))
		return writeHeader(tx, h)
	})
	if err != nil {
		return Version{}, fmt.Errorf("catalog: %s in table %q: %w", what, table, err)
	}
	return v, nil
}

// AddColumn adds a nullable column of type typ at path (a dotted path adds
// into a struct: "a.b" adds b to struct a) and returns the new version.
// The column, and every field nested in it, gets a fresh field ID above
// the table's HighWater, so no ID is reused (Section 11.2). A column of
// that name already there is ErrEvolution.
func (c *Catalog) AddColumn(ctx context.Context, table, path string, typ arrow.DataType) (Version, error) {
	return c.evolve(ctx, table, "add column", func(t *Table) ([]arrow.Field, string, error) {
		if typ == nil {
			return nil, "", colErr(path, ErrEvolution, "no type")
		}
		var change string
		fs, err := edit(t.Current().Schema.Fields(), path, func(fs []arrow.Field, name string) ([]arrow.Field, error) {
			if index(fs, name) >= 0 {
				return nil, colErr(path, ErrEvolution, "a column of that name exists")
			}
			f := arrow.Field{Name: name, Type: typ, Nullable: true}
			if err := checkInput(arrow.NewSchema([]arrow.Field{f}, nil)); err != nil {
				return nil, &ColumnError{Column: path, Err: fmt.Errorf("%w: %w", ErrEvolution, err)}
			}
			fresh, high, err := numberFresh([]arrow.Field{f}, t.HighWater)
			if err != nil {
				return nil, &ColumnError{Column: path, Err: err}
			}
			id, _ := fieldID(fresh[0])
			change = fmt.Sprintf("add %s (id %d)", path, id)
			t.HighWater = high
			return append(slices.Clone(fs), fresh[0]), nil
		})
		return fs, change, err
	})
}

// RenameColumn renames the column at path to newName, keeping its field
// ID: objects written before read under the new name (Section 11.2). The
// old name is free for a new column, which gets a new ID.
func (c *Catalog) RenameColumn(ctx context.Context, table, path, newName string) (Version, error) {
	return c.evolve(ctx, table, "rename column", func(t *Table) ([]arrow.Field, string, error) {
		fs, err := edit(t.Current().Schema.Fields(), path, func(fs []arrow.Field, name string) ([]arrow.Field, error) {
			i := index(fs, name)
			if i < 0 {
				return nil, colErr(path, ErrEvolution, "no such column")
			}
			if newName == "" || bytes.ContainsRune([]byte(newName), '.') || len(newName) > maxName {
				return nil, colErr(path, ErrEvolution, "%q is not a column name", newName)
			}
			if index(fs, newName) >= 0 {
				return nil, colErr(path, ErrEvolution, "a column named %q exists", newName)
			}
			out := slices.Clone(fs)
			out[i].Name = newName
			return out, nil
		})
		return fs, fmt.Sprintf("rename %s to %s", path, newName), err
	})
}

// DropColumn drops the column at path. Its field ID, and those nested in
// it, are never assigned again (Section 11.2). Dropping the last column of
// the table or of a struct is ErrEvolution.
func (c *Catalog) DropColumn(ctx context.Context, table, path string) (Version, error) {
	return c.evolve(ctx, table, "drop column", func(t *Table) ([]arrow.Field, string, error) {
		fs, err := edit(t.Current().Schema.Fields(), path, func(fs []arrow.Field, name string) ([]arrow.Field, error) {
			i := index(fs, name)
			if i < 0 {
				return nil, colErr(path, ErrEvolution, "no such column")
			}
			if len(fs) == 1 {
				return nil, colErr(path, ErrEvolution, "the last column of its table or struct")
			}
			return slices.Delete(slices.Clone(fs), i, i+1), nil
		})
		return fs, "drop " + path, err
	})
}

// Promote widens the column at path to typ, as Iceberg allows: int8,
// int16 and int32 to a wider integer (int32 or int64), float32 to
// float64, a decimal to a larger precision of the same scale. Objects
// written before keep their narrower type; readers widen. Anything else
// is ErrEvolution in a *ColumnError.
func (c *Catalog) Promote(ctx context.Context, table, path string, typ arrow.DataType) (Version, error) {
	return c.evolve(ctx, table, "promote column", func(t *Table) ([]arrow.Field, string, error) {
		var change string
		fs, err := edit(t.Current().Schema.Fields(), path, func(fs []arrow.Field, name string) ([]arrow.Field, error) {
			i := index(fs, name)
			if i < 0 {
				return nil, colErr(path, ErrEvolution, "no such column")
			}
			if typ == nil || !promotable(fs[i].Type, typ) {
				return nil, colErr(path, ErrEvolution, "%s cannot be promoted to %v", fs[i].Type, typ)
			}
			change = fmt.Sprintf("promote %s from %s to %s", path, fs[i].Type, typ)
			out := slices.Clone(fs)
			out[i].Type = typ
			return out, nil
		})
		return fs, change, err
	})
}
