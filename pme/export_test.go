package pme

import "github.com/sovm/sop-pme/padme"

// SetSealed sets the count of modules k has sealed, to test the limit
// without sealing 2^32 modules.
func SetSealed(k DEK, n uint64) { k.s.sealed.Store(n) }

// PadFits is padFits, for testing the limits without allocating a pad.
func PadFits(footerLen int, p padme.Pad) error { return padFits(footerLen, p) }

// StripTree applies StripForReading to f as an editable tree, for comparing
// with the View's encoding.
func StripTree(f *Footer) []byte {
	f.edit()
	f.stripTree()
	return f.Append(nil)
}
