package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/writer"
	"github.com/spf13/cobra"
)

func (a *app) demoCmd() *cobra.Command {
	var (
		store storeFlag
		ks    keySource
		rows  int
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Write a sample table into a store, then read, verify and check it",
		Long: `Demo writes a sample table of orders (every field with a field ID) into one
object in the store (./demo-store unless --store or $SOP_PME_STORE says
otherwise), and its DEK into the keyring, creating the store, the KEK and the
keyring if there are none and saying where. It prints the object's storage_id,
size, unpadded size and key_ref (never the DEK), reads one field back through
verified ranges, verifies every byte, checks conformance, and suggests what to
try next.

By default the KEK and the keyring are the user's own (in the user
configuration directory), shared by every store and every later command: the
demo's DEK joins that keyring. To keep a demo apart, give it a KEK of its own,
with --kek DIR/kek or SOP_PME_KEK_FILE=DIR/kek (the keyring goes beside it).

` + keysHelp,
		Args: exactArgs(0, "no argument"),
		RunE: runE(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if store.value == "" {
				store.value = os.Getenv("SOP_PME_STORE")
			}
			if store.value == "" {
				store.value = "demo-store"
			}
			if err := store.dirOnly("demo"); err != nil {
				return err
			}
			dir := store.value
			k, err := ks.openRing(ctx, dir, ringCreate, a.stdout)
			if err != nil {
				return err
			}
			defer k.Close()
			st, err := blobs.CreateDir(dir)
			if err != nil {
				return store.err(err)
			}
			schema, rec := sampleTable(rows)
			defer rec.Release()
			w, err := writer.New(ctx, st, schema, writer.WithRowGroupRows(32_768))
			if err != nil {
				return err
			}
			if err := w.Write(rec); err != nil {
				return err
			}
			obj, err := w.Close(ctx)
			if err != nil {
				return err
			}
			if err := k.ring.Put(ctx, obj.StorageID, obj.DEK); err != nil {
				st.Delete(ctx, obj.StorageID)
				return about(k.ring.Path(), err)
			}
			out := a.stdout
			fmt.Fprintf(out, "wrote a %d-row sample table to %s\n", rows, dir)
			fmt.Fprintf(out, "storage_id     %s\n", obj.StorageID)
			fmt.Fprintf(out, "size           %d bytes (Padmé target of the unpadded size)\n", obj.Size)
			fmt.Fprintf(out, "unpadded size  %d bytes (keep it in the encrypted catalog)\n", obj.UnpaddedSize)
			fmt.Fprintf(out, "key_ref        %s (opaque; resolves nothing)\n", obj.KeyRef)
			fmt.Fprintf(out, "DEK            %v, wrapped in %s\n", obj.DEK, k.ring.Path())
			switch {
			case ks.kekPath != "":
				fmt.Fprintf(out, "KEK            in %s (not in the store)\n\n", ks.kekPath)
			default:
				fmt.Fprintf(out, "KEK            %s (not in the store)\n\n", ks.where())
			}
			prefix := demoKeys(out, &ks)

			r, err := reader.Open(ctx, st, obj.StorageID, k.ring)
			if err != nil {
				return about(obj.StorageID.String(), err)
			}
			n, sum, err := sumColumn(ctx, r, 3)
			if err != nil {
				return about(obj.StorageID.String(), err)
			}
			fmt.Fprintf(out, "projection of field 3 (amount) through verified ranges: %d rows, sum %d; object verified: %v\n", n, sum, r.Verified())
			if err := r.Verify(ctx); err != nil {
				return about(obj.StorageID.String(), err)
			}
			fmt.Fprintf(out, "full verification against storage_id: ok; object verified: %v\n", r.Verified())
			rep, err := reader.Check(ctx, st, obj.StorageID, k.ring)
			if err != nil {
				return about(obj.StorageID.String(), err)
			}
			fmt.Fprintln(out, rep)
			var flags string
			if ks.kmsFlag != "" {
				flags += " --kms " + redactURL(ks.kmsFlag)
			}
			if ks.kekFlag != "" {
				flags += " --kek " + ks.kekFlag
			}
			if ks.ringFlag != "" {
				flags += " --keyring " + ks.ringFlag
			}
			fmt.Fprintf(out, "\nnext (install the command with %s):\n", installHint)
			fmt.Fprintf(out, "  %ssop-pme export  --store %s%s %s --format csv --limit 5\n", prefix, dir, flags, obj.StorageID)
			fmt.Fprintf(out, "  %ssop-pme inspect --store %s%s %s\n", prefix, dir, flags, obj.StorageID)
			fmt.Fprintf(out, "  %ssop-pme ls      --store %s%s\n", prefix, dir, flags)
			return nil
		}),
	}
	addStoreFlag(cmd, &store)
	addKeyFlags(cmd, &ks)
	cmd.Flags().IntVar(&rows, "rows", 100_000, "`rows` to write")
	return cmd
}

