package blobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/sovm/sop-pme/storageid"

	"github.com/gofrs/flock"
)

// A fileLock is an exclusive advisory lock (flock(2) on Unix, LockFileEx on
// Windows, through github.com/gofrs/flock) on a lock file that exists only
// while it is held: the holder removes the file before it unlocks it.
//
// The kernel releases the lock when its holder dies, SIGKILL included, so a
// lock file that can be locked belongs to nobody. Because holders remove
// the file, whoever locks it checks afterwards that the path still names
// the file it locked; if it does not, the lock it got is on a removed file
// (the previous holder released it between our open and our lock), and it
// must try again.
//
// Locks are per open file, not per process: two acquisitions in one
// process exclude each other as two processes do. (On AIX and Solaris,
// where gofrs/flock falls back to fcntl locks, which are per process, they
// do not; there a store is safe for several processes only with one Dir
// each.)
type fileLock struct {
	fl   *flock.Flock
	path string
}

// tryLockFile makes one attempt to lock the lock file at path, creating it
// if create is set. It reports false, with no error, if another holder has
// the lock or the file was removed or replaced under us. Without create, a
// missing file is an error matching fs.ErrNotExist.
func tryLockFile(path string, create bool) (*fileLock, bool, error) {
	flag := os.O_RDWR // AIX and Solaris lock for writing only files open for writing
	if create {
		flag |= os.O_CREATE
	}
	fl := flock.New(path, flock.SetFlag(flag), flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil || !ok {
		return nil, false, err
	}
	held, err := fl.Stat()
	if err != nil {
		fl.Unlock()
		return nil, false, err
	}
	now, err := os.Lstat(path)
	if err != nil || !os.SameFile(held, now) {
		fl.Unlock()
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, false, err
		}
		return nil, false, nil
	}
	return &fileLock{fl: fl, path: path}, true, nil
}

// lockFile locks the lock file at path, creating it, and waits for its
// holder if it has one, until ctx is done. It polls, from 1 ms up to every
// 50 ms, so that a wait can be abandoned when ctx is done.
func lockFile(ctx context.Context, path string) (*fileLock, error) {
	delay := time.Millisecond
	for {
		l, ok, err := tryLockFile(path, true)
		if err != nil {
			return nil, err
		}
		if ok {
			return l, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// release removes the lock file, then unlocks it. A file left behind by a
// failed removal (or by a holder that died) is harmless: the next holder
// locks it and removes it, and Dir.Sweep removes it if it is free.
func (l *fileLock) release() error {
	rerr := os.Remove(l.path)
	if errors.Is(rerr, fs.ErrNotExist) {
		rerr = nil
	}
	return errors.Join(rerr, l.fl.Unlock())
}

// newOwner picks a random token for temporary files and takes the lock
// that owns them, .tmp-<token>.lock. The caller creates the temporary files
// only after this, and removes them before it releases the lock.
func (d *Dir) newOwner() (string, *fileLock, error) {
	for range 4 {
		var b [16]byte
		rand.Read(b[:])
		token := hex.EncodeToString(b[:])
		l, ok, err := tryLockFile(d.tempPath(token, lockExt), true)
		if err != nil {
			return "", nil, err
		}
		if ok {
			return token, l, nil
		}
		// A Sweep took the new lock file between its creation and our
		// lock, and removed it: take another token.
	}
	return "", nil, errors.New("blobs: cannot take the lock of a temporary file")
}

// lockObject serialises, within the process and across processes, the
// changes to object id: Commit, Delete and the sweeping of its outboard.
// It waits for another holder until ctx is done.
func (d *Dir) lockObject(ctx context.Context, id storageid.ID) (func(), error) {
	unlock, err := d.lockID(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("locking object %s: %w", id, err)
	}
	l, err := lockFile(ctx, d.objectLockPath(id))
	if err != nil {
		unlock()
		return nil, fmt.Errorf("locking object %s: %w", id, err)
	}
	return func() {
		l.release()
		unlock()
	}, nil
}

// lockID serialises the changes to one object within the process (so that
// goroutines wait on a channel rather than poll the file lock), until ctx
// is done.
func (d *Dir) lockID(ctx context.Context, id storageid.ID) (func(), error) {
	d.mu.Lock()
	l := d.locks[id]
	if l == nil {
		l = &idLock{ch: make(chan struct{}, 1)}
		d.locks[id] = l
	}
	l.refs++
	d.mu.Unlock()
	drop := func() {
		d.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(d.locks, id)
		}
		d.mu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
	return func() {
		<-l.ch
		drop()
	}, nil
}
