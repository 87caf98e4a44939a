package sopsql

import (
	"context"
	"slices"
	"sync"
)

// This file carries the Go errors of the table functions past DuckDB,
// which passes them on as text only (see TrackErrors).

// errSink collects the errors the table functions return during one query.
type errSink struct {
	mu   sync.Mutex
	errs []error
}

type sinkKey struct{}

func sinkFrom(ctx context.Context) *errSink {
	s, _ := ctx.Value(sinkKey{}).(*errSink)
	return s
}

func (s *errSink) add(err error) {
	if s == nil || err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) < 8 && !slices.ContainsFunc(s.errs, func(e error) bool { return e.Error() == err.Error() }) {
		s.errs = append(s.errs, err)
	}
}

func (s *errSink) get() []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.errs)
}

// TrackErrors returns a context to run a query under through database/sql,
// and a function that turns the query's error into a *QueryError carrying
// the Go errors sop_scan and sop_verify returned under that context, so
// that errors.Is(err, verify.ErrVerify) works. DuckDB passes a table
// function's error to the driver as text only. The function returns nil for
// a nil error.
func TrackErrors(ctx context.Context) (context.Context, func(error) error) {
	sink := &errSink{}
	return context.WithValue(ctx, sinkKey{}, sink), func(err error) error {
		if err == nil {
			return nil
		}
		return &QueryError{Err: err, Cause: sink.get()}
	}
}

// A QueryError is a failed query: Err as the driver reported it, and the
// errors the table functions returned (in the order they happened), which
// DuckDB passed on as text only.
type QueryError struct {
	Err   error
	Cause []error
}

func (e *QueryError) Error() string { return e.Err.Error() }

// Unwrap returns Err and the causes, for errors.Is and errors.As.
func (e *QueryError) Unwrap() []error { return append([]error{e.Err}, e.Cause...) }

var _ interface{ Unwrap() []error } = (*QueryError)(nil)
