package pme

// SetSealed sets the count of modules k has sealed, to test the limit
// without sealing 2^32 modules.
func SetSealed(k DEK, n uint64) { k.s.sealed.Store(n) }
