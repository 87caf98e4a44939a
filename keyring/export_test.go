package keyring

// WithHook makes the Ring call h at named points of its operations:
// "committed" (a change that needs shredding committed, before its scrub)
// and "scrub-write" (the scrub wrote its first zeros, before the rest and
// before its sync). The crash tests kill the process there.
func WithHook(h func(step string)) Option {
	return func(c *config) error { c.hook = h; return nil }
}
