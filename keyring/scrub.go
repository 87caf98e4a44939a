package keyring

import (
	"bytes"
	"context"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// Shredding (Section 11.6: deleting a DEK, or re-keying after a KEK leak,
// must leave nothing that the old keys open).
//
// bbolt copies on write: a transaction writes the pages it changes to free
// pages and frees the pages they replace, without clearing them. So after a
// Delete, the page that held the deleted wrapped DEK is still in the file,
// and bbolt can write it back, or a copy rolled back one transaction (the
// older of its two meta pages) reads it, with no key at all; after a Rekey,
// the freed pages hold the old wrapped ring key and every DEK wrapped under
// the old ring key, which the retired KEK opens.
//
// After such a transaction commits (bbolt has synced its pages and its meta
// page), scrub overwrites with zeros, in place, every page that the
// committed tree does not use: every page on bbolt's freelist (free, or
// pending since this transaction), whatever transaction freed it, and the
// bytes past the last page, which only a commit cut short writes. Then it
// syncs the file. So once Delete, Rekey or Rotate returns nil, the file
// holds only what the current tree holds.
//
// This and not a compaction into a new file renamed over the old one: the
// zeros go over the very blocks that held the old bytes (on a file system
// that writes in place), where a rename would leave them in the old inode's
// freed blocks; the file is never replaced, so its lock stays the one every
// process takes and no process can write into an unlinked copy; and a Delete
// costs the free pages, not the whole ring.
//
// A crash at any point is safe. The pages scrub zeroes are free in the
// committed tree, which bbolt falls back to if the next commit is cut
// short, and the only tree that used them, the one before it, can no longer
// be chosen: its successor's meta page was synced before the scrub began.
// A crash before the scrub ends leaves the old bytes in free pages until
// the next Delete, Rekey, Rotate or Scrub, which zeroes every free page, not
// only its own: running rm or keys rotate again finishes it.

// scrubChunk bounds the bytes scrub reads and writes at once.
const scrubChunk = 64 << 10

// scrub zeroes, in the open ring file f, every page that the tree last
// committed through db does not use, reads what it is about to zero and
// skips runs that are zero already, and syncs f if it wrote anything. It
// runs under the exclusive lock, after the commit, and does not stop for a
// context: a change that committed is shredded whole (it reads and writes at
// most the file once).
func (r *Ring) scrub(db *bolt.DB, f *os.File) error {
	r.step("committed")

	var (
		runs [][2]int64 // byte offset and length of each run of free pages
		used int64      // the bytes the committed tree spans
	)
	ps := int64(db.Info().PageSize)
	err := db.View(func(tx *bolt.Tx) error {
		used = tx.Size()
		for id := 2; int64(id)*ps < used; id++ {
			p, err := tx.Page(id)
			if err != nil {
				return err
			}
			if p == nil {
				break
			}
			if p.Type != "free" {
				continue
			}
			off := int64(id) * ps
			if n := len(runs); n > 0 && runs[n-1][0]+runs[n-1][1] == off {
				runs[n-1][1] += ps
			} else {
				runs = append(runs, [2]int64{off, ps})
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if size := st.Size(); size > used {
		runs = append(runs, [2]int64{used, size - used})
	}
	buf := make([]byte, scrubChunk)
	zeros := make([]byte, scrubChunk)
	wrote := false
	for _, run := range runs {
		for off, end := run[0], run[0]+run[1]; off < end; {
			// The holes of a sparse file (bbolt grows the file by
			// truncating it longer) hold nothing to read.
			if off = dataFrom(f, off, end); off >= end {
				break
			}
			n := min(end-off, scrubChunk)
			k, err := f.ReadAt(buf[:n], off)
			if k < int(n) {
				return fmt.Errorf("reading page at %d: %w", off, err)
			}
			if !bytes.Equal(buf[:n], zeros[:n]) {
				if _, err := f.WriteAt(zeros[:n], off); err != nil {
					return err
				}
				if !wrote {
					wrote = true
					r.step("scrub-write")
				}
			}
			off += n
		}
	}
	if !wrote {
		return nil
	}
	return syncData(f)
}

// step calls the test hook, if any, at a named point of an operation.
func (r *Ring) step(name string) {
	if r.cfg.hook != nil {
		r.cfg.hook(name)
	}
}

// Scrub overwrites with zeros every page of the ring file that the ring
// does not use, as Delete, Rekey and Rotate do after they commit, and
// syncs the file. Call it after one of those was interrupted (a crash, or
// ErrScrub), or once on a ring that an earlier version of this package
// wrote, whose free pages may still hold wrapped keys it deleted or
// replaced. It fails with ErrReadOnly on a ring opened WithReadOnly.
func (r *Ring) Scrub(ctx context.Context) error {
	if r.cfg.readOnly {
		return ErrReadOnly
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.withDB(ctx, accessWrite, func(db *bolt.DB, f *os.File) error {
		if err := r.scrub(db, f); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrScrub, r.path, err)
		}
		return nil
	})
}
