// Package residue finds what a deletion left behind: the files under a
// directory that still hold any piece of some bytes. Tests of deletion
// (blobs/iroh's Delete, sop-pme serve after rm) use it to check that what
// is deleted is really gone from disk, database files included.
package residue

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Piece is the length of the pieces looked for: long enough that random
// ciphertext matches nothing by chance, short enough that a page of a
// database or a block of a file that keeps part of the bytes is found.
const Piece = 64

// Files returns the regular files under dir that hold a Piece-byte piece
// of data: the pieces at every multiple of Piece, and the last Piece bytes.
// data must be at least Piece bytes long. A file that is removed while
// Files looks (by a process deleting under dir) is not one of them.
func Files(dir string, data []byte) ([]string, error) {
	if len(data) < Piece {
		return nil, fmt.Errorf("residue: %d bytes, fewer than a piece of %d", len(data), Piece)
	}
	var pieces [][]byte
	for off := 0; off+Piece <= len(data); off += Piece {
		pieces = append(pieces, data[off:off+Piece])
	}
	pieces = append(pieces, data[len(data)-Piece:])
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		// A file or directory removed while the walk goes (the process
		// that deletes is still at work) holds nothing any more.
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, pc := range pieces {
			if bytes.Contains(b, pc) {
				hits = append(hits, p)
				break
			}
		}
		return nil
	})
	return hits, err
}
