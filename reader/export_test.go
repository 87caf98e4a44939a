package reader

// SyncOpens returns how many chunks r's scans opened when arrow-go asked
// for them, instead of taking them from the fetcher.
func SyncOpens(r *Reader) int64 { return r.stats.syncOpens.Load() }
