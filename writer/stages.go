package writer

import (
	"context"
	"fmt"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/internal/seal"
	"github.com/sovm/sop-pme/keyref"
	"github.com/sovm/sop-pme/padme"
	"github.com/sovm/sop-pme/pme"
	"github.com/sovm/sop-pme/storageid"
)

// The writer's steps, in the order Section 11.12 makes normative:
//
//  1. Parquet encode with stable field IDs          (encoder.finish → encoded)
//  2. PME encryption under the object's DEK         (encoded.encrypt → encrypted)
//  3. write the opaque key_ref into FileCryptoMetaData (encrypted.withKeyRef → keyed)
//  4. size-pad to the Padmé target                   (keyed.pad → padded)
//  5. import into the blob store; its hash is storage_id (padded.publish → Object)
//
// Each step is a method of the previous step's result type and returns the
// only type the next step accepts, so the steps cannot be called out of
// order, skipped or repeated: such code does not compile.
//
// Steps 1 and 2 are pipelined: row groups are encoded in parallel, each
// into a plaintext Parquet file of its own in memory, and the seal.Sealer
// seals their pages in order as soon as each is encoded (see pipeline), so
// only the row groups in flight are ever held as plaintext, in memory. The
// footer is sealed in step 2, once every row group is.

// encoded is the result of step 1: every row group encoded (and its pages
// sealed), and the footer, remapped to the sealed layout, with the caller's
// metadata and the empty padding entry.
type encoded struct {
	footer  *seal.Footer
	dataLen int64 // "PARE" plus every data module
	dek     pme.DEK
}

// encrypted is the result of step 2: every data module sealed and written,
// the footer remapped to the sealed layout and sealed, with the padding entry
// present and empty.
type encrypted struct {
	dek          pme.DEK
	dataLen      int64 // "PARE" plus every data module
	footer       *seal.Footer
	footerModule []byte
}

// keyed is the result of step 3: FileCryptoMetaData with the key_ref.
type keyed struct {
	encrypted
	ref        keyref.Ref
	cryptoMeta []byte
}

// padded is the result of step 4: the final bytes after the data modules.
type padded struct {
	ref      keyref.Ref
	dek      pme.DEK
	tail     []byte // FileCryptoMetaData | footer module | trailer
	size     uint64 // the final object size, = padme.Target(unpadded)
	unpadded uint64 // L, with the empty padding entry
}

// newEncoded completes step 1 for a footer whose row groups are sealed
// (dataLen bytes: "PARE" and every data module): the caller's metadata
// entries, then the padding entry, present and empty on every object, so
// that L includes it (Section 11.8).
func newEncoded(footer *seal.Footer, dataLen int64, dek pme.DEK, keyValues [][2]string) encoded {
	for _, kv := range keyValues {
		footer.AppendKeyValue(kv[0], []byte(kv[1]))
	}
	footer.AppendKeyValue(padme.PadKey, nil)
	return encoded{footer: footer, dataLen: dataLen, dek: dek}
}

// finish runs steps 2 to 5, in order, and publishes the object through
// out to pending.
func (e encoded) finish(ctx context.Context, out *sink, pending blobs.Pending) (Object, error) {
	step2, err := e.encrypt()
	if err != nil {
		return Object{}, err
	}
	step3, err := step2.withKeyRef(keyref.New())
	if err != nil {
		return Object{}, err
	}
	step4, err := step3.pad()
	if err != nil {
		return Object{}, err
	}
	return step4.publish(ctx, out, pending)
}

// encrypt is step 2's completion: it seals the footer under the DEK.
func (e encoded) encrypt() (encrypted, error) {
	module, err := e.footer.Seal(e.dek)
	if err != nil {
		return encrypted{}, err
	}
	return encrypted{dek: e.dek, dataLen: e.dataLen, footer: e.footer, footerModule: module}, nil
}

