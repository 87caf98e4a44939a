package s3

// SetOutboardFetch sets how Slice fetches outboards (see slice.go) and
// returns a function that restores the defaults. Tests that call it must
// not run in parallel.
func SetOutboardFetch(whole, gap, stream uint64) (restore func()) {
	w, g, s := wholeOutboardMax, obGapMax, obStreamMin
	wholeOutboardMax, obGapMax, obStreamMin = whole, gap, stream
	return func() { wholeOutboardMax, obGapMax, obStreamMin = w, g, s }
}

// SetPlan sets whether Plan does anything (on), how many data ranges a
// plan keeps requested ahead, and returns a function that restores the
// defaults.
func SetPlan(on bool, window int) (restore func()) {
	off, w := planOff, planWindow
	planOff, planWindow = !on, window
	return func() { planOff, planWindow = off, w }
}
