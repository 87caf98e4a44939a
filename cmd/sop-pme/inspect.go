package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/reader"
	"github.com/sovm/sop-pme/storageid"
	"github.com/sovm/sop-pme/verify"
	"github.com/spf13/cobra"
)

// footerMetaNote labels what inspect shows from the decrypted footer.
const footerMetaNote = "footer metadata, not verified data (SOP-PME-1 11.10): counts the producer wrote, never checked against the rows"

type histBucket struct {
	Min   int64 `json:"min"`
	Max   int64 `json:"max"`
	Count int64 `json:"count"`
}

type inspectResult struct {
	StorageID string `json:"storage_id"`
	Size      int64  `json:"size"`
	// PadmeMin is the smallest size that Padmé pads to Size: the true
	// (unpadded) size is between it and Size. -1 if Size is no Padmé size.
	PadmeMin       int64        `json:"padme_min_size"`
	DataRegion     int64        `json:"data_region"`
	FooterRegion   int64        `json:"footer_region"`
	CryptoMetaData int64        `json:"crypto_metadata"`
	FooterModule   int64        `json:"footer_module"`
	Modules        int64        `json:"modules"`
	Histogram      []histBucket `json:"module_sizes"`
	KeyRef         string       `json:"key_ref"`
	Footer         *footerMeta  `json:"footer_metadata,omitempty"`
}

type footerMeta struct {
	Note      string           `json:"note"`
	RowGroups int              `json:"row_groups"`
	Rows      int64            `json:"rows"`
	PerGroup  []int64          `json:"rows_per_row_group"`
	Codecs    map[string]int64 `json:"codecs"`
}

func (a *app) inspectCmd() *cobra.Command {
	var (
		flags objectFlags
		noKey bool
	)
	cmd := &cobra.Command{
		Use:   "inspect ID",
		Short: "Show what untrusted storage sees of an object, and with the key its footer's counts",
		Long: `Inspect shows what anyone holding the object's bytes sees, without any key:
its size; the Padmé bound on its true size (the smallest size Padmé pads to
this one); the number of modules (each page header, each page, and the footer
is one, with a plaintext 4-byte length prefix) and a histogram of their sizes;
the sizes of the data region and the footer region; and the key_ref (random
and opaque: it resolves nothing). Every byte it reads is verified against the
storage_id first.

With the object's DEK in the keyring (and without --no-key) it adds the row
groups, rows and codecs that the decrypted footer states. These are footer
metadata, not verified data (SOP-PME-1 11.10): a producer may write any count
there, so use them for planning, never as an answer; export counts the rows.

` + keysHelp,
		Args: exactArgs(1, "one storage_id"),
		RunE: a.withObjects(&flags, nil, keysLater, func(ctx context.Context, objs *objects) error {
			id := objs.ids[0]
			res, tail, err := inspectStorage(ctx, objs.st, id)
			if err != nil {
				return about(id.String(), err)
			}
			if !noKey {
				if res.Footer, err = a.inspectFooter(ctx, objs, id, tail); err != nil {
					return about(id.String(), err)
				}
			}
			if flags.asJSON {
				return printJSON(a.stdout, res)
			}
			printInspect(a.stdout, res)
			return nil
		}),
	}
	flags.add(cmd, "print the result as JSON")
	cmd.Flags().BoolVar(&noKey, "no-key", false, "show only what untrusted storage sees; use no key")
	return cmd
}

