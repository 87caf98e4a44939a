package s3

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sovm/sop-pme/blobs"
	"github.com/sovm/sop-pme/storageid"
)

// List returns the objects that the store holds, with their sizes as the
// server states them, in key order, a page of the bucket listing at a
// time (its memory does not grow with the store).
//
// An object is listed once its .data key exists, and Commit writes it
// last, after the outboard: an import in progress, or one cut short
// between the two writes, leaves at most an outboard without data, which
// List does not report and a Slice of that storage_id answers with
// blobs.ErrNotFound. Keys that are not <64 hex digits>.data directly
// under the prefix are ignored.
//
// The iteration stops at the first error, which it yields with a zero
// Blob; it stops with ctx.Err() once ctx is done.
func (s *Store) List(ctx context.Context) iter.Seq2[blobs.Blob, error] {
	return func(yield func(blobs.Blob, error) bool) {
		p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
			Bucket:    aws.String(s.bucket),
			Prefix:    aws.String(s.prefix),
			Delimiter: aws.String("/"),
		})
		for p.HasMorePages() {
			if err := ctx.Err(); err != nil {
				yield(blobs.Blob{}, err)
				return
			}
			page, err := p.NextPage(ctx)
			if err != nil {
				yield(blobs.Blob{}, fmt.Errorf("s3: list: %w", err))
				return
			}
			for _, o := range page.Contents {
				if o.Key == nil || o.Size == nil || *o.Size < 0 {
					continue
				}
				name, ok := strings.CutPrefix(*o.Key, s.prefix)
				if !ok {
					continue
				}
				hex, ok := strings.CutSuffix(name, dataExt)
				if !ok || len(hex) != 64 || strings.ToLower(hex) != hex {
					continue
				}
				id, err := storageid.Parse(hex)
				if err != nil {
					continue
				}
				if !yield(blobs.Blob{ID: id, Size: uint64(*o.Size)}, nil) {
					return
				}
			}
		}
	}
}

// Delete removes object id: its .data first, then its .obao4, so that a
// listed object always has its outboard. It returns an error matching
// blobs.ErrNotFound if the store holds no .data for id; it then still
// removes an outboard left without its data.
//
// S3 has no locks: a Delete racing an import of the same bytes may leave
// the data without its outboard (Slice then answers blobs.ErrNotFound, as
// for a missing object, while List reports it); importing the bytes again
// repairs it. blobs.Dir, whose processes share locks, has no such window.
//
// A reader of the object meanwhile never gets wrong bytes: a slice begun
// before may complete (its bytes are verified), a later one fails with
// blobs.ErrNotFound. Delete removes the keys; whether the server keeps
// older versions is the bucket's configuration. Making the ciphertext
// unreadable for good is forgetting its DEK.
func (s *Store) Delete(ctx context.Context, id storageid.ID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.forget(id)
	s.outboards.forget(id)
	s.pairs.forget(id)
	s.plans.forget(id)
	_, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.dataKey(id))})
	found := err == nil
	if err != nil && status(err) != http.StatusNotFound {
		return fmt.Errorf("s3: delete %s: %w", id, err)
	}
	if found {
		if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.dataKey(id))}); err != nil {
			return fmt.Errorf("s3: delete %s: removing data: %w", id, err)
		}
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(s.outboardKey(id))}); err != nil && status(err) != http.StatusNotFound {
		return fmt.Errorf("s3: delete %s: removing outboard: %w", id, err)
	}
	if !found {
		return fmt.Errorf("%w: %s", blobs.ErrNotFound, id)
	}
	return nil
}
