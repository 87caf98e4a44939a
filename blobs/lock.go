package blobs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

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
