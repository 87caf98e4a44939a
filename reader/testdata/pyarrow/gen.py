"""Writes arrowtypes.parquet with pyarrow: one column of each Arrow type
whose Parquet form it shares with another (durations, time zones, large
offsets, dictionaries, date64, decimal256, a string view), which only the
ARROW:schema footer entry tells apart, for reader's
TestPyarrowArrowTypes. Row i of every column holds a value made from i;
row 3 is null.

CI runs no Python: the file is committed, and this script is how it was
made:

    python3 -m venv /tmp/pyarrow-venv
    /tmp/pyarrow-venv/bin/pip install pyarrow==26.0.1
    /tmp/pyarrow-venv/bin/python gen.py
"""
import datetime
import decimal
import os

import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))
N = 20


def col(f):
    return [None if i == 3 else f(i) for i in range(N)]


def main():
    base = datetime.datetime(2024, 3, 31, 1, 30, tzinfo=datetime.timezone.utc)
    table = pa.table({
        "dur_s": pa.array(col(lambda i: i - 5), pa.duration("s")),
        "dur_ms": pa.array(col(lambda i: i * 1000 - 5), pa.duration("ms")),
        "dur_us": pa.array(col(lambda i: i * 10**6), pa.duration("us")),
        "dur_ns": pa.array(col(lambda i: -i * 10**9), pa.duration("ns")),
        "paris": pa.array(col(lambda i: base + datetime.timedelta(minutes=30 * i)), pa.timestamp("us", tz="Europe/Paris")),
        "ls": pa.array(col(lambda i: "large %d" % i), pa.large_string()),
        "lbin": pa.array(col(lambda i: bytes([i]) * i), pa.large_binary()),
        "dict32": pa.array(col(lambda i: "k%d" % (i % 3))).dictionary_encode(),
        "dict8": pa.array(col(lambda i: "k%d" % (i % 3))).dictionary_encode().cast(pa.dictionary(pa.int8(), pa.string())),
        "ll": pa.array(col(lambda i: list(range(i % 4))), pa.large_list(pa.int64())),
        "d64": pa.array(col(lambda i: datetime.date(2000, 1, 1) + datetime.timedelta(days=i)), pa.date64()),
        "dec256": pa.array(col(lambda i: decimal.Decimal(i) / 100), pa.decimal256(20, 2)),
        "sview": pa.array(col(lambda i: "view %d" % i), pa.string_view()),
    })
    pq.write_table(table, os.path.join(HERE, "arrowtypes.parquet"))


if __name__ == "__main__":
    main()
