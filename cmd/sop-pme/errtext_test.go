package main

import "testing"

// TestCleanTextFileNames: the package prefixes of the library's and
// arrow-go's errors go, but a file name that ends in one of them keeps it.
// Before, "parquet: " was cut out of "…/hadoop_lz4_compressed.parquet: ",
// which printed as "…/hadoop_lz4_compressed.not a readable table".
func TestCleanTextFileNames(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"formats: not a readable table: /d/hadoop_lz4_compressed.parquet: parquet: compression for LZ4 unimplemented": "not a readable table: /d/hadoop_lz4_compressed.parquet: compression for LZ4 unimplemented",
		"reader: pme: module authentication failed":                   "module authentication failed",
		"x.parquet: y-reader: z/pme: w_writer: v":                     "x.parquet: y-reader: z/pme: w_writer: v",
		"parquet: eof exception":                                      "eof exception",
		"import (writer: field) arrow/ipc: bad":                       "import (field) bad",
		"a.parquet: not a readable table: a.parquet: parquet: broken": "a.parquet: not a readable table: broken",
	} {
		if got := cleanText(in); got != want {
			t.Errorf("cleanText(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}
