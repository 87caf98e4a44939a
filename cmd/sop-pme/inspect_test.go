package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestInspect: what untrusted storage sees adds up (regions, modules,
// histogram), the Padmé bound holds the unpadded size, the key_ref is the
// one check reports, and with the DEK the footer's counts are those
// imported, labelled as footer metadata; --no-key shows none of them.
func TestInspect(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := filepath.Join(t.TempDir(), "t.csv")
	os.WriteFile(in, []byte("a,b\n"+strings.Repeat("1,xyz\n2,abc\n", 3000)), 0o600)
	imp := e.importJSON(in, "--assign-field-ids", "--row-group-rows", "2500")
	var res inspectResult
	r := e.ok("inspect", "--json", imp.StorageID)
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err, r.stdout)
	}
	if res.Size != int64(imp.Size) || 4+res.DataRegion+res.FooterRegion != res.Size {
		t.Errorf("regions do not add up: %+v", res)
	}
	if res.PadmeMin < 0 || res.PadmeMin > int64(imp.UnpaddedSize) || int64(imp.UnpaddedSize) > res.Size {
		t.Errorf("Padmé bound %d..%d does not hold the unpadded size %d", res.PadmeMin, res.Size, imp.UnpaddedSize)
	}
	var n int64
	for _, b := range res.Histogram {
		n += b.Count
	}
	// 3 row groups × 2 columns × (page header + page) at least, + footer.
	if n != res.Modules || res.Modules < 13 {
		t.Errorf("%d modules, histogram counts %d", res.Modules, n)
	}
	var chk checkResult
	json.Unmarshal([]byte(e.ok("check", "--json", imp.StorageID).stdout), &chk)
	if res.KeyRef == "" || res.KeyRef != chk.KeyRef {
		t.Errorf("key_ref %q, check says %q", res.KeyRef, chk.KeyRef)
	}
	f := res.Footer
	if f == nil || f.Rows != 6000 || f.RowGroups != 3 || f.Codecs["zstd"] != 6 || !strings.Contains(f.Note, "not verified data") {
		t.Fatalf("footer metadata: %+v", f)
	}
	if r := e.ok("inspect", imp.StorageID); !strings.Contains(r.stdout, "With the DEK: footer metadata, not verified data") || !regexp.MustCompile(`rows +6000 \(by row group: 2500, 2500, 1000\)`).MatchString(r.stdout) {
		t.Errorf("inspect:\n%s", r.stdout)
	}
	r = e.ok("inspect", "--json", "--no-key", imp.StorageID)
	if strings.Contains(r.stdout, "footer_metadata") {
		t.Errorf("--no-key shows footer metadata:\n%s", r.stdout)
	}
}