// inspectStorage reads what untrusted storage sees of object id, through
// verified ranges only.
func inspectStorage(ctx context.Context, src verify.Source, id storageid.ID) (*inspectResult, pme.Tail, error) {
	vr, err := verify.NewReader(ctx, src, id)
	if err != nil {
		return nil, pme.Tail{}, err
	}
	size := vr.Size()
	res := &inspectResult{StorageID: id.String(), Size: size, PadmeMin: padmeMin(size)}
	if size < 4+pme.TrailerSize {
		return nil, pme.Tail{}, fmt.Errorf("%w: an object of %d bytes", errNonConformant, size)
	}
	var trailer [pme.TrailerSize]byte
	var magic [4]byte
	if _, err := vr.ReadAtContext(ctx, magic[:], 0); err != nil {
		return nil, pme.Tail{}, err
	}
	if string(magic[:]) != "PARE" {
		return nil, pme.Tail{}, fmt.Errorf("%w: it does not start with PARE", errNonConformant)
	}
	if _, err := vr.ReadAtContext(ctx, trailer[:], size-pme.TrailerSize); err != nil {
		return nil, pme.Tail{}, err
	}
	flen, err := pme.ParseTrailer(trailer[:])
	if err != nil {
		return nil, pme.Tail{}, fmt.Errorf("%w: %v", errNonConformant, clean(err))
	}
	dataEnd := size - pme.TrailerSize - int64(flen)
	if dataEnd < 4 || int64(flen) > max(reader.DefaultMaxFooterSize, size/16) {
		return nil, pme.Tail{}, fmt.Errorf("%w: a footer region of %d bytes in an object of %d", errNonConformant, flen, size)
	}
	region := make([]byte, flen)
	if _, err := vr.ReadAtContext(ctx, region, dataEnd); err != nil {
		return nil, pme.Tail{}, err
	}
	tail, err := pme.ParseFooterRegion(region)
	if err != nil {
		return nil, pme.Tail{}, fmt.Errorf("%w: %v", errNonConformant, clean(err))
	}
	res.DataRegion, res.FooterRegion = dataEnd-4, int64(flen)+pme.TrailerSize
	res.CryptoMetaData, res.FooterModule = int64(tail.CryptoLen), int64(flen)-int64(tail.CryptoLen)
	res.KeyRef = hex.EncodeToString(tail.Crypto.KeyMetadata)

	// The modules of the data region, by their length prefixes, read in
	// verified windows so that each group is fetched once.
	counts := map[int]int64{}
	w := window{vr: vr, end: dataEnd}
	for off := int64(4); off < dataEnd; {
		var p [pme.LenSize]byte
		if err := w.read(ctx, p[:], off); err != nil {
			return nil, pme.Tail{}, err
		}
		n := int64(binary.LittleEndian.Uint32(p[:]))
		if n < pme.NonceSize+pme.TagSize || off+pme.LenSize+n > dataEnd {
			return nil, pme.Tail{}, fmt.Errorf("%w: the module at offset %d (%d bytes) does not fit the data region [4, %d)", errNonConformant, off, n, dataEnd)
		}
		mod := pme.LenSize + n
		counts[bits.Len64(uint64(mod))-1]++
		res.Modules++
		off += mod
	}
	res.Modules++ // the footer
	counts[bits.Len64(uint64(res.FooterModule))-1]++
	var keys []int
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		res.Histogram = append(res.Histogram, histBucket{Min: 1 << k, Max: 1<<(k+1) - 1, Count: counts[k]})
	}
	return res, tail, nil
}

// window reads small ranges of an object through a verify.Reader, 64 KiB
// at a time.
type window struct {
	vr       *verify.Reader
	end      int64
	buf      []byte
	off      int64
	hasBytes bool
}

func (w *window) read(ctx context.Context, p []byte, off int64) error {
	if !w.hasBytes || off < w.off || off+int64(len(p)) > w.off+int64(len(w.buf)) {
		start := off &^ (verify.GroupSize - 1)
		n := min(int64(4*verify.GroupSize), w.end-start)
		if off+int64(len(p)) > start+n {
			n = off + int64(len(p)) - start
		}
		if cap(w.buf) < int(n) {
			w.buf = make([]byte, n)
		}
		w.buf = w.buf[:n]
		if _, err := w.vr.ReadAtContext(ctx, w.buf, start); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		w.off, w.hasBytes = start, true
	}
	copy(p, w.buf[off-w.off:])
	return nil
}

