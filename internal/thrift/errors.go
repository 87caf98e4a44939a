package thrift

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by Decode is a *ParseError wrapping
// one of them.
var (
	// ErrTruncated means that the input ends inside a value, or that a
	// length or element count is larger than the rest of the input.
	ErrTruncated = errors.New("thrift: truncated input")
	// ErrMalformed means that the input is not valid compact protocol, or
	// uses something this package does not support (UUID, a duplicate field
	// ID, trailing data after DecodeExact's struct).
	ErrMalformed = errors.New("thrift: malformed input")
	// ErrNonCanonical means that the input is valid compact protocol but not
	// the encoding the canonical encoder produces for it.
	ErrNonCanonical = errors.New("thrift: non-canonical encoding")
	// ErrTooDeep means that structs and containers nest deeper than
	// Limits.MaxDepth.
	ErrTooDeep = errors.New("thrift: nesting too deep")
	// ErrTooLarge means that the input holds more than Limits.MaxNodes values.
	ErrTooLarge = errors.New("thrift: too many values")
)

// ParseError is the error returned by Decode.
type ParseError struct {
	Offset int   // offset in the input, in bytes, of the offending value
	Err    error // wraps one of the sentinel errors
}

// Error returns the sentinel's text and the offset.
func (e *ParseError) Error() string {
	return fmt.Sprintf("%v (at offset %d)", e.Err, e.Offset)
}

// Unwrap returns the sentinel error, for errors.Is.
func (e *ParseError) Unwrap() error { return e.Err }
