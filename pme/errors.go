package pme

import "errors"

// Errors returned (wrapped) by this package. Match them with errors.Is.
var (
	// ErrAuth is the single, opaque failure of AES-GCM authentication: a
	// wrong key or a damaged module. No plaintext is released with it.
	ErrAuth = errors.New("pme: module authentication failed (wrong key or damaged module)")
	// ErrKeySize reports a key that is not 16, 24 or 32 bytes.
	ErrKeySize = errors.New("pme: key must be 16, 24 or 32 bytes")
	// ErrNoKey reports use of the zero DEK.
	ErrNoKey = errors.New("pme: no key")
	// ErrNoMarshal reports an attempt to serialise a DEK as text or JSON.
	ErrNoMarshal = errors.New("pme: a DEK is not serialised; wrap it under a key-encryption key")
	// ErrNonceLimit reports that a DEK has sealed MaxModules modules.
	ErrNonceLimit = errors.New("pme: DEK has sealed 2^32 modules; no more may be sealed under it")
	// ErrTooLarge reports a module or footer larger than the format allows.
	ErrTooLarge = errors.New("pme: too large")
	// ErrModule reports a malformed module frame.
	ErrModule = errors.New("pme: malformed module")
	// ErrFormat reports bytes that are not an encrypted-footer PME file in
	// the layout this package reads and writes.
	ErrFormat = errors.New("pme: not an encrypted-footer PME file")
	// ErrPlaintextFooter reports a Parquet file with a plaintext ("PAR1")
	// footer. SOP-PME-1 forbids that mode (Section 11.4).
	ErrPlaintextFooter = errors.New("pme: plaintext footer mode is forbidden")
	// ErrUnsupported reports an encryption algorithm or AAD setting this
	// package does not read: AES_GCM_CTR_V1, or module AADs (aad_prefix,
	// aad_file_unique), which SOP-PME-1 forbids (Section 11.3).
	ErrUnsupported = errors.New("pme: unsupported encryption algorithm or AAD")
)
