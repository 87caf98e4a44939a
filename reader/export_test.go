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

// ParallelStats returns, for a scan with WithParallelism above 1, the
// most memory its row groups in flight held at once, its limit for the
// last row group, and how many row groups it gave up to make room; ok is
// false for a sequential scan.
func ParallelStats(rr any) (peak, limit int64, gaveUp int, ok bool) {
	s, ok := rr.(*parScan)
	if !ok {
		return 0, 0, 0, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peakInUse, s.limit(), s.gaveUp, true
}

// WithArrowDecoder makes a scan decode every row group with arrow-go's
// decoder, never package flatdec.
func WithArrowDecoder() ScanOption { return withArrowDecoder() }

// FlatRowGroups returns how many row groups r's scans decoded with
// package flatdec.
func FlatRowGroups(r *Reader) int64 { return r.stats.flatRowGroups.Load() }
