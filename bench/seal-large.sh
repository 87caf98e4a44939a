#!/bin/sh
# Sealing a large Parquet file into blobs.Dir (sop-pme import, byte for
# byte, with its decode check), against dd writing the same file with one
# fsync at the end (dd bs=1M conv=fsync: the disk's fsync'd write speed),
# side by side: each round runs both, in alternating order, on the same
# disk, and the script prints each figure, then the medians and their
# ratio (issue 16: sealing >= 0.8 x dd).
#
#   sh bench/seal-large.sh [FILE.parquet]      (make bench-seal [SEAL_FILE=...])
#
# Without FILE it generates TPC-H's lineitem at scale factor $SF (5: 1.24
# GB, parquet-rs, snappy) with tpchgen-cli (pip install tpchgen-cli). Every
# file goes into a temporary directory under $TMPDIR (the disk measured),
# removed at the end; nothing is written elsewhere. ROUNDS (5) rounds.
set -eu
ROUNDS=${ROUNDS:-5}
SF=${SF:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/sop-pme-seal.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
go build -C cmd/sop-pme -o "$work/sop-pme" .
in=${1:-}
if [ -z "$in" ]; then
	command -v tpchgen-cli >"$work/which" || { echo "bench/seal-large.sh: needs tpchgen-cli (pip install tpchgen-cli), or a FILE" >&2; exit 2; }
	tpchgen-cli parquet -s "$SF" --tables=lineitem -o "$work/gen" >"$work/gen.log" 2>&1
	in=$work/gen/lineitem.parquet
fi
size=$(stat -c %s "$in")
cksum "$in" >"$work/cksum" # into the page cache: both read it from memory
export SOP_PME_KEK_FILE="$work/kek" SOP_PME_KEYRING="$work/keyring"
now() { date +%s.%N; }
dd_run() {
	t0=$(now)
	dd if="$in" of="$work/dd.out" bs=1M conv=fsync 2>"$work/dd.log"
	t1=$(now)
	rm -f "$work/dd.out"
	echo "$t0 $t1" | awk -v s="$size" '{ printf "%.1f\n", s / 1e6 / ($2 - $1) }'
}
seal_run() {
	t0=$(now)
	"$work/sop-pme" import -q --json --assign-field-ids -s "$work/store" "$in" >"$work/import.json" 2>"$work/import.log"
	t1=$(now)
	grep -q '"path": "sealed"' "$work/import.json" || { cat "$work/import.json" >&2; exit 1; }
	rm -rf "$work/store" "$work/kek" "$work/keyring"
	echo "$t0 $t1" | awk -v s="$size" '{ printf "%.1f\n", s / 1e6 / ($2 - $1) }'
}
echo "file: $in ($size bytes), $(nproc) cores, $ROUNDS rounds"
: >"$work/dd.txt"
: >"$work/seal.txt"
for i in $(seq "$ROUNDS"); do
	if [ $((i % 2)) -eq 1 ]; then
		d=$(dd_run); s=$(seal_run)
	else
		s=$(seal_run); d=$(dd_run)
	fi
	echo "$d" >>"$work/dd.txt"
	echo "$s" >>"$work/seal.txt"
	echo "round $i: dd conv=fsync $d MB/s, seal $s MB/s, seal/dd $(echo "$s $d" | awk '{ printf "%.2f", $1 / $2 }')"
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { printf "%.1f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
md=$(median "$work/dd.txt")
ms=$(median "$work/seal.txt")
echo "median: dd conv=fsync $md MB/s, seal $ms MB/s, seal/dd $(echo "$ms $md" | awk '{ printf "%.2f", $1 / $2 }') (target >= 0.8)"
