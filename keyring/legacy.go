package keyring

import (
	"bytes"
	"context"
	"crypto/cipher"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/sovm/sop-pme/storageid"
)

// The version-1 ring: one JSON file, every DEK wrapped directly under the
// KEK with adWrap, and a check value that recognises the KEK.
const (
	formatV1   = "sop-pme-keyring-v1"
	adCheck    = "sop-pme keyring v1: kek check"
	maxV1Size  = 1 << 30 // the bound version-1 Open applied
	maxV1Entry = 64 + 12 + 16
)

type fileV1 struct {
	Format string            `json:"format"`
	Check  string            `json:"check"`
	Keys   map[string]string `json:"keys"`
}

// ImportV1 copies every DEK of the version-1 (JSON, "sop-pme-keyring-v1")
// ring file at path, whose DEKs are wrapped under kek, into r, rewrapped
// under r's ring key, in one transaction. It returns how many DEKs it added.
// The JSON file is only read: nothing is lost if the import fails or is
// repeated.
//
// A DEK r already holds for the same storage_id is kept, and counted as
// not added; a different DEK for a storage_id r holds is ErrConflict, and
// nothing is imported. A file that is not a version-1 ring is ErrFile, a kek
// that is not its KEK ErrWrongKEK, and a wrapped DEK that does not open for
// its storage_id ErrUnwrap; each of them imports nothing.
func (r *Ring) ImportV1(ctx context.Context, path string, kek KEK) (int, error) {
	v1, err := kek.aeadV1()
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|noBlock, 0) // a FIFO must not block
	if err != nil {
		return 0, fmt.Errorf("keyring: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return 0, fmt.Errorf("keyring: %w", err)
	} else if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("%w: %s is not a regular file", ErrFile, path)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxV1Size+1))
	if err != nil {
		return 0, fmt.Errorf("keyring: %w", err)
	}
	deks, err := parseV1(raw, v1)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	defer func() {
		for _, d := range deks {
			clear(d.raw)
		}
	}()
	added := 0
	err = r.update(ctx, func(_, bucket *bolt.Bucket, _ []byte, ring cipher.AEAD) error {
		added = 0
		for _, d := range deks {
			if have := bucket.Get(d.id[:]); have != nil {
				pt, err := ring.Open(nil, nil, have, wrapAD(d.id))
				same := err == nil && bytes.Equal(pt, d.raw)
				clear(pt)
				if same {
					continue
				}
				return fmt.Errorf("%w: %s", ErrConflict, d.id)
			}
			if err := bucket.Put(d.id[:], ring.Seal(nil, nil, d.raw, wrapAD(d.id))); err != nil {
				return err
			}
			added++
		}
		return nil
	}, func(bucket *bolt.Bucket) error {
		for _, d := range deks {
			if bucket.Get(d.id[:]) == nil {
				return fmt.Errorf("%w: the DEK imported for %s does not read back", ErrFile, d.id)
			}
		}
		return nil
	}, nil) // adds only: it never removes or replaces a wrapped DEK
	if err != nil {
		return 0, noMeta(err)
	}
	return added, nil
}

type v1DEK struct {
	id  storageid.ID
	raw []byte
}

// parseV1 parses and opens a version-1 ring file strictly: one JSON object
// with exactly the three fields, canonical hex storage_ids, strict base64,
// the check value and every DEK opening under the KEK.
func parseV1(raw []byte, v1 cipher.AEAD) ([]v1DEK, error) {
	if len(raw) > maxV1Size {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrFile, maxV1Size)
	}
	var ff fileV1
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ff); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFile, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) || ff.Format != formatV1 {
		return nil, fmt.Errorf("%w: format %.40q", ErrFile, ff.Format)
	}
	check, err := base64.StdEncoding.Strict().DecodeString(ff.Check)
	if err != nil {
		return nil, fmt.Errorf("%w: check value", ErrFile)
	}
	if len(check) < v1.NonceSize()+v1.Overhead() {
		return nil, fmt.Errorf("%w: check value of %d bytes", ErrFile, len(check))
	}
	if _, err := v1.Open(nil, nil, check, []byte(adCheck)); err != nil {
		return nil, ErrWrongKEK
	}
	out := make([]v1DEK, 0, len(ff.Keys))
	fail := func(err error) ([]v1DEK, error) {
		for _, d := range out {
			clear(d.raw)
		}
		return nil, err
	}
	for k, v := range ff.Keys {
		id, err := storageid.Parse(k)
		if err != nil || id.String() != k {
			return fail(fmt.Errorf("%w: storage_id %.80q", ErrFile, k))
		}
		if base64.StdEncoding.DecodedLen(len(v)) > maxV1Entry {
			return fail(fmt.Errorf("%w: wrapped DEK of %s", ErrFile, k))
		}
		w, err := base64.StdEncoding.Strict().DecodeString(v)
		if err != nil || !wrappedLen(len(w)) {
			return fail(fmt.Errorf("%w: wrapped DEK of %s", ErrFile, k))
		}
		dek, err := v1.Open(nil, nil, w, wrapAD(id))
		if err != nil {
			return fail(fmt.Errorf("%w: %s", ErrUnwrap, id))
		}
		out = append(out, v1DEK{id: id, raw: dek})
	}
	return out, nil
}
