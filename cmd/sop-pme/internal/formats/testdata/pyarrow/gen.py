"""Writes views.arrow (an Arrow IPC file) and views.arrows (an Arrow IPC
stream) with pyarrow: the view types that pyarrow 26 and Polars write
(string_view, binary_view, list_view, large_list_view), nested and with
nulls, and their values in views.json (one JSON object per row, as
rowjson prints them), for TestArrowViews.

CI runs no Python: the files are committed, and this script is how they
were made:

    python3 -m venv /tmp/pyarrow-venv
    /tmp/pyarrow-venv/bin/pip install pyarrow==26.0.1
    /tmp/pyarrow-venv/bin/python gen.py
"""
import base64
import json
import os

import pyarrow as pa
import pyarrow.ipc as ipc

HERE = os.path.dirname(os.path.abspath(__file__))
N = 50


def field(name, typ, fid):
    return pa.field(name, typ, metadata={"PARQUET:field_id": str(fid)})


def main():
    sv = [None if i % 7 == 3 else ("long string value number %d, past the twelve inline bytes" % i if i % 2 else "s%d" % i) for i in range(N)]
    bv = [None if i % 5 == 1 else bytes([i, 255 - i]) * (i % 9) for i in range(N)]
    lv = [None if i % 6 == 2 else list(range(i % 4)) for i in range(N)]
    llv = [None if i % 8 == 0 else ["x%d" % j for j in range(i % 3)] for i in range(N)]
    st = [{"name": None if i % 4 == 0 else "n%d" % i} for i in range(N)]
    elem = field("element", pa.int32(), 4)
    lelem = field("element", pa.string_view(), 6)
    schema = pa.schema([
        field("sv", pa.string_view(), 1),
        field("bv", pa.binary_view(), 2),
        field("lv", pa.list_view(elem), 3),
        field("llv", pa.large_list_view(lelem), 5),
        field("st", pa.struct([field("name", pa.string_view(), 8)]), 7),
    ])
    table = pa.table([
        pa.array(sv, pa.string_view()),
        pa.array(bv, pa.binary_view()),
        pa.array(lv, pa.list_view(elem)),
        pa.array(llv, pa.large_list_view(lelem)),
        pa.array(st, schema.field("st").type),
    ], schema=schema)
    with ipc.new_file(os.path.join(HERE, "views.arrow"), schema) as w:
        w.write_table(table, max_chunksize=20)
    with ipc.new_stream(os.path.join(HERE, "views.arrows"), schema) as w:
        w.write_table(table, max_chunksize=20)
    with open(os.path.join(HERE, "views.json"), "w") as f:
        for i in range(N):
            row = {
                "sv": sv[i],
                "bv": None if bv[i] is None else base64.b64encode(bv[i]).decode(),
                "lv": lv[i],
                "llv": llv[i],
                "st": st[i],
            }
            f.write(json.dumps(row, separators=(",", ":"), ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