// demoKeys says plainly on out where the demo's KEK and keyring came from,
// and, for the defaults, that they are shared by every store and how to
// keep a demo apart. It returns the environment the later commands need
// ("SOP_PME_KEK_FILE=... " when the KEK file came from there, else "").
func demoKeys(out io.Writer, ks *keySource) string {
	defer fmt.Fprintln(out)
	switch {
	case ks.kmsFlag != "" || ks.kekFlag != "":
		fmt.Fprintf(out, "Keys: %s and the keyring %s were given on the command\nline: give the same flags to read this object later.\n", ks.where(), ks.ringPath)
	case ks.kmsURL != "" || ks.inline != "":
		fmt.Fprintf(out, "Keys: %s comes from the environment, with the keyring\n%s: set the same to read this object later.\n", ks.where(), ks.ringPath)
	case os.Getenv("SOP_PME_KEK_FILE") != "":
		fmt.Fprintf(out, "Keys: the KEK file %s (from $SOP_PME_KEK_FILE) and the keyring\n%s are this demo's own: set SOP_PME_KEK_FILE the same way to read\nthis object later.\n", ks.kekPath, ks.ringPath)
		return "SOP_PME_KEK_FILE=" + ks.kekPath + " "
	default:
		fmt.Fprint(out, `Keys: the KEK and the keyring above are this user's defaults, in the user
configuration directory, shared by every store: every sop-pme command run
without --kek, --kms or a SOP_PME_KEK* variable uses them, and this demo's
DEK is now in that keyring. To keep a demo apart, give it a KEK of its own
(its keyring goes beside it):
  sop-pme demo --kek DIR/kek
  SOP_PME_KEK_FILE=DIR/kek make demo
`)
	}
	return ""
}

// sampleTable is a small table of orders, every field with a field ID.
func sampleTable(n int) (*arrow.Schema, arrow.RecordBatch) {
	fid := func(id int) arrow.Metadata {
		return arrow.NewMetadata([]string{writer.FieldIDKey}, []string{strconv.Itoa(id)})
	}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "order_id", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(1)},
		{Name: "customer", Type: arrow.BinaryTypes.String, Metadata: fid(2)},
		{Name: "amount", Type: arrow.PrimitiveTypes.Int64, Metadata: fid(3)},
		{Name: "placed_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Metadata: fid(4)},
		{Name: "paid", Type: arrow.FixedWidthTypes.Boolean, Nullable: true, Metadata: fid(5)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("customer-%05d", i%9973))
		b.Field(2).(*array.Int64Builder).Append(int64(i%1000) * 7)
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1_767_225_600_000_000 + int64(i)*1_000_000))
		if i%20 == 0 {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.BooleanBuilder).Append(i%3 != 0)
		}
	}
	return schema, b.NewRecordBatch()
}

func sumColumn(ctx context.Context, r *reader.Reader, id int32) (n, sum int64, err error) {
	rr, err := r.Scan(ctx, reader.WithFields(id))
	if err != nil {
		return 0, 0, err
	}
	defer rr.Release()
	for rr.Next() {
		col, ok := rr.RecordBatch().Column(0).(*array.Int64)
		if !ok {
			return 0, 0, fmt.Errorf("field %d is not int64", id)
		}
		for i := range col.Len() {
			sum += col.Value(i)
		}
		n += int64(col.Len())
	}
	return n, sum, rr.Err()
}
