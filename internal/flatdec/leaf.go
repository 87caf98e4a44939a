package flatdec

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Leaf returns the Column of leaf col of a Parquet schema read as type t,
// its Codec and Values left for each chunk's metadata to give; or an error
// matching ErrUnsupported if the package does not decode col so: col is
// not a top-level field, Supported refuses the types, or t is a timestamp
// in another unit than the stored one (TIMESTAMP's, never INT96).
//
// Package reader decides with it which decoder reads a scan's column, and
// package writer's decode check, so that it checks what the reader will
// decode, with the decoder that will decode it.
func Leaf(col *schema.Column, t arrow.DataType) (Column, error) {
	if path := col.ColumnPath(); len(path) != 1 {
		return Column{}, fmt.Errorf("%w: leaf %s is not a top-level field", ErrUnsupported, path)
	}
	c := Column{Physical: col.PhysicalType(), MaxDef: col.MaxDefinitionLevel(), MaxRep: col.MaxRepetitionLevel(), Codec: compress.Codecs.Uncompressed, Type: t,
		TypeLength: col.TypeLength()}
	if err := Supported(c); err != nil {
		return Column{}, err
	}
	if ts, ok := t.(*arrow.TimestampType); ok {
		units := map[schema.TimeUnitType]arrow.TimeUnit{
			schema.TimeUnitMillis: arrow.Millisecond, schema.TimeUnitMicros: arrow.Microsecond, schema.TimeUnitNanos: arrow.Nanosecond,
		}
		lt, ok := col.LogicalType().(schema.TimestampLogicalType)
		if !ok {
			return Column{}, fmt.Errorf("%w: %s as %s", ErrUnsupported, col.LogicalType(), t)
		}
		if u, known := units[lt.TimeUnit()]; !known || u != ts.Unit {
			return Column{}, fmt.Errorf("%w: %s as %s", ErrUnsupported, col.LogicalType(), t)
		}
	}
	return c, nil
}

// Page types of a footer's page encoding statistics (parquet.thrift).
const (
	statsData       = 0
	statsDictionary = 2
	statsDataV2     = 3
)

// DictionaryOnly reports whether a chunk's metadata says that it has a
// dictionary page and dictionary-encoded data pages only: by its page
// encoding statistics, or, in a footer without them (DuckDB writes none),
// by its encodings, which must leave its data pages no encoding but a
// dictionary's (a dictionary encoding, and level encodings only: DuckDB
// lists PLAIN_DICTIONARY alone; a writer that lists PLAIN may mean its
// dictionary page or plain data pages). It is a decoding choice, never an
// answer (Section 11.10): a chunk that misstates it is read another way.
func DictionaryOnly(cc *metadata.ColumnChunkMetaData) bool {
	if !cc.HasDictionaryPage() {
		return false
	}
	stats := cc.EncodingStats()
	if len(stats) == 0 {
		dict := false
		for _, e := range cc.Encodings() {
			switch {
			case isDictionary(e):
				dict = true
			case e == parquet.Encodings.RLE || e == parquet.Encodings.BitPacked:
			default:
				return false
			}
		}
		return dict
	}
	data := false
	for _, s := range stats {
		switch s.PageType {
		case statsData, statsDataV2:
			if !isDictionary(s.Encoding) {
				return false
			}
			data = true
		case statsDictionary:
		default:
			return false
		}
	}
	return data
}

// isDictionary reports whether data pages of encoding e are
// dictionary-encoded.
func isDictionary(e parquet.Encoding) bool {
	return e == parquet.Encodings.RLEDict || e == parquet.Encodings.PlainDict
}
