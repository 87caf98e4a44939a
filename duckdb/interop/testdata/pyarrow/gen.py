"""Writes the plaintext Parquet files of this directory with pyarrow.

The interop suite seals each file byte for byte (writer.SealFile) and checks
that DuckDB and the reader read the sealed object exactly as DuckDB reads the
file. CI runs no Python: the files are committed, and this script is how they
were made. To make them again (the bytes depend on the pyarrow version):

    python3 -m venv /tmp/pyarrow-venv
    /tmp/pyarrow-venv/bin/pip install pyarrow==26.0.1
    /tmp/pyarrow-venv/bin/python gen.py

Every file has 3000 rows in row groups of 1000, with nulls, and no field IDs
unless its name says so.
"""
import datetime
import decimal
import os

import pyarrow as pa
import pyarrow.parquet as pq

N = 3000
HERE = os.path.dirname(os.path.abspath(__file__))


def nullable(values, every=17):
    return [None if i % every == 5 else v for i, v in enumerate(values)]


def flat():
    base = datetime.datetime(2021, 3, 4, 5, 6, 7)
    return pa.table({
        "i8": pa.array(nullable([(i % 256) - 128 for i in range(N)]), pa.int8()),
        "i16": pa.array(nullable([i * 19 - 30000 for i in range(N)]), pa.int16()),
        "i32": pa.array(nullable([i * 7919 - 10**7 for i in range(N)]), pa.int32()),
        "i64": pa.array(nullable([i * 10**12 - 7 for i in range(N)]), pa.int64()),
        "u8": pa.array(nullable([i % 256 for i in range(N)]), pa.uint8()),
        "u16": pa.array(nullable([i * 21 % 65536 for i in range(N)]), pa.uint16()),
        "u32": pa.array(nullable([i * 1_000_003 % 2**32 for i in range(N)]), pa.uint32()),
        "u64": pa.array(nullable([i * 0x9E3779B97F4A7C15 % 2**64 for i in range(N)]), pa.uint64()),
        "f32": pa.array(nullable([i / 7 for i in range(N)]), pa.float32()),
        "f64": pa.array(nullable([(-1) ** i * i / 3 for i in range(N)]), pa.float64()),
        "b": pa.array(nullable([i % 3 == 0 for i in range(N)]), pa.bool_()),
        "s": pa.array(nullable([f"row {i} " + "x" * (i % 13) for i in range(N)]), pa.string()),
        "low": pa.array(nullable([f"cat-{i % 7}" for i in range(N)]), pa.string()),
        "bin": pa.array(nullable([bytes([i % 256, (i * 7) % 256]) for i in range(N)]), pa.binary()),
        "d": pa.array(nullable([datetime.date(2000, 1, 1) + datetime.timedelta(days=i) for i in range(N)]), pa.date32()),
        "ts_ms": pa.array(nullable([base + datetime.timedelta(seconds=i) for i in range(N)]), pa.timestamp("ms")),
        "ts_us": pa.array(nullable([base + datetime.timedelta(microseconds=i * 1001) for i in range(N)]), pa.timestamp("us")),
        "tstz_us": pa.array(nullable([base + datetime.timedelta(minutes=i) for i in range(N)]), pa.timestamp("us", tz="UTC")),
        "dec9": pa.array(nullable([decimal.Decimal(i * 13 - 9000).scaleb(-2) for i in range(N)]), pa.decimal128(9, 2)),
        "dec18": pa.array(nullable([decimal.Decimal(i * 10**9 + 7).scaleb(-4) for i in range(N)]), pa.decimal128(18, 4)),
        "dec38": pa.array(nullable([decimal.Decimal(i * 10**20 + 3).scaleb(-10) for i in range(N)]), pa.decimal128(38, 10)),
    })


def nested():
    return pa.table({
        "id": pa.array(range(N), pa.int64()),
        "l_i64": pa.array(nullable([list(range(i % 5)) for i in range(N)]), pa.list_(pa.int64())),
        "l_s": pa.array(nullable([[f"e{j}" for j in range(i % 3)] for i in range(N)]), pa.list_(pa.string())),
        "st": pa.array(nullable([{"a": i, "b": f"b{i % 11}"} for i in range(N)]),
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "m": pa.array(nullable([[(f"k{j}", i * j) for j in range(i % 4)] for i in range(N)]),
                      pa.map_(pa.string(), pa.int64())),
        "ll": pa.array(nullable([[list(range(j)) for j in range(i % 3)] for i in range(N)]), pa.list_(pa.list_(pa.int32()))),
        "ls": pa.array(nullable([[{"x": i + j} for j in range(i % 3)] for i in range(N)]),
                       pa.list_(pa.struct([("x", pa.int64())]))),
    })


def flba():
    return pa.table({
        "flba": pa.array(nullable([bytes([i % 13, 1, 2, (i % 13) * 3]) for i in range(N)]), pa.binary(4)),
    })


def with_ids(table, ids):
    """Gives the top-level fields named in ids their Parquet field IDs."""
    fields = []
    for f in table.schema:
        if f.name in ids:
            f = f.with_metadata({b"PARQUET:field_id": str(ids[f.name]).encode()})
        fields.append(f)
    return table.cast(pa.schema(fields))


def write(name, table, **kw):
    kw.setdefault("row_group_size", 1000)
    pq.write_table(table, os.path.join(HERE, name), **kw)


def main():
    write("flat-snappy.parquet", flat())
    write("flat-v2-uncompressed.parquet", flat(), compression="none", data_page_version="2.0")
    write("flat-lz4-pageindex.parquet", flat(), compression="lz4", write_page_index=True, data_page_size=2048)
    write("flat-brotli-bss-delta.parquet", flat(), compression="brotli", use_dictionary=["low"],
          use_byte_stream_split=["f32", "f64"], column_encoding={"i32": "DELTA_BINARY_PACKED", "s": "DELTA_LENGTH_BYTE_ARRAY"})
    write("nested-zstd.parquet", nested(), compression="zstd")
    write("nested-gzip-some-ids.parquet", with_ids(nested(), {"id": 7, "st": 3, "m": 100}), compression="gzip",
          write_page_index=True)
    # DuckDB 1.5.6 cannot read compressed DATA_PAGE_V2 pages in encrypted
    # files: the sealer refuses this one, and import re-encodes it.
    write("flat-snappy-v2.parquet", flat(), compression="snappy", data_page_version="2.0")
    # DELTA_BYTE_ARRAY on FIXED_LEN_BYTE_ARRAY, which arrow-go does not write
    # (interop's TestSealerEncodingsDuckDBReads).
    write("flba-delta-byte-array.parquet", flba(), compression="none", use_dictionary=False,
          column_encoding={"flba": "DELTA_BYTE_ARRAY"})


if __name__ == "__main__":
    main()
