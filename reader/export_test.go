package reader

// SyncOpens returns how many chunks r's scans opened when arrow-go asked
// for them, instead of taking them from the fetcher.
func SyncOpens(r *Reader) int64 { return r.stats.syncOpens.Load() }

// WithAnyDictionaries is WithDictionaries for every top-level string or
// binary column whose chunks have a dictionary page, plain data pages or
// not: so that a test reaches arrow-go's fallback from dictionary to plain
// pages within a chunk read as a dictionary.
func WithAnyDictionaries() ScanOption {
	return func(c *scanConfig) error {
		c.dict, c.dictAny = true, true
		return nil
	}
}