// padmeMin returns the smallest length that Padmé pads to size, or -1 if
// size is not a Padmé size.
func padmeMin(size int64) int64 {
	if size < 0 {
		return -1
	}
	lo, hi := uint64(0), uint64(size)
	for lo < hi {
		mid := lo + (hi-lo)/2
		t, err := padme.Target(mid)
		if err != nil || t >= uint64(size) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if t, err := padme.Target(lo); err != nil || t != uint64(size) {
		return -1
	}
	return int64(lo)
}

// inspectFooter reads the row groups, rows and codecs the object's footer
// states, if the keyring holds its DEK. Without a KEK, keyring or DEK it
// says so on stderr and returns nil.
func (a *app) inspectFooter(ctx context.Context, o *objects, id storageid.ID, tail pme.Tail) (*footerMeta, error) {
	k, err := o.keyring(ctx, a.stderr)
	var ce *cmdError
	if errors.As(err, &ce) && ce.code == exitNotFound {
		fmt.Fprintf(a.stderr, "sop-pme: %s; footer metadata not shown\n", ce.msg)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	dek, err := k.ring.ResolveDEK(ctx, id)
	if errors.Is(err, reader.ErrNoKey) {
		fmt.Fprintf(a.stderr, "sop-pme: the keyring holds no DEK for %s; footer metadata not shown\n", id)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// The reader opens the object first: it bounds and checks the footer
	// before arrow-go decodes it.
	if _, err := o.reader(ctx, o.st, id); err != nil {
		return nil, err
	}
	footer, err := pme.OpenFooter(dek, tail.FooterBody)
	if err != nil {
		return nil, err
	}
	footer.StripForReading()
	md, err := metadata.NewFileMetaData(footer.Append(nil), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: footer: %v", pme.ErrFormat, err)
	}
	fm := &footerMeta{Note: footerMetaNote, RowGroups: md.NumRowGroups(), Codecs: map[string]int64{}}
	for i := range md.NumRowGroups() {
		rg := md.RowGroup(i)
		fm.PerGroup = append(fm.PerGroup, rg.NumRows())
		fm.Rows += rg.NumRows()
		for j := range rg.NumColumns() {
			cc, err := rg.ColumnChunk(j)
			if err != nil {
				return nil, fmt.Errorf("%w: footer: %v", pme.ErrFormat, err)
			}
			fm.Codecs[strings.ToLower(cc.Compression().String())]++
		}
	}
	return fm, nil
}

func printInspect(w io.Writer, r *inspectResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "storage_id\t%s\n", r.StorageID)
	fmt.Fprintf(tw, "\nWhat untrusted storage sees (no key; every byte read was verified against the storage_id):\n")
	fmt.Fprintf(tw, "  size\t%d bytes\n", r.Size)
	if r.PadmeMin >= 0 {
		fmt.Fprintf(tw, "  true size\t%d to %d bytes (Padmé pads every size in that range to this one)\n", r.PadmeMin, r.Size)
	} else {
		fmt.Fprintf(tw, "  true size\tunknown: %d is not a Padmé size\n", r.Size)
	}
	fmt.Fprintf(tw, "  data region\t%d bytes in %d modules\n", r.DataRegion, r.Modules-1)
	fmt.Fprintf(tw, "  footer region\t%d bytes (FileCryptoMetaData %d, footer module %d, trailer %d)\n", r.FooterRegion, r.CryptoMetaData, r.FooterModule, pme.TrailerSize)
	fmt.Fprintf(tw, "  key_ref\t%s (random, opaque; resolves nothing)\n", r.KeyRef)
	fmt.Fprintf(tw, "  modules\t%d (each page header, page and the footer; plaintext length prefixes)\n", r.Modules)
	for _, b := range r.Histogram {
		fmt.Fprintf(tw, "    %s to <%s\t%d\n", byteSize(b.Min), byteSize(b.Max+1), b.Count)
	}
	if f := r.Footer; f != nil {
		fmt.Fprintf(tw, "\nWith the DEK: %s\n", f.Note)
		fmt.Fprintf(tw, "  row groups\t%d\n", f.RowGroups)
		per := make([]string, 0, min(len(f.PerGroup), 8))
		for i, n := range f.PerGroup {
			if i == 8 {
				per = append(per, "…")
				break
			}
			per = append(per, fmt.Sprint(n))
		}
		fmt.Fprintf(tw, "  rows\t%d (by row group: %s)\n", f.Rows, strings.Join(per, ", "))
		var cs []string
		for c, n := range f.Codecs {
			cs = append(cs, fmt.Sprintf("%s (%d column chunks)", c, n))
		}
		sort.Strings(cs)
		fmt.Fprintf(tw, "  codecs\t%s\n", strings.Join(cs, ", "))
	}
	tw.Flush()
}

// byteSize formats a power-of-two bound: 512 B, 64 KiB, 2 MiB.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
