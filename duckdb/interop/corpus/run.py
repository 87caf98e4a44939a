"""Runs a copy of Apache parquet-testing through the sop-pme command.

Every *.parquet and *.parquet.encrypted file under CORPUS goes through
`sop-pme import --assign-field-ids`, then `check`, `verify` and `export` of
the object; the export (plaintext Parquet) is compared with pyarrow's read
of the original file. A line per file says what happened, then the counts.
Nothing is written outside WORK. The corpus is not part of this repository:
fetch it (git clone https://github.com/apache/parquet-testing) and run

    make corpus PARQUET_TESTING=/path/to/parquet-testing

or python3 duckdb/interop/corpus/run.py SOP_PME_BINARY CORPUS WORK [--json OUT].
"""
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

TIMEOUT = 120  # seconds per command: a hang is a finding, not a stuck run


def run(args, env):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        return 124, "", "timeout after %ds" % TIMEOUT
    return p.returncode, p.stdout, p.stderr


def strip_metadata(schema):
    """The schema without field or schema metadata (field IDs, ARROW:schema)."""
    def field(f):
        t = f.type
        if pa.types.is_struct(t):
            t = pa.struct([field(c) for c in t])
        elif pa.types.is_large_list(t):
            t = pa.large_list(field(t.value_field))
        elif pa.types.is_list(t):
            t = pa.list_(field(t.value_field))
        elif pa.types.is_map(t):
            t = pa.map_(field(t.key_field), field(t.item_field), t.keys_sorted)
        return pa.field(f.name, t, f.nullable)
    return pa.schema([field(f) for f in schema])


def normalize(v):
    """v with every NaN replaced by a marker, so that rows compare equal
    where pyarrow's Table.equals would call NaN unequal to itself."""
    if isinstance(v, float) or type(v).__name__.startswith("float"):
        return "NaN" if v != v else v
    if isinstance(v, dict):
        return {k: normalize(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [normalize(x) for x in v]
    return v


def same_rows(a, b):
    try:
        return normalize(a.to_pylist()) == normalize(b.to_pylist())
    except Exception:
        return a.equals(b)


def compare(original, exported):
    """'equal', 'types differ' (values equal), 'values differ', or why not compared."""
    try:
        want = pq.read_table(original)
    except Exception as e:  # pyarrow cannot read the original either
        return "pyarrow cannot read the original: " + str(e).splitlines()[0][:120]
    got = pq.read_table(exported)
    sw, sg = strip_metadata(want.schema), strip_metadata(got.schema)
    if sw.equals(sg):
        w, g = want.cast(sw), got.cast(sg)
        return "equal" if w.equals(g) or same_rows(w, g) else "values differ"
    if want.num_rows != got.num_rows:
        return "values differ (%d rows, want %d)" % (got.num_rows, want.num_rows)
    same = same_rows(want, got)
    detail = "; ".join("%s: %s -> %s" % (a.name, a.type, b.type)
                       for a, b in zip(sw, sg) if a.type != b.type or a.nullable != b.nullable)
    return ("types differ: " if same else "values and types differ: ") + detail[:200]


def first_line(s):
    lines = [l for l in s.strip().splitlines() if l.strip()]
    return lines[-1][:300] if lines else ""


def main():
    binary, corpus, work = sys.argv[1:4]
    out_json = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--json" else None
    os.makedirs(work, exist_ok=True)
    store = os.path.join(work, "store")
    env = dict(os.environ)
    env.pop("SOP_PME_KMS", None)
    env["SOP_PME_KEK_FILE"] = os.path.join(work, "kek")
    env["SOP_PME_KEYRING"] = os.path.join(work, "keyring")
    files = []
    for root, _, names in os.walk(corpus):
        if "/.git" in root:
            continue
        for n in names:
            if n.endswith(".parquet") or n.endswith(".parquet.encrypted"):
                files.append(os.path.join(root, n))
    files.sort()
    results = []
    for path in files:
        rel = os.path.relpath(path, corpus)
        r = {"file": rel}
        rc, out, err = run([binary, "-q", "import", "--store", store, "--assign-field-ids", "--json", path], env)
        r["import"] = rc
        if rc != 0:
            r["error"] = first_line(err)
        else:
            res = json.loads(out)
            oid = res["storage_id"]
            r["path"] = res["path"]
            if res.get("reencode_reason"):
                r["reason"] = res["reencode_reason"]
            r["check"], _, cerr = run([binary, "-q", "check", "--store", store, oid], env)
            r["verify"], _, _ = run([binary, "-q", "verify", "--store", store, oid], env)
            exp = os.path.join(work, "export.parquet")
            if os.path.exists(exp):
                os.remove(exp)
            rc, _, eerr = run([binary, "-q", "export", "--store", store, oid, "-o", exp], env)
            r["export"] = rc
            if rc != 0:
                r["error"] = first_line(eerr)
            else:
                r["compare"] = compare(path, exp)
        results.append(r)
        print(json.dumps(r), flush=True)

    def count(pred):
        return sum(1 for r in results if pred(r))
    imported = [r for r in results if r["import"] == 0]
    compared = [r for r in imported if r.get("export") == 0 and not r["compare"].startswith("pyarrow cannot")]
    summary = {
        "files": len(results),
        "imported": len(imported),
        "sealed": count(lambda r: r.get("path") == "sealed"),
        "reencoded": count(lambda r: r.get("path") == "reencoded"),
        "check_ok": count(lambda r: r.get("check") == 0),
        "verify_ok": count(lambda r: r.get("verify") == 0),
        "export_ok": count(lambda r: r.get("export") == 0),
        "compared_with_pyarrow": len(compared),
        "equal_to_pyarrow": count(lambda r: r in compared and r["compare"] == "equal"),
        "crashes": count(lambda r: r["import"] not in (0, 1, 2, 3, 4, 5, 6) or r.get("export", 0) not in (0, 1, 2, 3, 4, 5, 6)),
    }
    print(json.dumps(summary), flush=True)
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"results": results, "summary": summary}, f, indent=1)


if __name__ == "__main__":
    main()
