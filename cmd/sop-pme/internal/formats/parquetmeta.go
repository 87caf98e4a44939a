package formats

import (
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/sovm/sop-pme/internal/seal"
)

// parquetMeta reads the footer of the Parquet file ra, of size bytes, for
// arrow-go, where arrow-go's own reading of it would fail or mislead:
//
//   - An encrypted file is refused with one clear line (ErrFormat): "PARE"
//     at either end, or a "PAR1" file whose footer carries encryption
//     fields (plaintext footer mode). arrow-go reads the latter's footer
//     and fails later with "cannot decrypt column metadata".
//   - A logicalType annotation arrow-go does not know (a member of the
//     union added after arrow-go's release) makes arrow-go refuse the whole
//     schema; Parquet readers must ignore it and read the physical type. The
//     footer is then handed to arrow-go without it.
//
// It returns nil (and no error) when arrow-go may read the footer itself,
// including when the footer is one the sealer's decoder does not take:
// arrow-go then decides.
func parquetMeta(ra io.ReaderAt, size int64, name string) (*metadata.FileMetaData, error) {
	f, err := seal.ReadPlainFooter(ra, size)
	switch {
	case errors.Is(err, seal.ErrEncryptedParquet):
		return nil, fmt.Errorf("%w: %s is an encrypted Parquet file; import takes plaintext tables", ErrFormat, name)
	case err != nil:
		return nil, nil
	case f.DropUnknownLogicalTypes() == 0:
		return nil, nil
	}
	md, err := metadata.NewFileMetaData(f.Append(nil), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not a readable Parquet file: %v", ErrFormat, name, err)
	}
	return md, nil
}
