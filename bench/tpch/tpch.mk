# bench/tpch/tpch.mk: the TPC-H benchmark of issue 16 (make tpch), included
# by the top-level Makefile. Not part of make test: it takes minutes, and
# its figures are ratios for a person to read, not a pass/fail timing.
#
#	make tpch            scale factor 1
#	make tpch SF=5       another scale factor
#	make tpch ROUNDS=3 THREADS=1
#
# It installs tpchgen-cli (the DataFusion project's TPC-H generator, from
# PyPI) into a virtualenv under $(TOOLCACHE), one directory a version;
# generates customer, orders, lineitem and part as Parquet into
# $(TOOLCACHE)/tpch-data (once a scale factor and generator version:
# delete the directory to generate again); builds sop-pme with DuckDB and
# the runner (duckdb/internal/tpchbench); and runs it. The runner imports
# the tables with sop-pme import --assign-field-ids into a fresh store and
# keyring in a temporary directory (removed when it ends), then runs the
# queries of bench/tpch/q*.sql through sop-pme sql, DuckDB on the Parquet
# files and DuckDB on the objects with their DEKs, each measurement a
# process of its own, and compares every answer with DuckDB's on the
# Parquet files. Its report goes to bench/tpch-sf$(SF).txt; a wrong
# answer fails the target.
#
#	make tpch-tables     issue 17: lineitem as a table of 10 objects
#
# tpch-tables generates lineitem again, split into $(PARTS) Parquet files
# (tpchgen-cli --parts), into $(TPCH_DATA)-parts$(PARTS) (once, like
# tpch-data), and runs the same runner with -parts: it imports the
# $(PARTS) files as one table lineitem (sop-pme import --table lineitem
# FILE...) into one store and keyring, and the unsplit lineitem.parquet of
# tpch-data as a table lineitem of one object into another; then runs
# Q1 and Q6 through sop-pme sql over each (the table is the view of its
# name, no --view) and through DuckDB read_parquet over the $(PARTS)
# plaintext files, compares every answer with DuckDB's, and writes
# bench/tpch-tables-sf$(SF).txt.

TPCHGEN_VERSION ?= 4.0.0
SF ?= 1
ROUNDS ?= 5
THREADS ?= 1,2
TPCH_QUERIES ?= q1,q3,q6,q12,q14
TPCHGEN_VENV := $(TOOLCACHE)/tpchgen-cli-$(TPCHGEN_VERSION)
TPCHGEN := $(TPCHGEN_VENV)/bin/tpchgen-cli
TPCH_DATA := $(TOOLCACHE)/tpch-data/tpchgen-$(TPCHGEN_VERSION)-sf$(SF)
TPCH_BIN := $(TOOLCACHE)/tpch-bin
PARTS ?= 10
TPCH_TABLES_QUERIES ?= q1,q6
TPCH_PARTS := $(TPCH_DATA)-parts$(PARTS)

.PHONY: tpch tpch-data tpch-tables tpch-bin

# The virtualenv is made in place (its scripts name their own path), and
# counts as installed once tpchgen-cli is in it: an interrupted install
# is redone from scratch.
$(TPCHGEN):
	rm -rf $(TPCHGEN_VENV)
	python3 -m venv $(TPCHGEN_VENV)
	$(TPCHGEN_VENV)/bin/pip install --quiet --disable-pip-version-check tpchgen-cli==$(TPCHGEN_VERSION)
	test -x $@

# Generated into a temporary directory beside it, then renamed: an
# interrupted run leaves no half a data set.
tpch-data: $(TPCH_DATA)/lineitem.parquet
$(TPCH_DATA)/lineitem.parquet: $(TPCHGEN)
	rm -rf $(TPCH_DATA).tmp
	mkdir -p $(TPCH_DATA).tmp
	$(TPCHGEN) parquet -s $(SF) --tables=customer,orders,lineitem,part --output-dir=$(TPCH_DATA).tmp --quiet
	rm -rf $(TPCH_DATA)
	mv $(TPCH_DATA).tmp $(TPCH_DATA)

# The split lineitem: <dir>/lineitem/lineitem.<part>.parquet, part 1 to
# $(PARTS); generated beside it and renamed, as above.
$(TPCH_PARTS)/lineitem/lineitem.$(PARTS).parquet: $(TPCHGEN)
	rm -rf $(TPCH_PARTS).tmp
	mkdir -p $(TPCH_PARTS).tmp
	$(TPCHGEN) parquet -s $(SF) --tables=lineitem --parts=$(PARTS) --output-dir=$(TPCH_PARTS).tmp --quiet
	rm -rf $(TPCH_PARTS)
	mv $(TPCH_PARTS).tmp $(TPCH_PARTS)

tpch-bin:
	mkdir -p $(TPCH_BIN)
	$(GO) build -C cmd/sop-pme -tags duckdb -o $(TPCH_BIN)/sop-pme .
	$(GO) build -C duckdb -o $(TPCH_BIN)/tpchbench ./internal/tpchbench

tpch: tpch-data tpch-bin
	$(TPCH_BIN)/tpchbench -sop-pme $(TPCH_BIN)/sop-pme -data $(TPCH_DATA) -sf $(SF) \
		-queries $(CURDIR)/bench/tpch -only $(TPCH_QUERIES) -rounds $(ROUNDS) -threads $(THREADS) \
		-commit "$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD -- . ':!bench' || echo -dirty)" \
		-out $(CURDIR)/bench/tpch-sf$(SF).txt

tpch-tables: tpch-data $(TPCH_PARTS)/lineitem/lineitem.$(PARTS).parquet tpch-bin
	$(TPCH_BIN)/tpchbench -sop-pme $(TPCH_BIN)/sop-pme -data $(TPCH_DATA) -parts $(TPCH_PARTS) -sf $(SF) \
		-queries $(CURDIR)/bench/tpch -only $(TPCH_TABLES_QUERIES) -rounds $(ROUNDS) -threads $(THREADS) \
		-commit "$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD -- . ':!bench' || echo -dirty)" \
		-out $(CURDIR)/bench/tpch-tables-sf$(SF).txt
