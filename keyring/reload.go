package keyring

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
)

// A ReloadFunc returns the masters that a Ring tries, in order, when its
// master no longer opens the ring key: another process rotated the master
// (Rotate, Rekey under a new KEK) while this Ring was open. See WithReload.
type ReloadFunc func(ctx context.Context) ([]Master, error)

// WithReload lets a Ring follow a rotation made elsewhere. Without it, a
// Ring whose master was rotated by another process fails every later
// operation with ErrMaster, and a long-lived service must be restarted.
// With it, when the master does not open the wrapped ring key found in the
// file, the Ring calls fn, tries each master it returns, adopts the first
// that opens the ring key (Ring.Master then returns it), and goes on; if
// none does, the operation reads the file again and retries a few times (a
// rotation may be between two of its steps), then fails with ErrMaster.
// Open, Put, PutBatch, Delete, ResolveDEK, Rotate and Rekey all reload. The
// Ring does not close the masters fn returns.
//
// For a KEK kept in a file that a rotation replaces, ReloadKEKFiles reads
// the files again.
func WithReload(fn ReloadFunc) Option {
	return func(c *config) error {
		if fn == nil {
			return errors.New("keyring: WithReload of a nil function")
		}
		c.reload = fn
		return nil
	}
}

// ReloadKEKFiles returns a ReloadFunc that loads the KEK files at paths,
// in order, with LoadKEKFile, skipping those that do not exist. A rotation
// that writes the new KEK beside the old one, re-keys the ring under it and
// then renames it over the old file (as sop-pme keys rotate does, with
// "KEK.next") is followed at every point by ReloadKEKFiles(next, kek): the
// new file first, since once it is renamed away the old name holds it.
func ReloadKEKFiles(paths ...string) ReloadFunc {
	return func(ctx context.Context) ([]Master, error) {
		var (
			out  []Master
			errs []error
		)
		for _, p := range paths {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			k, err := LoadKEKFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, k)
		}
		if len(out) == 0 && len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return out, nil
	}
}

// Master returns the ring's current master: the one given to Open, the last
// one Rotate or Rekey made it, or the one a reload adopted (WithReload).
func (r *Ring) Master() Master {
	r.kmu.Lock()
	defer r.kmu.Unlock()
	return r.master
}

// reloaded unwraps w with the masters the reload function returns, and
// adopts the first that opens it. It reports false if there is no reload
// function, or none of its masters opens w.
func (r *Ring) reloaded(ctx context.Context, w []byte) ([]byte, bool) {
	if r.cfg.reload == nil {
		return nil, false
	}
	ms, err := r.cfg.reload(ctx)
	if err != nil {
		return nil, false
	}
	for _, m := range ms {
		if m == nil {
			continue
		}
		raw, err := m.Decrypt(ctx, w)
		if err != nil {
			continue
		}
		if len(raw) != RingKeySize {
			clear(raw)
			continue
		}
		r.kmu.Lock()
		r.master = m
		r.kmu.Unlock()
		return raw, true
	}
	return nil, false
}

// masterErr is ErrMaster for the master's failure err.
func (r *Ring) masterErr(err error) error {
	if r.cfg.reload != nil {
		return fmt.Errorf("%w: %s (nor any master reloaded): %w", ErrMaster, r.path, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrMaster, r.path, err)
}