// withKeyRef is step 3: a fresh random key_ref goes into FileCryptoMetaData
// (Section 11.5). It must precede padding: key_metadata changes the encoded
// length of FileCryptoMetaData, so padding sized before it would overshoot.
func (e encrypted) withKeyRef(ref keyref.Ref) (keyed, error) {
	cm, err := pme.AppendFileCryptoMetaData(nil, ref[:])
	if err != nil {
		return keyed{}, err
	}
	return keyed{encrypted: e, ref: ref, cryptoMeta: cm}, nil
}

func (k keyed) length(footerModule []byte) uint64 {
	return uint64(k.dataLen) + uint64(len(k.cryptoMeta)) + uint64(len(footerModule)) + pme.TrailerSize
}

// pad is step 4 (Section 11.8): the object encoded with an empty padding
// value has length L; the closed-form solve gives the padding entry that
// grows it by exactly Padmé(L) − L; the footer is re-sealed once, with a fresh
// nonce. The result is checked against the target, and the final footer
// against the reader's bounds (checkReadable): an object that misses the
// one or breaks the other is an error, never published.
func (k keyed) pad() (padded, error) {
	l := k.length(k.footerModule)
	target, err := padme.Target(l)
	if err != nil {
		return padded{}, fmt.Errorf("%w: %w", ErrPadding, err)
	}
	if err := k.footer.SetPad(padme.Solve(target - l)); err != nil {
		return padded{}, fmt.Errorf("%w: %w", ErrPadding, err)
	}
	module, err := k.footer.Seal(k.dek)
	if err != nil {
		return padded{}, err
	}
	if got := k.length(module); got != target {
		return padded{}, fmt.Errorf("%w: %d bytes, target %d", ErrPadding, got, target)
	}
	// The footer is final: the reader's checks run on it before anything
	// is published.
	if err := checkReadable(k.footer, len(k.cryptoMeta)+len(module), target); err != nil {
		return padded{}, err
	}
	tail := append(k.cryptoMeta, module...)
	if tail, err = pme.AppendTrailer(tail, len(k.cryptoMeta)+len(module)); err != nil {
		return padded{}, fmt.Errorf("%w: %w", ErrPadding, err)
	}
	return padded{ref: k.ref, dek: k.dek, tail: tail, size: target, unpadded: l}, nil
}

// publish is step 5: the last bytes go to the pending import, which is
// checked to hold exactly the padded size, then committed; the store's BLAKE3
// root is the storage_id (Section 11.7).
func (p padded) publish(ctx context.Context, out *sink, pending blobs.Pending) (Object, error) {
	if _, err := out.Write(p.tail); err != nil {
		return Object{}, err
	}
	if err := out.close(); err != nil {
		return Object{}, err
	}
	if n := out.n.Load(); n != int64(p.size) {
		return Object{}, fmt.Errorf("%w: staged %d bytes, want %d", ErrPadding, n, p.size)
	}
	if err := ctx.Err(); err != nil {
		return Object{}, err
	}
	id, err := pending.Commit(ctx)
	if err != nil {
		return Object{}, fmt.Errorf("writer: importing object: %w", err)
	}
	return Object{StorageID: id, Size: p.size, UnpaddedSize: p.unpadded, KeyRef: p.ref, DEK: p.dek}, nil
}

// Object describes a published SOP-PME-1 object.
type Object struct {
	// StorageID is the BLAKE3 root of the object's exact bytes, as the blob
	// store computed it (Section 11.7).
	StorageID storageid.ID
	// Size is the object's size in bytes: Padmé(UnpaddedSize) exactly.
	Size uint64
	// UnpaddedSize is the size the object would have with an empty padding
	// entry. It is catalog metadata to keep encrypted (Section 11.8).
	UnpaddedSize uint64
	// KeyRef is the opaque key_ref written into the object (Section 11.5).
	// It resolves nothing: keys are found by StorageID.
	KeyRef keyref.Ref
	// DEK is the object's data encryption key. It prints as a redacted
	// placeholder; wrap it (Section 11.6) before storing it anywhere.
	DEK pme.DEK
}
