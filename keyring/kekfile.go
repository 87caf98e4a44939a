package keyring

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// CreateKEKFile makes a fresh KEK and writes its 32 raw bytes to a new file
// at path, mode 0600, in an existing directory. It fails with an error
// matching fs.ErrExist if path exists, and never replaces a file.
//
// The key is written to a temporary file created exclusively (O_EXCL, mode
// 0600) beside path and synced, then published under path with link(2),
// which like O_EXCL fails if path exists, and the directory is synced. So
// a KEK file is complete whenever it exists: a process that loses the race
// to create it reads the winner's whole key, never a part of it. If the
// process dies before the link, a temporary ".kek-*" file may remain; it is
// never read.
func CreateKEKFile(path string) (KEK, error) {
	k := NewKEK()
	raw := k.Bytes()
	defer clear(raw)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".kek-*")
	if err != nil {
		return KEK{}, fmt.Errorf("keyring: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return KEK{}, fmt.Errorf("keyring: %w", err)
	}
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return KEK{}, fmt.Errorf("keyring: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return KEK{}, fmt.Errorf("keyring: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return KEK{}, fmt.Errorf("keyring: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			err = le.Err
		}
		return KEK{}, fmt.Errorf("keyring: KEK file %s: %w", path, err)
	}
	if err := syncDir(path); err != nil {
		return KEK{}, err
	}
	return k, nil
}

// LoadKEKFile reads the KEK in the file at path, strictly: a regular file of
// exactly KEKSize bytes (ErrKEKFile otherwise). On systems with Unix
// permissions it refuses, with ErrKEKFile, a file whose mode lets the group
// or others read or write it, as ssh refuses such a private key: a KEK that
// others could read is no longer secret, and the fix (chmod 600) is the
// owner's to make knowingly. A missing file gives an error matching
// fs.ErrNotExist.
func LoadKEKFile(path string) (KEK, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noBlock, 0) // a FIFO must not block
	if err != nil {
		return KEK{}, fmt.Errorf("keyring: KEK file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return KEK{}, fmt.Errorf("keyring: KEK file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return KEK{}, fmt.Errorf("%w: %s is not a regular file", ErrKEKFile, path)
	}
	if runtime.GOOS != "windows" && runtime.GOOS != "plan9" && st.Mode().Perm()&0o077 != 0 {
		return KEK{}, fmt.Errorf("%w: %s has mode %04o, open to group or others (chmod 600 %s)", ErrKEKFile, path, st.Mode().Perm(), path)
	}
	if st.Size() != KEKSize {
		return KEK{}, fmt.Errorf("%w: %s holds %d bytes, not %d", ErrKEKFile, path, st.Size(), KEKSize)
	}
	raw := make([]byte, KEKSize+1)
	defer clear(raw)
	n, err := io.ReadFull(f, raw)
	if n != KEKSize || !errors.Is(err, io.ErrUnexpectedEOF) {
		return KEK{}, fmt.Errorf("%w: %s changed while it was read", ErrKEKFile, path)
	}
	return KEKFromBytes(raw[:KEKSize])
}

// LoadOrCreateKEKFile loads the KEK at path, or creates it if there is none,
// and reports whether it created it. Two processes that call it at once end
// with the same KEK: one creates the file, the other loads it.
func LoadOrCreateKEKFile(path string) (k KEK, created bool, err error) {
	for range 3 {
		k, err = LoadKEKFile(path)
		if !errors.Is(err, fs.ErrNotExist) {
			return k, false, err
		}
		k, err = CreateKEKFile(path)
		if !errors.Is(err, fs.ErrExist) {
			return k, err == nil, err
		}
	}
	return KEK{}, false, err
}
